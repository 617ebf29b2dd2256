/* Compiled exchange with every cycle derived by hand from docs/chip.md (chip_test checks them).
 * Tile 0 sends SEND_WORDS words to the tiles in DESTS; every other tile listens to LISTEN and
 * receives RECV_WORDS words, then exits with their sum. Variants (defines) break the schedule
 * in one way each. No runtime: the code below is all that runs.
 *
 * Both tiles: csrr @0, li @6, ipu.sync @12: arrivals 12, release 12 + 150 = 162 (the sync
 * retires @162), bnez @168.
 * Sender: la @174 @180, csrw @186, la @192 @198, li @204, ipu.send @210: words leave at
 *   211..214 and reach tile d at 211 + k + 16 + |column(0) - column(d)| (64 tiles per column):
 *   tile 64: 228..231, tile 128: 229..232, tile 192: 230..233. li @216, ipu.waitc 100 @222,
 *   ipu.xend @322 (its boundary), after the exchange it retires @328, li @334 li @340 ecall @346.
 * Receiver: li @174, ipu.recvsrc @180 (listening from 181), la @186 @192, li @198, ipu.recv @204
 *   (buffer from 205), li @210, ipu.waitc 60 @216, ipu.xend @276 (boundary), retires @282,
 *   la @288 @294, lw @300 lw @306 add @312 lw @318 add @324 lw @330 add @336 li @342,
 *   ecall @348: 349 cycles. */
#ifndef SEND_WORDS
#define SEND_WORDS 4
#endif
#ifndef RECV_WORDS
#define RECV_WORDS 4
#endif
#ifndef LISTEN
#define LISTEN 0
#endif
#ifndef DESTS
#define DEST_COUNT 1
#define DESTS 64
#endif

  .option norelax
  .section .text.init, "ax", @progbits
  .globl _start
_start:
  csrr  s0, 0xfc0                       /* this tile's number */
  li    a0, 0
#ifdef SEND_BEFORE_SYNC
  la    a1, data
  li    a2, 4
  .insn r 0x0b, 5, 1, x0, a1, a2        /* ipu.send before any sync: outside the exchange phase */
#endif
  .insn r 0x0b, 5, 0, x0, a0, x0        /* ipu.sync group 0 */
  bnez  s0, receiver

sender:
  la    t0, dests
  csrw  0x7ca, t0                       /* ipu_xdests */
  la    a1, data
  li    a2, SEND_WORDS
  .insn r 0x0b, 5, 1, x0, a1, a2        /* ipu.send a1, a2 */
  li    t1, 100
  .insn r 0x0b, 5, 4, x0, t1, x0        /* ipu.waitc 100 */
  .insn r 0x0b, 5, 5, x0, x0, x0        /* ipu.xend */
  li    a0, 0
  li    a7, 93
  ecall

receiver:
#ifndef NO_LISTEN
  li    t0, LISTEN
  .insn r 0x0b, 5, 2, x0, t0, x0        /* ipu.recvsrc */
#endif
  la    a1, buffer
  li    a2, RECV_WORDS
  .insn r 0x0b, 5, 3, x0, a1, a2        /* ipu.recv a1, a2 */
#ifndef NO_WAIT
  li    t1, 60
  .insn r 0x0b, 5, 4, x0, t1, x0        /* ipu.waitc 60 */
#endif
  .insn r 0x0b, 5, 5, x0, x0, x0        /* ipu.xend */
  la    t0, buffer
  lw    a0, 0(t0)
  lw    t1, 4(t0)
  add   a0, a0, t1
  lw    t1, 8(t0)
  add   a0, a0, t1
  lw    t1, 12(t0)
  add   a0, a0, t1
  li    a7, 93
  ecall

  .data
  .balign 4
dests:
  .word DEST_COUNT, DESTS
data:
  .word 1, 2, 3, 4
buffer:
  .word 0, 0, 0, 0
