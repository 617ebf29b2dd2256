/* Streaming-memory bandwidth (bench/streaming_memory.cpp): after an external sync each tile with
 * a plan (written into the tile by the bench before the run) writes its buffer to streaming
 * memory, or reads streaming memory into it, in one transfer; its next sync waits for it. The
 * buffer starts as a pattern of the tile's chip, tile and index, which the bench checks. */
#include "ipu.h"

struct plan {
  uint32_t words, write, address_low, address_high;
};
/* In .data, not .bss: crt0 clears .bss, which would erase the bench's plan. */
__attribute__((section(".data"))) volatile struct plan plan; /* all zero: .bss otherwise */
uint32_t buffer[8192];

int main(void) {
  const uint32_t tag = ipu_chip_id() << 24 | ipu_tile_id() << 13;
  for (uint32_t i = 0; i < plan.words; ++i) buffer[i] = tag | i;
  ipu_sync(IPU_SYNC_EXTERNAL);
  if (plan.words) {
    const uint64_t address = (uint64_t)plan.address_high << 32 | plan.address_low;
    if (plan.write)
      ipu_sm_write(address, buffer, plan.words);
    else
      ipu_sm_read(address, buffer, plan.words);
  }
  ipu_exchange_end();
  ipu_sync(IPU_SYNC_EXTERNAL);
  return 0;
}
