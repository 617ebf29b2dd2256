/* A ring of data around every chip of the machine, one hop per external superstep: in each of
 * `chips` supersteps tile 0 of every chip sends its token (chip + 1) on to tile 0 of the next
 * chip and adds the token it receives from the previous one. After a full round every chip has
 * added every token once: chips x (chips + 1) / 2 (136 on a POD16), its exit status. Tiles
 * wait 2000 cycles so the farthest word (15 -> 0 on a POD16 ladder: 8 hops) has landed. */
#include "ipu.h"

static uint32_t incoming;
static struct {
  uint32_t count, tile;
} dest = {1, 0};

int main(void) {
  const unsigned chip = ipu_chip_id(), chips = ipu_chip_count();
  const uint32_t token = chip + 1;
  uint32_t sum = 0;
  dest.tile = IPU_REMOTE_TILE((chip + 1) % chips, 0);
  for (unsigned step = 0; step < chips; ++step) {
    const uint32_t sending = step == 0 ? token : incoming;
    ipu_sync(IPU_SYNC_EXTERNAL);
    ipu_listen(IPU_REMOTE_TILE((chip + chips - 1) % chips, 0));
    ipu_receive_into(&incoming, 1);
    ipu_wait_cycles(20);
    ipu_send(&sending, 1, (const ipu_destinations *)&dest);
    ipu_wait_cycles(2000);
    ipu_exchange_end();
    sum += incoming;
  }
  return (int)sum;
}
