/* Start-up code of a tile program.
 * The supervisor (context 0) starts at _start; workers started by ipu.run start at
 * __ipu_worker_entry (crt0 puts it in CSR ipu.wentry) with a0 = argument, a1 = function and
 * a2 = context number, and end with ipu.wexit when the function returns. */
#define CSR_IPU_WENTRY 0x7c1
#define CSR_IPU_STACKLO 0x7cd /* a store through sp below it faults: stack overflow */
#define CSR_IPU_STACKHI 0x7ce

  .section .text.init, "ax", @progbits
  .globl _start
_start:
  .option push
  .option norelax
  la    gp, __global_pointer$
  .option pop
  la    sp, __supervisor_stack_top
  csrw  CSR_IPU_STACKHI, sp
  la    t0, __worker_stacks_top /* the supervisor's stack sits above the workers' */
  csrw  CSR_IPU_STACKLO, t0

  /* Zero .tbss and .bss. The loader already zero-fills them; this keeps a restarted or
   * differently loaded program correct too. */
  la    t0, __bss_start
  la    t1, __bss_end
1:
  bgeu  t0, t1, 2f
  sw    zero, 0(t0)
  addi  t0, t0, 4
  j     1b
2:
  li    t0, 0x2000          /* mstatus.FS = initial: the F extension is on */
  csrs  mstatus, t0
  la    tp, __tls_base      /* the supervisor uses the TLS template in place */
  la    t0, __ipu_worker_entry
  csrw  CSR_IPU_WENTRY, t0

  call  __libc_init_array
  li    a0, 0
  li    a1, 0
  call  main
  call  exit
3:
  j     3b

  .text
  .globl __ipu_worker_entry
  .type __ipu_worker_entry, @function
__ipu_worker_entry:
  .option push
  .option norelax
  la    gp, __global_pointer$
  .option pop
  addi  t2, a2, -1              /* worker index 0..5 */
  la    t0, __worker_stacks_top /* sp = top - index * stack size */
  la    t1, __worker_stack_size
  mul   t1, t1, t2
  sub   sp, t0, t1
  csrw  CSR_IPU_STACKHI, sp
  la    t1, __worker_stack_size
  sub   t0, sp, t1
  csrw  CSR_IPU_STACKLO, t0
  la    t0, __worker_tls        /* tp = this worker's own TLS block */
  la    t1, __tls_block_size
  mul   t1, t1, t2
  add   tp, t0, t1
  mv    s0, a0
  mv    s1, a1
  mv    a0, tp
  call  _init_tls               /* picolibc: copy .tdata, zero .tbss */
  mv    a0, s0
  jalr  s1
  .insn r 0x0b, 2, 0, x0, x0, x0  /* ipu.wexit */
  .size __ipu_worker_entry, . - __ipu_worker_entry
