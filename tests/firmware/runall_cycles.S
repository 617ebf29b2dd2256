/* ipu.runall timing, every cycle derived by hand (tile_program_test checks them); the workers
 * are worker_cycles.S's, started together instead of one by one. No runtime: ipu.wentry is 0.
 *
 * Supervisor issues: auipc @0, addi @6, runall @12 (slot 0). Worker w owns slot w-1 and first
 * issues at the next cycle of its slot after 12: w2 @13, w3 @14, w4 @15, w5 @16, w6 @17,
 * w1 @18. From 13 every slot is held by a worker, so the supervisor waits for one to exit.
 * Each worker executes L = 2N + 2 instructions, one every 6 cycles: E_w = first_w + 6(L-1),
 * so E2 = 13 + 12N + 6 = 139 (N = 10) ... E6 = 143, E1 = 144. The first free slot at or
 * after 18 is w2's at E2 + 6 = 145: join @145 finds every worker exited (E1 = 144) and
 * completes; csrr mcycle @151 reads 151, li @157, ecall @163. Total tile cycles 164
 * (worker_cycles.S, starting the same six one by one, takes 199). */
#define N 10
  .section .text.init, "ax", @progbits
  .globl _start
_start:
  la    t0, worker
  .insn r 0x0b, 0, 1, x0, t0, zero   /* ipu.runall t0, zero */
  .insn r 0x0b, 1, 0, x0, x0, x0     /* ipu.join */
  csrr  a0, mcycle
  li    a7, 93
  ecall

  .type worker, @function
worker:
  li    t0, N
1:
  addi  t0, t0, -1
  bnez  t0, 1b
  .insn r 0x0b, 2, 0, x0, x0, x0     /* ipu.wexit */
  .size worker, . - worker
