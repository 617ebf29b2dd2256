/* Sum of one value per tile by a binary reduction tree: in round r, every tile whose number is
 * an odd multiple of 2^r sends its partial sum to the tile 2^r below it, which adds it. Tile t
 * starts with t*t + 1; tile 0 ends with sum(t*t + 1) over all tiles and prints it. */
#include <stdio.h>

#include "ipu.h"

static uint32_t partial, incoming;
static struct {
  uint32_t count, tile;
} dest = {1, 0};

int main(void) {
  const unsigned me = ipu_tile_id(), tiles = ipu_tile_count();
  partial = me * me + 1;
  for (unsigned stride = 1; stride < tiles; stride *= 2) {
    ipu_sync(0);
    const int sender = me % (2 * stride) == stride;
    const int receiver = me % (2 * stride) == 0 && me + stride < tiles;
    if (receiver) {
      ipu_listen(me + stride);
      ipu_receive_into(&incoming, 1);
    }
    if (sender) {
      dest.tile = me - stride;
      ipu_wait_cycles(60);
      ipu_send(&partial, 1, (const ipu_destinations *)&dest);
    }
    ipu_wait_cycles(150);
    ipu_exchange_end();
    if (receiver) partial += incoming;
  }
  ipu_sync(0);
  if (me == 0) printf("sum %lu\n", (unsigned long)partial);
  return 0;
}
