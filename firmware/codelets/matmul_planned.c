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
 *   first_block + blocks - 1 of groups x passes x 4, and of each block the rows first_lane to
 *   first_lane + lanes - 1 (0 and 16: all of them). Six vertices may share an item's blocks or
 *   its rows: a row's set-up is paid once a vertex, so few blocks a vertex go faster by rows.
 * fields: in (in f16 / f32), out (out f16), passes, rows, ks, group_stride, row_stride,
 *         k_stride, first_block, blocks, first_lane, lanes */
struct pack_weights_fields {
  const void *in;
  uint16_t *out;
  uint32_t passes, rows, ks, group_stride, row_stride, k_stride, first_block, blocks;
  uint32_t first_lane, lanes;
};
/* Two words' low halves, and their high halves, as one word each (the first word's half low):
 * two rows of two neighbouring f16 columns become a word of each column. ipu.sort4x16lo and
 * ipu.sort4x16hi, one instruction each where shifts, a mask and an or took three; not volatile
 * and no memory clobber, so the compiler schedules them as arithmetic. */
static inline uint32_t low_halves(uint32_t first, uint32_t second) {
  uint32_t r;
  __asm__(".insn r 0x0b, 7, 0, %0, %1, %2" : "=r"(r) : "r"(first), "r"(second));
  return r;
}
static inline uint32_t high_halves(uint32_t first, uint32_t second) {
  uint32_t r;
  __asm__(".insn r 0x0b, 7, 1, %0, %1, %2" : "=r"(r) : "r"(first), "r"(second));
  return r;
}

/* A^T's block as stored: its 16 rows neighbours for each k (row_stride 1), the k `stride` words
 * apart. Each k's word holds two rows; four k's words become two words of each row's four
 * k-values. Two and a half instructions an element, where one at a time takes six. */
static inline __attribute__((always_inline)) void pack_row_pairs_f16(const uint32_t *in,
                                                                    uint32_t stride,
                                                                    uint32_t *out) {
  const uint32_t *k1 = in + stride, *k2 = in + 2 * stride, *k3 = in + 3 * stride;
#pragma GCC unroll 8
  for (uint32_t pair = 0; pair < 8; ++pair, out += 4) {
    const uint32_t w0 = in[pair], w1 = k1[pair], w2 = k2[pair], w3 = k3[pair];
    out[0] = low_halves(w0, w1); /* row 2 pair: k0, k1; k2, k3 */
    out[1] = low_halves(w2, w3);
    out[2] = high_halves(w0, w1); /* row 2 pair + 1 */
    out[3] = high_halves(w2, w3);
  }
}

/* 16 rows' two words, `stride` words apart, one after another. */
static inline __attribute__((always_inline)) void copy_block_rows(const uint32_t *in,
                                                                 uint32_t stride, uint32_t *out) {
#pragma GCC unroll 16
  for (uint32_t row = 0; row < 16; ++row, in += stride) {
    out[2 * row] = in[0];
    out[2 * row + 1] = in[1];
  }
}
/* Wide moves through FP registers (the bits unchanged): ipu.ld128 into ft0..ft3 (a quad from a
 * multiple of 4), ipu.st64 of its halves, ipu.ld64 / ipu.st64 of ft0, ft1. Not ipu_xipu.h's
 * ipu_ld128 and ipu_st64: their fixed registers differ (results in ft8.., sources from ft0), so
 * each copy would take four moves between them; here the load's registers are the stores'. */
#define WIDE_QUAD() \
  register float q0_ __asm__("ft0"), q1_ __asm__("ft1"), q2_ __asm__("ft2"), q3_ __asm__("ft3")
#define WIDE_LD128(at, off)                                                              \
  __asm__ volatile(".insn i 0x5b, 2, %0, " #off "(%4)"                                   \
                   : "=f"(q0_), "=f"(q1_), "=f"(q2_), "=f"(q3_) : "r"(at) : "memory")
#define WIDE_LD64(at, off) \
  __asm__ volatile(".insn i 0x5b, 1, %0, " #off "(%2)" : "=f"(q0_), "=f"(q1_) : "r"(at) : "memory")
#define WIDE_ST64_LO(at, off) \
  __asm__ volatile(".insn s 0x5b, 3, %0, " #off "(%2)" : : "f"(q0_), "f"(q1_), "r"(at) : "memory")
#define WIDE_ST64_HI(at, off) \
  __asm__ volatile(".insn s 0x5b, 3, %0, " #off "(%2)" : : "f"(q2_), "f"(q3_), "r"(at) : "memory")

/* Blocks 0 .. count - 1 of `lanes` rows of one row group as stored (each row's k-values
 * neighbours, the rows `row_bytes` apart and every row 8-byte aligned, as the planner stages
 * them; the blocks 128 bytes apart in `out`, 8-byte aligned): a row at a time, four blocks' four
 * k-values two ipu.ld128 and each block's row one ipu.st64: ten issues for 16 elements, where
 * the words' loads and stores a block at a time took 1.3 an element. */
static void pack_rows_wide(const uint16_t *in, uint32_t row_bytes, uint16_t *out, uint32_t count,
                           uint32_t lanes) {
  WIDE_QUAD();
  for (uint32_t row = 0; row < lanes; ++row) {
    const char *from = (const char *)in + row * row_bytes;
    char *to = (char *)out + row * 8;
    uint32_t b = 0;
    for (; b + 4 <= count; b += 4, from += 32, to += 512) {
      WIDE_LD128(from, 0);
      WIDE_ST64_LO(to, 0);
      WIDE_ST64_HI(to, 128);
      WIDE_LD128(from, 16);
      WIDE_ST64_LO(to, 256);
      WIDE_ST64_HI(to, 384);
    }
    for (; b < count; ++b, from += 8, to += 128) {
      WIDE_LD64(from, 0);
      WIDE_ST64_LO(to, 0);
    }
  }
}

/* `columns` columns' 16 k-values of B^T as stored (each column's k-values neighbours, the
 * columns `column_bytes` apart, all 8-byte aligned) one after another into `out`: two
 * ipu.ld128 and four ipu.st64 a column, where eight words' loads and stores took sixteen. */
static void copy_columns_wide(const uint16_t *in, uint32_t column_bytes, uint16_t *out,
                              uint32_t columns) {
  WIDE_QUAD();
  const char *from = (const char *)in;
  char *to = (char *)out;
  for (uint32_t c = 0; c < columns; ++c, from += column_bytes, to += 32) {
    WIDE_LD128(from, 0);
    WIDE_ST64_LO(to, 0);
    WIDE_ST64_HI(to, 8);
    WIDE_LD128(from, 16);
    WIDE_ST64_LO(to, 16);
    WIDE_ST64_HI(to, 24);
  }
}

/* Whether a pointer and a stride allow the wide moves. */
static inline int on_doubles(const void *p, uint32_t stride_bytes) {
  return (((uintptr_t)p | stride_bytes) & 7) == 0;
}

#define PACK_WEIGHTS(NAME, TYPE, LOAD)                                                    \
  void NAME(const struct pack_weights_fields *v) {                                      \
    const uint32_t end = v->first_block + v->blocks;                                    \
    uint32_t first = v->first_block;                                                    \
    if (sizeof(TYPE) == 2 && v->k_stride == 1 && v->blocks > 0 &&                        \
        first / (v->passes * 4) == (end - 1) / (v->passes * 4)) {                       \
      /* one group's blocks: those whose rows and four k are whole, a row at a time */   \
      const uint32_t group = first / (v->passes * 4);                                   \
      const uint32_t k_first = (first - group * v->passes * 4) * 4;                     \
      /* blocks whose four k exist: none where the range starts in K's zero padding */    \
      const uint32_t whole_k = k_first / 4 < v->ks / 4 ? v->ks / 4 - k_first / 4 : 0;    \
      const uint32_t count = end - first < whole_k ? end - first : whole_k;             \
      const TYPE *in = (const TYPE *)v->in + group * v->group_stride + k_first +        \
                       v->first_lane * v->row_stride;                                   \
      if (group * 16 + 16 <= v->rows && count > 0 && on_doubles(in, v->row_stride * 2) && \
          on_doubles(v->out + first * 64, 0)) {                                         \
        pack_rows_wide((const uint16_t *)(const void *)in, v->row_stride * 2,           \
                       v->out + first * 64 + v->first_lane * 4, count, v->lanes);       \
        first += count;                                                                 \
      }                                                                                 \
    }                                                                                   \
    const int all_lanes = v->first_lane == 0 && v->lanes == 16;                         \
    for (uint32_t block = first; block < end; ++block) {                                \
      const uint32_t group = block / (v->passes * 4);                                   \
      const uint32_t k0 = (block - group * v->passes * 4) * 4;                          \
      const uint32_t row0 = group * 16;                                                 \
      const TYPE *in = (const TYPE *)v->in + group * v->group_stride + k0 * v->k_stride; \
      uint16_t *out = v->out + block * 64;                                              \
      if (all_lanes && sizeof(TYPE) == 2 && v->k_stride == 1 && row0 + 16 <= v->rows &&   \
          k0 + 4 <= v->ks) {                                                            \
        /* a whole block of rows' four neighbouring f16: two words a row (the staging   \
         * rows start on words) */                                                      \
        copy_block_rows((const uint32_t *)(const void *)in, v->row_stride / 2,          \
                        (uint32_t *)(void *)out);                                       \
        continue;                                                                       \
      }                                                                                 \
      if (all_lanes && sizeof(TYPE) == 2 && v->row_stride == 1 && v->k_stride % 2 == 0 && \
          ((uintptr_t)in & 3) == 0 && row0 + 16 <= v->rows && k0 + 4 <= v->ks) {        \
        /* A^T: a whole block's rows, two a word for each k */                         \
        pack_row_pairs_f16((const uint32_t *)(const void *)in, v->k_stride / 2,         \
                           (uint32_t *)(void *)out);                                    \
        continue;                                                                       \
      }                                                                                 \
      out += v->first_lane * 4;                                                         \
      in += v->first_lane * v->row_stride;                                              \
      for (uint32_t row = v->first_lane; row < v->first_lane + v->lanes;                \
           ++row, out += 4, in += v->row_stride) {                                      \
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
/* Two neighbouring columns' 16 k-values of f16 B as stored (k_stride words apart, the columns
 * in one word): each pair of words, two rows of both columns, becomes a word of each column's
 * stream. Three instructions an element where one at a time takes six. */
static inline __attribute__((always_inline)) void pack_two_columns_f16(const uint32_t *from,
                                                                      uint32_t stride_words,
                                                                      uint32_t *out0,
                                                                      uint32_t *out1) {
#pragma GCC unroll 8
  for (uint32_t w = 0; w < 8; ++w) {
    const uint32_t even = from[0], odd = from[stride_words];
    from += 2 * stride_words;
    out0[w] = low_halves(even, odd);
    out1[w] = high_halves(even, odd);
  }
}
/* Items first to end - 1, one at a time. */
#define PACK_STREAM_ITEMS(NAME, TYPE, LOAD)                                              \
  static void NAME(const struct pack_stream_fields *v, uint32_t first, uint32_t end) {  \
    for (uint32_t item = first; item < end; ++item) {                                   \
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
PACK_STREAM_ITEMS(pack_stream_items_f16, uint16_t, LOAD_F16)
PACK_STREAM_ITEMS(pack_stream_items_f32, float, LOAD_F32)

void pack_stream_f32(const struct pack_stream_fields *v) {
  pack_stream_items_f32(v, v->first_item, v->first_item + v->items);
}

/* f16, a pass at a time, the passes' whole 16 k-values from words: B as stored (columns
 * neighbours, k_stride an even number of elements) two columns at a time, B^T as stored (each
 * column's k-values neighbours, column_stride even) eight words a column; short passes, odd
 * columns and other layouts one item at a time. */
void pack_stream_f16(const struct pack_stream_fields *v) {
  const uint32_t end = v->first_item + v->items;
  const int on_words = ((uintptr_t)v->in & 3) == 0;
  const int paired = on_words && v->column_stride == 1 && v->k_stride % 2 == 0;
  const int copied = on_words && v->k_stride == 1 && v->column_stride % 2 == 0;
  if (!paired && !copied) {
    pack_stream_items_f16(v, v->first_item, end);
    return;
  }
  const uint32_t columns = v->columns;
  uint32_t item = v->first_item;
  while (item < end) {
    const uint32_t pass = item / columns, column = item - pass * columns;
    const uint32_t pass_end = end < (pass + 1) * columns ? end : (pass + 1) * columns;
    if (v->ks - pass * 16 < 16 || (paired && column % 2 != 0)) {
      const uint32_t last = v->ks - pass * 16 < 16 ? pass_end : item + 1;
      pack_stream_items_f16(v, item, last);
      item = last;
      continue;
    }
    const uint32_t *from = (const uint32_t *)(const void *)(v->in) +
                           (column * v->column_stride + pass * 16 * v->k_stride) / 2;
    uint32_t *out = (uint32_t *)(void *)(v->out + item * 16);
    if (paired) {
      const uint32_t stride_words = v->k_stride / 2;
      for (; item + 2 <= pass_end; item += 2, from += 1, out += 16)
        pack_two_columns_f16(from, stride_words, out, out + 8);
    } else {
      const uint32_t stride_words = v->column_stride / 2;
      if (on_doubles(from, stride_words * 4) && on_doubles(out, 0)) {
        copy_columns_wide((const uint16_t *)(const void *)from, stride_words * 4,
                          (uint16_t *)(void *)out, pass_end - item);
        item = pass_end;
      }
      for (; item < pass_end; ++item, from += stride_words, out += 8) {
#pragma GCC unroll 8
        for (uint32_t w = 0; w < 8; ++w) out[w] = from[w];
      }
    }
    if (item < pass_end) {
      pack_stream_items_f16(v, item, pass_end);
      item = pass_end;
    }
  }
}

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
      /* Sixteen columns a round (the loop's two instructions an eighth of what four columns a
       * round spent on it), then four, then one. */
#define AMP_COLUMN ipu_amp(); ipu_amp(); ipu_amp(); ipu_amp()
#define AMP_4_COLUMNS AMP_COLUMN; AMP_COLUMN; AMP_COLUMN; AMP_COLUMN
      uint32_t c = columns;
      for (; c >= 16; c -= 16) {
        AMP_4_COLUMNS; AMP_4_COLUMNS; AMP_4_COLUMNS; AMP_4_COLUMNS;
      }
      for (; c >= 4; c -= 4) {
        AMP_4_COLUMNS;
      }
      for (; c > 0; --c) {
        AMP_COLUMN;
      }
#undef AMP_4_COLUMNS
#undef AMP_COLUMN
    }
  }
}

/* The reduction's partial sums, as a vertex finds them. Part l of row `row` and column c is at
 *   own + (row / 16) * own_group_stride + 16 c + row % 16 for l = own_part (this tile's own
 *   AMP results, in place), else at in + m * part_stride + (row / 16) * group_stride + 16 c +
 *   row % 16, m = l - (l > own_part) (the block's other tiles' results as received); the AMP's
 *   column-major groups of 16 rows either way. Parts are added in order l = 0, 1, ..., parts -
 *   1, each addition rounded as a scalar f32 addition. */
struct reduce_parts {
  const float *in;
  const float *own;
  uint32_t parts, part_stride, group_stride, own_group_stride, own_part, columns, first_row;
};
/* More parts than this are added into the output a part at a time (a load and a store more an
 * addition) rather than from a pointer a part. */
#define REDUCE_MOST_PARTS 16

/* Part l's first column of `row`. */
static inline const float *part_at(const struct reduce_parts *v, uint32_t l, uint32_t row) {
  if (l == v->own_part) return v->own + (row / 16) * v->own_group_stride + row % 16;
  return v->in + (l - (l > v->own_part)) * v->part_stride + (row / 16) * v->group_stride + row % 16;
}

/* Each part's first column of `row`. */
static inline void part_pointers(const struct reduce_parts *v, uint32_t row, const float **at) {
  const uint32_t group = row / 16, lane = row % 16;
  const float *in = v->in + group * v->group_stride + lane;
  for (uint32_t l = 0; l < v->parts; ++l) {
    if (l == v->own_part) {
      at[l] = v->own + group * v->own_group_stride + lane;
    } else {
      at[l] = in;
      in += v->part_stride;
    }
  }
}

/* acc (ft0, ft1) += the two neighbours at `at` (rows r and r + 1 of a column): one f32v2add,
 * whose lanes round as scalar additions. Written out because the intrinsic's fixed registers
 * cost two moves an addition, in the reduction's hot loop. ADD_NEIGHBOURS_2 does the same for
 * the next column too, 16 words on, into (ft4, ft5). */
#define ADD_NEIGHBOURS(acc0, acc1, at)                                                        \
  __asm__("flw ft2, 0(%2)\n\tflw ft3, 4(%2)\n\t.insn r 0x2b, 0, 0, ft0, ft0, ft2"             \
          : "+f"(acc0), "+f"(acc1)                                                           \
          : "r"(at)                                                                          \
          : "ft2", "ft3", "memory")
#define ADD_NEIGHBOURS_2(acc0, acc1, acc2, acc3, at)                                            \
  __asm__("flw ft2, 0(%4)\n\tflw ft3, 4(%4)\n\t.insn r 0x2b, 0, 0, ft0, ft0, ft2\n\t"           \
          "flw ft6, 64(%4)\n\tflw ft7, 68(%4)\n\t.insn r 0x2b, 0, 0, ft4, ft4, ft6"             \
          : "+f"(acc0), "+f"(acc1), "+f"(acc2), "+f"(acc3)                                     \
          : "r"(at)                                                                            \
          : "ft2", "ft3", "ft6", "ft7", "memory")

/* Rows r and r + 1 (r even) of `columns` columns, summed over the parts into out0 and out1.
 * Inlined with a constant `parts` (below), the parts' loops unroll and each part's pointer
 * stays in a register; two columns a round halve the pointers' increments. */
static inline __attribute__((always_inline)) void reduce_neighbours(const float **at, uint32_t parts,
                                                                    float *out0, float *out1,
                                                                    uint32_t columns) {
  const float *p[REDUCE_MOST_PARTS];
#pragma GCC unroll 16
  for (uint32_t l = 0; l < parts; ++l) p[l] = at[l];
  uint32_t c = 0;
  for (; c + 1 < columns; c += 2) {
    register float acc0 __asm__("ft0") = p[0][0];
    register float acc1 __asm__("ft1") = p[0][1];
    register float acc2 __asm__("ft4") = p[0][16];
    register float acc3 __asm__("ft5") = p[0][17];
#pragma GCC unroll 16
    for (uint32_t l = 1; l < parts; ++l) ADD_NEIGHBOURS_2(acc0, acc1, acc2, acc3, p[l]);
    out0[c] = acc0;
    out1[c] = acc1;
    out0[c + 1] = acc2;
    out1[c + 1] = acc3;
#pragma GCC unroll 16
    for (uint32_t l = 0; l < parts; ++l) p[l] += 32;
  }
  if (c < columns) {
    register float acc0 __asm__("ft0") = p[0][0];
    register float acc1 __asm__("ft1") = p[0][1];
#pragma GCC unroll 16
    for (uint32_t l = 1; l < parts; ++l) ADD_NEIGHBOURS(acc0, acc1, p[l]);
    out0[c] = acc0;
    out1[c] = acc1;
  }
}

/* Four rows r .. r + 3 (r a multiple of 4) of two neighbouring columns, 16 words apart in a
 * part: ipu.ld128 takes each column's four rows in one issue, so a part costs two loads and four
 * f32v2add for eight sums (the pairs above: four loads and two additions for four). The
 * accumulators are the quads ft0-ft3 (column c) and ft8-ft11 (c + 1), the part's quads ft4-ft7 and
 * fa2-fa5. */
#define QUAD_FIRST(at, off)                                                               \
  __asm__(".insn i 0x5b, 2, ft0, %9(%8)\n\t.insn i 0x5b, 2, ft8, %10(%8)"                  \
          : "=f"(a0), "=f"(a1), "=f"(a2), "=f"(a3), "=f"(b0), "=f"(b1), "=f"(b2), "=f"(b3) \
          : "r"(at), "i"(off), "i"((off) + 64)                                            \
          : "memory")
#define QUAD_ADD(at, off)                                                                  \
  __asm__(".insn i 0x5b, 2, ft4, %9(%8)\n\t.insn i 0x5b, 2, fa2, %10(%8)\n\t"               \
          ".insn r 0x2b, 0, 0, ft0, ft0, ft4\n\t.insn r 0x2b, 0, 0, ft2, ft2, ft6\n\t"           \
          ".insn r 0x2b, 0, 0, ft8, ft8, fa2\n\t.insn r 0x2b, 0, 0, ft10, ft10, fa4"         \
          : "+f"(a0), "+f"(a1), "+f"(a2), "+f"(a3), "+f"(b0), "+f"(b1), "+f"(b2), "+f"(b3) \
          : "r"(at), "i"(off), "i"((off) + 64)                                             \
          : "ft4", "ft5", "ft6", "ft7", "fa2", "fa3", "fa4", "fa5", "memory")
/* One column's four rows (the last of an odd count): a load and two additions a part. */
#define QUAD_FIRST_1(at)                                                                    \
  __asm__(".insn i 0x5b, 2, ft0, 0(%4)" : "=f"(a0), "=f"(a1), "=f"(a2), "=f"(a3) : "r"(at) \
          : "memory")
#define QUAD_ADD_1(at)                                                                    \
  __asm__(".insn i 0x5b, 2, ft4, 0(%4)\n\t.insn r 0x2b, 0, 0, ft0, ft0, ft4\n\t"              \
          ".insn r 0x2b, 0, 0, ft2, ft2, ft6"                                                \
          : "+f"(a0), "+f"(a1), "+f"(a2), "+f"(a3)                                        \
          : "r"(at)                                                                       \
          : "ft4", "ft5", "ft6", "ft7", "memory")

/* Rows r .. r + 3 of `columns` columns, summed over the parts (in order, each addition a
 * scalar one) into out[0] .. out[3]. Inlined with a constant `parts`, as reduce_neighbours. */
static inline __attribute__((always_inline)) void reduce_quads(const float **at, uint32_t parts,
                                                               float *const *out,
                                                               uint32_t columns) {
  const float *p[REDUCE_MOST_PARTS];
#pragma GCC unroll 16
  for (uint32_t l = 0; l < parts; ++l) p[l] = at[l];
  float *o0 = out[0], *o1 = out[1], *o2 = out[2], *o3 = out[3];
  register float a0 __asm__("ft0"), a1 __asm__("ft1"), a2 __asm__("ft2"), a3 __asm__("ft3");
  register float b0 __asm__("ft8"), b1 __asm__("ft9"), b2 __asm__("ft10"), b3 __asm__("ft11");
  uint32_t c = 0;
  /* Columns `col` and col + 1 of the round, `off` bytes on from each part's pointer: the first
   * part loaded, the others added in order, the eight sums stored. */
#define QUAD_PAIR(off, col)                                             \
  do {                                                                  \
    QUAD_FIRST(p[0], off);                                              \
    _Pragma("GCC unroll 16") for (uint32_t l = 1; l < parts; ++l)       \
        QUAD_ADD(p[l], off);                                            \
    o0[col] = a0, o1[col] = a1, o2[col] = a2, o3[col] = a3;             \
    o0[col + 1] = b0, o1[col + 1] = b1, o2[col + 1] = b2, o3[col + 1] = b3; \
  } while (0)
  /* Four columns a round, the second pair at offsets 128 and 192 of the same pointers: the
   * pointers' and the loop's instructions a quarter of the sums' instead of half. */
  for (; c + 3 < columns; c += 4) {
    QUAD_PAIR(0, 0);
    QUAD_PAIR(128, 2);
    o0 += 4, o1 += 4, o2 += 4, o3 += 4;
#pragma GCC unroll 16
    for (uint32_t l = 0; l < parts; ++l) p[l] += 64;
  }
  for (; c + 1 < columns; c += 2) {
    QUAD_PAIR(0, 0);
    o0 += 2, o1 += 2, o2 += 2, o3 += 2;
#pragma GCC unroll 16
    for (uint32_t l = 0; l < parts; ++l) p[l] += 32;
  }
#undef QUAD_PAIR
  if (c < columns) {
    QUAD_FIRST_1(p[0]);
#pragma GCC unroll 16
    for (uint32_t l = 1; l < parts; ++l) QUAD_ADD_1(p[l]);
    o0[0] = a0, o1[0] = a1, o2[0] = a2, o3[0] = a3;
  }
}
#undef QUAD_FIRST
#undef QUAD_ADD
#undef QUAD_FIRST_1
#undef QUAD_ADD_1

static __attribute__((noinline)) void reduce_quads_looped(const float **at, uint32_t parts,
                                                         float *const *out, uint32_t columns) {
  reduce_quads(at, parts, out, columns);
}

/* Up to REDUCE_MOST_PARTS parts: the planner's usual splits of K unrolled (up to 8), more in a
 * loop over the parts (their pointers in memory). */
static void reduce_quads_any(const float **at, uint32_t parts, float *const *out,
                             uint32_t columns) {
  switch (parts) {
    case 1: reduce_quads(at, 1, out, columns); break;
    case 2: reduce_quads(at, 2, out, columns); break;
    case 3: reduce_quads(at, 3, out, columns); break;
    case 4: reduce_quads(at, 4, out, columns); break;
    case 5: reduce_quads(at, 5, out, columns); break;
    case 6: reduce_quads(at, 6, out, columns); break;
    case 7: reduce_quads(at, 7, out, columns); break;
    case 8: reduce_quads(at, 8, out, columns); break;
    default: reduce_quads_looped(at, parts, out, columns);
  }
}

/* Rows left over by the quads (a block's last rows), and more parts than they take. */
static void reduce_neighbours_any(const float **at, uint32_t parts, float *out0, float *out1,
                                  uint32_t columns) {
  switch (parts) { /* the planner's usual splits of K, unrolled */
    case 1: reduce_neighbours(at, 1, out0, out1, columns); break;
    case 2: reduce_neighbours(at, 2, out0, out1, columns); break;
    case 3: reduce_neighbours(at, 3, out0, out1, columns); break;
    case 4: reduce_neighbours(at, 4, out0, out1, columns); break;
    case 5: reduce_neighbours(at, 5, out0, out1, columns); break;
    case 6: reduce_neighbours(at, 6, out0, out1, columns); break;
    default:
      for (uint32_t c = 0; c < columns; ++c) {
        register float acc0 __asm__("ft0") = at[0][16 * c];
        register float acc1 __asm__("ft1") = at[0][16 * c + 1];
        for (uint32_t l = 1; l < parts; ++l) ADD_NEIGHBOURS(acc0, acc1, at[l] + 16 * c);
        out0[c] = acc0;
        out1[c] = acc1;
      }
  }
}

static void reduce_one_row(const float **at, uint32_t parts, float *out, uint32_t columns) {
  for (uint32_t c = 0; c < columns; ++c) {
    float sum = at[0][16 * c];
    for (uint32_t l = 1; l < parts; ++l) sum += at[l][16 * c];
    out[c] = sum;
  }
}

/* Whether a vertex's rows can go four at a time: few enough parts, and the parts 8-byte
 * aligned (ipu.ld128's alignment; every part's offsets from them are multiples of 16 bytes). */
static inline int quads_fit(const struct reduce_parts *v) {
  return v->parts <= REDUCE_MOST_PARTS && (((uintptr_t)v->in | (uintptr_t)v->own) & 7) == 0;
}

/* Rows row .. row + 3 (row a multiple of 4) into out[0] .. out[3]. */
static void reduce_quad_from(const struct reduce_parts *v, uint32_t row, float *const *out) {
  const float *at[REDUCE_MOST_PARTS];
  part_pointers(v, row, at);
  reduce_quads_any(at, v->parts, out, v->columns);
}

/* Row `row` into out0 and, with out1, row + 1 (row even) into out1. */
static void reduce_rows_from(const struct reduce_parts *v, uint32_t row, float *out0, float *out1) {
  const uint32_t columns = v->columns;
  if (v->parts <= REDUCE_MOST_PARTS) {
    const float *at[REDUCE_MOST_PARTS];
    part_pointers(v, row, at);
    if (out1)
      reduce_neighbours_any(at, v->parts, out0, out1, columns);
    else
      reduce_one_row(at, v->parts, out0, columns);
    return;
  }
  for (uint32_t l = 0; l < v->parts; ++l) { /* out = part 0, then out += each part in order */
    const float *at = part_at(v, l, row);
    for (uint32_t c = 0; c < columns; ++c) {
      out0[c] = l == 0 ? at[16 * c] : out0[c] + at[16 * c];
      if (out1) out1[c] = l == 0 ? at[16 * c + 1] : out1[c] + at[16 * c + 1];
    }
  }
}

/* reduce_rows_f32: out[(row - first_row) * columns + c] = the sum of the parts (above) of row
 *   `row` and column c, for rows first_row to first_row + rows - 1.
 * fields: in (in f32), own (in f32), parts, part_stride, group_stride, own_group_stride,
 *         own_part, columns, first_row, out (out f32), rows */
struct reduce_rows_f32_fields {
  struct reduce_parts p;
  float *out;
  uint32_t rows;
};
void reduce_rows_f32(const struct reduce_rows_f32_fields *v) {
  const uint32_t columns = v->p.columns;
  const int quads = quads_fit(&v->p);
  uint32_t i = 0;
  while (i < v->rows) {
    const uint32_t row = v->p.first_row + i;
    float *out = v->out + i * columns;
    if (quads && row % 4 == 0 && i + 4 <= v->rows) {
      float *const four[4] = {out, out + columns, out + 2 * columns, out + 3 * columns};
      reduce_quad_from(&v->p, row, four);
      i += 4;
      continue;
    }
    const int two = row % 2 == 0 && i + 1 < v->rows;
    reduce_rows_from(&v->p, row, out, two ? out + columns : 0);
    i += two ? 2 : 1;
  }
}

/* reduce_rows_apart_f32: reduce_rows_f32 for rows first_row (even) .. first_row + rows - 1, up to
 *   REDUCE_APART_ROWS, row first_row + i into out<i>: rows of C that are not neighbours in memory
 *   (a share of a block's columns). One vertex for several rows keeps a tile's vertex states
 *   small: the reducers of a large product hold hundreds of such rows.
 * fields: in (in f32), own (in f32), parts, part_stride, group_stride, own_group_stride,
 *         own_part, columns, first_row, out0 .. out7 (out f32), rows */
#define REDUCE_APART_ROWS 8 /* kReduceApartRows in sdk/ops/matmul_geometry.h */
struct reduce_rows_apart_f32_fields {
  struct reduce_parts p;
  float *out[REDUCE_APART_ROWS];
  uint32_t rows;
};
void reduce_rows_apart_f32(const struct reduce_rows_apart_f32_fields *v) {
  uint32_t i = 0;
  if (quads_fit(&v->p) && v->p.first_row % 4 == 0)
    for (; i + 4 <= v->rows; i += 4) reduce_quad_from(&v->p, v->p.first_row + i, &v->out[i]);
  for (; i < v->rows; i += 2)
    reduce_rows_from(&v->p, v->p.first_row + i, v->out[i], i + 1 < v->rows ? v->out[i + 1] : 0);
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
