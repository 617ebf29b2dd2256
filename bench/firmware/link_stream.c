/* IPU-Link bandwidth (bench/ipulink_bandwidth.cpp): after an external sync each tile follows its
 * plan, which the bench writes into the tile before the run: send `send_words` words to `dest`
 * from `start` cycles after the sync's release (one ipu.send, a word per cycle), or with
 * `period` > 0 one word at a time, at start, start + period, ... (to fill a link's fraction of
 * a word per cycle); and receive `recv_words` words from `listen`. The link has no queue, so
 * the fraction's words must keep their spacing exactly: each is sent at its cycle from the
 * release (ipu.h's exchange clock), not after however long the loop before it took. A word
 * sent late ends the run with status 3. Everybody waits long enough for the last word, ends
 * the phase and syncs. */
#include "ipu.h"

struct plan {
  uint32_t send_words, period, start, dest, listen, recv_words;
};
/* In .data, not .bss: crt0 clears .bss, which would erase the bench's plan. */
volatile struct plan plan = {0, 0, 0, 0, 0xffffffffu, 0};
static uint32_t data[4096], buffer[4096];
static struct {
  uint32_t count, tile;
} dest = {1, 0};

int main(void) {
  dest.tile = plan.dest;
  const ipu_exchange_clock clock = ipu_sync_clock(IPU_SYNC_EXTERNAL);
  if (plan.recv_words) {
    ipu_listen(plan.listen);
    ipu_receive_into(buffer, plan.recv_words);
  }
  const ipu_destinations *to = (const ipu_destinations *)&dest;
  uint64_t late = 0;
  if (plan.send_words && plan.period == 0) {
    late = ipu_send_at(clock, plan.start, data, plan.send_words, to);
  } else if (plan.send_words) {
    for (uint32_t i = 0; i < plan.send_words; ++i)
      late |= ipu_send_at(clock, plan.start + (uint64_t)i * plan.period, &data[i], 1, to);
  }
  ipu_wait_cycles(6000);
  ipu_exchange_end();
  ipu_sync(IPU_SYNC_EXTERNAL);
  return late ? 3 : 0;
}
