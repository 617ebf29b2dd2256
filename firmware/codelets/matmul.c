/* Matrix product codelet of the SDK's library, on the AMP (docs/xipu-model.md).
 *
 * matmul_f16_amp: C^T[columns][16] = (A (16 x k) . B (k x columns))^T, f16 inputs, f32 results.
 *   fields: a   (in f16)  A in AMP weight order: for each pass of 16 k-values, for each of its
 *                         four phases, 16 rows x 4 values (the host or a previous step packs it)
 *           b   (in f16)  B in pass-major order: for each pass of 16 k-values, for each column,
 *                         its 16 values (so each pass streams through the AMP contiguously)
 *           ct  (out f32) columns x 16: each column's 16 results
 *           k, columns (scalars), k a multiple of 16
 * Each pass loads its four weight phases of A straight from `a`, then streams every column
 * through them; later passes add into the results. Accumulation order, per result: within a
 * pass fma over its 16 k-values in order, then the pass's sum added to the previous passes'. */
#include <stdint.h>

#include "ipu.h"

struct matmul_f16_amp_fields {
  const uint16_t *a, *b;
  float *ct;
  uint32_t k, columns;
};

void matmul_f16_amp(const struct matmul_f16_amp_fields *v) {
  for (uint32_t pass = 0; pass < v->k / 16; ++pass) {
    ipu_amp_configure(IPU_AMP_F16, 4, pass > 0, v->b + (uint32_t)pass * v->columns * 16, v->ct);
    for (unsigned phase = 0; phase < 4; ++phase) ipu_amp_load_weights(v->a + (pass * 4 + phase) * 64, phase);
    uint32_t c = 0;
    for (; c + 4 <= v->columns; c += 4) {
      ipu_amp(); ipu_amp(); ipu_amp(); ipu_amp(); /* one column */
      ipu_amp(); ipu_amp(); ipu_amp(); ipu_amp();
      ipu_amp(); ipu_amp(); ipu_amp(); ipu_amp();
      ipu_amp(); ipu_amp(); ipu_amp(); ipu_amp();
    }
    for (; c < v->columns; ++c) {
      ipu_amp(); ipu_amp(); ipu_amp(); ipu_amp();
    }
  }
}
