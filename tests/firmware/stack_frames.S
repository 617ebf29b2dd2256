/* Functions whose frames are written out by hand, for the stack analysis's test
 * (tests/sdk/stack_usage_test.cpp): each comment gives the depth the test expects. */
  .text
  .macro function name
  .globl \name
  .type \name, @function
  .balign 4
\name:
  .endm
  .macro end name
  .size \name, . - \name
  .endm

  .globl _start            /* as crt0's, no size: it runs up to the next function */
_start:                   /* sets its own stack: top's 96 */
  lui   sp, 0xe8
  call  top
1:
  j     1b

function leaf            /* 32 */
  addi  sp, sp, -32
  addi  sp, sp, 32
  ret
end leaf

function mid             /* 48 + leaf */
  addi  sp, sp, -48
  sw    ra, 44(sp)
  call  leaf
  lw    ra, 44(sp)
  addi  sp, sp, 48
  ret
end mid

function top             /* 16 + mid = 96 */
  addi  sp, sp, -16
  sw    ra, 12(sp)
  call  mid
  call  leaf
  lw    ra, 12(sp)
  addi  sp, sp, 16
  ret
end top

function big_frame       /* past addi's reach: 4,016 through t0, then leaf */
  lui   t0, 0xfffff
  addi  t0, t0, 80
  add   sp, sp, t0
  call  leaf
  lui   t0, 0x1
  addi  t0, t0, -80
  add   sp, sp, t0
  ret
end big_frame

function tail_caller     /* 16, then mid in its place: counted on top, 96 */
  addi  sp, sp, -16
  addi  sp, sp, 16
  j     mid
end tail_caller

/* GCC's -msave-restore prologue as libgcc writes it: 64 down, 32 back up. */
function __riscv_save_4
  addi  sp, sp, -64
  li    t1, -32
  sw    ra, 60(sp)
  sub   sp, sp, t1
  jr    t0
end __riscv_save_4

function __riscv_restore_4
  lw    ra, 28(sp)
  addi  sp, sp, 32
  ret
end __riscv_restore_4

function saver           /* the prologue's 32 + 16 + leaf = 80 */
  jal   t0, __riscv_save_4
  addi  sp, sp, -16
  call  leaf
  addi  sp, sp, 16
  j     __riscv_restore_4
end saver

function pointed_to      /* 64; its address is in .data */
  addi  sp, sp, -64
  addi  sp, sp, 64
  ret
end pointed_to

function through_pointer /* 16 + what a pointer may reach (pointed_to) = 80 */
  addi  sp, sp, -16
  sw    ra, 12(sp)
  lui   a5, %hi(pointer)
  lw    a5, %lo(pointer)(a5)
  jalr  a5
  lw    ra, 12(sp)
  addi  sp, sp, 16
  ret
end through_pointer

function recursive       /* calls itself through another: no bound */
  addi  sp, sp, -16
  call  recursive_too
  addi  sp, sp, 16
  ret
end recursive

function recursive_too
  addi  sp, sp, -16
  call  recursive
  addi  sp, sp, 16
  ret
end recursive_too

function dynamic         /* alloca: no bound */
  addi  sp, sp, -16
  sub   sp, sp, a0
  addi  sp, s0, -16
  ret
end dynamic

function calls_dynamic   /* 16 + dynamic's: no bound */
  addi  sp, sp, -16
  call  dynamic
  addi  sp, sp, 16
  ret
end calls_dynamic

  .data
  .balign 4
pointer:
  .word pointed_to
