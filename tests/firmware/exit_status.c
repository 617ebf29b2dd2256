/* Tiles that exit with different statuses: 7 on every third tile from tile 2, 0 elsewhere, after
 * running the six workers `tile + 1` times each, so that the per-context table has a known
 * number of runs per tile. */
#include "ipu.h"

static volatile uint32_t sink[IPU_WORKER_CONTEXTS];

static void spin(void *arg) {
  const uint32_t i = (uint32_t)(uintptr_t)arg;
  for (uint32_t k = 0; k < 100; ++k) sink[i] += k;
}

int main(void) {
  const unsigned tile = ipu_tile_id();
  for (unsigned round = 0; round <= tile; ++round) {
    for (uintptr_t w = 0; w < IPU_WORKER_CONTEXTS; ++w) ipu_run(spin, (void *)w);
    ipu_join();
  }
  return tile % 3 == 2 ? 7 : 0;
}
