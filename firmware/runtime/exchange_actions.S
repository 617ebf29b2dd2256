/* An exchange phase's actions, issued at the cycles the compiler scheduled (bsp_runtime.c calls
 * it; ipu_program.h gives the encoding and the timing the compiler relies on).
 *
 *   uint32_t ipu_exchange_actions(uint32_t group, const uint32_t *first);
 *
 * Syncs with `group`, then issues each action's key instruction (ipu.recv, ipu.send,
 * ipu.smwrite, ipu.smread) at the phase's base plus its offset, up to the IPU_ACTION_END word
 * after the phase's last action, and returns the base's low word (the counter read right after
 * the sync, the same on every tile). The supervisor issues once every 6 cycles and nothing here
 * stalls (the schedule keeps the send port free), so each instruction's cycle is known: from
 * one action's key to the next action's ipu.waitc is a fixed lead by the next one's kind
 * (IPU_ACTION_LEAD_*), and the compiler stores in each action the wait that puts its key at its
 * offset. The kind rides in the wait word's sign and top bits, so that one branch on it finds a
 * receive, the commonest, and a second a send; after each key the next action is loaded and
 * dispatched at once (no loop counter, no jump back): 9 issues a receive, 11 a send (11 and
 * 13 in the loop before, 16 and 18 in C). A slip would still not go unseen: the exchange
 * checks every word against the receiver's selection and buffer, and bsp_runtime.c checks the
 * phase's end. */
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

/* The next action into t0 (its wait word) .. t3, and to the code for its kind: a receive
 * (wait word >= 0) after 6 issues, a send (>= IPU_ACTION_SEND_LEAST) after 7, anything else
 * (streaming memory, or the phase's end) after 8. The same after every key and after the base,
 * so that each kind's lead is one number. */
.macro NEXT_ACTION
  lw    t0, 0(a1)
  lw    t1, 4(a1)
  lw    t2, 8(a1)
  lw    t3, 12(a1)
  addi  a1, a1, 16
  bgez  t0, .Lreceive
  bge   t0, t5, .Lsend
  j     .Lother
.endm

  .section .text.ipu_exchange_actions, "ax", @progbits
  .globl ipu_exchange_actions
  .type ipu_exchange_actions, @function
  .p2align 2
/* a0 = sync group (then the base), a1 = the next action.
 * Per action: t0 = wait word, t1 = tile address, t2 = words, t3 = with. */
ipu_exchange_actions:
  li    t5, IPU_ACTION_SEND_LEAST
  li    t6, IPU_ACTION_END
  li    a4, IPU_ACTION_WAIT_MASK
  li    a5, (1 << IPU_ACTION_WORDS_BITS) - 1
  IPU_SYNC(a0)
  csrr  a0, mcycle          /* the base, and the virtual key before the first action */
  NEXT_ACTION
.Lreceive:                  /* wait word: the wait */
  IPU_WAITC(t0)             /* lead 42: the 7th issue from the previous key */
  IPU_RECVSRC(t3)           /* listens 6 cycles before its buffer is set (tail 6) */
  IPU_RECV(t1, t2)          /* the key */
  NEXT_ACTION
.Lsend:                     /* wait word: ~wait */
  xori  t0, t0, -1
  csrw  CSR_IPU_XDESTS, t3
  IPU_WAITC(t0)             /* lead 60 */
  IPU_SEND(t1, t2)
  NEXT_ACTION
.Lother:                    /* wait word: ~(wait | 1 << 28) a write, ~(wait | 2 << 28) a read */
  beq   t0, t6, .Lend
  xori  t0, t0, -1
  srli  t4, t0, IPU_ACTION_WAIT_BITS + 1  /* 1: a read */
  and   t0, t0, a4
  srli  a3, t2, IPU_ACTION_WORDS_BITS     /* t2 = words | address bits 32.. << WORDS_BITS */
  csrw  CSR_IPU_SMADDRH, a3
  csrw  CSR_IPU_SMADDR, t3
  and   t2, t2, a5
  bnez  t4, .Lread
  IPU_WAITC(t0)             /* lead 102 */
  IPU_SMWRITE(t1, t2)
  NEXT_ACTION
.Lread:
  IPU_WAITC(t0)             /* lead 102 */
  IPU_SMREAD(t1, t2)
  NEXT_ACTION
.Lend:
  ret
  .size ipu_exchange_actions, . - ipu_exchange_actions
