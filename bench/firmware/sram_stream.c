/* Local SRAM bandwidth: on every tile, six workers stream through memory with ipu.ld2x64st64
 * (16 bytes loaded and 8 stored per issue), 128 per loop iteration. The supervisor records the
 * tile cycles from the first worker start to the join in `window` for the benchmark to read. */
#include "ipu.h"

#define BLOCK 128 /* ld2x64st64 per iteration */
#ifndef ITERATIONS
#define ITERATIONS 4
#endif

static uint64_t source[IPU_WORKER_CONTEXTS][2 * BLOCK];
static uint64_t sink[IPU_WORKER_CONTEXTS][BLOCK];
volatile uint32_t window;  /* read by bench/sram_bandwidth through the symbol table */

static void stream(void *arg) {
  const unsigned w = (unsigned)(uintptr_t)arg;
  ipu_f32x2 store = ipu_f32x2_make(1.0f, 2.0f);
  for (int i = 0; i < ITERATIONS; ++i) {
    ipu_stream s = {source[w], sink[w]};
#define X ipu_ld2x64st64(&s, store);
#define X8 X X X X X X X X
    X8 X8 X8 X8 X8 X8 X8 X8 X8 X8 X8 X8 X8 X8 X8 X8
  }
}

int main(void) {
  const uint64_t t0 = ipu_cycles();
  for (unsigned w = 0; w < IPU_WORKER_CONTEXTS; ++w) ipu_run(stream, (void *)(uintptr_t)w);
  ipu_join();
  window = (uint32_t)(ipu_cycles() - t0);
  return 0;
}
