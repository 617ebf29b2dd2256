/* Codelets of the MLP training example: a data-parallel two-layer perceptron,
 * y = relu(x W1) W2, mean squared error, plain SGD. Plain C without ipu.h, so the example's
 * host reference compiles this same file: the host and the tiles do the same arithmetic in the
 * same order (both without fused multiply-adds: -ffp-contract=off).
 *
 * mlp_grad_f32: forward and backward over a tile's samples.
 *   fields: x (in, b x d), t (in, b x o targets), params (in, W1 d x h then W2 h x o),
 *           grad (out, dW1 d x h, dW2 h x o, then the sum of squared errors), b, d, h, o
 * sum_rows_f32: out[i] = sum over r of in[r * n + i], rows in order.  fields: in, out, rows, n
 * sgd_f32: params[i] -= k * g[i] for i < n (k: bits of an f32).  fields: params, g, n, k
 * record_f32: history[*count] = value[0]; ++*count.  fields: history, value, count */
#include <stdint.h>

#define MLP_MAX_HIDDEN 64
#define MLP_MAX_OUT 16

struct mlp_grad_f32_fields {
  const float *x, *t, *params;
  float *grad;
  uint32_t b, d, h, o;
};
void mlp_grad_f32(const struct mlp_grad_f32_fields *v) {
  const uint32_t d = v->d, h = v->h, o = v->o;
  const float *w1 = v->params, *w2 = v->params + d * h;
  float *g1 = v->grad, *g2 = v->grad + d * h;
  for (uint32_t i = 0; i < d * h + h * o + 1; ++i) v->grad[i] = 0.0f;
  float loss = 0.0f;
  for (uint32_t s = 0; s < v->b; ++s) {
    const float *x = v->x + s * d, *t = v->t + s * o;
    float z[MLP_MAX_HIDDEN], a[MLP_MAX_HIDDEN], dy[MLP_MAX_OUT];
    for (uint32_t j = 0; j < h; ++j) {
      float sum = 0.0f;
      for (uint32_t i = 0; i < d; ++i) sum += x[i] * w1[i * h + j];
      z[j] = sum;
      a[j] = sum > 0.0f ? sum : 0.0f;
    }
    for (uint32_t k = 0; k < o; ++k) {
      float y = 0.0f;
      for (uint32_t j = 0; j < h; ++j) y += a[j] * w2[j * o + k];
      const float e = y - t[k];
      loss += e * e;
      dy[k] = 2.0f * e;
    }
    for (uint32_t j = 0; j < h; ++j) {
      float da = 0.0f;
      for (uint32_t k = 0; k < o; ++k) {
        g2[j * o + k] += a[j] * dy[k];
        da += dy[k] * w2[j * o + k];
      }
      const float dz = z[j] > 0.0f ? da : 0.0f;
      for (uint32_t i = 0; i < d; ++i) g1[i * h + j] += x[i] * dz;
    }
  }
  v->grad[d * h + h * o] = loss;
}

struct sum_rows_f32_fields {
  const float *in;
  float *out;
  uint32_t rows, n;
};
void sum_rows_f32(const struct sum_rows_f32_fields *v) {
  for (uint32_t i = 0; i < v->n; ++i) {
    float s = 0.0f;
    for (uint32_t r = 0; r < v->rows; ++r) s += v->in[r * v->n + i];
    v->out[i] = s;
  }
}

struct sgd_f32_fields {
  float *params;
  const float *g;
  uint32_t n, k;
};
void sgd_f32(const struct sgd_f32_fields *v) {
  union {
    uint32_t u;
    float f;
  } k = {v->k};
  for (uint32_t i = 0; i < v->n; ++i) v->params[i] -= k.f * v->g[i];
}

struct record_f32_fields {
  float *history;
  const float *value;
  uint32_t *count;
};
void record_f32(const struct record_f32_fields *v) { v->history[(*v->count)++] = v->value[0]; }
