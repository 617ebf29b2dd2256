/* Entry point of the benchmark kernels built for qemu-riscv32 (Linux user mode): Linux has set
 * up the stack; call main and pass its result to the exit system call. */
  .text
  .globl _start
_start:
  .option push
  .option norelax
  la gp, __global_pointer$
  .option pop
  call main
  li a7, 93 /* exit */
  ecall
