/* saxpy: y[i] = k * x[i] + y[i] with k = 2.5, on one worker.  fields: x (in), y (inout), n */
#include <stdint.h>

#include "ipu.h"

struct saxpy_fields {
  const float *x;
  float *y;
  uint32_t n;
};
void saxpy(const struct saxpy_fields *v) {
  for (uint32_t i = 0; i < v->n; ++i) v->y[i] = 2.5f * v->x[i] + v->y[i];
}
