/* Streaming memory with every cycle derived by hand (machine_test checks them). Tile 0 of chip 0
 * writes 32 words to streaming memory at SM_HIGH:SM_LOW, syncs, reads them back into a buffer,
 * syncs, and exits 0 when the buffer matches (1 when not); every other chip's tile syncs along.
 * No runtime: the code below is all that runs. One issue every 6 cycles (supervisor alone).
 *
 * Figures (Mk2, 1.325 GHz; time in 1/65536 cycle, T = 65536): exchange base latency 16; chip link
 * 16 GB/s: a 64-byte burst takes ceil(64 x T x 1.325e9 / 16e9) = 347341 ticks (5.30 cycles);
 * a DIMM at 19.2 GB/s takes 289451 ticks (4.42 cycles); chip link latency ceil(250 ns) = 332
 * cycles; DDR latency ceil(50 ns) = 67 cycles. 32 words = 2 bursts, both on DIMM 0.
 *
 * Before the first sync: csrr @0, la @6 @12, li @18, la @24 @30, li @36, li @42, li @48,
 * ipu.sync @54: external release R1 = 54 + 150 + 80 = 284 (4 chips).
 * Chip 0 after it: bnez @R1+6, csrw @R1+12 @R1+18, ipu.smwrite @R1+24 = W = 308, ipu.xend @+30,
 * ipu.sync @R1+36 = 320, which waits for the write:
 *   burst 0 leaves the tile by W+16 and reaches the chip edge at W+32; link W+32 -> +5.30;
 *   +332 -> DIMM W+369.30 -> +4.42 = W+373.72. Burst 1 reaches the edge at W+48 (link free);
 *   DIMM at W+385.30, free: done at W+389.72 -> W+390 = 698. R2 = 698 + 150 + 80 = 928.
 * After it: csrw @R2+6 @R2+12, ipu.smread @R2+18 = Rd = 946, ipu.xend, ipu.sync @R2+30:
 *   the request reaches the gateway at Rd+1+16+332 = Rd+349; burst 0: DIMM -> Rd+353.42, +67,
 *   link to the chip -> Rd+425.72, +332 +16 -> the tile's port Rd+773.72, 16 words -> Rd+789.72.
 *   Burst 1: DIMM Rd+353.42 -> Rd+357.83, +67 -> Rd+424.83; the link is free at Rd+425.72 ->
 *   Rd+431.02, +348 -> Rd+779.02; the port is free at Rd+789.72 -> Rd+805.72: done at Rd+806 =
 *   1752. R3 = 1752 + 230 = 1982. */
#ifndef SM_HIGH
#define SM_HIGH 1
#endif
#ifndef SM_LOW
#define SM_LOW 0x40
#endif

  .option norelax
  .section .text.init, "ax", @progbits
  .globl _start
_start:
  csrr  s1, 0xfc2                       /* this tile's chip */
  la    a1, data
  li    a2, 32
  la    s4, buffer
  li    a0, 0x40000000                  /* IPU_SYNC_EXTERNAL */
  li    s5, SM_HIGH
  li    s6, SM_LOW
  .insn r 0x0b, 5, 0, x0, a0, x0        /* ipu.sync a0 */
  bnez  s1, idle
  csrw  0x7cc, s5                       /* ipu_smaddrh */
  csrw  0x7cb, s6                       /* ipu_smaddr */
  .insn r 0x0b, 5, 6, x0, a1, a2        /* ipu.smwrite a1, a2 */
  .insn r 0x0b, 5, 5, x0, x0, x0        /* ipu.xend */
  .insn r 0x0b, 5, 0, x0, a0, x0        /* ipu.sync a0: waits for the write */
  csrw  0x7cc, s5
  csrw  0x7cb, s6
  .insn r 0x0b, 5, 7, x0, s4, a2        /* ipu.smread s4, a2 */
  .insn r 0x0b, 5, 5, x0, x0, x0        /* ipu.xend */
  .insn r 0x0b, 5, 0, x0, a0, x0        /* ipu.sync a0: the words have landed */
compare:
  lw    t0, 0(a1)
  lw    t1, 0(s4)
  bne   t0, t1, differ
  addi  a1, a1, 4
  addi  s4, s4, 4
  addi  a2, a2, -1
  bnez  a2, compare
  li    a0, 0
  j     exit
differ:
  li    a0, 1
  j     exit
idle:
  .insn r 0x0b, 5, 0, x0, a0, x0        /* ipu.sync a0 */
  .insn r 0x0b, 5, 0, x0, a0, x0        /* ipu.sync a0 */
  li    a0, 0
exit:
  li    a7, 93
  ecall

  .data
  .balign 4
data:
  .word 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff
  .word 0x100, 0x101, 0x102, 0x103, 0x104, 0x105, 0x106, 0x107, 0x108, 0x109, 0x10a, 0x10b
  .word 0x10c, 0x10d, 0x10e, 0x10f, 0xdeadbeef
buffer:
  .space 128
