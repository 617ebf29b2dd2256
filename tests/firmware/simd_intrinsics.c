/* The generated Xipu intrinsics used from C: each result is checked against a value worked out
 * by hand in the comment beside it. The exit status counts mismatches. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ipu.h"

static int errors;

static void check_u32(const char *what, uint32_t got, uint32_t expected) {
  if (got != expected) {
    printf("%s: got 0x%08lx, expected 0x%08lx\n", what, (unsigned long)got, (unsigned long)expected);
    ++errors;
  }
}

static uint32_t bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

int main(void) {
  const ipu_f32x2 a = ipu_f32x2_make(1.5f, -2.0f), b = ipu_f32x2_make(0.25f, 8.0f);
  ipu_f32x2 r = ipu_f32v2add(a, b); /* (1.75, 6) */
  check_u32("f32v2add lane 0", bits(r.r[0]), bits(1.75f));
  check_u32("f32v2add lane 1", bits(r.r[1]), bits(6.0f));
  r = ipu_f32v2fma(a, b, ipu_f32x2_make(1.0f, 1.0f)); /* (1.375, -15) */
  check_u32("f32v2fma lane 0", bits(r.r[0]), bits(1.375f));
  check_u32("f32v2fma lane 1", bits(r.r[1]), bits(-15.0f));
  check_u32("f32v2hsum", bits(ipu_f32v2hsum(10.0f, a)), bits(9.5f)); /* 10 + 1.5 - 2 */

  /* f16x4: (1, 2, -3, 0.5) * (0.25, 2, 4, -0.5) = (0.25, 4, -12, -0.25). */
  const uint16_t ha[4] = {0x3c00, 0x4000, 0xc200, 0x3800}, hb[4] = {0x3400, 0x4000, 0x4400, 0xb800};
  uint16_t out[4];
  ipu_f16x4_to_bits(ipu_f16v4mul(ipu_f16x4_from_bits(ha), ipu_f16x4_from_bits(hb)), out);
  check_u32("f16v4mul lane 0", out[0], 0x3400);
  check_u32("f16v4mul lane 1", out[1], 0x4400);
  check_u32("f16v4mul lane 2", out[2], 0xca00);
  check_u32("f16v4mul lane 3", out[3], 0xb400);
  /* Sum of the four lanes of a, widened: 1 + 2 - 3 + 0.5 = 0.5. */
  check_u32("f16v4hsum", bits(ipu_f16v4hsum(0.0f, ipu_f16x4_from_bits(ha))), bits(0.5f));

  /* Conversions: (1.0, -65504) -> f16x2 -> back. */
  const ipu_f16x2 h = ipu_f32v2tof16(ipu_f32x2_make(1.0f, -65504.0f));
  check_u32("f32v2tof16", ipu_f16x2_bits(h), 0x3c00u | (0xfbffu << 16));
  r = ipu_f16v2tof32(h);
  check_u32("f16v2tof32 lane 1", bits(r.r[1]), bits(-65504.0f));
  const ipu_f32x4 q = ipu_f16v4tof32(ipu_f16x4_from_bits(hb));
  check_u32("f16v4tof32 lane 3", bits(q.r[3]), bits(-0.5f));

  /* PRNG: seeding with s0 = 1, s1 = 0 gives out = 1 (sx = 1, sa = 0) then 0x0000001000004001...
   * the first output is checked here, the sequence by xipu_test. */
  ipu_prng_seed(1, 0);
  check_u32("urand64 low word of the first draw", (uint32_t)ipu_urand64(), 1);

  /* Stochastic rounding of 1 + 2^-12 to f16 gives 1 or 1 + 2^-10, never anything else. */
  ipu_set_stochastic_rounding(1);
  unsigned ups = 0;
  for (int i = 0; i < 1000; ++i) {
    const uint32_t v = ipu_f16x2_bits(ipu_f32v2tof16(ipu_f32x2_make(1.0f + 0x1p-12f, 1.0f + 0x1p-12f)));
    if ((v & 0xffff) != 0x3c00 && (v & 0xffff) != 0x3c01) ++errors;
    ups += (v & 0xffff) == 0x3c01;
  }
  ipu_set_stochastic_rounding(0);
  if (ups < 150 || ups > 350) { /* p = 1/4 of 1000: 250 +- 5 sigma (68) */
    printf("stochastic rounding rounded up %u times of 1000\n", ups);
    ++errors;
  }
  printf("%d errors\n", errors);
  return errors;
}
