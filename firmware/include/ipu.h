/* ipu.h: C interface to the tile. Include from firmware compiled with riscv64-unknown-elf-gcc
 * -march=rv32imf -mabi=ilp32f. The machine model is in docs/tile.md and docs/xipu-model.md;
 * the Xipu intrinsics themselves (ipu_xipu.h, listed in docs/xipu.md) are generated from the
 * simulator's instruction table, so they always match it. */
#ifndef IPU_H
#define IPU_H

#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#define IPU_WORKER_CONTEXTS 6

/* CSR numbers of the Xipu CSRs. */
#define IPU_CSR_CONSOLE 0x7c0 /* write: one byte to this context's console */
#define IPU_CSR_WENTRY 0x7c1  /* entry of workers started by ipu.run (crt0 sets it) */
#define IPU_CSR_FPCTL 0x7c2   /* bit 0: stochastic rounding of f16 results */
#define IPU_CSR_PRNG0 0x7c3   /* PRNG state: s0 low, s0 high, s1 low, s1 high */
#define IPU_CSR_PRNG1 0x7c4
#define IPU_CSR_PRNG2 0x7c5
#define IPU_CSR_PRNG3 0x7c6
#define IPU_CSR_AMPCFG 0x7c7 /* AMP: bit 0 f32 mode, bits 2:1 phases - 1, bit 3 accumulate */
#define IPU_CSR_AMPIN 0x7c8  /* AMP input pointer */
#define IPU_CSR_AMPOUT 0x7c9 /* AMP output pointer */
#define IPU_CSR_XDESTS 0x7ca /* destination list of ipu.send */
#define IPU_CSR_SMADDR 0x7cb  /* streaming-memory address of ipu.smwrite/smread, bits 31:0 */
#define IPU_CSR_SMADDRH 0x7cc /* streaming-memory address, bits 63:32 */
#define IPU_CSR_TILEID 0xfc0 /* this tile's number (read-only) */
#define IPU_CSR_TILES 0xfc1  /* tiles on the chip (read-only) */
#define IPU_CSR_CHIPID 0xfc2 /* this tile's chip in the machine (read-only) */
#define IPU_CSR_CHIPS 0xfc3  /* chips in the machine (read-only) */
#define IPU_CSR_PTILES 0xfc4 /* tiles of this chip with a program (read-only) */

#define IPU_CSR_READ(csr) \
  ({                      \
    uint32_t v_;          \
    __asm__ volatile("csrr %0, " #csr : "=r"(v_)); \
    v_;                   \
  })
#define IPU_CSR_WRITE(csr, value) __asm__ volatile("csrw " #csr ", %0" : : "r"((uint32_t)(value)) : "memory")

/* 64-bit SIMD operands live in FP register pairs; these types carry them through C. Each
 * float r[i] is one register's raw 32 bits (f16 lanes are packed two per register). */
typedef struct { float r[2]; } ipu_f32x2; /* lanes 0, 1 */
typedef struct { float r[2]; } ipu_f16x4; /* lanes 0, 1 in r[0] (low, high half), 2, 3 in r[1] */
typedef struct { float r[1]; } ipu_f16x2; /* lanes 0, 1 in the low and high half */
typedef struct { float r[4]; } ipu_f32x4;

/* The two pointers ipu.ld2x64st64 reads from and writes to, both advanced by it. */
typedef struct {
  const void *load;
  void *store;
} ipu_stream;

static inline ipu_f32x2 ipu_f32x2_make(float lane0, float lane1) { return (ipu_f32x2){{lane0, lane1}}; }

/* f16 lanes from and to their IEEE binary16 bit patterns. */
static inline ipu_f16x4 ipu_f16x4_from_bits(const uint16_t lanes[4]) {
  ipu_f16x4 v;
  memcpy(v.r, lanes, 8);
  return v;
}
static inline void ipu_f16x4_to_bits(ipu_f16x4 v, uint16_t lanes[4]) { memcpy(lanes, v.r, 8); }
static inline ipu_f16x2 ipu_f16x2_from_bits(uint16_t lane0, uint16_t lane1) {
  const uint32_t bits = (uint32_t)lane0 | ((uint32_t)lane1 << 16);
  ipu_f16x2 v;
  memcpy(v.r, &bits, 4);
  return v;
}
static inline uint32_t ipu_f16x2_bits(ipu_f16x2 v) {
  uint32_t bits;
  memcpy(&bits, v.r, 4);
  return bits;
}

/* Number of the calling context: 0 for the supervisor, 1..6 for workers. */
static inline unsigned ipu_context_id(void) { return IPU_CSR_READ(mhartid); }

/* Tile cycles since the program started (the same counter for every context). */
static inline uint64_t ipu_cycles(void) {
  uint32_t hi, lo;
  do {
    hi = IPU_CSR_READ(mcycleh);
    lo = IPU_CSR_READ(mcycle);
  } while (hi != IPU_CSR_READ(mcycleh));
  return ((uint64_t)hi << 32) | lo;
}

/* Writes one byte to the console; a newline ends the line. */
static inline void ipu_console_putc(char c) { IPU_CSR_WRITE(0x7c0, c); }

/* Stochastic rounding of f16 results on (1) or off (0, round to nearest even) for this context. */
static inline void ipu_set_stochastic_rounding(int on) { IPU_CSR_WRITE(0x7c2, on ? 1 : 0); }

/* Seeds this context's PRNG (xoroshiro128aox; an all-zero state would only produce zeros). */
static inline void ipu_prng_seed(uint64_t s0, uint64_t s1) {
  IPU_CSR_WRITE(0x7c3, (uint32_t)s0);
  IPU_CSR_WRITE(0x7c4, (uint32_t)(s0 >> 32));
  IPU_CSR_WRITE(0x7c5, (uint32_t)s1);
  IPU_CSR_WRITE(0x7c6, (uint32_t)(s1 >> 32));
}

/* AMP set-up: mode (0 f16 inputs, 1 f32 inputs), phases (1-4), accumulate into the output. */
#define IPU_AMP_F16 0
#define IPU_AMP_F32 1
static inline void ipu_amp_configure(unsigned mode, unsigned phases, int accumulate, const void *input,
                                     void *output) {
  IPU_CSR_WRITE(0x7c7, (mode & 1) | (((phases - 1) & 3) << 1) | (accumulate ? 8 : 0));
  IPU_CSR_WRITE(0x7c8, (uint32_t)(uintptr_t)input);
  IPU_CSR_WRITE(0x7c9, (uint32_t)(uintptr_t)output);
}

/* Ends the whole program with `status` (ecall with a7 = 93). */
static inline void __attribute__((noreturn)) ipu_exit(int status) {
  register int a0 __asm__("a0") = status;
  register int a7 __asm__("a7") = 93;
  __asm__ volatile("ecall" : : "r"(a0), "r"(a7) : "memory");
  __builtin_unreachable();
}

#include "ipu_xipu.h"

/* Tile number and tile count of the chip (every tile: 1472 on Mk2, whatever the image loads);
 * the tiles of this chip the image gives a program (an image for tiles 0..N-1 of a chip sees
 * N); the chip's number and the chip count of the machine (0 and 1 on a chip alone). */
static inline unsigned ipu_tile_id(void) { return IPU_CSR_READ(0xfc0); }
static inline unsigned ipu_tile_count(void) { return IPU_CSR_READ(0xfc1); }
static inline unsigned ipu_program_tile_count(void) { return IPU_CSR_READ(0xfc4); }
static inline unsigned ipu_chip_id(void) { return IPU_CSR_READ(0xfc2); }
static inline unsigned ipu_chip_count(void) { return IPU_CSR_READ(0xfc3); }

/* A tile of any chip, for send destinations and ipu_listen; a plain tile number is a tile of
 * the sender's own chip (docs/machine.md). */
#define IPU_REMOTE_TILE(chip, tile) (0x40000000u | ((uint32_t)(chip) << 16) | (uint32_t)(tile))

/* Sync groups beyond the chip's own (0) and its GSP groups (1..): every chip of the machine,
 * and the chips of this chip's part of hardware sync group GS1 or GS2 (sync.gs1, sync.gs2).
 * Only an external sync opens an exchange phase in which words may cross IPU-Links. */
#define IPU_SYNC_EXTERNAL 0x40000000u
#define IPU_SYNC_GS1 0x40000001u
#define IPU_SYNC_GS2 0x40000002u

/* Destinations of a send: `count` tile references (tile numbers or IPU_REMOTE_TILE). */
typedef struct {
  uint32_t count;
  uint32_t tiles[];
} ipu_destinations;

/* Sends `words` words at `data` to the tiles in `dests` (CSR ipu_xdests, then ipu.send). */
static inline void ipu_send(const void *data, unsigned words, const ipu_destinations *dests) {
  IPU_CSR_WRITE(0x7ca, (uintptr_t)dests);
  ipu_send_words(data, words);
}

/* A timed exchange (docs/firmware.md). The exchange has no queues: each word must find its
 * receiver listening to its sender with a buffer set, and the receiver's phase must last until
 * the word arrives. After ipu_sync every tile of the group resumes at the same cycle, the
 * release; ipu_sync_clock notes it, and the helpers below act at cycle offsets from it, with
 * latencies the platform's configuration gives, so that a program stays correct whatever code
 * the compiler makes (-O0 or -O2) and whatever exchange.base-latency an architect sweeps. */
typedef struct {
  uint64_t base; /* the tile cycle the exchange phase began at (the sync's release) */
} ipu_exchange_clock;

/* Cycles a word takes from this tile to `tile` (a tile number or IPU_REMOTE_TILE): the
 * configuration's (exchange.base-latency, the exchange columns between the tiles, IPU-Link hops
 * across chips), through CSR ipu_xlat; the same both ways. ~0u for a tile the machine lacks. */
static inline unsigned ipu_exchange_latency(uint32_t tile) {
  IPU_CSR_WRITE(0x7cf, tile);
  return IPU_CSR_READ(0x7cf);
}

/* Cycles to allow for the code between a helper's wait and its instruction, at any
 * optimisation level: a receiver ends its phase this much after the last word is due. */
#define IPU_EXCHANGE_MARGIN 256u

/* Syncs with `group` and returns the clock of the exchange phase the sync opens. */
static inline __attribute__((always_inline)) ipu_exchange_clock ipu_sync_clock(uint32_t group) {
  ipu_sync(group);
  return (ipu_exchange_clock){ipu_cycles()};
}

/* Waits until `offset` cycles into the phase. Returns 0, or how many cycles late the tile
 * already was (the code before took longer than the schedule allows: raise the offsets). */
static inline __attribute__((always_inline)) uint64_t ipu_wait_until(ipu_exchange_clock clock,
                                                                     uint64_t offset) {
  const uint64_t target = clock.base + offset, now = ipu_cycles();
  if (now >= target) return now - target;
  ipu_wait_cycles((unsigned)(target - now));
  return 0;
}

/* Sends at `offset` cycles into the phase (ipu_send); returns ipu_wait_until's lateness. */
static inline __attribute__((always_inline)) uint64_t ipu_send_at(ipu_exchange_clock clock,
                                                                  uint64_t offset,
                                                                  const void *data,
                                                                  unsigned words,
                                                                  const ipu_destinations *dests) {
  const uint64_t late = ipu_wait_until(clock, offset);
  ipu_send(data, words, dests);
  return late;
}

/* The offset by which `words` words sent at `send_offset` from (or to) `tile` have all
 * arrived, with IPU_EXCHANGE_MARGIN: when the receiver (and the sender) may end the phase. */
static inline unsigned ipu_arrived_by(uint32_t tile, unsigned send_offset, unsigned words) {
  return send_offset + words + 1u + ipu_exchange_latency(tile) + IPU_EXCHANGE_MARGIN;
}

/* Ends this tile's exchange phase at `offset` cycles into it (ipu_exchange_end). */
static inline __attribute__((always_inline)) void ipu_exchange_end_at(ipu_exchange_clock clock,
                                                                     uint64_t offset) {
  ipu_wait_until(clock, offset);
  ipu_exchange_end();
}

/* Streaming memory (the gateway's DDR on a machine; docs/gateway.md): in an exchange phase, a
 * tile writes words to it or reads words from it at a byte address (word aligned). A read's
 * words land by the tile's next ipu_sync, which waits for them; use them after it. */
static inline void ipu_sm_set_address(uint64_t address) {
  IPU_CSR_WRITE(0x7cc, (uint32_t)(address >> 32));
  IPU_CSR_WRITE(0x7cb, (uint32_t)address);
}
static inline void ipu_sm_write(uint64_t address, const void *data, unsigned words) {
  ipu_sm_set_address(address);
  ipu_sm_write_words(data, words);
}
static inline void ipu_sm_read(uint64_t address, void *buffer, unsigned words) {
  ipu_sm_set_address(address);
  ipu_sm_read_words(buffer, words);
}

#ifdef __cplusplus
}
#endif

#endif /* IPU_H */
