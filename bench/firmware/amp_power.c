/* The AMP at its peak on every tile, for bench/power: each of the six workers streams COLUMNS
 * columns of f16 B through four phases of weights, REPEAT times, 16 columns (64 ipu.amp) per
 * loop iteration, as bench/firmware/amp_kernel.c does on one tile. Nothing is printed: the
 * benchmark reads the run's counts and energy. Few columns and many passes keep the start-up
 * (zeroing .bss on the supervisor) to about an eighth of the run. */
#include <stdint.h>

#include "ipu.h"

#define COLUMNS 32
#define REPEAT 1536
#define INPUT_BYTES (COLUMNS * 32) /* 4 inputs of 8 bytes per column */

static uint64_t b_columns[INPUT_BYTES / 8];
static uint64_t weights[4][128 / 8];
static float results[IPU_WORKER_CONTEXTS][COLUMNS * 16];

static void stream(void *arg) {
  float *out = arg;
  ipu_amp_configure(IPU_AMP_F16, 4, 0, b_columns, out);
  for (unsigned phase = 0; phase < 4; ++phase) ipu_amp_load_weights(weights[phase], phase);
  for (int r = 0; r < REPEAT; ++r) {
    ipu_amp_configure(IPU_AMP_F16, 4, 0, b_columns, out);
    for (int c = 0; c < COLUMNS; c += 16) {
#define AMP4 ipu_amp(); ipu_amp(); ipu_amp(); ipu_amp();
      AMP4 AMP4 AMP4 AMP4 AMP4 AMP4 AMP4 AMP4 AMP4 AMP4 AMP4 AMP4 AMP4 AMP4 AMP4 AMP4
    }
  }
}

int main(void) {
  for (unsigned i = 0; i < INPUT_BYTES / 8; ++i) b_columns[i] = 0x3c003c003c003c00ull;
  for (unsigned p = 0; p < 4; ++p)
    for (unsigned i = 0; i < 16; ++i) weights[p][i] = 0x3c003c003c003c00ull;
  for (int w = 0; w < IPU_WORKER_CONTEXTS; ++w) ipu_run(stream, results[w]);
  ipu_join();
  /* 16 inputs of 1.0 times weights of 1.0 in every result. */
  return results[5][COLUMNS * 16 - 1] != 16.0f;
}
