/* Back-to-back internal syncs on every tile, with nothing to compute between them. */
#include "ipu.h"

#ifndef SYNCS
#define SYNCS 20
#endif

int main(void) {
  for (int i = 0; i < SYNCS; ++i) {
    ipu_sync(0);
    ipu_exchange_end();
  }
  return 0;
}
