/* An exchange phase's actions, issued at the cycles the compiler scheduled (bsp_runtime.c calls
 * it; ipu_program.h gives the timing the compiler relies on).
 *
 *   uint32_t ipu_exchange_actions(uint32_t group, const struct ipu_action *first,
 *                                 const struct ipu_action *last);
 *
 * Syncs with `group`, then issues each action's key instruction (ipu.recv, ipu.send,
 * ipu.smwrite, ipu.smread) at the phase's base plus its offset, and returns the base's low
 * word (the counter read right after the sync, the same on every tile). The supervisor issues
 * once every 6 cycles and nothing here stalls (the schedule keeps the send port free), so
 * each instruction's cycle is known: from one action's key to the next action's ipu.waitc is a
 * fixed lead by the next one's kind (IPU_ACTION_LEAD_*), and the compiler stores in each
 * action the wait that puts its key at its offset. Where C took 16 issue slots a receive, with
 * a test of its kind and a check of its lateness against the counter, this loop takes 11 to a
 * receive and 13 to a send (18 in C). A slip would still not go unseen: the exchange checks every word
 * against the receiver's selection and buffer, and bsp_runtime.c checks the phase's end. */
#include "ipu_program.h"

#define CSR_IPU_XDESTS 0x7ca
#define CSR_IPU_SMADDR 0x7cb
#define CSR_IPU_SMADDRH 0x7cc

/* Xipu (docs/xipu.md): custom-0 opcode, funct3 5, funct7 picks the instruction. */
#define IPU_SYNC(rs1) .insn r 0x0b, 5, 0, x0, rs1, x0
#define IPU_SEND(rs1, rs2) .insn r 0x0b, 5, 1, x0, rs1, rs2
#define IPU_RECVSRC(rs1) .insn r 0x0b, 5, 2, x0, rs1, x0
#define IPU_RECV(rs1, rs2) .insn r 0x0b, 5, 3, x0, rs1, rs2
#define IPU_WAITC(rs1) .insn r 0x0b, 5, 4, x0, rs1, x0
#define IPU_SMWRITE(rs1, rs2) .insn r 0x0b, 5, 6, x0, rs1, rs2
#define IPU_SMREAD(rs1, rs2) .insn r 0x0b, 5, 7, x0, rs1, rs2

  .section .text.ipu_exchange_actions, "ax", @progbits
  .globl ipu_exchange_actions
  .type ipu_exchange_actions, @function
  .p2align 2
/* a0 = sync group (then the base), a1 = the next action, a2 = past the last.
 * Per action: t0 = wait, t1 = address | kind, t2 = words, t3 = with, t4 = kind. */
ipu_exchange_actions:
  li    t5, IPU_ACTION_SEND
  li    t6, (1 << IPU_ACTION_WORDS_BITS) - 1
  IPU_SYNC(a0)
  csrr  a0, mcycle          /* the base: a virtual key 6 cycles before it leads the first */
.Lnext:
  lw    t0, 0(a1)
  lw    t1, 4(a1)
  lw    t2, 8(a1)
  lw    t3, 12(a1)
  andi  t4, t1, IPU_ACTION_KIND_MASK
  addi  a1, a1, 16
  bnez  t4, .Lnot_receive
  IPU_WAITC(t0)             /* lead 54: the 9 issues from the previous key */
  IPU_RECVSRC(t3)           /* listens 6 cycles before its buffer is set (tail 6) */
  IPU_RECV(t1, t2)          /* the key: the address has kind 0's clear low bits */
  bne   a1, a2, .Lnext
  ret
.Lnot_receive:
  bne   t4, t5, .Lstreaming
  andi  t1, t1, ~IPU_ACTION_KIND_MASK
  csrw  CSR_IPU_XDESTS, t3
  IPU_WAITC(t0)             /* lead 72 */
  IPU_SEND(t1, t2)
  bne   a1, a2, .Lnext
  ret
.Lstreaming:                /* t2 = words | address bits 32.. << IPU_ACTION_WORDS_BITS */
  andi  t1, t1, ~IPU_ACTION_KIND_MASK
  srli  a3, t2, IPU_ACTION_WORDS_BITS
  csrw  CSR_IPU_SMADDRH, a3
  csrw  CSR_IPU_SMADDR, t3
  and   t2, t2, t6
  andi  t4, t4, 1           /* IPU_ACTION_SM_READ is 3, IPU_ACTION_SM_WRITE 2 */
  bnez  t4, .Lread
  IPU_WAITC(t0)             /* lead 102 */
  IPU_SMWRITE(t1, t2)
  bne   a1, a2, .Lnext
  ret
.Lread:
  IPU_WAITC(t0)             /* lead 102 */
  IPU_SMREAD(t1, t2)
  bne   a1, a2, .Lnext
  ret
  .size ipu_exchange_actions, . - ipu_exchange_actions
