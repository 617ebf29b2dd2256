/* Worker start/join timing on six contexts, with every cycle derived by hand (tile_program_test
 * checks mcycle and the total against these figures). No runtime: ipu.wentry is 0, so workers
 * start at rs1 itself.
 *
 * Supervisor issues: auipc @0, addi @6, run w1 @12. Worker w owns slot w-1; its first issue is
 * the next cycle of its slot after the run: w1 @18. The supervisor then needs a free slot at or
 * after last+6: run w2 @19 (slot 1; w2 first @25), run w3 @26 (w3 @32), run w4 @33 (w4 @39),
 * run w5 @40 (w5 @46), run w6 @47 (w6 @53). From 53 all six slots are held by workers.
 * Each worker executes L = 2N + 2 instructions (li, N x (addi, bne), wexit), one every 6
 * cycles: worker w's wexit issues at E_w = first_w + 6(L-1); E1 = 18 + 6(2N+1) = 24 + 12N.
 * Slot 0 frees at E1+1, so the supervisor issues join @E1+6; w2..w6 still run, so join stalls
 * and retries every 6 cycles in slot 0 until all have exited (E6 = 53 + 6(L-1) = E1 + 35):
 * join completes @E1+36, csrr mcycle @E1+42 reads 66 + 12N, li @E1+48, ecall @E1+54.
 * Total tile cycles 79 + 12N. With N = 10: mcycle = 186, cycles = 199. */
#define N 10
/* ODD_NAME: the worker's symbol holds a quote and a backslash, which the trace and statistics must
 * write as JSON escapes (issue 39). */
#ifdef ODD_NAME
#define WORKER "odd\"na\\me"
#else
#define WORKER worker
#endif
  .section .text.init, "ax", @progbits
  .globl _start
_start:
  la    t0, WORKER
  .insn r 0x0b, 0, 0, a0, t0, zero   /* ipu.run a0, t0, zero  (x6) */
  .insn r 0x0b, 0, 0, a0, t0, zero
  .insn r 0x0b, 0, 0, a0, t0, zero
  .insn r 0x0b, 0, 0, a0, t0, zero
  .insn r 0x0b, 0, 0, a0, t0, zero
  .insn r 0x0b, 0, 0, a0, t0, zero
  .insn r 0x0b, 1, 0, x0, x0, x0     /* ipu.join */
  csrr  a0, mcycle
  li    a7, 93
  ecall

  .type WORKER, @function  /* a function with a size: ipu-sim --trace-pc worker */
WORKER:
  li    t0, N
1:
  addi  t0, t0, -1
  bnez  t0, 1b
  .insn r 0x0b, 2, 0, x0, x0, x0     /* ipu.wexit */
  .size WORKER, . - WORKER
