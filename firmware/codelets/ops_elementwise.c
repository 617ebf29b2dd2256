/* Elementwise and row codelets of the operator library (sdk/ops/elementwise.cpp, docs/ops.md):
 * arithmetic, casts, row reductions, softmax, layer norm, gradient sums and copies; the
 * training step's own (dropout, cross-entropy, optimizers, embeddings) are in ops_training.c.
 * Each vertex runs on one worker over the range its fields give; the library gives a tile's
 * work to six vertices. f32 arithmetic, one rounding per operation in the order written (the
 * host references in sdk/ops do the same operations in the same order). */
#include <stdint.h>

#include "ipu.h"
#include "ops_codelet.h"
#include "ops_math.h"
#include "ops_pairs.h"

/* x rounded to f16 (nearest even) as the hardware converts it: one lane of ipu.f32v2tof16. */
static inline uint16_t f16_of(float x) {
  return (uint16_t)ipu_f16x2_bits(ipu_f32v2tof16(ipu_f32x2_make(x, 0.0f)));
}

/* binary_f32: out[i] = a[i] op b[(offset + i) % period], i < n; op 0 add, 1 sub, 2 mul,
 *   3 a x gelu'(b), 4 a x (1 - b b) (tanh's backward pass, b = tanh x). period = n and offset = 0
 * for operands of one shape; a trailing vector (a bias) has its length as period. fields: a (in
 * f32), b (in f32), out (out f32), n, op, period, offset */
struct binary_f32_fields {
  const float *a, *b;
  float* out;
  uint32_t n, op, period, offset;
};
/* One loop a case, not a switch an element: with the switch inside, the compiler reloaded the
 * polynomials' constants for every element (a quarter of GeLU's instructions). Operands of one
 * shape take b[i] directly: the wrapping index costs five instructions an element. */
#define BINARY_LOOP(EXPR)                \
  do {                                   \
    if (same_shape) {                    \
      for (uint32_t i = 0; i < n; ++i) { \
        const float x = a[i], y = b[i];  \
        out[i] = (EXPR);                 \
      }                                  \
    } else {                             \
      for (uint32_t i = 0; i < n; ++i) { \
        const float x = a[i], y = b[j];  \
        out[i] = (EXPR);                 \
        if (++j == period) j = 0;        \
      }                                  \
    }                                    \
  } while (0)
/* One element of binary_f32's operation. */
static inline float binary_one(uint32_t op, float x, float y) {
  switch (op) {
    case 0: return x + y;
    case 1: return x - y;
    case 2: return x * y;
    case 3: return x * ipu_ops_gelu_grad(y);
    default: return x * (1.0f - y * y);
  }
}
/* Whether pointers lie 4 bytes past an 8-byte boundary: the compiler places f32 tensors on
 * words, so a range's pairs often start one element in. */
#define ONE_WORD_IN(p) (((uintptr_t)(p)&7) == 4)
#define ON_PAIRS(p) (((uintptr_t)(p)&7) == 0)
void binary_f32(const struct binary_f32_fields* v) {
  uint32_t j = v->offset, n = v->n;
  const uint32_t period = v->period, op = v->op;
  const int same_shape = j == 0 && period >= n;
  const float *a = v->a, *b = v->b;
  float* out = v->out;
  /* Addition, subtraction, product and GeLU's gradient two at a time where the pairs line up
   * (a trailing vector's pairs too when its period is even), after one element alone when
   * all three operands start a word past a pair. For operands of one shape the wrap is one
   * past the end, never reached. */
  const int paired = op <= 2 ? same_shape || period % 2 == 0 : op == 3 && same_shape;
  if (paired && n > 0 && ONE_WORD_IN(a) && ONE_WORD_IN(b + j) && ONE_WORD_IN(out)) {
    out[0] = binary_one(op, a[0], b[j]);
    ++a, ++out, --n;
    if (same_shape)
      ++b;
    else if (++j == period)
      j = 0;
  }
  if (paired && (same_shape || j % 2 == 0) && ON_PAIRS(a) && ON_PAIRS(b + j) && ON_PAIRS(out)) {
    const uint32_t done = op == 3 ? gelu_pairs(b, a, out, n)
                                  : binary_pairs(a, b, out, n, op, same_shape ? n + 2 : period, j);
    a += done, out += done, n -= done;
    if (same_shape)
      b += done;
    else
      j = (j + done) % period;
  }
  switch (op) {
    case 0: BINARY_LOOP(x + y); break;
    case 1: BINARY_LOOP(x - y); break;
    case 2: BINARY_LOOP(x * y); break;
    case 3: BINARY_LOOP(x * ipu_ops_gelu_grad(y)); break;
    default: BINARY_LOOP(x * (1.0f - y * y)); break;
  }
}

/* bias_residual_f32: out[i] = (a[i] + b[(offset + i) % period]) + x[i], i < n: a bias added
 *   to a product's rows and the residual added after it, binary_f32's two additions in one
 *   pass, the same bits. fields: a (in f32), b (in f32), x (in f32), out (out f32), n, period,
 *   offset */
struct bias_residual_f32_fields {
  const float *a, *b, *x;
  float* out;
  uint32_t n, period, offset;
};
void bias_residual_f32(const struct bias_residual_f32_fields* v) {
  uint32_t j = v->offset, n = v->n;
  const uint32_t period = v->period;
  const float *a = v->a, *b = v->b, *x = v->x;
  float* out = v->out;
  /* Pairs where the four operands' pairs line up, after one element alone when all start one
   * element in; a pair never crosses the wrap when the period is even or the range ends before
   * it. */
  const int no_wrap = j + n <= period;
  const int paired = period % 2 == 0 || no_wrap;
  if (paired && n > 0 && ONE_WORD_IN(a) && ONE_WORD_IN(b + j) && ONE_WORD_IN(x) &&
      ONE_WORD_IN(out)) {
    out[0] = (a[0] + b[j]) + x[0];
    ++a, ++x, ++out, --n;
    if (++j == period) j = 0;
  }
  if (paired && (no_wrap || j % 2 == 0) && ON_PAIRS(a) && ON_PAIRS(b + j) && ON_PAIRS(x) &&
      ON_PAIRS(out)) {
    /* without a wrap in the range, b's pairs from b + j run to its end: a period of n + j */
    const uint32_t done = no_wrap ? bias_residual_pairs(a, b + j, n + 2, 0, x, out, n)
                                  : bias_residual_pairs(a, b, period, j, x, out, n);
    a += done, x += done, out += done, n -= done;
    j = (j + done) % period;
  }
  for (uint32_t i = 0; i < n; ++i) {
    out[i] = (a[i] + b[j]) + x[i];
    if (++j == period) j = 0;
  }
}

/* unary_f32: out[i] = f(a[i]), i < n; op 0 ReLU (max(x, 0); -0 and NaN give 0), 1 GeLU,
 *   2 k x (k the f32 bits of field k), 3 e^x, 4 tanh x.
 * fields: a (in f32), out (out f32), n, op, k */
struct unary_f32_fields {
  const float* a;
  float* out;
  uint32_t n, op, k;
};
#define UNARY_LOOP(EXPR)             \
  for (uint32_t i = 0; i < n; ++i) { \
    const float x = a[i];            \
    out[i] = (EXPR);                 \
  }
void unary_f32(const struct unary_f32_fields* v) {
  const float k = f32_of(v->k);
  const uint32_t n = v->n;
  const float* a = v->a;
  float* out = v->out;
  switch (v->op) {
    case 0: UNARY_LOOP(x > 0.0f ? x : 0.0f); break;
    case 1: {
      uint32_t i = 0;
      if (n > 0 && ONE_WORD_IN(a) && ONE_WORD_IN(out)) { /* one alone, then pairs */
        out[0] = ipu_ops_gelu(a[0]);
        i = 1;
      }
      if (ON_PAIRS(a + i) && ON_PAIRS(out + i)) i += gelu_pairs(a + i, 0, out + i, n - i);
      for (; i < n; ++i) out[i] = ipu_ops_gelu(a[i]);
      break;
    }
    case 2: UNARY_LOOP(k * x); break;
    case 3: UNARY_LOOP(ipu_ops_expf(x)); break;
    default: UNARY_LOOP(ipu_ops_tanhf(x)); break;
  }
}

/* bias_gelu_f32_f16: sum[i] = a[i] + b[(offset + i) % period] and out[i] = gelu(sum[i]) rounded
 *   to f16 (nearest even), i < n: binary_f32's addition of a bias, unary_f32's GeLU and
 *   cast_f32_f16 in one pass, the same bits. fields: a (in f32), b (in f32), sum (out f32),
 *   out (out f16), n, period, offset */
struct bias_gelu_f32_f16_fields {
  const float *a, *b;
  float* sum;
  uint16_t* out;
  uint32_t n, period, offset;
};
void bias_gelu_f32_f16(const struct bias_gelu_f32_f16_fields* v) {
  uint32_t j = v->offset, n = v->n;
  const uint32_t period = v->period;
  const float *a = v->a, *b = v->b;
  float* sum = v->sum;
  uint16_t* out = v->out;
  /* Pairs where a, sum and b's pairs line up and out's lie in words, after one element alone
   * when all start one element in; a pair never crosses the wrap when the period is even or
   * the range ends before it. */
  const int no_wrap = j + n <= period;
  const int paired = period % 2 == 0 || no_wrap;
  if (paired && n > 0 && ONE_WORD_IN(a) && ONE_WORD_IN(b + j) && ONE_WORD_IN(sum) &&
      ((uintptr_t)out & 3) == 2) {
    sum[0] = a[0] + b[j];
    out[0] = f16_of(ipu_ops_gelu(sum[0]));
    ++a, ++sum, ++out, --n;
    if (++j == period) j = 0;
  }
  if (paired && (no_wrap || j % 2 == 0) && ON_PAIRS(a) && ON_PAIRS(b + j) && ON_PAIRS(sum) &&
      ((uintptr_t)out & 3) == 0) {
    /* without a wrap in the range, b's pairs from b + j run to its end: a period of n + j */
    const uint32_t done = no_wrap ? bias_gelu_pairs(a, b + j, n + 2, 0, sum, out, n)
                                  : bias_gelu_pairs(a, b, period, j, sum, out, n);
    a += done, sum += done, out += done, n -= done;
    j = (j + done) % period;
  }
  for (uint32_t i = 0; i < n; ++i) {
    sum[i] = a[i] + b[j];
    out[i] = f16_of(ipu_ops_gelu(sum[i]));
    if (++j == period) j = 0;
  }
}

/* gelu_grad_f32_f16: out[i] = grad[i] x gelu'(x[i]) and out16[i] = out[i] rounded to f16
 *   (nearest even), i < n: binary_f32's kMulGeluGrad and cast_f32_f16 in one pass, the same
 *   bits. fields: grad (in f32), x (in f32), out (out f32), out16 (out f16), n */
struct gelu_grad_f32_f16_fields {
  const float *grad, *x;
  float* out;
  uint16_t* out16;
  uint32_t n;
};
void gelu_grad_f32_f16(const struct gelu_grad_f32_f16_fields* v) {
  uint32_t n = v->n;
  const float *grad = v->grad, *x = v->x;
  float* out = v->out;
  uint16_t* out16 = v->out16;
  /* Pairs where grad, x and out's pairs line up and out16's lie in words, after one element
   * alone when all start one element in. */
  if (n > 0 && ONE_WORD_IN(grad) && ONE_WORD_IN(x) && ONE_WORD_IN(out) &&
      ((uintptr_t)out16 & 3) == 2) {
    out[0] = grad[0] * ipu_ops_gelu_grad(x[0]);
    out16[0] = f16_of(out[0]);
    ++grad, ++x, ++out, ++out16, --n;
  }
  if (ON_PAIRS(grad) && ON_PAIRS(x) && ON_PAIRS(out) && ((uintptr_t)out16 & 3) == 0) {
    const uint32_t done = gelu_grad_f16_pairs(x, grad, out, out16, n);
    grad += done, x += done, out += done, out16 += done, n -= done;
  }
  for (uint32_t i = 0; i < n; ++i) {
    out[i] = grad[i] * ipu_ops_gelu_grad(x[i]);
    out16[i] = f16_of(out[i]);
  }
}

/* cast_f32_f16: out[i] = a[i] rounded to f16 by the hardware (nearest even), i < n; n even or
 *   the range's end the tensor's.  fields: a (in f32), out (out f16), n */
struct cast_f32_f16_fields {
  const float* a;
  uint16_t* out;
  uint32_t n;
};
/* a[0..n) to f16 in pairs, as the hardware converts them (one instruction a pair). */
static void narrow_range(const float* a, uint16_t* out, uint32_t n) {
  uint32_t i = 0;
  if (ON_PAIRS(a) && ((uintptr_t)out & 3) == 0) i = narrow_pairs(a, out, n);
  for (; i + 2 <= n; i += 2) {
    const uint32_t bits = ipu_f16x2_bits(ipu_f32v2tof16(ipu_f32x2_make(a[i], a[i + 1])));
    out[i] = (uint16_t)bits;
    out[i + 1] = (uint16_t)(bits >> 16);
  }
  if (i < n) out[i] = f16_of(a[i]);
}

void cast_f32_f16(const struct cast_f32_f16_fields* v) { narrow_range(v->a, v->out, v->n); }

/* reduce_rows_op_f32: out[r] = op over x[r][0..columns-1] from left to right, r < rows; op 0
 *   sum, 1 max, 2 mean (the sum divided by columns), 3 sum of squares.
 * fields: x (in f32), out (out f32), rows, columns, op */
struct reduce_rows_op_f32_fields {
  const float* x;
  float* out;
  uint32_t rows, columns, op;
};
void reduce_rows_op_f32(const struct reduce_rows_op_f32_fields* v) {
  for (uint32_t r = 0; r < v->rows; ++r) {
    const float* x = v->x + r * v->columns;
    float acc = v->op == 3 ? x[0] * x[0] : x[0];
    for (uint32_t c = 1; c < v->columns; ++c) {
      const float y = x[c];
      if (v->op == 1)
        acc = y > acc ? y : acc;
      else if (v->op == 3)
        acc += y * y;
      else
        acc += y;
    }
    v->out[r] = v->op == 2 ? acc / (float)v->columns : acc;
  }
}

/* softmax_rows_f32: per row r < rows: s = x' + mask, m = the max of s, e = exp(s - m), out = e /
 *   (the sum of e from left to right), where x' = x x scale (rounded), or x when scale is 1.
 *   masked 0: no mask; 1: mask is a row of columns, added to every row; 2 (packed sequences):
 *   mask holds each token's sequence id, row r is the query of token q = (first_query + r) mod
 *   columns, and s = x' + (mask[c] == mask[q] ? 0 : -10000).
 * fields: x (in f32), mask (in f32), out (out f32), rows, columns, masked, first_query,
 *         scale (f32 bits)
 * softmax_rows_f32_f16: the same, and out16 = out rounded to f16 (nearest even, as
 *   cast_f32_f16) in the division's pass. fields: those, then out16 (out f16) */
struct softmax_rows_f32_fields {
  const float *x, *mask;
  float* out;
  uint32_t rows, columns, masked, first_query, scale;
};
struct softmax_rows_f32_f16_fields {
  struct softmax_rows_f32_fields f32;
  uint16_t* out16;
};
/* The scores of a row into out, and their max (from the first score, as the row's first
 * comparison), a loop for each kind of mask: tested inside the loop, the mask's kind cost about
 * four instructions an element. */
#define SOFTMAX_SCORES(SCORE)  \
  do {                         \
    uint32_t c = 0;            \
    m = (SCORE);               \
    for (; c < columns; ++c) { \
      const float s = (SCORE); \
      out[c] = s;              \
      m = s > m ? s : m;       \
    }                          \
  } while (0)
static void softmax_rows(const struct softmax_rows_f32_fields* v, uint16_t* out16_rows) {
  const uint32_t columns = v->columns;
  const float* mask = v->mask;
  const float scale = f32_of(v->scale);
  const int scaled = scale != 1.0f;
  for (uint32_t r = 0; r < v->rows; ++r) {
    const float* x = v->x + r * columns;
    float* out = v->out + r * columns;
    float m;
    if (v->masked != 2 && columns >= 2 && columns % 2 == 0 && ON_PAIRS(x) && ON_PAIRS(out) &&
        (v->masked == 0 || ON_PAIRS(mask))) {
      m = softmax_scores_pairs(x, mask, out, columns, v->masked == 1, scaled ? &scale : 0);
    } else if (scaled) {
      if (v->masked == 1) {
        SOFTMAX_SCORES(x[c] * scale + mask[c]);
      } else if (v->masked == 2) {
        const float query = mask[(v->first_query + r) % columns];
        SOFTMAX_SCORES(x[c] * scale + (mask[c] == query ? 0.0f : -10000.0f));
      } else {
        SOFTMAX_SCORES(x[c] * scale);
      }
    } else if (v->masked == 1) {
      SOFTMAX_SCORES(x[c] + mask[c]);
    } else if (v->masked == 2) {
      const float query = mask[(v->first_query + r) % columns];
      SOFTMAX_SCORES(x[c] + (mask[c] == query ? 0.0f : -10000.0f));
    } else {
      SOFTMAX_SCORES(x[c]);
    }
    float sum = 0.0f;
    uint32_t c = 0;
    if (columns > 0 && ONE_WORD_IN(out)) { /* one alone, then pairs */
      out[0] = ipu_ops_expf(out[0] - m);
      sum += out[0];
      c = 1;
    }
    if (ON_PAIRS(out + c)) c += softmax_exp_pairs(out + c, columns - c, m, &sum);
    for (; c < columns; ++c) {
      out[c] = ipu_ops_expf(out[c] - m);
      sum += out[c];
    }
    uint16_t* const out16 = out16_rows ? out16_rows + r * columns : 0;
    c = ON_PAIRS(out) && ((uintptr_t)out16 & 3) == 0 ? divide_pairs(out, out16, columns, sum) : 0;
    for (; c < columns; ++c) {
      out[c] = out[c] / sum;
      if (out16) out16[c] = f16_of(out[c]);
    }
  }
}
void softmax_rows_f32(const struct softmax_rows_f32_fields* v) { softmax_rows(v, 0); }
void softmax_rows_f32_f16(const struct softmax_rows_f32_f16_fields* v) {
  softmax_rows(&v->f32, v->out16);
}

/* layer_norm_rows_f32: per row r < rows: mean = (sum of x) / columns; var = (sum of (x - mean)^2)
 *   / columns, both sums in six column slices (ops_math.h); inv = 1 / sqrt(var + eps);
 *   y = ((x - mean) x inv) x gamma + beta; mean_out[r] = mean, inv_out[r] = inv.
 * fields: x (in f32), gamma (in f32), beta (in f32), y (out f32), mean_out (out f32),
 *         inv_out (out f32), rows, columns, eps (f32 bits) */
struct layer_norm_rows_f32_fields {
  const float *x, *gamma, *beta;
  float *y, *mean_out, *inv_out;
  uint32_t rows, columns, eps;
};
void layer_norm_rows_f32(const struct layer_norm_rows_f32_fields* v) {
  const float eps = f32_of(v->eps);
  const uint32_t columns = v->columns;
  for (uint32_t r = 0; r < v->rows; ++r) {
    const float* x = v->x + r * columns;
    float part[IPU_OPS_ROW_SLICES];
    for (uint32_t s = 0; s < IPU_OPS_ROW_SLICES; ++s) {
      float sum = 0.0f;
      for (uint32_t c = ipu_ops_slice_begin(columns, s); c < ipu_ops_slice_begin(columns, s + 1);
           ++c)
        sum += x[c];
      part[s] = sum;
    }
    const float mean = ipu_ops_slices_total(part, 1) / (float)columns;
    for (uint32_t s = 0; s < IPU_OPS_ROW_SLICES; ++s) {
      float squares = 0.0f;
      for (uint32_t c = ipu_ops_slice_begin(columns, s); c < ipu_ops_slice_begin(columns, s + 1);
           ++c) {
        const float d = x[c] - mean;
        squares += d * d;
      }
      part[s] = squares;
    }
    const float inv = ipu_ops_rsqrtf(ipu_ops_slices_total(part, 1) / (float)columns + eps);
    float* y = v->y + r * columns;
    for (uint32_t c = 0; c < columns; ++c) y[c] = ((x[c] - mean) * inv) * v->gamma[c] + v->beta[c];
    v->mean_out[r] = mean;
    v->inv_out[r] = inv;
  }
}

/* The same layer norm by six vertices a run of rows, each one column slice (`slice`), in three
 * compute sets; sums and squares hold [6 x rows], slice-major:
 *   layer_norm_slice_sums_f32: sums[slice rows + r] = the slice's sum of x.
 *     fields: x (in f32), sums (out f32: the slice's rows), rows, columns, slice
 *   layer_norm_slice_squares_f32: mean = (the six sums in order) / columns; squares[slice rows
 *     + r] = the slice's sum of (x - mean)^2.
 *     fields: x, sums (in f32), squares (out f32: the slice's rows), rows, columns, slice
 *   layer_norm_slice_apply_f32: mean and inv as layer_norm_rows_f32's; the slice's y; slice 0
 *     writes mean_out and inv_out.
 *     fields: x, gamma, beta, sums, squares (in f32), y, mean_out, inv_out (out f32), rows,
 *             columns, slice, eps (f32 bits) */
/* The columns [c0, c1) of a slice vertex's slice. */
#define SLICE_COLUMNS(v)                                             \
  const uint32_t c0 = ipu_ops_slice_begin((v)->columns, (v)->slice), \
                 c1 = ipu_ops_slice_begin((v)->columns, (v)->slice + 1)
struct layer_norm_slice_sums_f32_fields {
  const float* x;
  float* sums;
  uint32_t rows, columns, slice;
};
void layer_norm_slice_sums_f32(const struct layer_norm_slice_sums_f32_fields* v) {
  const uint32_t columns = v->columns;
  SLICE_COLUMNS(v);
  for (uint32_t r = 0; r < v->rows; ++r) {
    const float* x = v->x + r * columns;
    float sum = 0.0f;
    for (uint32_t c = c0; c < c1; ++c) sum += x[c];
    v->sums[r] = sum;
  }
}
struct layer_norm_slice_squares_f32_fields {
  const float *x, *sums;
  float* squares;
  uint32_t rows, columns, slice;
};
void layer_norm_slice_squares_f32(const struct layer_norm_slice_squares_f32_fields* v) {
  const uint32_t rows = v->rows, columns = v->columns;
  SLICE_COLUMNS(v);
  for (uint32_t r = 0; r < rows; ++r) {
    const float* x = v->x + r * columns;
    const float mean = ipu_ops_slices_total(v->sums + r, rows) / (float)columns;
    float squares = 0.0f;
    for (uint32_t c = c0; c < c1; ++c) {
      const float d = x[c] - mean;
      squares += d * d;
    }
    v->squares[r] = squares;
  }
}
struct layer_norm_slice_apply_f32_fields {
  const float *x, *gamma, *beta, *sums, *squares;
  float *y, *mean_out, *inv_out;
  uint32_t rows, columns, slice, eps;
};
void layer_norm_slice_apply_f32(const struct layer_norm_slice_apply_f32_fields* v) {
  const float eps = f32_of(v->eps);
  const uint32_t rows = v->rows, columns = v->columns;
  SLICE_COLUMNS(v);
  for (uint32_t r = 0; r < rows; ++r) {
    const float* x = v->x + r * columns;
    const float mean = ipu_ops_slices_total(v->sums + r, rows) / (float)columns;
    const float inv =
        ipu_ops_rsqrtf(ipu_ops_slices_total(v->squares + r, rows) / (float)columns + eps);
    float* y = v->y + r * columns;
    const float *gamma = v->gamma, *beta = v->beta;
    uint32_t c = c0;
    if (c < c1 && ONE_WORD_IN(x + c)) { /* one alone, then pairs */
      y[c] = ((x[c] - mean) * inv) * gamma[c] + beta[c];
      ++c;
    }
    if (ON_PAIRS(x + c) && ON_PAIRS(gamma + c) && ON_PAIRS(beta + c) && ON_PAIRS(y + c))
      c += layer_norm_apply_pairs(x + c, gamma + c, beta + c, mean, inv, y + c, c1 - c);
    for (; c < c1; ++c) y[c] = ((x[c] - mean) * inv) * gamma[c] + beta[c];
    if (v->slice == 0) {
      v->mean_out[r] = mean;
      v->inv_out[r] = inv;
    }
  }
}

/* softmax_grad_rows_f32: per row r < rows: s = the sum of dy y from left to right;
 *   dx = y (dy - s), times scale (rounded) unless scale is 1. softmax_grad_rows_f16: dx rounded
 *   to f16 (nearest even), as cast_f32_f16 rounds it.
 * fields: y (in f32), dy (in f32), dx (out f32 or f16), rows, columns, scale (f32 bits) */
struct softmax_grad_rows_fields {
  const float *y, *dy;
  void* dx;
  uint32_t rows, columns, scale;
};
static void softmax_grad_rows(const struct softmax_grad_rows_fields* v, int f16) {
  const uint32_t columns = v->columns;
  const float scale = f32_of(v->scale);
  const int scaled = scale != 1.0f;
  for (uint32_t r = 0; r < v->rows; ++r) {
    const float *y = v->y + r * columns, *dy = v->dy + r * columns;
    float* dx = f16 ? 0 : (float*)v->dx + r * columns;
    uint16_t* dx16 = f16 ? (uint16_t*)v->dx + r * columns : 0;
    if (columns % 2 == 0 && ON_PAIRS(y) && ON_PAIRS(dy) &&
        (f16 ? ((uintptr_t)dx16 & 3) == 0 : ON_PAIRS(dx))) {
      softmax_grad_pairs(y, dy, dx, dx16, columns, scaled ? &scale : 0);
      continue;
    }
    float s = 0.0f;
    for (uint32_t c = 0; c < columns; ++c) s += dy[c] * y[c];
    for (uint32_t c = 0; c < columns; ++c) {
      const float d = y[c] * (dy[c] - s);
      const float e = scaled ? d * scale : d;
      if (f16)
        dx16[c] = f16_of(e);
      else
        dx[c] = e;
    }
  }
}
void softmax_grad_rows_f32(const struct softmax_grad_rows_fields* v) { softmax_grad_rows(v, 0); }
void softmax_grad_rows_f16(const struct softmax_grad_rows_fields* v) { softmax_grad_rows(v, 1); }

/* layer_norm_grad_rows_f32: per row r < rows, with xhat = (x - mean) inv and g = dy gamma:
 *   a = (sum of g) / columns, b = (sum of g xhat) / columns, both sums in six column slices
 *   (ops_math.h); dx = inv ((g - a) - xhat b); and, over the rows in order, dgamma += dy xhat,
 *   dbeta += dy (this vertex's partial sums, from 0).
 * fields: x, dy, gamma, mean, inv (in f32), dx (out f32), dgamma, dbeta (out f32: a row of
 *         columns each), rows, columns */
struct layer_norm_grad_rows_f32_fields {
  const float *x, *dy, *gamma, *mean, *inv;
  float *dx, *dgamma, *dbeta;
  uint32_t rows, columns;
};
NO_MEMSET void layer_norm_grad_rows_f32(const struct layer_norm_grad_rows_f32_fields* v) {
  const uint32_t columns = v->columns;
  for (uint32_t c = 0; c < columns; ++c) v->dgamma[c] = v->dbeta[c] = 0.0f;
  for (uint32_t r = 0; r < v->rows; ++r) {
    const float *x = v->x + r * columns, *dy = v->dy + r * columns;
    const float mean = v->mean[r], inv = v->inv[r];
    float part_g[IPU_OPS_ROW_SLICES], part_gx[IPU_OPS_ROW_SLICES];
    for (uint32_t s = 0; s < IPU_OPS_ROW_SLICES; ++s) {
      float sum_g = 0.0f, sum_gx = 0.0f;
      for (uint32_t c = ipu_ops_slice_begin(columns, s); c < ipu_ops_slice_begin(columns, s + 1);
           ++c) {
        const float xhat = (x[c] - mean) * inv, g = dy[c] * v->gamma[c];
        sum_g += g;
        sum_gx += g * xhat;
        v->dgamma[c] += dy[c] * xhat;
        v->dbeta[c] += dy[c];
      }
      part_g[s] = sum_g;
      part_gx[s] = sum_gx;
    }
    const float a = ipu_ops_slices_total(part_g, 1) / (float)columns,
                b = ipu_ops_slices_total(part_gx, 1) / (float)columns;
    float* dx = v->dx + r * columns;
    for (uint32_t c = 0; c < columns; ++c) {
      const float xhat = (x[c] - mean) * inv, g = dy[c] * v->gamma[c];
      dx[c] = inv * ((g - a) - xhat * b);
    }
  }
}

/* The same gradient by six vertices a run of rows, each one column slice (`slice`), in two
 * compute sets; sums holds [12 x rows]: the six slices' sums of g, then of g xhat, slice-major:
 *   layer_norm_grad_slice_sums_f32: sum_g[r] and sum_gx[r], the slice's sums of row r; and over
 *     the rows in order, the slice's columns of dgamma += dy xhat and dbeta += dy (from 0).
 *     fields: x, dy, gamma, mean, inv (in f32), sum_g, sum_gx (out f32: the slice's rows), dgamma,
 *             dbeta (out f32: the slice's columns of the partial row), rows, columns, slice
 *   layer_norm_grad_slice_apply_f32: a and b from the six slices' sums in order; the slice's dx.
 *     fields: x, dy, gamma, mean, inv, sums (in f32), dx (out f32), rows, columns, slice */
struct layer_norm_grad_slice_sums_f32_fields {
  const float *x, *dy, *gamma, *mean, *inv;
  float *sum_g, *sum_gx, *dgamma, *dbeta;
  uint32_t rows, columns, slice;
};
NO_MEMSET void layer_norm_grad_slice_sums_f32(
    const struct layer_norm_grad_slice_sums_f32_fields* v) {
  const uint32_t columns = v->columns;
  SLICE_COLUMNS(v);
  /* dgamma and dbeta hold the slice's columns from c0: column c at dgamma + (c - c0), of the
   * same word parity as x + c when the partial row is aligned as the rows are. Their sums start
   * from 0: the first row adds to 0 without loading it (0 + p keeps a -0 product +0). */
  float *const dgamma = v->dgamma, *const dbeta = v->dbeta;
  if (v->rows == 0)
    for (uint32_t c = 0; c < c1 - c0; ++c) dgamma[c] = dbeta[c] = 0.0f;
  const float* gamma = v->gamma;
  for (uint32_t r = 0; r < v->rows; ++r) {
    const float *x = v->x + r * columns, *dy = v->dy + r * columns;
    const float mean = v->mean[r], inv = v->inv[r];
    float sum_g = 0.0f, sum_gx = 0.0f;
#define LN_GRAD_SUMS_COLUMN(c)                                        \
  do {                                                                \
    const float xhat = (x[c] - mean) * inv, g = dy[c] * gamma[c];     \
    sum_g += g;                                                       \
    sum_gx += g * xhat;                                               \
    dgamma[(c)-c0] = (r == 0 ? 0.0f : dgamma[(c)-c0]) + dy[c] * xhat; \
    dbeta[(c)-c0] = (r == 0 ? 0.0f : dbeta[(c)-c0]) + dy[c];          \
  } while (0)
    uint32_t c = c0;
    if (c < c1 && ONE_WORD_IN(x + c)) { /* one alone, then pairs */
      LN_GRAD_SUMS_COLUMN(c);
      ++c;
    }
    if (ON_PAIRS(x + c) && ON_PAIRS(dy + c) && ON_PAIRS(gamma + c) && ON_PAIRS(dgamma + (c - c0)) &&
        ON_PAIRS(dbeta + (c - c0)))
      c += layer_norm_grad_sums_pairs(x + c, dy + c, gamma + c, mean, inv, dgamma + (c - c0),
                                      dbeta + (c - c0), c1 - c, &sum_g, &sum_gx, r == 0);
    for (; c < c1; ++c) LN_GRAD_SUMS_COLUMN(c);
#undef LN_GRAD_SUMS_COLUMN
    v->sum_g[r] = sum_g;
    v->sum_gx[r] = sum_gx;
  }
}
struct layer_norm_grad_slice_apply_f32_fields {
  const float *x, *dy, *gamma, *mean, *inv, *sums;
  float* dx;
  uint32_t rows, columns, slice;
};
void layer_norm_grad_slice_apply_f32(const struct layer_norm_grad_slice_apply_f32_fields* v) {
  const uint32_t rows = v->rows, columns = v->columns;
  SLICE_COLUMNS(v);
  for (uint32_t r = 0; r < rows; ++r) {
    const float *x = v->x + r * columns, *dy = v->dy + r * columns;
    const float mean = v->mean[r], inv = v->inv[r];
    const float a = ipu_ops_slices_total(v->sums + r, rows) / (float)columns,
                b = ipu_ops_slices_total(v->sums + IPU_OPS_ROW_SLICES * rows + r, rows) /
                    (float)columns;
    float* dx = v->dx + r * columns;
    const float* gamma = v->gamma;
#define LN_GRAD_APPLY_COLUMN(c)                                   \
  do {                                                            \
    const float xhat = (x[c] - mean) * inv, g = dy[c] * gamma[c]; \
    dx[c] = inv * ((g - a) - xhat * b);                           \
  } while (0)
    uint32_t c = c0;
    if (c < c1 && ONE_WORD_IN(x + c)) { /* one alone, then pairs */
      LN_GRAD_APPLY_COLUMN(c);
      ++c;
    }
    if (ON_PAIRS(x + c) && ON_PAIRS(dy + c) && ON_PAIRS(gamma + c) && ON_PAIRS(dx + c))
      c += layer_norm_grad_apply_pairs(x + c, dy + c, gamma + c, mean, inv, a, b, dx + c, c1 - c);
    for (; c < c1; ++c) LN_GRAD_APPLY_COLUMN(c);
#undef LN_GRAD_APPLY_COLUMN
  }
}

/* sum_rows_in_order_f32: out[c] = in[0][c] + in[1][c] + ... + in[rows-1][c], c < columns,
 *   in[r][c] = in[r * stride + c] (a column range of rows `stride` apart).
 * fields: in (in f32), out (out f32), rows, columns, stride */
struct sum_rows_in_order_f32_fields {
  const float* in;
  float* out;
  uint32_t rows, columns, stride;
};
void sum_rows_in_order_f32(const struct sum_rows_in_order_f32_fields* v) {
  const uint32_t rows = v->rows, columns = v->columns, stride = v->stride;
  uint32_t c = 0;
  if (rows > 0 && stride % 2 == 0 && ON_PAIRS(v->in) && ON_PAIRS(v->out))
    c = column_sums_quads(v->in, v->out, rows, columns, stride);
  for (; c + 1 < columns; c += 2) { /* two columns a pass down the rows */
    const float* at = v->in + c;
    float s0 = at[0], s1 = at[1];
    for (uint32_t r = 1; r < rows; ++r) {
      at += stride;
      s0 += at[0];
      s1 += at[1];
    }
    v->out[c] = s0;
    v->out[c + 1] = s1;
  }
  if (c < columns) {
    const float* at = v->in + c;
    float s = at[0];
    for (uint32_t r = 1; r < rows; ++r) s += (at += stride)[0];
    v->out[c] = s;
  }
}

/* sum_pieces_in_order_f32: out[c] = in0[c] + in1[c] + ... + in<rows-1>[c], c < columns, rows
 *   <= SUM_PIECES: a column range of rows that lie apart on the tile (a block of neighbouring rows
 *   of one column slice); unused inputs repeat in0.
 * fields: in0 .. in7 (in f32), out (out f32), rows, columns */
#define SUM_PIECES 8
struct sum_pieces_in_order_f32_fields {
  const float* in[SUM_PIECES];
  float* out;
  uint32_t rows, columns;
};
void sum_pieces_in_order_f32(const struct sum_pieces_in_order_f32_fields* v) {
  const uint32_t rows = v->rows, columns = v->columns;
  uint32_t c = 0;
  /* Four columns a round in the lanes where every row and out lie on pairs alike, after one
   * column alone when all start a word past a pair: 4.25 instructions a column for three rows,
   * where two columns a pass down the rows took about 13 (the rows' pointers reloaded). */
  int on_pairs = ON_PAIRS(v->out), word_in = ONE_WORD_IN(v->out);
  for (uint32_t r = 0; r < rows; ++r) {
    on_pairs &= ON_PAIRS(v->in[r]);
    word_in &= ONE_WORD_IN(v->in[r]);
  }
  if (columns > 0 && word_in) {
    float s = v->in[0][0];
    for (uint32_t r = 1; r < rows; ++r) s += v->in[r][0];
    v->out[0] = s;
    c = 1;
  }
  if (on_pairs || word_in) {
    const float* in[SUM_PIECES];
    for (uint32_t r = 0; r < rows; ++r) in[r] = v->in[r] + c;
    float* const out = v->out + c;
    switch (rows) {
#define SUM_PIECES_CASE(R) \
  case R: c += sum_pieces_quads(in, out, columns - c, R); break;
      SUM_PIECES_CASE(2)
      SUM_PIECES_CASE(3)
      SUM_PIECES_CASE(4)
      SUM_PIECES_CASE(5)
      SUM_PIECES_CASE(6)
      SUM_PIECES_CASE(7)
      SUM_PIECES_CASE(8)
#undef SUM_PIECES_CASE
      default: break;
    }
  }
  for (; c + 1 < columns; c += 2) { /* two columns a pass down the rows */
    float s0 = v->in[0][c], s1 = v->in[0][c + 1];
    for (uint32_t r = 1; r < rows; ++r) {
      s0 += v->in[r][c];
      s1 += v->in[r][c + 1];
    }
    v->out[c] = s0;
    v->out[c + 1] = s1;
  }
  if (c < columns) {
    float s = v->in[0][c];
    for (uint32_t r = 1; r < rows; ++r) s += v->in[r][c];
    v->out[c] = s;
  }
}

/* cast_f32_f16_sr: cast_f32_f16 with the hardware's stochastic rounding, its random bits from
 *   the PRNG seeded (s0, s1) for this range: one 64-bit output a pair of elements, the low word
 *   for the first. The worker's rounding mode is set back to nearest at the end.
 * fields: a (in f32), out (out f16), n, s0_lo, s0_hi, s1_lo, s1_hi */
struct cast_f32_f16_sr_fields {
  const float* a;
  uint16_t* out;
  uint32_t n, s0_lo, s0_hi, s1_lo, s1_hi;
};
void cast_f32_f16_sr(const struct cast_f32_f16_sr_fields* v) {
  ipu_prng_seed((uint64_t)v->s0_hi << 32 | v->s0_lo, (uint64_t)v->s1_hi << 32 | v->s1_lo);
  ipu_set_stochastic_rounding(1);
  narrow_range(v->a, v->out, v->n);
  ipu_set_stochastic_rounding(0);
}

/* cast_f32_f16_sr_step: cast_f32_f16_sr with its PRNG state salted by *step (a counter the
 *   program or the host advances each training step): ipu_ops_salt_state.
 * fields: a (in f32), step (in u32), out (out f16), n, s0_lo, s0_hi, s1_lo, s1_hi */
struct cast_f32_f16_sr_step_fields {
  const float* a;
  const uint32_t* step;
  uint16_t* out;
  uint32_t n, s0_lo, s0_hi, s1_lo, s1_hi;
};
/* Seeds the worker's PRNG with (s0, s1) salted by `salt` (ipu_ops_salt_state) and turns its
 * stochastic rounding on. */
static void round_stochastically(uint32_t s0_lo, uint32_t s0_hi, uint32_t s1_lo, uint32_t s1_hi,
                                 uint32_t salt) {
  uint64_t s0 = (uint64_t)s0_hi << 32 | s0_lo, s1 = (uint64_t)s1_hi << 32 | s1_lo;
  ipu_ops_salt_state(&s0, &s1, salt);
  ipu_prng_seed(s0, s1);
  ipu_set_stochastic_rounding(1);
}

void cast_f32_f16_sr_step(const struct cast_f32_f16_sr_step_fields* v) {
  round_stochastically(v->s0_lo, v->s0_hi, v->s1_lo, v->s1_hi, *v->step);
  narrow_range(v->a, v->out, v->n);
  ipu_set_stochastic_rounding(0);
}

/* sum[0..n) += grad[0..n) for an f16 sum, a pair at a time as the hardware converts: widened
 * exactly, added in f32, rounded once to f16 (by the worker's rounding mode). */
static void accumulate_range(const float* grad, uint16_t* sum, uint32_t n) {
  uint32_t i = 0;
  for (; i + 2 <= n; i += 2) {
    const ipu_f32x2 wide = ipu_f16v2tof32(ipu_f16x2_from_bits(sum[i], sum[i + 1]));
    const uint32_t bits = ipu_f16x2_bits(
        ipu_f32v2tof16(ipu_f32x2_make(wide.r[0] + grad[i], wide.r[1] + grad[i + 1])));
    sum[i] = (uint16_t)bits;
    sum[i + 1] = (uint16_t)(bits >> 16);
  }
  if (i < n) {
    const ipu_f32x2 wide = ipu_f16v2tof32(ipu_f16x2_from_bits(sum[i], 0));
    sum[i] = f16_of(wide.r[0] + grad[i]);
  }
}

/* accumulate_f16: a gradient added to its f16 sum, rounded to nearest even.
 * fields: grad (in f32), sum (inout f16), n */
struct accumulate_f16_fields {
  const float* grad;
  uint16_t* sum;
  uint32_t n;
};
void accumulate_f16(const struct accumulate_f16_fields* v) {
  accumulate_range(v->grad, v->sum, v->n);
}

/* accumulate_f16_sr: accumulate_f16 rounded stochastically, the PRNG seeded (s0, s1) for this
 *   range and salted with *draws, its count of earlier calls, which it then advances: every
 *   micro-batch's addition draws new bits.
 * fields: grad (in f32), sum (inout f16), draws (inout u32), n, s0_lo, s0_hi, s1_lo, s1_hi */
struct accumulate_f16_sr_fields {
  const float* grad;
  uint16_t* sum;
  uint32_t* draws;
  uint32_t n, s0_lo, s0_hi, s1_lo, s1_hi;
};
void accumulate_f16_sr(const struct accumulate_f16_sr_fields* v) {
  round_stochastically(v->s0_lo, v->s0_hi, v->s1_lo, v->s1_hi, *v->draws);
  *v->draws += 1;
  accumulate_range(v->grad, v->sum, v->n);
  ipu_set_stochastic_rounding(0);
}

/* zero_f16: out[i] = +0 for i < n.  fields: out (out f16), n */
struct zero_f16_fields {
  uint16_t* out;
  uint32_t n;
};
NO_MEMSET void zero_f16(const struct zero_f16_fields* v) {
  uint16_t* out = v->out;
  const uint32_t n = v->n;
  uint32_t i = 0;
  if (n > 0 && ((uintptr_t)out & 2) != 0) out[i++] = 0; /* to a word's start */
  for (; i + 2 <= n; i += 2) *(uint32_t*)(void*)(out + i) = 0;
  if (i < n) out[i] = 0;
}

/* zero_f32: out[i] = +0 for i < n, whatever was there (a NaN too).  fields: out (out f32), n */
struct zero_f32_fields {
  uint32_t* out; /* the f32 bits */
  uint32_t n;
};
NO_MEMSET void zero_f32(const struct zero_f32_fields* v) {
  for (uint32_t i = 0; i < v->n; ++i) v->out[i] = 0;
}

/* gather_columns_f32: out[r][c] = in[r][first + c] for c < columns, r < rows: a block of
 *   columns of rows x stride, packed (transpose's regrouping by destination).
 * fields: in (in f32), out (out f32), rows, stride, first, columns */
struct gather_columns_f32_fields {
  const float* in;
  float* out;
  uint32_t rows, stride, first, columns;
};
void gather_columns_f32(const struct gather_columns_f32_fields* v) {
  const float* in = v->in + v->first;
  float* out = v->out;
  for (uint32_t r = 0; r < v->rows; ++r, in += v->stride)
    for (uint32_t c = 0; c < v->columns; ++c) *out++ = in[c];
}

/* transpose_f32: out[c][r] = in[r][first + c] for c < columns, r < rows: a tile's columns
 *   (gathered as in, rows x stride) as rows of the transposed matrix.
 * fields: in (in f32), out (out f32), rows, stride, first, columns */
struct transpose_f32_fields {
  const float* in;
  float* out;
  uint32_t rows, stride, first, columns;
};
void transpose_f32(const struct transpose_f32_fields* v) {
  for (uint32_t c = 0; c < v->columns; ++c) {
    const float* in = v->in + v->first + c;
    float* out = v->out + c * v->rows;
    for (uint32_t r = 0; r < v->rows; ++r, in += v->stride) out[r] = *in;
  }
}
