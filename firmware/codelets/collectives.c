/* The collectives' codelets: the SDK compiler adds them to a graph whose program has an
 * AllReduce or ReduceScatter, one six-worker vertex per tile piece of each ring step. Each
 * worker takes its sixth of the elements (ipu_context_id() is 1..6).
 *   ipu_ring_<op>_<type>: acc[i] = acc[i] <op> data[i]  fields: acc (inout), data (in), n
 *   ipu_ring_scale_f32:   acc[i] = acc[i] * k           fields: acc (inout), n, k (f32 bits)
 *   ipu_tiles_<op>_<type>: out[i] = in[0][i] <op> in[1][i] <op> ... <op> in[rows-1][i], rows in
 *     order (the collectives across the tiles of a chip)  fields: in, out, rows, n
 * f16 tensors travel as words of two lanes (n elements, n even); their sums, maxima and scaling
 * are the hardware's f16 arithmetic (ipu.f16v4add / max / mul), rounded to nearest even:
 *   ipu_ring_<op>_f16, ipu_ring_scale_f16 (k: f16 bits in the low half) */
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

struct ring_f16_fields {
  uint32_t *acc;
  const uint32_t *data;
  uint32_t n;
};

/* Four lanes from two words (the second word's lanes zero past the end). */
static inline ipu_f16x4 lanes4(const uint32_t *p, int two) {
  const uint16_t l[4] = {(uint16_t)p[0], (uint16_t)(p[0] >> 16), two ? (uint16_t)p[1] : 0,
                         two ? (uint16_t)(p[1] >> 16) : 0};
  return ipu_f16x4_from_bits(l);
}
static inline void store4(uint32_t *p, int two, ipu_f16x4 v) {
  uint16_t l[4];
  ipu_f16x4_to_bits(v, l);
  p[0] = (uint32_t)l[0] | (uint32_t)l[1] << 16;
  if (two) p[1] = (uint32_t)l[2] | (uint32_t)l[3] << 16;
}

/* Each worker takes its sixth of the word pairs; `op` combines four lanes. */
#define RING_F16(op)                                           \
  const uint32_t words = v->n / 2;                             \
  WORKER_SHARE((words + 1) / 2);                               \
  ipu_set_stochastic_rounding(0);                              \
  for (uint32_t q = begin; q < end; ++q) {                     \
    const uint32_t i = 2 * q;                                  \
    const int two = i + 1 < words;                             \
    store4(v->acc + i, two, op(lanes4(v->acc + i, two), lanes4(v->data + i, two))); \
  }

void ipu_ring_sum_f16(const struct ring_f16_fields *v) { RING_F16(ipu_f16v4add) }
void ipu_ring_max_f16(const struct ring_f16_fields *v) { RING_F16(ipu_f16v4max) }

struct ring_scale_f16_fields {
  uint32_t *acc;
  uint32_t n, k;
};

void ipu_ring_scale_f16(const struct ring_scale_f16_fields *v) {
  const uint32_t words = v->n / 2;
  WORKER_SHARE((words + 1) / 2);
  ipu_set_stochastic_rounding(0);
  const uint32_t kk = (v->k & 0xffff) * 0x10001u;
  const uint32_t k2[2] = {kk, kk};
  for (uint32_t q = begin; q < end; ++q) {
    const uint32_t i = 2 * q;
    const int two = i + 1 < words;
    store4(v->acc + i, two, ipu_f16v4mul(lanes4(v->acc + i, two), lanes4(k2, 1)));
  }
}

struct tiles_f32_fields {
  const float *in;
  float *out;
  uint32_t rows, n;
};
struct tiles_i32_fields {
  const int32_t *in;
  int32_t *out;
  uint32_t rows, n;
};

void ipu_tiles_sum_f32(const struct tiles_f32_fields *v) {
  WORKER_SHARE(v->n);
  for (uint32_t i = begin; i < end; ++i) {
    float s = v->in[i];
    for (uint32_t r = 1; r < v->rows; ++r) s = s + v->in[r * v->n + i];
    v->out[i] = s;
  }
}

void ipu_tiles_max_f32(const struct tiles_f32_fields *v) {
  WORKER_SHARE(v->n);
  for (uint32_t i = begin; i < end; ++i) {
    float s = v->in[i];
    for (uint32_t r = 1; r < v->rows; ++r)
      if (v->in[r * v->n + i] > s) s = v->in[r * v->n + i];
    v->out[i] = s;
  }
}

void ipu_tiles_sum_i32(const struct tiles_i32_fields *v) {
  WORKER_SHARE(v->n);
  for (uint32_t i = begin; i < end; ++i) {
    uint32_t s = (uint32_t)v->in[i];
    for (uint32_t r = 1; r < v->rows; ++r) s += (uint32_t)v->in[r * v->n + i];
    v->out[i] = (int32_t)s;
  }
}

void ipu_tiles_max_i32(const struct tiles_i32_fields *v) {
  WORKER_SHARE(v->n);
  for (uint32_t i = begin; i < end; ++i) {
    int32_t s = v->in[i];
    for (uint32_t r = 1; r < v->rows; ++r)
      if (v->in[r * v->n + i] > s) s = v->in[r * v->n + i];
    v->out[i] = s;
  }
}
