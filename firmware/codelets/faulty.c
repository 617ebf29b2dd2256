/* A codelet that reads through a null pointer: the SDK's test that a trap on a tile reaches
 * the host as an exception carrying the tile's report.  fields: none */
#include <stdint.h>

void read_null(const void *v) {
  (void)v;
  volatile const uint32_t *p = 0;
  (void)*p;
}
