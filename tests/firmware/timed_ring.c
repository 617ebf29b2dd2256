/* token_ring.c timed by the exchange clock (ipu.h, docs/firmware.md) instead of fixed waits: a
 * token passed around every tile, one hop a superstep, tile k sending to tile k + 1 (mod tiles),
 * which adds one. The receiver sets its source and buffer at once, the sender sends at
 * SEND_AT cycles into the phase, and both end the phase when the word has arrived by the
 * configuration's latency between them. It stays correct at -O0 and -O2 and at any
 * exchange.base-latency; a tile that reaches an offset late says so and fails. Tile 0 exits
 * with status 0 when it holds 1000 + tiles after the round. */
#include <stdio.h>

#include "ipu.h"

#define SEND_AT 1000u /* cycles into the phase: the receiver is ready by then, even at -O0 */

static uint32_t token;
static struct {
  uint32_t count, tile;
} dest = {1, 0};

int main(void) {
  const unsigned me = ipu_tile_id(), tiles = ipu_program_tile_count();
  uint64_t late = 0;
  if (me == 0) token = 1000;
  for (unsigned step = 0; step < tiles; ++step) {
    const ipu_exchange_clock clock = ipu_sync_clock(0);
    const unsigned from = step, to = (step + 1) % tiles;
    if (me == to) {
      ipu_listen(from);
      ipu_receive_into(&token, 1);
      late += ipu_wait_until(clock, SEND_AT); /* ready before the word can leave */
      ipu_exchange_end_at(clock, ipu_arrived_by(from, SEND_AT, 1));
      token += 1;
    } else if (me == from) {
      dest.tile = to;
      late += ipu_send_at(clock, SEND_AT, &token, 1, (const ipu_destinations *)&dest);
      ipu_exchange_end_at(clock, ipu_arrived_by(to, SEND_AT, 1));
    } else {
      ipu_exchange_end();
    }
  }
  ipu_sync(0);
  if (late != 0) printf("tile %u reached its offsets %lu cycles late\n", me, (unsigned long)late);
  if (me == 0) {
    printf("token after %u hops: %lu\n", tiles, (unsigned long)token);
    printf("exchange latency to tile %u: %u cycles; to a tile the machine lacks: %d\n", tiles - 1,
           ipu_exchange_latency(tiles - 1), (int)ipu_exchange_latency(100000));
  }
  return late != 0 ? 2 : me == 0 && token != 1000 + tiles ? 1 : 0;
}
