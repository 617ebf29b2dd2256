/* Small programs that go wrong, one per entry symbol; tile_fault_test starts the supervisor at
 * each and checks the report. None installs a trap handler. */
  .section .text.init, "ax", @progbits
  .globl _start
_start:                      /* not used directly */
  j     _start

  .globl illegal_instruction
illegal_instruction:
  nop
  .word 0xffffffff

  .globl null_load
null_load:
  li    a0, 0
  lw    a1, 0(a0)

  .globl store_outside
store_outside:
  li    a0, 0xe8000          /* one past the end of SRAM */
  sw    a1, 0(a0)

  .globl misaligned_load
misaligned_load:
  li    a0, 0x4c002
  lw    a1, 0(a0)

  .globl jump_outside
jump_outside:
  li    a0, 0x10000000
  jalr  ra, 0(a0)

  .globl misaligned_jump
misaligned_jump:
  li    a0, 0x4c002
  jalr  ra, 0(a0)

  .globl breakpoint
breakpoint:
  ebreak

  .globl unknown_ecall
unknown_ecall:
  li    a7, 64
  ecall

  .globl endless_loop
endless_loop:
  addi  a0, a0, 1
  j     endless_loop

  .globl worker_runs_forever
worker_runs_forever:
  la    t0, endless_loop
  .insn r 0x0b, 0, 0, a0, t0, zero   /* ipu.run */
  .insn r 0x0b, 1, 0, x0, x0, x0     /* ipu.join: never completes */

  .globl supervisor_wexit
supervisor_wexit:
  .insn r 0x0b, 2, 0, x0, x0, x0     /* ipu.wexit on the supervisor: illegal */

  .globl worker_starts_worker
worker_starts_worker:
  la    t0, 1f
  .insn r 0x0b, 0, 0, a0, t0, zero   /* ipu.run: starts worker 1 at 1f */
  .insn r 0x0b, 1, 0, x0, x0, x0     /* ipu.join */
1:
  .insn r 0x0b, 0, 0, a0, t0, zero   /* ipu.run on a worker: illegal */

  .globl worker_starts_all_workers
worker_starts_all_workers:
  la    t0, 1f
  .insn r 0x0b, 0, 0, a0, t0, zero   /* ipu.run: starts worker 1 at 1f */
  .insn r 0x0b, 1, 0, x0, x0, x0     /* ipu.join */
1:
  .insn r 0x0b, 0, 1, x0, t0, zero   /* ipu.runall on a worker: illegal */

  .globl runall_waits_for_a_worker
runall_waits_for_a_worker:
  la    t0, endless_loop
  .insn r 0x0b, 0, 0, a0, t0, zero   /* ipu.run: worker 1 never ends */
  .insn r 0x0b, 0, 1, x0, t0, zero   /* ipu.runall: stalls while worker 1 runs */

  .globl worker_exits_program
worker_exits_program:
  la    t0, 1f
  .insn r 0x0b, 0, 0, a0, t0, zero
  .insn r 0x0b, 1, 0, x0, x0, x0     /* the worker's exit ends the program first */
  li    a0, 99
  li    a7, 93
  ecall
1:
  li    a0, 5
  li    a7, 93
  ecall
