/* Compute-bound kernel for the tile speed benchmark: CRC-32 over a 16 KiB buffer, then an f32
 * dot product, repeated. Runs on the supervisor alone, or (built with WORKERS) as the same
 * work on each of the six workers at once. The result is checked so the work cannot be
 * optimised away and a wrong simulator shows up as a non-zero exit. Built with QEMU, the
 * supervisor's kernel runs under qemu-riscv32 as the speed reference (bench/tile_mips.cpp). */
#include <stdint.h>
#ifndef QEMU /* built for qemu-riscv32 (bench/tile_mips compares): no console, no Xipu */
#include <stdio.h>

#include "ipu.h"
#endif

#define BYTES 16384
#define N 4096
#ifndef ROUNDS
#define ROUNDS 320
#endif

static uint8_t buffer[BYTES];
static float x[N], y[N];

static uint32_t crc32(const uint8_t *data, int size) {
  uint32_t crc = 0xffffffffu;
  for (int i = 0; i < size; ++i) {
    crc ^= data[i];
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xedb88320u & -(crc & 1));
  }
  return ~crc;
}

struct result {
  uint32_t crc;
  float dot;
};

static void kernel(void *arg) {
  struct result *r = arg;
  uint32_t crc = 0;
  float dot = 0;
  for (int round = 0; round < ROUNDS; ++round) {
    crc ^= crc32(buffer, BYTES);
    float s = 0;
    for (int i = 0; i < N; ++i) s += x[i] * y[i];
    dot += s;
  }
  r->crc = crc;
  r->dot = dot;
}

int main(void) {
  for (int i = 0; i < BYTES; ++i) buffer[i] = (uint8_t)(i * 7 + 3);
  for (int i = 0; i < N; ++i) {
    x[i] = (float)(i % 13);
    y[i] = 0.5f;
  }
  /* sum(i % 13) over i < 4096 = 315 * 78 + 0 (4096 = 315 * 13 + 1): the dot is 12285 per
   * round, exact in f32. */
  const float expected = 12285.0f * ROUNDS;
#ifdef WORKERS
  static struct result results[IPU_WORKER_CONTEXTS];
  for (int w = 0; w < IPU_WORKER_CONTEXTS; ++w) ipu_run(kernel, &results[w]);
  ipu_join();
  int errors = 0;
  for (int w = 0; w < IPU_WORKER_CONTEXTS; ++w)
    errors += results[w].dot != expected || results[w].crc != results[0].crc;
  printf("crc 0x%08lx dot %.1f on six workers\n", (unsigned long)results[0].crc, (double)results[0].dot);
  return errors;
#else
  struct result r;
  kernel(&r);
#ifdef QEMU
  static volatile uint32_t crc; /* the CRC's only use: it must still be computed */
  crc = r.crc;
#else
  printf("crc 0x%08lx dot %.1f\n", (unsigned long)r.crc, (double)r.dot);
#endif
  return r.dot == expected ? 0 : 1;
#endif
}
