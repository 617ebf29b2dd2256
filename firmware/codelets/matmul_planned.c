/* Codelets of the planned matmul (sdk/ops/matmul.cpp, docs/ops.md). Each vertex runs on one
 * worker; the product gives a tile's work to six or more vertices, each its own range of it
 * (first, count fields), so that the workers share it without waiting for one another.
 *
 * The AMP (docs/xipu-model.md) takes its weights as 16 rows x 4 values per phase and streams its
 * input 16 k-values a column; the pack codelets turn a block gathered in row-major order into
 * those layouts, padding rows and k beyond the matrix with zeros (0 x anything finite adds
 * nothing), and the reduce codelet turns the AMP's column-major results back into rows. */
#include <stdint.h>

#include "ipu.h"

/* f16 bits of an f32 that f16 holds exactly (a widened f16), as the hardware converts it. */
static inline uint16_t narrow_exact(float x) {
  return (uint16_t)ipu_f16x2_bits(ipu_f32v2tof16(ipu_f32x2_make(x, 0.0f)));
}

/* pack_weights_{f16,f32}: out[group][pass][phase][row][j] (16 x 4 per phase, f16) =
 *   in[group * group_stride + row * row_stride + k * k_stride], k = 16 pass + 4 phase + j,
 *   for 16 group + row < rows and k < ks; else 0; blocks (group, pass, phase) first_block to
 *   first_block + blocks - 1 of groups x passes x 4.
 * fields: in (in f16 / f32), out (out f16), passes, rows, ks, group_stride, row_stride,
 *         k_stride, first_block, blocks */
struct pack_weights_fields {
  const void *in;
  uint16_t *out;
  uint32_t passes, rows, ks, group_stride, row_stride, k_stride, first_block, blocks;
};
#define PACK_WEIGHTS(NAME, TYPE, LOAD)                                                    \
  void NAME(const struct pack_weights_fields *v) {                                      \
    const uint32_t end = v->first_block + v->blocks;                                    \
    for (uint32_t block = v->first_block; block < end; ++block) {                       \
      const uint32_t group = block / (v->passes * 4);                                   \
      const uint32_t k0 = (block - group * v->passes * 4) * 4;                          \
      const uint32_t row0 = group * 16;                                                 \
      const TYPE *in = (const TYPE *)v->in + group * v->group_stride + k0 * v->k_stride; \
      uint16_t *out = v->out + block * 64;                                              \
      for (uint32_t row = 0; row < 16; ++row, out += 4, in += v->row_stride) {          \
        if (row0 + row >= v->rows) {                                                    \
          out[0] = out[1] = out[2] = out[3] = 0;                                        \
        } else if (k0 + 4 <= v->ks && sizeof(TYPE) == 2 && v->k_stride == 1) {          \
          /* four neighbouring f16 of a row: two words (the staging rows start on words) */ \
          const uint32_t *words = (const uint32_t *)(const void *)in;                   \
          uint32_t *to = (uint32_t *)(void *)out;                                       \
          to[0] = words[0];                                                             \
          to[1] = words[1];                                                             \
        } else if (k0 + 4 <= v->ks) {                                                   \
          const TYPE *at = in;                                                          \
          out[0] = LOAD(at[0]);                                                         \
          at += v->k_stride;                                                            \
          out[1] = LOAD(at[0]);                                                         \
          at += v->k_stride;                                                            \
          out[2] = LOAD(at[0]);                                                         \
          at += v->k_stride;                                                            \
          out[3] = LOAD(at[0]);                                                         \
        } else {                                                                        \
          for (uint32_t j = 0; j < 4; ++j)                                              \
            out[j] = k0 + j < v->ks ? LOAD(in[j * v->k_stride]) : 0;                    \
        }                                                                               \
      }                                                                                 \
    }                                                                                   \
  }
#define LOAD_F16(x) (x)
#define LOAD_F32(x) narrow_exact(x)
PACK_WEIGHTS(pack_weights_f16, uint16_t, LOAD_F16)
PACK_WEIGHTS(pack_weights_f32, float, LOAD_F32)

/* pack_stream_{f16,f32}: out[pass][column][kk] (f16) = in[column * column_stride + k * k_stride],
 *   k = 16 pass + kk, for k < ks; else 0; items (pass, column) first_item to first_item + items - 1.
 * fields: in (in f16 / f32), out (out f16), columns, ks, column_stride, k_stride, first_item,
 *         items */
struct pack_stream_fields {
  const void *in;
  uint16_t *out;
  uint32_t columns, ks, column_stride, k_stride, first_item, items;
};
#define PACK_STREAM(NAME, TYPE, LOAD)                                                    \
  void NAME(const struct pack_stream_fields *v) {                                       \
    const uint32_t end = v->first_item + v->items;                                      \
    for (uint32_t item = v->first_item; item < end; ++item) {                           \
      const uint32_t pass = item / v->columns, column = item - pass * v->columns;       \
      uint16_t *out = v->out + item * 16;                                               \
      const uint32_t k0 = pass * 16;                                                    \
      const TYPE *from = (const TYPE *)v->in + column * v->column_stride + k0 * v->k_stride; \
      const uint32_t valid = v->ks - k0 < 16 ? v->ks - k0 : 16;                         \
      const uint32_t stride = v->k_stride;                                              \
      uint32_t kk = 0;                                                                  \
      if (sizeof(TYPE) == 2 && stride == 1 && valid == 16) {                            \
        /* a pass of a column, 16 neighbouring f16: eight words */                      \
        const uint32_t *words = (const uint32_t *)(const void *)from;                   \
        uint32_t *to = (uint32_t *)(void *)out;                                         \
        for (uint32_t w = 0; w < 8; ++w) to[w] = words[w];                              \
        continue;                                                                       \
      }                                                                                 \
      for (; kk + 4 <= valid; kk += 4, from += 4 * stride) {                            \
        out[kk] = LOAD(from[0]);                                                        \
        out[kk + 1] = LOAD(from[stride]);                                               \
        out[kk + 2] = LOAD(from[2 * stride]);                                           \
        out[kk + 3] = LOAD(from[3 * stride]);                                           \
      }                                                                                 \
      for (; kk < valid; ++kk, from += stride) out[kk] = LOAD(from[0]);                 \
      for (; kk < 16; ++kk) out[kk] = 0;                                                \
    }                                                                                   \
  }
PACK_STREAM(pack_stream_f16, uint16_t, LOAD_F16)
PACK_STREAM(pack_stream_f32, float, LOAD_F32)

/* matmul_amp_f16 (one worker): for each group g of 16 rows and each column c,
 *   ct[g * ct_group_stride + 16 c + r] = sum over passes p of (sum over its 16 k, in order, by
 *   fma from 0) of weights x stream, the passes' sums added in order (AMP accumulation).
 * The weights of (g, p) are a[g * a_group_stride + p * a_pass_stride] (256 f16, packed); the
 * stream of pass p is b[p * b_pass_stride] (16 f16 a column, columns contiguous).
 * fields: a (in f16), b (in f16), ct (out f32), groups, passes, columns, a_group_stride,
 *         a_pass_stride, b_pass_stride, ct_group_stride */
struct matmul_amp_f16_fields {
  const uint16_t *a, *b;
  float *ct;
  uint32_t groups, passes, columns, a_group_stride, a_pass_stride, b_pass_stride, ct_group_stride;
};
void matmul_amp_f16(const struct matmul_amp_f16_fields *v) {
  /* Locals: the AMP's inline assembly clobbers memory, so fields read through v would be
   * loaded again for every pass. */
  const uint32_t groups = v->groups, passes = v->passes, columns = v->columns;
  const uint32_t a_group_stride = v->a_group_stride, a_pass_stride = v->a_pass_stride;
  const uint32_t b_pass_stride = v->b_pass_stride, ct_group_stride = v->ct_group_stride;
  const uint16_t *a_group = v->a;
  float *ct = v->ct;
  for (uint32_t g = 0; g < groups; ++g, a_group += a_group_stride, ct += ct_group_stride) {
    const uint16_t *w = a_group, *b = v->b;
    for (uint32_t p = 0; p < passes; ++p, w += a_pass_stride, b += b_pass_stride) {
      ipu_amp_configure(IPU_AMP_F16, 4, p > 0, b, ct);
      ipu_amp_load_weights(w, 0);
      ipu_amp_load_weights(w + 64, 1);
      ipu_amp_load_weights(w + 128, 2);
      ipu_amp_load_weights(w + 192, 3);
      uint32_t c = columns;
      for (; c >= 4; c -= 4) {
        ipu_amp(); ipu_amp(); ipu_amp(); ipu_amp();
        ipu_amp(); ipu_amp(); ipu_amp(); ipu_amp();
        ipu_amp(); ipu_amp(); ipu_amp(); ipu_amp();
        ipu_amp(); ipu_amp(); ipu_amp(); ipu_amp();
      }
      for (; c > 0; --c) {
        ipu_amp(); ipu_amp(); ipu_amp(); ipu_amp();
      }
    }
  }
}

/* reduce_rows_f32: out[(row - first_row) * columns + c] = in[0][row] + in[1][row] + ... (parts,
 *   added in order), where in[l][row] = in[l * part_stride + (row / 16) * group_stride + 16 c +
 *   row % 16] (the AMP's column-major groups of 16 rows), for rows first_row to first_row +
 *   rows - 1.
 * fields: in (in f32), out (out f32), parts, part_stride, group_stride, columns, first_row, rows */
struct reduce_rows_f32_fields {
  const float *in;
  float *out;
  uint32_t parts, part_stride, group_stride, columns, first_row, rows;
};
/* Rows r and r + 1 of a group are neighbours in each column: both lanes of one f32v2 addition
 * (each lane rounds as a scalar addition would), a part at a time in order. */
static void reduce_two_rows(const float *from, float *out0, float *out1, uint32_t columns,
                            uint32_t parts, uint32_t part_stride) {
  for (uint32_t c = 0; c < columns; ++c) {
    const float *at = from + 16 * c;
    ipu_f32x2 acc = ipu_f32x2_make(at[0], at[1]);
    for (uint32_t l = 1; l < parts; ++l) {
      at += part_stride;
      acc = ipu_f32v2add(acc, ipu_f32x2_make(at[0], at[1]));
    }
    out0[c] = acc.r[0];
    out1[c] = acc.r[1];
  }
}

static void reduce_one_row(const float *from, float *out, uint32_t columns, uint32_t parts,
                           uint32_t part_stride) {
  for (uint32_t c = 0; c < columns; ++c) {
    const float *at = from + 16 * c;
    float sum = at[0];
    for (uint32_t l = 1; l < parts; ++l) {
      at += part_stride;
      sum += at[0];
    }
    out[c] = sum;
  }
}

void reduce_rows_f32(const struct reduce_rows_f32_fields *v) {
  uint32_t i = 0;
  while (i < v->rows) {
    const uint32_t row = v->first_row + i;
    const float *from = v->in + (row / 16) * v->group_stride + row % 16;
    float *out = v->out + i * v->columns;
    if (row % 2 == 0 && i + 1 < v->rows) {
      reduce_two_rows(from, out, out + v->columns, v->columns, v->parts, v->part_stride);
      i += 2;
    } else {
      reduce_one_row(from, out, v->columns, v->parts, v->part_stride);
      i += 1;
    }
  }
}

/* reduce_row_pair_f32: reduce_rows_f32 for row first_row into out and, when pair is 1, row
 *   first_row + 1 (even first_row) into out_next: rows of C that are not neighbours in memory.
 * fields: in (in f32), out (out f32), out_next (out f32), parts, part_stride, group_stride,
 *         columns, first_row, pair */
struct reduce_row_pair_f32_fields {
  const float *in;
  float *out, *out_next;
  uint32_t parts, part_stride, group_stride, columns, first_row, pair;
};
void reduce_row_pair_f32(const struct reduce_row_pair_f32_fields *v) {
  const uint32_t row = v->first_row;
  const float *from = v->in + (row / 16) * v->group_stride + row % 16;
  if (v->pair)
    reduce_two_rows(from, v->out, v->out_next, v->columns, v->parts, v->part_stride);
  else
    reduce_one_row(from, v->out, v->columns, v->parts, v->part_stride);
}

/* cast_f16_f32: out[i] = in[i] widened (exact).  fields: in (in f16), out (out f32), n */
struct cast_f16_f32_fields {
  const uint16_t *in;
  float *out;
  uint32_t n;
};
void cast_f16_f32(const struct cast_f16_f32_fields *v) {
  for (uint32_t i = 0; i < v->n; ++i) {
    const ipu_f32x2 wide = ipu_f16v2tof32(ipu_f16x2_from_bits(v->in[i], 0));
    v->out[i] = wide.r[0];
  }
}
