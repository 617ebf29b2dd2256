/* A cycle of waits: tile 1 syncs on group 1 (tiles 1 and 2) while tiles 0, 2 and 3 sync on
 * group 0, which needs tile 1. Configure sync.groups = "1:1-2". */
#include "ipu.h"

int main(void) {
  ipu_sync(ipu_tile_id() == 1 ? 1 : 0);
  return 0;
}
