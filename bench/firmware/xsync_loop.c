/* External sync cost (bench/external_sync.cpp): tile 0 of every chip syncs externally 100
 * times back to back with nothing between. */
#include "ipu.h"

int main(void) {
  for (int i = 0; i < 100; ++i) ipu_sync(IPU_SYNC_EXTERNAL);
  return 0;
}
