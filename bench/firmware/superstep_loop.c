/* A compute-and-exchange superstep loop on every tile: six workers each compute a dot product
 * of 256 f32 values, the supervisor sums them, then the tiles exchange 64 words with their ring
 * neighbours. */
#include "ipu.h"

#ifndef STEPS
#define STEPS 10
#endif
/* Tiles in the ring (the image loads tiles 0 .. RING-1; default: the whole chip). */
#ifndef RING
#define RING ipu_tile_count()
#endif
#define N 256
#define WORDS 64

static float x[N], y[N], partial[IPU_WORKER_CONTEXTS];
static uint32_t out[WORDS], in[WORDS];
static struct {
  uint32_t count, tile;
} dest = {1, 0};

static void dot(void *arg) {
  const unsigned w = (unsigned)(uintptr_t)arg;
  float s = 0;
  for (int i = 0; i < N; ++i) s += x[i] * y[i];
  partial[w] = s;
}

#ifdef MACHINE_RING
/* The ring runs through every tile of every chip (chip c's last tile sends to chip c + 1's first)
 * after external syncs; words crossing the most IPU-Links (15 -> 0 on a POD16: 8 hops of 133
 * cycles on Mk2, 186 on Bow) arrive up to about 1,550 cycles after they leave. */
#define SYNC IPU_SYNC_EXTERNAL
#define SLACK 2000
#else
#define SYNC 0
#define SLACK 100
#endif

int main(void) {
  const unsigned me = ipu_tile_id(), n = RING;
  for (int i = 0; i < N; ++i) x[i] = y[i] = (float)(i % 8);
#ifdef MACHINE_RING
  const unsigned total = n * ipu_chip_count(), g = ipu_chip_id() * n + me;
  const unsigned next = (g + 1) % total, previous = (g + total - 1) % total;
  dest.tile = IPU_REMOTE_TILE(next / n, next % n);
  const unsigned source = IPU_REMOTE_TILE(previous / n, previous % n);
#else
  dest.tile = (me + 1) % n;
  const unsigned source = (me + n - 1) % n;
#endif
  for (int step = 0; step < STEPS; ++step) {
    for (unsigned w = 0; w < IPU_WORKER_CONTEXTS; ++w) ipu_run(dot, (void *)(uintptr_t)w);
    ipu_join();
    float total = 0;
    for (unsigned w = 0; w < IPU_WORKER_CONTEXTS; ++w) total += partial[w];
    for (int i = 0; i < WORDS; ++i) out[i] = (uint32_t)total + (uint32_t)i;
    ipu_sync(SYNC);
    ipu_listen(source);
    ipu_receive_into(in, WORDS);
    IPU_CSR_WRITE(0x7ca, (uintptr_t)&dest);
    ipu_wait_cycles(60);
    ipu_send_words(out, WORDS);
    ipu_wait_cycles(WORDS + SLACK);
    ipu_exchange_end();
  }
  ipu_sync(SYNC);
  return in[0] == out[0] ? 0 : 1;
}
