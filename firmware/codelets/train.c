/* Codelets of the data-parallel training example (examples/train_app.cpp): a two-layer
 * perceptron y = W2 relu(W1 x) whose hidden units are spread over the tiles (k per tile),
 * f16 weights and activations rounded stochastically, f32 master weights and Adam.
 *
 * f16 values travel packed two to a 32-bit word (lane 0 in the low half). On a tile the
 * rounding is the hardware's (ipu.f32v2tof16 with ipu_fpctl's stochastic rounding, random bits
 * from the context's PRNG, seeded per vertex run); the host reference compiles this same file
 * and supplies the four train_host_* functions with the tile model's own f16 arithmetic and
 * PRNG (iss/fpu.h, iss/prng.h), so both compute the same bits. Workers split the work
 * by ipu_context_id() (1-6) and each seeds its own PRNG.
 *
 * Layouts: x is b x d (sample-major), t is b x o; a tile's weights are W1 (k x d) then W2
 * (o x k); h is k x b f16 (unit-major, samples in pairs); y, dy are o x b. */
#include <stdint.h>

#ifdef __riscv
#include "ipu.h"
static inline unsigned worker_id(void) { return ipu_context_id(); }
static inline void rounding_seed(uint64_t s0, uint64_t s1) {
  ipu_prng_seed(s0, s1);
  ipu_set_stochastic_rounding(1);
}
static inline uint32_t to_f16x2(float a, float b) { return ipu_f16x2_bits(ipu_f32v2tof16(ipu_f32x2_make(a, b))); }
static inline void from_f16x2(uint32_t w, float *a, float *b) {
  const ipu_f32x2 v = ipu_f16v2tof32(ipu_f16x2_from_bits((uint16_t)w, (uint16_t)(w >> 16)));
  *a = v.r[0];
  *b = v.r[1];
}
static inline float square_root(float x) { return __builtin_sqrtf(x); }
#else
unsigned train_host_worker_id(void);
void train_host_seed(uint64_t s0, uint64_t s1);
uint32_t train_host_to_f16x2(float a, float b);
void train_host_from_f16x2(uint32_t w, float *a, float *b);
float train_host_sqrt(float x);
static inline unsigned worker_id(void) { return train_host_worker_id(); }
static inline void rounding_seed(uint64_t s0, uint64_t s1) { train_host_seed(s0, s1); }
static inline uint32_t to_f16x2(float a, float b) { return train_host_to_f16x2(a, b); }
static inline void from_f16x2(uint32_t w, float *a, float *b) { train_host_from_f16x2(w, a, b); }
static inline float square_root(float x) { return train_host_sqrt(x); }
#endif

#define TRAIN_WORKERS 6
#define TRAIN_MAX_B 32
#define TRAIN_MAX_K 16

static inline float f32_of(uint32_t bits) {
  union {
    uint32_t u;
    float f;
  } v = {bits};
  return v.f;
}

/* A worker's PRNG state from the tile's seed, the step counter, which codelet (salt) and the
 * worker: splitmix64 steps, never all zero. */
static uint64_t splitmix(uint64_t *z) {
  uint64_t x = (*z += 0x9e3779b97f4a7c15ull);
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
static void seed_worker(const uint32_t *seeds, uint32_t salt, unsigned worker) {
  uint64_t z = ((uint64_t)seeds[0] << 32 | seeds[1]) ^ ((uint64_t)salt << 8 | worker);
  const uint64_t s0 = splitmix(&z), s1 = splitmix(&z);
  rounding_seed(s0, s1 | 1);
}

/* Forward: h = f16(relu(W1 x)), y = W2 h (partial sums of this tile's units). Worker w takes
 * sample pairs w-1, w+5, ...
 *   fields: x (in f32 b x d), w (in f16 pairs), h (out f16 pairs k x b), y (out f32 o x b),
 *           seeds (in u32 2), b, d, k, o */
struct train_forward_fields {
  const float *x;
  const uint32_t *w;
  uint32_t *h;
  float *y;
  const uint32_t *seeds;
  uint32_t b, d, k, o;
};
void train_forward(const struct train_forward_fields *v) {
  const uint32_t b = v->b, d = v->d, k = v->k, o = v->o;
  const unsigned worker = worker_id();
  seed_worker(v->seeds, 1, worker);
  float w1a, w1b;
  for (uint32_t p = worker - 1; p < b / 2; p += TRAIN_WORKERS) {
    const float *x0 = v->x + 2 * p * d, *x1 = x0 + d;
    float h0[TRAIN_MAX_K], h1[TRAIN_MAX_K];
    for (uint32_t u = 0; u < k; ++u) {
      float z0 = 0.0f, z1 = 0.0f;
      for (uint32_t i = 0; i < d; i += 2) {
        from_f16x2(v->w[(u * d + i) / 2], &w1a, &w1b);
        z0 += w1a * x0[i] + w1b * x0[i + 1];
        z1 += w1a * x1[i] + w1b * x1[i + 1];
      }
      const uint32_t packed = to_f16x2(z0 > 0.0f ? z0 : 0.0f, z1 > 0.0f ? z1 : 0.0f);
      v->h[(u * b) / 2 + p] = packed;
      from_f16x2(packed, &h0[u], &h1[u]);
    }
    const uint32_t *w2 = v->w + k * d / 2;
    for (uint32_t c = 0; c < o; ++c) {
      float y0 = 0.0f, y1 = 0.0f;
      for (uint32_t u = 0; u < k; u += 2) {
        from_f16x2(w2[(c * k + u) / 2], &w1a, &w1b);
        y0 += w1a * h0[u] + w1b * h0[u + 1];
        y1 += w1a * h1[u] + w1b * h1[u + 1];
      }
      v->y[c * b + 2 * p] = y0;
      v->y[c * b + 2 * p + 1] = y1;
    }
  }
}

/* out[i] = sum over r of in[r * n + i], rows in order.  fields: in, out, rows, n */
struct train_sum_rows_fields {
  const float *in;
  float *out;
  uint32_t rows, n;
};
void train_sum_rows(const struct train_sum_rows_fields *v) {
  for (uint32_t i = 0; i < v->n; ++i) {
    float s = 0.0f;
    for (uint32_t r = 0; r < v->rows; ++r) s += v->in[r * v->n + i];
    v->out[i] = s;
  }
}

/* Squared error and its gradient: e = y - t, loss = sum e^2, dy = 2e.
 *   fields: y (in o x b), t (in b x o), dy (out o x b), loss (out 1), b, o */
struct train_loss_fields {
  const float *y, *t;
  float *dy, *loss;
  uint32_t b, o;
};
void train_loss(const struct train_loss_fields *v) {
  float loss = 0.0f;
  for (uint32_t c = 0; c < v->o; ++c)
    for (uint32_t s = 0; s < v->b; ++s) {
      const float e = v->y[c * v->b + s] - v->t[s * v->o + c];
      loss += e * e;
      v->dy[c * v->b + s] = 2.0f * e;
    }
  v->loss[0] = loss;
}

/* Backward over this tile's units: dW2 = dy h^T, dh = (W2^T dy) where h > 0, dW1 = dh x.
 * Worker w takes units w-1, w+5, ...
 *   fields: x, w, h (in), dy (in o x b), g (out f32: dW1 k x d then dW2 o x k), b, d, k, o */
struct train_backward_fields {
  const float *x;
  const uint32_t *w, *h;
  const float *dy;
  float *g;
  uint32_t b, d, k, o;
};
void train_backward(const struct train_backward_fields *v) {
  const uint32_t b = v->b, d = v->d, k = v->k, o = v->o;
  const uint32_t *w2 = v->w + k * d / 2;
  float *g1 = v->g, *g2 = v->g + k * d;
  for (uint32_t u = worker_id() - 1; u < k; u += TRAIN_WORKERS) {
    float hu[TRAIN_MAX_B], dh[TRAIN_MAX_B], w2u[16];
    for (uint32_t s = 0; s < b; s += 2) from_f16x2(v->h[(u * b + s) / 2], &hu[s], &hu[s + 1]);
    for (uint32_t c = 0; c < o; ++c) {
      float pair[2];
      from_f16x2(w2[(c * k + (u & ~1u)) / 2], &pair[0], &pair[1]);
      w2u[c] = pair[u & 1];
    }
    for (uint32_t c = 0; c < o; ++c) {
      float sum = 0.0f;
      for (uint32_t s = 0; s < b; ++s) sum += v->dy[c * b + s] * hu[s];
      g2[c * k + u] = sum;
    }
    for (uint32_t s = 0; s < b; ++s) {
      float sum = 0.0f;
      for (uint32_t c = 0; c < o; ++c) sum += w2u[c] * v->dy[c * b + s];
      dh[s] = hu[s] > 0.0f ? sum : 0.0f;
    }
    for (uint32_t i = 0; i < d; ++i) {
      float sum = 0.0f;
      for (uint32_t s = 0; s < b; ++s) sum += dh[s] * v->x[s * d + i];
      g1[u * d + i] = sum;
    }
  }
}

/* Adam on a shard of the parameters, then the shard's f16 weights (stochastic rounding).
 * Worker w takes parameter pairs w-1, w+5, ...
 *   fields: g (in f32), master, m, v (in/out f32), w (out f16 pairs), state (in f32: b1^t,
 *           b2^t), seeds (in u32 2), n, scale (f32 bits: 1 / global batch), lr, b1, b2, eps
 *           (f32 bits) */
struct train_adam_fields {
  const float *g;
  float *master, *m, *v;
  uint32_t *w;
  const float *state;
  const uint32_t *seeds;
  uint32_t n, scale, lr, b1, b2, eps;
};
void train_adam(const struct train_adam_fields *a) {
  const float scale = f32_of(a->scale), lr = f32_of(a->lr), b1 = f32_of(a->b1), b2 = f32_of(a->b2),
              eps = f32_of(a->eps);
  const float c1 = 1.0f - a->state[0], c2 = 1.0f - a->state[1];
  const unsigned worker = worker_id();
  seed_worker(a->seeds, 2, worker);
  for (uint32_t p = worker - 1; p < a->n / 2; p += TRAIN_WORKERS) {
    float out[2];
    for (uint32_t j = 0; j < 2; ++j) {
      const uint32_t i = 2 * p + j;
      const float g = a->g[i] * scale;
      const float m = b1 * a->m[i] + (1.0f - b1) * g;
      const float v = b2 * a->v[i] + (1.0f - b2) * (g * g);
      a->m[i] = m;
      a->v[i] = v;
      const float step = lr * (m / c1) / (square_root(v / c2) + eps);
      out[j] = a->master[i] = a->master[i] - step;
    }
    a->w[p] = to_f16x2(out[0], out[1]);
  }
}

/* The f16 weights of a shard of master weights (the initial cast).
 *   fields: master (in f32), w (out f16 pairs), seeds (in u32 2), n */
struct train_cast_fields {
  const float *master;
  uint32_t *w;
  const uint32_t *seeds;
  uint32_t n;
};
void train_cast(const struct train_cast_fields *v) {
  const unsigned worker = worker_id();
  seed_worker(v->seeds, 3, worker);
  for (uint32_t p = worker - 1; p < v->n / 2; p += TRAIN_WORKERS)
    v->w[p] = to_f16x2(v->master[2 * p], v->master[2 * p + 1]);
}

/* Once a step, before the rest: the seed counter advances and Adam's b1^t, b2^t move on.
 *   fields: seeds (in/out u32 2), state (in/out f32 2), b1, b2 (f32 bits) */
struct train_tick_fields {
  uint32_t *seeds;
  float *state;
  uint32_t b1, b2;
};
void train_tick(const struct train_tick_fields *v) {
  v->seeds[1] += 1;
  v->state[0] *= f32_of(v->b1);
  v->state[1] *= f32_of(v->b2);
}
