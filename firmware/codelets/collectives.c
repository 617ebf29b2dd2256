/* The collectives' codelets: the SDK compiler adds them to a graph whose program has an
 * AllReduce or ReduceScatter, one six-worker vertex per tile piece of each ring step. Each
 * worker takes its sixth of the elements (ipu_context_id() is 1..6).
 *   ipu_ring_<op>_<type>: acc[i] = acc[i] <op> data[i]  fields: acc (inout), data (in), n
 *   ipu_ring_scale_f32:   acc[i] = acc[i] * k           fields: acc (inout), n, k (f32 bits) */
#include <stdint.h>

#include "ipu.h"

struct ring_f32_fields {
  float *acc;
  const float *data;
  uint32_t n;
};
struct ring_i32_fields {
  int32_t *acc;
  const int32_t *data;
  uint32_t n;
};

/* A piece fits a tile's memory, so n x 6 fits 32 bits. */
#define WORKER_SHARE(n)                    \
  const uint32_t w = ipu_context_id() - 1; \
  const uint32_t begin = (n) * w / 6;      \
  const uint32_t end = (n) * (w + 1) / 6

void ipu_ring_sum_f32(const struct ring_f32_fields *v) {
  WORKER_SHARE(v->n);
  for (uint32_t i = begin; i < end; ++i) v->acc[i] = v->acc[i] + v->data[i];
}

void ipu_ring_max_f32(const struct ring_f32_fields *v) {
  WORKER_SHARE(v->n);
  for (uint32_t i = begin; i < end; ++i)
    if (v->data[i] > v->acc[i]) v->acc[i] = v->data[i];
}

void ipu_ring_sum_i32(const struct ring_i32_fields *v) {
  WORKER_SHARE(v->n);
  /* Wrapping, as the host's two's-complement sum: added as unsigned. */
  for (uint32_t i = begin; i < end; ++i)
    v->acc[i] = (int32_t)((uint32_t)v->acc[i] + (uint32_t)v->data[i]);
}

void ipu_ring_max_i32(const struct ring_i32_fields *v) {
  WORKER_SHARE(v->n);
  for (uint32_t i = begin; i < end; ++i)
    if (v->data[i] > v->acc[i]) v->acc[i] = v->data[i];
}

struct ring_scale_fields {
  float *acc;
  uint32_t n, k;
};

void ipu_ring_scale_f32(const struct ring_scale_fields *v) {
  WORKER_SHARE(v->n);
  union {
    uint32_t u;
    float f;
  } k = {v->k};
  for (uint32_t i = begin; i < end; ++i) v->acc[i] = v->acc[i] * k.f;
}
