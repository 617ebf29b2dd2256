/* Local SRAM bandwidth: on every tile, six workers stream through memory with ipu.ld2x64st64
 * (16 bytes loaded and 8 stored per issue), 128 per loop iteration. Recorded for the benchmark
 * (read through the symbol table): `window`, the tile cycles of the steady state (the first
 * worker's first stream cycle to the last worker's last), and `whole`, first start to join. */
#include "ipu.h"

#define BLOCK 128 /* ld2x64st64 per iteration */
#ifndef ITERATIONS
#define ITERATIONS 4
#endif

/* Each worker streams through its own buffers, start to end, without resetting its pointers. */
static uint64_t source[IPU_WORKER_CONTEXTS][2 * BLOCK * ITERATIONS];
static uint64_t sink[IPU_WORKER_CONTEXTS][BLOCK * ITERATIONS];
volatile uint32_t window, whole;
static uint64_t started[IPU_WORKER_CONTEXTS], finished[IPU_WORKER_CONTEXTS];

static void stream(void *arg) {
  const unsigned w = (unsigned)(uintptr_t)arg;
  ipu_f32x2 store = ipu_f32x2_make(1.0f, 2.0f);
  ipu_stream s = {source[w], sink[w]};
  started[w] = ipu_cycles();
  for (int i = 0; i < ITERATIONS; ++i) {
#define X ipu_ld2x64st64(&s, store);
#define X8 X X X X X X X X
    X8 X8 X8 X8 X8 X8 X8 X8 X8 X8 X8 X8 X8 X8 X8 X8
  }
  finished[w] = ipu_cycles();
}

int main(void) {
  const uint64_t t0 = ipu_cycles();
  for (unsigned w = 0; w < IPU_WORKER_CONTEXTS; ++w) ipu_run(stream, (void *)(uintptr_t)w);
  ipu_join();
  whole = (uint32_t)(ipu_cycles() - t0);
  uint64_t first = ~0ull, last = 0;
  for (unsigned w = 0; w < IPU_WORKER_CONTEXTS; ++w) {
    if (started[w] < first) first = started[w];
    if (finished[w] > last) last = finished[w];
  }
  window = (uint32_t)(last - first);
  return 0;
}
