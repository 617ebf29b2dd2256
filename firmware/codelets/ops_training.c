/* The training step's codelets of the operator library (sdk/ops/training.cpp, docs/ops.md):
 * dropout, cross-entropy, Adam and LAMB, embedding lookups and their gradients. Each vertex
 * runs on one worker over the range its fields give; f32 arithmetic, one rounding per
 * operation in the order written, as the host references in sdk/ops do. */
#include <stdint.h>

#include "ipu.h"
#include "ops_codelet.h"
#include "ops_math.h"

/* dropout_f32: with the PRNG seeded (s0, s1) from the fields, per element i < n in order: keep
 *   if the low 32 bits of the next output are below `keep` (the keep probability x 2^32), then
 *   out = x scale, else 0.
 * fields: x (in f32), out (out f32), n, keep, scale (f32 bits), s0_lo, s0_hi, s1_lo, s1_hi */
struct dropout_f32_fields {
  const float *x;
  float *out;
  uint32_t n, keep, scale, s0_lo, s0_hi, s1_lo, s1_hi;
};
void dropout_f32(const struct dropout_f32_fields *v) {
  const float scale = f32_of(v->scale);
  ipu_prng_seed((uint64_t)v->s0_hi << 32 | v->s0_lo, (uint64_t)v->s1_hi << 32 | v->s1_lo);
  for (uint32_t i = 0; i < v->n; ++i) {
    const uint32_t r = ipu_urand32();
    v->out[i] = r < v->keep ? v->x[i] * scale : 0.0f;
  }
}

/* cross_entropy_rows_f32: per row r < rows, label l = labels[r]: m = the row's max, s = the sum
 *   of e^(x - m) from left to right, loss[r] = (m + ln s) - x[l]; dx = (e^(x - m) / s - [c == l])
 *   x grad_scale (the loss's gradient, e.g. 1 / the batch's rows). The label 0xffffffff is
 *   ignored: loss 0 and a zero gradient (a padding slot). Any other label >= columns gives a
 *   NaN loss (the host cannot check labels that the program computes).
 * fields: x (in f32), labels (in u32), loss (out f32), dx (out f32), rows, columns, grad_scale */
struct cross_entropy_rows_f32_fields {
  const float *x;
  const uint32_t *labels;
  float *loss, *dx;
  uint32_t rows, columns, grad_scale;
};
NO_MEMSET void cross_entropy_rows_f32(const struct cross_entropy_rows_f32_fields *v) {
  const float k = f32_of(v->grad_scale);
  const uint32_t columns = v->columns;
  for (uint32_t r = 0; r < v->rows; ++r) {
    const float *x = v->x + r * columns;
    float *dx = v->dx + r * columns;
    float m = x[0];
    for (uint32_t c = 1; c < columns; ++c) m = x[c] > m ? x[c] : m;
    float s = 0.0f;
    for (uint32_t c = 0; c < columns; ++c) {
      dx[c] = ipu_ops_expf(x[c] - m);
      s += dx[c];
    }
    const uint32_t label = v->labels[r];
    if (label == 0xffffffffu) {
      v->loss[r] = 0.0f;
      for (uint32_t c = 0; c < columns; ++c) dx[c] = 0.0f;
      continue;
    }
    if (label < columns) {
      v->loss[r] = (m + ipu_ops_logf(s)) - x[label];
    } else { /* a label outside the row: a quiet NaN loss, and no one-hot in the gradient */
      const uint32_t nan = 0x7fc00000u;
      memcpy(&v->loss[r], &nan, 4);
    }
    for (uint32_t c = 0; c < columns; ++c) dx[c] = (dx[c] / s - (c == label ? 1.0f : 0.0f)) * k;
  }
}

/* Cross-entropy of rows cut into slices (a vocabulary's logits over many tiles), in three
 * passes around the slices' statistics; a row whole is one slice, and the same arithmetic as
 * cross_entropy_rows_f32. Slice maxes are reduce_rows_op_f32's, their max again so.
 *
 * cross_entropy_slice_exp_f32: over the slice's columns first .. first + n - 1: dx = e^(x - m)
 *   (m the row's max), stats[0] = the sum of dx from 0 left to right, stats[1] = x[label] when
 *   the label is in the slice, else 0.
 * fields: x (in f32), m (in f32), label (in u32), dx (out f32), stats (out f32), first, n */
struct cross_entropy_slice_exp_f32_fields {
  const float *x, *m;
  const uint32_t *label;
  float *dx, *stats;
  uint32_t first, n;
};
void cross_entropy_slice_exp_f32(const struct cross_entropy_slice_exp_f32_fields *v) {
  const float m = *v->m;
  float s = 0.0f;
  for (uint32_t c = 0; c < v->n; ++c) {
    v->dx[c] = ipu_ops_expf(v->x[c] - m);
    s += v->dx[c];
  }
  const uint32_t at = *v->label - v->first; /* wraps below the slice */
  v->stats[0] = s;
  v->stats[1] = at < v->n ? v->x[at] : 0.0f;
}

/* cross_entropy_combine_f32: a row's slices: s = the sum of their sums, xl of their label
 *   values, each from 0 in slice order; total = s; loss = (m + ln s) - xl, 0 for the ignored
 *   label 0xffffffff, a NaN for any other label >= columns.
 * fields: stats (in f32: slices pairs), m (in f32), label (in u32), loss (out f32),
 *         total (out f32), slices, columns */
struct cross_entropy_combine_f32_fields {
  const float *stats, *m;
  const uint32_t *label;
  float *loss, *total;
  uint32_t slices, columns;
};
void cross_entropy_combine_f32(const struct cross_entropy_combine_f32_fields *v) {
  float s = 0.0f, xl = 0.0f;
  for (uint32_t i = 0; i < v->slices; ++i) {
    s += v->stats[2 * i];
    xl += v->stats[2 * i + 1];
  }
  *v->total = s;
  const uint32_t label = *v->label;
  if (label == 0xffffffffu) {
    *v->loss = 0.0f;
  } else if (label < v->columns) {
    *v->loss = (*v->m + ipu_ops_logf(s)) - xl;
  } else {
    const uint32_t nan = 0x7fc00000u;
    memcpy(v->loss, &nan, 4);
  }
}

/* cross_entropy_slice_grad_f32: dx = (dx / s - [first + c == label]) x grad_scale over the
 *   slice (dx holding e^(x - m), s the row's total), or 0 for the ignored label.
 * fields: dx (inout f32), total (in f32), label (in u32), first, n, grad_scale */
struct cross_entropy_slice_grad_f32_fields {
  float *dx;
  const float *total;
  const uint32_t *label;
  uint32_t first, n, grad_scale;
};
NO_MEMSET void cross_entropy_slice_grad_f32(const struct cross_entropy_slice_grad_f32_fields *v) {
  const uint32_t label = *v->label;
  if (label == 0xffffffffu) {
    for (uint32_t c = 0; c < v->n; ++c) v->dx[c] = 0.0f;
    return;
  }
  const float k = f32_of(v->grad_scale), s = *v->total;
  const uint32_t at = label - v->first;
  for (uint32_t c = 0; c < v->n; ++c) v->dx[c] = (v->dx[c] / s - (c == at ? 1.0f : 0.0f)) * k;
}

/* adam_f32: Adam (or LAMB's first half) over elements i < n:
 *   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g g;
 *   u = (m c1) / (sqrt(v c2) + eps) + wd w   (c1, c2: the bias corrections, corr[0], corr[1]);
 *   Adam: w = w - lr u.  LAMB (lamb = 1): u is stored, and partial[0] = the sum of w w and
 *   partial[1] = the sum of u u over the range, from 0, in order (w before its update).
 * fields: w (inout f32), g (in f32), m (inout f32), v (inout f32), u (out f32), corr (in f32),
 *         partial (out f32), n, b1, b2, eps, wd, lr (f32 bits), lamb */
struct adam_f32_fields {
  float *w;
  const float *g;
  float *m, *v, *u;
  const float *corr;
  float *partial;
  uint32_t n, b1, b2, eps, wd, lr, lamb;
};
void adam_f32(const struct adam_f32_fields *v) {
  const float b1 = f32_of(v->b1), b2 = f32_of(v->b2), eps = f32_of(v->eps), wd = f32_of(v->wd);
  const float lr = f32_of(v->lr), c1 = v->corr[0], c2 = v->corr[1];
  const float one_b1 = 1.0f - b1, one_b2 = 1.0f - b2;
  float sum_w = 0.0f, sum_u = 0.0f;
  for (uint32_t i = 0; i < v->n; ++i) {
    const float g = v->g[i], w = v->w[i];
    const float m = b1 * v->m[i] + one_b1 * g;
    const float s = b2 * v->v[i] + one_b2 * (g * g);
    v->m[i] = m;
    v->v[i] = s;
    const float u = (m * c1) / (__builtin_sqrtf(s * c2) + eps) + wd * w;
    if (v->lamb) {
      v->u[i] = u;
      sum_w += w * w;
      sum_u += u * u;
    } else {
      v->w[i] = w - lr * u;
    }
  }
  if (v->lamb) {
    v->partial[0] = sum_w;
    v->partial[1] = sum_u;
  }
}

/* lamb_ratio_f32: the trust ratio of LAMB from the ranges' partial sums (parts x 2, added in
 *   order): r = sqrt(sum w w) / sqrt(sum u u), or 1 when either is 0.
 * fields: partials (in f32), ratio (out f32), parts */
struct lamb_ratio_f32_fields {
  const float *partials;
  float *ratio;
  uint32_t parts;
};
void lamb_ratio_f32(const struct lamb_ratio_f32_fields *v) {
  float sw = v->partials[0], su = v->partials[1];
  for (uint32_t p = 1; p < v->parts; ++p) {
    sw += v->partials[2 * p];
    su += v->partials[2 * p + 1];
  }
  v->ratio[0] = sw > 0.0f && su > 0.0f ? __builtin_sqrtf(sw) / __builtin_sqrtf(su) : 1.0f;
}

/* lamb_apply_f32: w = w - (lr ratio) u, i < n.  fields: w (inout f32), u (in f32), ratio (in
 *   f32), n, lr (f32 bits) */
struct lamb_apply_f32_fields {
  float *w;
  const float *u, *ratio;
  uint32_t n, lr;
};
void lamb_apply_f32(const struct lamb_apply_f32_fields *v) {
  const float step = f32_of(v->lr) * v->ratio[0];
  for (uint32_t i = 0; i < v->n; ++i) v->w[i] = v->w[i] - step * v->u[i];
}

/* embedding_lookup_f32: for each of rows feature rows h of the transposed table (V entries
 *   each): out[h][r] = table[h][indices[r]], r < count; an index >= entries gives a NaN.
 * fields: table (in f32), indices (in u32), out (out f32), rows, entries, count */
struct embedding_lookup_f32_fields {
  const float *table;
  const uint32_t *indices;
  float *out;
  uint32_t rows, entries, count;
};
/* The lookup of v's rows, each entry read by ENTRY(row, index): the f32 and f16 lookups differ
 * only in it (a macro, so that each expands to the loop written out). */
#define LOOKUP_ROWS(v, ENTRY)                                            \
  do {                                                                   \
    const uint32_t nan_bits = 0x7fc00000u;                               \
    float nan;                                                           \
    memcpy(&nan, &nan_bits, 4);                                          \
    for (uint32_t h = 0; h < (v)->rows; ++h) {                           \
      const __typeof__((v)->table) table = (v)->table + h * (v)->entries; \
      float *out = (v)->out + h * (v)->count;                            \
      for (uint32_t r = 0; r < (v)->count; ++r) {                        \
        const uint32_t index = (v)->indices[r];                          \
        out[r] = index < (v)->entries ? ENTRY(table, index) : nan;       \
      }                                                                  \
    }                                                                    \
  } while (0)
#define F32_ENTRY(table, index) (table)[index]
#define F16_ENTRY(table, index) ipu_f16v2tof32(ipu_f16x2_from_bits((table)[index], 0)).r[0]

void embedding_lookup_f32(const struct embedding_lookup_f32_fields *v) {
  LOOKUP_ROWS(v, F32_ENTRY);
}

/* embedding_lookup_f16: embedding_lookup_f32 from an f16 table, each entry widened (exact).
 * fields: table (in f16), indices (in u32), out (out f32), rows, entries, count */
struct embedding_lookup_f16_fields {
  const uint16_t *table;
  const uint32_t *indices;
  float *out;
  uint32_t rows, entries, count;
};
void embedding_lookup_f16(const struct embedding_lookup_f16_fields *v) {
  LOOKUP_ROWS(v, F16_ENTRY);
}

/* embedding_grad_f32: for each of rows feature rows h: grad[h][e] = the sum, from 0, over
 *   r < count in order with indices[r] == e, of dout[h][r]; indices >= entries add nothing.
 * fields: dout (in f32), indices (in u32), grad (out f32), rows, entries, count */
struct embedding_grad_f32_fields {
  const float *dout;
  const uint32_t *indices;
  float *grad;
  uint32_t rows, entries, count;
};
NO_MEMSET void embedding_grad_f32(const struct embedding_grad_f32_fields *v) {
  for (uint32_t h = 0; h < v->rows; ++h) {
    float *grad = v->grad + h * v->entries;
    const float *dout = v->dout + h * v->count;
    for (uint32_t e = 0; e < v->entries; ++e) grad[e] = 0.0f;
    for (uint32_t r = 0; r < v->count; ++r) {
      const uint32_t index = v->indices[r];
      if (index < v->entries) grad[index] += dout[r];
    }
  }
}

/* embedding_grad_range_f32: embedding_grad_f32 for entries first .. first + n - 1 of one feature
 *   row: grad[e - first] = the sum, from 0, over r < count in order with indices[r] == e, of
 *   dout[r] (a gradient laid out as its table, a piece of a row on each tile).
 * fields: dout (in f32), indices (in u32), grad (out f32), first, n, count */
struct embedding_grad_range_f32_fields {
  const float *dout;
  const uint32_t *indices;
  float *grad;
  uint32_t first, n, count;
};
NO_MEMSET void embedding_grad_range_f32(const struct embedding_grad_range_f32_fields *v) {
  float *grad = v->grad;
  for (uint32_t e = 0; e < v->n; ++e) grad[e] = 0.0f;
  for (uint32_t r = 0; r < v->count; ++r) {
    const uint32_t at = v->indices[r] - v->first; /* wraps below the range */
    if (at < v->n) grad[at] += v->dout[r];
  }
}
