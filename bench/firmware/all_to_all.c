/* All-to-all exchange on every tile of the chip: in round r each tile sends WORDS words to tile
 * (t + r) mod N and receives WORDS words from tile (t - r) mod N, so every tile sends and
 * receives one word per cycle for WORDS cycles. The send starts 100 cycles after the release
 * (when every receiver is listening) and everybody ends the phase after the last arrival. */
#include "ipu.h"

#ifndef WORDS
#define WORDS 8192
#endif
#ifndef ROUNDS
#define ROUNDS 2
#endif

static uint32_t out[WORDS], in[WORDS];
static struct {
  uint32_t count, tile;
} dest = {1, 0};

int main(void) {
  const unsigned me = ipu_tile_id(), n = ipu_tile_count();
  for (unsigned i = 0; i < WORDS; ++i) out[i] = me * 65536 + i;
  for (unsigned r = 1; r <= ROUNDS; ++r) {
    const unsigned to = (me + r) % n, from = (me + n - r) % n;
    dest.tile = to;
    ipu_sync(0);
    ipu_listen(from);
    ipu_receive_into(in, WORDS);
    IPU_CSR_WRITE(0x7ca, (uintptr_t)&dest);
    ipu_wait_cycles(100);
    ipu_send_words(out, WORDS);
    ipu_wait_cycles(WORDS + 100);
    ipu_exchange_end();
    if (in[WORDS - 1] != from * 65536 + WORDS - 1) return 1;
  }
  ipu_sync(0);
  return 0;
}
