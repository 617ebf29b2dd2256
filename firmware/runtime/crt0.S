/* Start-up code of a tile program.
 * The supervisor (context 0) starts at _start; workers started by ipu.run or ipu.runall start
 * at __ipu_worker_entry (crt0 puts it in CSR ipu.wentry) with a0 = argument, a1 = function and
 * a2 = context number, and end with ipu.wexit when the function returns. */
#define CSR_IPU_WENTRY 0x7c1
#define CSR_IPU_STACKLO 0x7cd /* a store through sp below it faults: stack overflow */
#define CSR_IPU_STACKHI 0x7ce
#define CONTEXT_ENTRY 16      /* a __worker_context_table entry: stack top, stack low, tp */
#include "ipu_program.h"

  .section .text.init, "ax", @progbits
  .globl _start
_start:
  .option push
  .option norelax
  la    gp, __global_pointer$
  .option pop
  la    sp, __worker_context_table /* the supervisor's stack starts below the table */
  csrw  CSR_IPU_STACKHI, sp
  /* The stacks' sizes: an SDK program's header (ipu_program.h) gives those the compiler found
   * its code needs, other firmware takes the linker script's. s2 = the workers' stacks' top
   * (the supervisor's stack sits above them), s3 = a worker's stack size. */
  la    s2, __worker_stacks_top
  la    s3, __worker_stack_size
  la    t0, __heap_start
  lw    t1, 0(t0)
  li    t2, IPU_PROGRAM_MAGIC
  bne   t1, t2, 0f
  lw    t1, IPU_PROGRAM_SUPERVISOR_STACK_OFFSET(t0)
  lw    s3, IPU_PROGRAM_WORKER_STACK_OFFSET(t0)
  la    s2, __supervisor_stack_top
  sub   s2, s2, t1
0:
  csrw  CSR_IPU_STACKLO, s2

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
  /* Set each worker context up once: its entry in __worker_context_table (stack bounds and
   * TLS block), and its TLS block from the .tdata template (the .tbss part was just zeroed
   * with .bss). A worker run then only loads its entry: computing its stack and calling
   * picolibc's _init_tls at every run cost about 50 issue slots (300 cycles) of every
   * vertex, even with no TLS to copy. */
  la    t0, __worker_context_table
  mv    t1, s2                  /* t1 = this worker's stack top */
  mv    t2, s3
  la    t3, __worker_tls        /* t3 = this worker's TLS block */
  la    t4, __tls_block_size
  la    t5, __supervisor_stack_top /* the table's end */
3:
  sw    t1, 0(t0)
  sub   t1, t1, t2
  sw    t1, 4(t0)
  sw    t3, 8(t0)
  add   t3, t3, t4
  addi  t0, t0, CONTEXT_ENTRY
  bne   t0, t5, 3b
  la    t2, __tdata_size
  beqz  t2, 6f                  /* no initialised TLS (the usual case): the blocks are ready */
  la    t0, __worker_tls        /* t0 = this block */
4:
  la    t1, __tdata_source
  add   t5, t0, t2
5:
  lbu   a0, 0(t1)
  sb    a0, 0(t0)
  addi  t1, t1, 1
  addi  t0, t0, 1
  bne   t0, t5, 5b
  sub   t0, t0, t2
  add   t0, t0, t4
  bne   t0, t3, 4b              /* t3: one past the last block */
6:
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
7:
  j     7b

  .text
  .globl __ipu_worker_entry
  .type __ipu_worker_entry, @function
__ipu_worker_entry:
  .option push
  .option norelax
  la    gp, __global_pointer$
  .option pop
  la    t0, __worker_context_table - CONTEXT_ENTRY /* context a2's entry (a2 = 1..6) */
  slli  t1, a2, 4
  add   t0, t0, t1
  lw    sp, 0(t0)
  lw    t1, 4(t0)
  lw    tp, 8(t0)
  csrw  CSR_IPU_STACKHI, sp
  csrw  CSR_IPU_STACKLO, t1
  jalr  a1
  .insn r 0x0b, 2, 0, x0, x0, x0  /* ipu.wexit */
  .size __ipu_worker_entry, . - __ipu_worker_entry
