/* Elementwise and reduction codelets of the SDK's codelet library. Each runs on one worker with
 * its fields (declared beside it, in this order) as one 32-bit word each. */
#include <stdint.h>

#include "ipu.h"

/* add_f32: out[i] = a[i] + b[i].  fields: a (in f32), b (in f32), out (out f32), n (scalar) */
struct add_f32_fields {
  const float *a, *b;
  float *out;
  uint32_t n;
};
void add_f32(const struct add_f32_fields *v) {
  for (uint32_t i = 0; i < v->n; ++i) v->out[i] = v->a[i] + v->b[i];
}

/* add_f32_workers: add_f32 run on all six workers (a six-worker vertex); worker w adds its
 * sixth of the elements.  fields: as add_f32 */
void add_f32_workers(const struct add_f32_fields *v) {
  const uint32_t w = ipu_context_id() - 1;
  const uint32_t begin = v->n * w / 6, end = v->n * (w + 1) / 6;
  for (uint32_t i = begin; i < end; ++i) v->out[i] = v->a[i] + v->b[i];
}

/* scale_add_f32: out[i] = out[i] + k * a[i], k = bits of an f32.  fields: a, out, n, k */
struct scale_add_f32_fields {
  const float *a;
  float *out;
  uint32_t n, k;
};
void scale_add_f32(const struct scale_add_f32_fields *v) {
  union {
    uint32_t u;
    float f;
  } k = {v->k};
  for (uint32_t i = 0; i < v->n; ++i) v->out[i] += k.f * v->a[i];
}

/* sum_f32: out[0] = a[0] + a[1] + ... + a[n-1], adding left to right.  fields: a, out, n */
struct sum_f32_fields {
  const float *a;
  float *out;
  uint32_t n;
};
void sum_f32(const struct sum_f32_fields *v) {
  float s = 0.0f;
  for (uint32_t i = 0; i < v->n; ++i) s += v->a[i];
  v->out[0] = s;
}
