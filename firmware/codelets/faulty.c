/* A codelet that reads through a null pointer: the SDK's test that a trap on a tile reaches
 * the host as an exception carrying the tile's report.  fields: none */
#include <stdint.h>

void read_null(const void *v) {
  (void)v;
  volatile const uint32_t *p = 0;
  (void)*p;
}

/* A codelet that never returns: the device's cycle limit must stop it. */
void spin_forever(const void *v) {
  (void)v;
  for (volatile int i = 0;; i = i + 1) {
  }
}
