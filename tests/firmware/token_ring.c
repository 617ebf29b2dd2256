/* A token passed around every tile of the chip, one hop per superstep: in superstep k tile k
 * sends the token to tile k + 1 (mod tiles), which adds one. After a full round tile 0 holds
 * 1000 + tiles and exits with status 0 if so. Senders wait 60 cycles so the receiver has
 * selected its source and buffer; everybody waits 150 more cycles for the word to land. */
#include <stdio.h>

#include "ipu.h"

static uint32_t token;
static struct {
  uint32_t count, tile;
} dest = {1, 0};

int main(void) {
  const unsigned me = ipu_tile_id(), tiles = ipu_tile_count();
  if (me == 0) token = 1000;
  for (unsigned step = 0; step < tiles; ++step) {
    ipu_sync(0);
    const unsigned from = step, to = (step + 1) % tiles;
    if (me == to) {
      ipu_listen(from);
      ipu_receive_into(&token, 1);
    }
    if (me == from) {
      dest.tile = to;
      ipu_wait_cycles(60);
      ipu_send(&token, 1, (const ipu_destinations *)&dest);
    }
    ipu_wait_cycles(150);
    ipu_exchange_end();
    if (me == to) token += 1;
  }
  ipu_sync(0);
  if (me == 0) {
    printf("token after %u hops: %lu\n", tiles, (unsigned long)token);
    return token == 1000 + tiles ? 0 : 1;
  }
  return 0;
}
