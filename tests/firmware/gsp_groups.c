/* Grouped sync: tiles 0-1 (group 1) run 10 short supersteps while tiles 2-3 (group 2) run 3
 * long ones, each group syncing on its own. Configure sync.groups = "1:0-1;2:2-3". */
#include "ipu.h"

int main(void) {
  const unsigned me = ipu_tile_id();
  const unsigned group = me < 2 ? 1 : 2;
  const int steps = group == 1 ? 10 : 3;
  const unsigned work = group == 1 ? 100 : 2000;
  for (int s = 0; s < steps; ++s) {
    volatile unsigned spin = 0;
    for (unsigned i = 0; i < work; ++i) spin += i;
    ipu_sync(group);
    ipu_exchange_end();
  }
  return 0;
}
