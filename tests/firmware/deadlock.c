/* Tile 1 exits at once while the others wait for it at a sync: nothing can make progress. */
#include "ipu.h"

int main(void) {
  if (ipu_tile_id() == 1) return 3;
  ipu_sync(0);
  return 0;
}
