/* IPU-Link bandwidth (bench/ipulink_bandwidth.cpp): after an external sync each tile follows its
 * plan, which the bench writes into the tile before the run: send `send_words` words to `dest`
 * (one ipu.send, a word per cycle; or, with `period` > 0, a word every `period` cycles by the
 * cycle counter, to fill a link's fraction of a word per cycle), and receive `recv_words` words
 * from `listen`. Everybody waits long enough for the last word, ends the phase and syncs. */
#include "ipu.h"

struct plan {
  uint32_t send_words, period, dest, listen, recv_words;
};
/* In .data, not .bss: crt0 clears .bss, which would erase the bench's plan. */
volatile struct plan plan = {0, 0, 0, 0xffffffffu, 0};
static uint32_t data[4096], buffer[4096];
static struct {
  uint32_t count, tile;
} dest = {1, 0};

static inline uint32_t cycle(void) { return IPU_CSR_READ(0xc00); }

int main(void) {
  dest.tile = plan.dest;
  ipu_sync(IPU_SYNC_EXTERNAL);
  if (plan.recv_words) {
    ipu_listen(plan.listen);
    ipu_receive_into(buffer, plan.recv_words);
  }
  ipu_wait_cycles(20);  /* receivers listen before the first word */
  if (plan.send_words && plan.period == 0) {
    ipu_send(data, plan.send_words, (const ipu_destinations *)&dest);
  } else if (plan.send_words) {
    uint32_t next = cycle();
    for (uint32_t i = 0; i < plan.send_words; ++i) {
      next += plan.period;
      while ((int32_t)(cycle() - next) < 0) {
      }
      ipu_send(&data[i], 1, (const ipu_destinations *)&dest);
    }
  }
  ipu_wait_cycles(6000);
  ipu_exchange_end();
  ipu_sync(IPU_SYNC_EXTERNAL);
  return 0;
}
