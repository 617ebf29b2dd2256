/* Steady-state AMP matmul on one tile for bench/amp_peak: each of the six workers holds a
 * 16x16 f16 (or 8x8 f32) block of A as four weight phases and streams COLUMNS columns of B
 * through the AMP, 16 columns (64 ipu.amp) per loop iteration. Printed: the MAC count, the tile
 * cycles of the whole run (first worker start to join, with weight loads and start-up) and of
 * the steady state (the first worker's first stream cycle to the last worker's last). */
#include <stdint.h>
#include <stdio.h>

#include "ipu.h"

#define COLUMNS 512
#define INPUT_BYTES (COLUMNS * 32) /* 4 inputs of 8 bytes per column */

static uint64_t b_columns[INPUT_BYTES / 8];                 /* shared input stream */
static uint64_t weights[4][128 / 8];                        /* four phases, 128 B each */
static float results[IPU_WORKER_CONTEXTS][COLUMNS * 16];    /* each worker's C^T */
static int f32_mode;
static uint64_t stream_start[IPU_WORKER_CONTEXTS + 1], stream_end[IPU_WORKER_CONTEXTS + 1];

static void stream(void *arg) {
  float *out = arg;
  const unsigned me = ipu_context_id();
  ipu_amp_configure(f32_mode ? IPU_AMP_F32 : IPU_AMP_F16, 4, 0, b_columns, out);
  for (unsigned phase = 0; phase < 4; ++phase) ipu_amp_load_weights(weights[phase], phase);
  stream_start[me] = ipu_cycles();
  for (int c = 0; c < COLUMNS; c += 16) {
#define AMP4 ipu_amp(); ipu_amp(); ipu_amp(); ipu_amp();
    AMP4 AMP4 AMP4 AMP4 AMP4 AMP4 AMP4 AMP4 AMP4 AMP4 AMP4 AMP4 AMP4 AMP4 AMP4 AMP4
  }
  stream_end[me] = ipu_cycles();
}

static void measure(int f32) {
  f32_mode = f32;
  const uint64_t t0 = ipu_cycles();
  for (int w = 0; w < IPU_WORKER_CONTEXTS; ++w) ipu_run(stream, results[w]);
  ipu_join();
  const uint64_t t1 = ipu_cycles();
  uint64_t first = ~0ull, last = 0;
  for (int w = 1; w <= IPU_WORKER_CONTEXTS; ++w) {
    if (stream_start[w] < first) first = stream_start[w];
    if (stream_end[w] > last) last = stream_end[w];
  }
  const unsigned long long macs =
      (unsigned long long)IPU_WORKER_CONTEXTS * COLUMNS * 4 * (f32 ? 16 : 64);
  printf("%s macs=%llu cycles=%llu steady=%llu\n", f32 ? "f32" : "f16", macs,
         (unsigned long long)(t1 - t0), (unsigned long long)(last - first));
}

int main(void) {
  /* Small exact values: 1.0 (f16 0x3c00, f32 1.0f) so results are checkable by eye. */
  for (unsigned i = 0; i < INPUT_BYTES / 8; ++i) b_columns[i] = 0x3c003c003c003c00ull;
  for (unsigned p = 0; p < 4; ++p)
    for (unsigned i = 0; i < 16; ++i) weights[p][i] = 0x3c003c003c003c00ull;
  measure(0);
  /* 16 inputs of 1.0 times weights of 1.0: each f16 result is 16. */
  int errors = results[5][COLUMNS * 16 - 1] != 16.0f;
  for (unsigned i = 0; i < INPUT_BYTES / 8; ++i) b_columns[i] = 0x3f8000003f800000ull;
  for (unsigned p = 0; p < 4; ++p)
    for (unsigned i = 0; i < 16; ++i) weights[p][i] = 0x3f8000003f800000ull;
  measure(1);
  /* 8 inputs of 1.0 per f32 result. */
  errors += results[5][COLUMNS * 8 - 1] != 8.0f;
  return errors;
}
