/* Inter-chip exchange with every cycle derived by hand (machine_test checks them). Tile T of chip
 * SENDER sends 4 words to tile T of chip RECEIVER after a sync on SYNC (external by default);
 * every other tile syncs and waits. Variants (defines) break the schedule in one way each.
 * No runtime: the code below is all that runs. One issue every 6 cycles (supervisor alone).
 *
 * Before the sync: csrr @0, csrr @6, la @12 @18, li @24, or @30, sw @36, li @42, or @48,
 * la @54 @60, li @66, la @72 @78, li @84, li @90, ipu.sync @96: every tile arrives at 96.
 * External release R = 96 + 150 (internal) + ceil(2 x hops x 15 ns x 1.325 GHz), hops =
 * 1 + (chips / 2) / 2: 4 chips: 79.5 -> 80, R = 326; 16 chips: 198.75 -> 199, R = 445.
 * After the sync (retires at R): li @R+6, beq @R+12;
 * Sender: csrw ipu_xdests @R+18, ipu.send @R+24: words leave at R+25..R+28 and reach the
 *   receiver at R+25+k + 16 (to the link port) + hops x 133 + 16 (from the far port), where a
 *   hop is ceil((100 ns + 4 B / 16 GB/s) x 1.325 GHz) = ceil(132.83) = 133 cycles.
 *   1 hop (a rung): last word at R+28+32+133 = R+193.
 * Receiver: li @R+18, beq @R+24, ipu.recvsrc @R+30, ipu.recv @R+36, ipu.waitc 1000 @R+42,
 *   ipu.xend @R+1042; then it exits with the sum of the words (10). */
#ifndef SENDER
#define SENDER 0
#endif
#ifndef RECEIVER
#define RECEIVER 1
#endif
#ifndef SYNC
#define SYNC 0x40000000
#endif
#define REMOTE(chip) (0x40000000 | ((chip) << 16))

  .option norelax
  .section .text.init, "ax", @progbits
  .globl _start
_start:
  csrr  s0, 0xfc0                       /* this tile's number */
  csrr  s1, 0xfc2                       /* this tile's chip */
  la    s3, dests
#ifdef DEST_CHIP
  li    t1, REMOTE(DEST_CHIP)
#else
  li    t1, REMOTE(RECEIVER)
#endif
  or    t1, t1, s0
  sw    t1, 4(s3)                       /* destination: tile s0 of the receiving chip */
  li    s2, REMOTE(SENDER)
  or    s2, s2, s0                      /* the receiver listens to tile s0 of the sender */
  la    a1, data
  li    a2, 4
  la    s4, buffer
  li    s5, 1000
  li    a0, SYNC
#ifdef SKIP_SYNC_ON_CHIP
  li    t0, SKIP_SYNC_ON_CHIP
  beq   s1, t0, done                    /* this chip never arrives: the others deadlock */
#endif
  .insn r 0x0b, 5, 0, x0, a0, x0        /* ipu.sync a0 */
  li    t0, SENDER
  beq   s1, t0, sender
  li    t0, RECEIVER
  beq   s1, t0, receiver
  .insn r 0x0b, 5, 4, x0, s5, x0        /* ipu.waitc 1000 */
  .insn r 0x0b, 5, 5, x0, x0, x0        /* ipu.xend */
done:
  li    a0, 0
  li    a7, 93
  ecall

sender:
  csrw  0x7ca, s3                       /* ipu_xdests */
#ifndef NO_SEND
  .insn r 0x0b, 5, 1, x0, a1, a2        /* ipu.send a1, a2 */
#endif
  .insn r 0x0b, 5, 4, x0, s5, x0        /* ipu.waitc 1000 */
  .insn r 0x0b, 5, 5, x0, x0, x0        /* ipu.xend */
  li    a0, 0
  li    a7, 93
  ecall

receiver:
#ifndef NO_LISTEN
  .insn r 0x0b, 5, 2, x0, s2, x0        /* ipu.recvsrc s2 */
#endif
  .insn r 0x0b, 5, 3, x0, s4, a2        /* ipu.recv s4, 4 */
  .insn r 0x0b, 5, 4, x0, s5, x0        /* ipu.waitc 1000 */
  .insn r 0x0b, 5, 5, x0, x0, x0        /* ipu.xend */
  lw    a0, 0(s4)
  lw    t1, 4(s4)
  add   a0, a0, t1
  lw    t1, 8(s4)
  add   a0, a0, t1
  lw    t1, 12(s4)
  add   a0, a0, t1
  li    a7, 93
  ecall

  .data
  .balign 4
dests:
  .word 1, 0
data:
  .word 1, 2, 3, 4
buffer:
  .word 0, 0, 0, 0
