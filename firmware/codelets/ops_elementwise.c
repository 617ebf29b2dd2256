/* Elementwise and row codelets of the operator library (sdk/ops/elementwise.cpp, docs/ops.md).
 * Each vertex runs on one worker over the range its fields give; the library gives a tile's
 * work to six vertices. f32 arithmetic, one rounding per operation in the order written (the
 * host references in sdk/ops do the same operations in the same order). */
#include <stdint.h>

#include "ipu.h"
#include "ops_math.h"

/* binary_f32: out[i] = a[i] op b[(offset + i) % period], i < n; op 0 add, 1 sub, 2 mul,
 *   3 a x gelu'(b). period = n and offset = 0 for operands of one shape; a trailing vector
 *   (a bias) has its length as period.
 * fields: a (in f32), b (in f32), out (out f32), n, op, period, offset */
struct binary_f32_fields {
  const float *a, *b;
  float *out;
  uint32_t n, op, period, offset;
};
void binary_f32(const struct binary_f32_fields *v) {
  uint32_t j = v->offset;
  const uint32_t n = v->n, period = v->period, op = v->op;
  for (uint32_t i = 0; i < n; ++i) {
    const float x = v->a[i], y = v->b[j];
    float r;
    switch (op) {
      case 0: r = x + y; break;
      case 1: r = x - y; break;
      case 2: r = x * y; break;
      default: r = x * ipu_ops_gelu_grad(y); break;
    }
    v->out[i] = r;
    if (++j == period) j = 0;
  }
}

/* unary_f32: out[i] = f(a[i]), i < n; op 0 ReLU (max(x, 0); -0 and NaN give 0), 1 GeLU,
 *   2 k x (k the f32 bits of field k), 3 e^x.
 * fields: a (in f32), out (out f32), n, op, k */
struct unary_f32_fields {
  const float *a;
  float *out;
  uint32_t n, op, k;
};
void unary_f32(const struct unary_f32_fields *v) {
  union {
    uint32_t u;
    float f;
  } k = {v->k};
  for (uint32_t i = 0; i < v->n; ++i) {
    const float x = v->a[i];
    float r;
    switch (v->op) {
      case 0: r = x > 0.0f ? x : 0.0f; break;
      case 1: r = ipu_ops_gelu(x); break;
      case 2: r = k.f * x; break;
      default: r = ipu_ops_expf(x); break;
    }
    v->out[i] = r;
  }
}

/* cast_f32_f16: out[i] = a[i] rounded to f16 by the hardware (nearest even), i < n; n even or
 *   the range's end the tensor's.  fields: a (in f32), out (out f16), n */
struct cast_f32_f16_fields {
  const float *a;
  uint16_t *out;
  uint32_t n;
};
void cast_f32_f16(const struct cast_f32_f16_fields *v) {
  uint32_t i = 0;
  for (; i + 2 <= v->n; i += 2) {
    const uint32_t bits = ipu_f16x2_bits(ipu_f32v2tof16(ipu_f32x2_make(v->a[i], v->a[i + 1])));
    v->out[i] = (uint16_t)bits;
    v->out[i + 1] = (uint16_t)(bits >> 16);
  }
  if (i < v->n) v->out[i] = (uint16_t)ipu_f16x2_bits(ipu_f32v2tof16(ipu_f32x2_make(v->a[i], 0.0f)));
}

/* reduce_rows_op_f32: out[r] = op over x[r][0..columns-1] from left to right, r < rows; op 0
 *   sum, 1 max, 2 mean (the sum divided by columns), 3 sum of squares.
 * fields: x (in f32), out (out f32), rows, columns, op */
struct reduce_rows_op_f32_fields {
  const float *x;
  float *out;
  uint32_t rows, columns, op;
};
void reduce_rows_op_f32(const struct reduce_rows_op_f32_fields *v) {
  for (uint32_t r = 0; r < v->rows; ++r) {
    const float *x = v->x + r * v->columns;
    float acc = v->op == 3 ? x[0] * x[0] : x[0];
    for (uint32_t c = 1; c < v->columns; ++c) {
      const float y = x[c];
      if (v->op == 1) acc = y > acc ? y : acc;
      else if (v->op == 3) acc += y * y;
      else acc += y;
    }
    v->out[r] = v->op == 2 ? acc / (float)v->columns : acc;
  }
}

/* softmax_rows_f32: per row r < rows: s = x + mask (mask a row of columns, when masked), m =
 *   the max of s, e = exp(s - m), out = e / (the sum of e from left to right).
 * fields: x (in f32), mask (in f32), out (out f32), rows, columns, masked */
struct softmax_rows_f32_fields {
  const float *x, *mask;
  float *out;
  uint32_t rows, columns, masked;
};
void softmax_rows_f32(const struct softmax_rows_f32_fields *v) {
  const uint32_t columns = v->columns;
  for (uint32_t r = 0; r < v->rows; ++r) {
    const float *x = v->x + r * columns;
    float *out = v->out + r * columns;
    float m = v->masked ? x[0] + v->mask[0] : x[0];
    for (uint32_t c = 0; c < columns; ++c) {
      const float s = v->masked ? x[c] + v->mask[c] : x[c];
      out[c] = s;
      m = s > m ? s : m;
    }
    float sum = 0.0f;
    for (uint32_t c = 0; c < columns; ++c) {
      out[c] = ipu_ops_expf(out[c] - m);
      sum += out[c];
    }
    for (uint32_t c = 0; c < columns; ++c) out[c] = out[c] / sum;
  }
}

/* layer_norm_rows_f32: per row r < rows: mean = (sum of x, left to right) / columns; var = (sum
 *   of (x - mean)^2, left to right) / columns; inv = 1 / sqrt(var + eps); y = ((x - mean) x
 *   inv) x gamma + beta; mean_out[r] = mean, inv_out[r] = inv.
 * fields: x (in f32), gamma (in f32), beta (in f32), y (out f32), mean_out (out f32),
 *         inv_out (out f32), rows, columns, eps (f32 bits) */
struct layer_norm_rows_f32_fields {
  const float *x, *gamma, *beta;
  float *y, *mean_out, *inv_out;
  uint32_t rows, columns, eps;
};
void layer_norm_rows_f32(const struct layer_norm_rows_f32_fields *v) {
  union {
    uint32_t u;
    float f;
  } eps = {v->eps};
  const uint32_t columns = v->columns;
  for (uint32_t r = 0; r < v->rows; ++r) {
    const float *x = v->x + r * columns;
    float sum = 0.0f;
    for (uint32_t c = 0; c < columns; ++c) sum += x[c];
    const float mean = sum / (float)columns;
    float squares = 0.0f;
    for (uint32_t c = 0; c < columns; ++c) {
      const float d = x[c] - mean;
      squares += d * d;
    }
    const float inv = ipu_ops_rsqrtf(squares / (float)columns + eps.f);
    float *y = v->y + r * columns;
    for (uint32_t c = 0; c < columns; ++c) y[c] = ((x[c] - mean) * inv) * v->gamma[c] + v->beta[c];
    v->mean_out[r] = mean;
    v->inv_out[r] = inv;
  }
}
