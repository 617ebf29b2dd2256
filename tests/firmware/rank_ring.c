/* A machine program for splitting chips over MPI ranks (tests/cli/same_for_ranks.sh): each of
 * the first 4 tiles of every chip computes on six workers, prints a line, and passes its value
 * round the chips (tile t of chip c to tile t of chip c + 1) in `chips` external supersteps,
 * adding what it receives. Every tile ends with the sum over the ring, the same on every chip:
 * sum over chips c of value(c, t). With FAULT, tile 1 of the last chip dereferences null after
 * the first superstep, so a fault on a chip of the last rank ends the run. With STEPS, the ring
 * turns STEPS times instead of once round the chips (a long run, for tests/cli/rank_stops.sh). */
#include <stdio.h>

#include "ipu.h"

static uint32_t incoming;
static uint32_t partial[IPU_WORKER_CONTEXTS];
static struct {
  uint32_t count, tile;
} dest = {1, 0};

struct part {
  uint32_t seed, index;
};
static struct part parts[IPU_WORKER_CONTEXTS];

static void work(void *arg) {
  const struct part *p = arg;
  uint32_t x = p->seed * 2654435761u + p->index;
  for (int i = 0; i < 2000; ++i) x = x * 1103515245u + 12345u;
  partial[p->index] = x >> 8;
}

static uint32_t value(unsigned chip, unsigned tile) {
  for (unsigned w = 0; w < IPU_WORKER_CONTEXTS; ++w) {
    parts[w].seed = chip * 64 + tile;
    parts[w].index = w;
    ipu_run(work, &parts[w]);
  }
  ipu_join();
  uint32_t v = 0;
  for (unsigned w = 0; w < IPU_WORKER_CONTEXTS; ++w) v += partial[w];
  return v;
}

int main(void) {
  const unsigned chip = ipu_chip_id(), chips = ipu_chip_count(), tile = ipu_tile_id();
  const uint32_t mine = value(chip, tile);
  printf("chip %u tile %u: value %08x\n", chip, tile, (unsigned)mine);
  uint32_t sum = mine, sending = mine;
  dest.tile = IPU_REMOTE_TILE((chip + 1) % chips, tile);
#ifdef STEPS
  const unsigned steps = STEPS;
#else
  const unsigned steps = chips;
#endif
  for (unsigned step = 1; step < steps; ++step) {
    ipu_sync(IPU_SYNC_EXTERNAL);
    ipu_listen(IPU_REMOTE_TILE((chip + chips - 1) % chips, tile));
    ipu_receive_into(&incoming, 1);
    ipu_wait_cycles(20 + 4 * tile);
    ipu_send(&sending, 1, (const ipu_destinations *)&dest);
    ipu_wait_cycles(2000);
    ipu_exchange_end();
    sum += incoming;
    sending = incoming;
#ifdef FAULT
    if (chip == chips - 1 && tile == 1) {
      volatile uint32_t *p = 0;
      sum += *p;
    }
#endif
  }
  /* The expected ring sum, computed here too: each tile checks its own. */
  uint32_t expected = 0;
  for (unsigned c = 0; c < chips; ++c) expected += value(c, tile);
  printf("chip %u tile %u: ring sum %08x %s\n", chip, tile, (unsigned)sum,
         sum == expected ? "ok" : "WRONG");
  return sum == expected ? 0 : 1;
}
