/* ipu.h: C intrinsics of the tile (Xipu instructions and CSRs). Include from firmware compiled
 * with riscv64-unknown-elf-gcc -march=rv32imf -mabi=ilp32f; see docs/tile.md for the machine
 * model. Xipu instructions use the custom-0 opcode (0x0b) through GNU as's .insn directive, so
 * no compiler change is needed. */
#ifndef IPU_H
#define IPU_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define IPU_CSR_CONSOLE 0x7c0 /* write: one byte to this context's console */
#define IPU_CSR_WENTRY 0x7c1  /* entry of workers started by ipu.run (crt0 sets it) */
#define IPU_WORKER_CONTEXTS 6

/* Number of the calling context: 0 for the supervisor, 1..6 for workers. */
static inline unsigned ipu_context_id(void) {
  unsigned id;
  __asm__ volatile("csrr %0, mhartid" : "=r"(id));
  return id;
}

/* Tile cycles since the program started (the same counter for every context). */
static inline uint64_t ipu_cycles(void) {
  uint32_t hi, lo, hi2;
  do {
    __asm__ volatile("csrr %0, mcycleh" : "=r"(hi));
    __asm__ volatile("csrr %0, mcycle" : "=r"(lo));
    __asm__ volatile("csrr %0, mcycleh" : "=r"(hi2));
  } while (hi != hi2);
  return ((uint64_t)hi << 32) | lo;
}

/* Writes one byte to the console; a newline ends the line. */
static inline void ipu_console_putc(char c) {
  __asm__ volatile("csrw 0x7c0, %0" : : "r"(c));
}

/* ipu.run: starts `fn(arg)` on the lowest-numbered idle worker context and returns that
 * context's number (1..6). Stalls while all workers are busy. Supervisor only. */
static inline unsigned ipu_run(void (*fn)(void *), void *arg) {
  unsigned id;
  __asm__ volatile(".insn r 0x0b, 0, 0, %0, %1, %2" : "=r"(id) : "r"(fn), "r"(arg) : "memory");
  return id;
}

/* ipu.join: waits until every worker has exited. Supervisor only. */
static inline void ipu_join(void) {
  __asm__ volatile(".insn r 0x0b, 1, 0, x0, x0, x0" : : : "memory");
}

/* ipu.wexit: ends the calling worker (returning from its function does the same). */
static inline void __attribute__((noreturn)) ipu_worker_exit(void) {
  __asm__ volatile(".insn r 0x0b, 2, 0, x0, x0, x0" : : : "memory");
  __builtin_unreachable();
}

/* Ends the whole program with `status` (ecall with a7 = 93). */
static inline void __attribute__((noreturn)) ipu_exit(int status) {
  register int a0 __asm__("a0") = status;
  register int a7 __asm__("a7") = 93;
  __asm__ volatile("ecall" : : "r"(a0), "r"(a7) : "memory");
  __builtin_unreachable();
}

#ifdef __cplusplus
}
#endif

#endif /* IPU_H */
