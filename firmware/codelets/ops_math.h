/* The transcendental functions of the operator library's codelets (docs/ops.md), in plain C
 * that the tiles (RV32F) and the host references (x86-64 SSE) evaluate with the same f32
 * operations in the same order, so their results are equal bit for bit. Both compile it without
 * contraction (-ffp-contract=off on the tiles; no FMA on the host): a fused multiply-add is
 * written as one (__builtin_fmaf: RV32F's fmadd.s on the tiles, rounded once as libm's fmaf
 * rounds on the host). e^x is the tile's instruction (below). */
#ifndef IPU_OPS_MATH_H
#define IPU_OPS_MATH_H

#include <stdint.h>
#include <string.h>

/* e^x: the tile's ipu.f32exp (docs/xipu.md), one instruction of 3 issue slots where a
 * polynomial in fused multiply-adds, its range reduction and its scaling by 2^n took about 20;
 * on the host the same arithmetic, the instruction simulator's (iss/fpu.h), so that the host
 * references give the tiles' bits. */
#if defined(__riscv)
static inline float ipu_ops_expf(float x) {
  float r;
  __asm__(".insn r 0x2b, 3, 0, %0, %1, x0" : "=f"(r) : "f"(x));
  return r;
}
#else
#ifdef __cplusplus
extern "C" {
#endif
float ipu_ops_host_expf(float x); /* sdk/ops/reference.cpp */
#ifdef __cplusplus
}
#endif
static inline float ipu_ops_expf(float x) { return ipu_ops_host_expf(x); }
#endif

/* tanh x = 1 - 2 / (e^(2x) + 1), odd, 1 beyond |x| = 10 (f32 cannot tell). */
static inline float ipu_ops_tanhf(float x) {
  const float a = x < 0.0f ? -x : x;
  if (a > 10.0f) return x < 0.0f ? -1.0f : 1.0f;
  const float t = 1.0f - 2.0f / (ipu_ops_expf(2.0f * a) + 1.0f);
  return x < 0.0f ? -t : t;
}

/* GeLU, tanh form (as BERT's implementations use): 0.5 x (1 + tanh(u)), u = c (x + 0.044715
 * x^3), c = sqrt(2 / pi); computed as x s with s = 0.5 (1 + tanh(u)) = 1 / (1 + e^(-2u)), one
 * e^x and one division (tanh's sign and range handling and its 1 - 2 / (.) gone). e^(-2u)
 * overflows to infinity for large negative x, giving x / inf = -0, GeLU's limit. */
static inline float ipu_ops_gelu_sigmoid(float x) {
  const float minus_2u = x * (-1.5957691216f + -0.0713548162f * (x * x));
  return 1.0f / (1.0f + ipu_ops_expf(minus_2u));
}
static inline float ipu_ops_gelu(float x) { return x * ipu_ops_gelu_sigmoid(x); }

/* Its derivative: s + 2 x s (1 - s) c (1 + 3 0.044715 x^2), s as above (0.5 (1 + t) = s and
 * 0.5 (1 - t^2) = 2 s (1 - s), t = tanh(u)). */
static inline float ipu_ops_gelu_grad(float x) {
  const float s = ipu_ops_gelu_sigmoid(x);
  return s + x * (s * (1.0f - s)) * (1.5957691216f + 0.2140644486f * (x * x));
}

/* ln x for x > 0 (the log-sum-exp of cross-entropy): x = m 2^e with m in [sqrt(1/2), sqrt(2)),
 * ln m = 2 atanh(s), s = (m - 1) / (m + 1), by its odd series to s^9; + e ln 2. */
static inline float ipu_ops_logf(float x) {
  uint32_t u;
  memcpy(&u, &x, 4);
  int32_t e = (int32_t)((u >> 23) & 0xff) - 127;
  uint32_t mb = (u & 0x7fffffu) | 0x3f800000u;
  float m;
  memcpy(&m, &mb, 4);
  if (m > 1.41421356f) {
    m = m * 0.5f;
    e += 1;
  }
  const float s = (m - 1.0f) / (m + 1.0f), s2 = s * s;
  float p = 1.0f / 9.0f;
  p = p * s2 + 1.0f / 7.0f;
  p = p * s2 + 1.0f / 5.0f;
  p = p * s2 + 1.0f / 3.0f;
  p = p * s2 + 1.0f;
  return 2.0f * s * p + (float)e * 0.693147181f;
}

/* The tiles' PRNG (docs/xipu-model.md, xoroshiro128aox): one step, its 64-bit output. */
static inline uint64_t ipu_ops_prng_next(uint64_t* s0, uint64_t* s1) {
  const uint64_t sx = *s0 ^ *s1, sa = *s0 & *s1;
  const uint64_t out = sx ^ (((sa << 1) | (sa >> 63)) | ((sa << 2) | (sa >> 62)));
  *s0 = ((*s0 << 55) | (*s0 >> 9)) ^ sx ^ (sx << 14);
  *s1 = (sx << 36) | (sx >> 28);
  return out;
}

/* A PRNG state salted with a step number, so that one compiled cast draws new random bits each
 * training step: SplitMix64's finaliser of the step, xor-ed into both words (never both 0). */
static inline void ipu_ops_salt_state(uint64_t* s0, uint64_t* s1, uint32_t step) {
  uint64_t z = (uint64_t)step * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  *s0 ^= z;
  *s1 ^= (z << 23) | (z >> 41);
  if (*s0 == 0 && *s1 == 0) *s1 = 1;
}

/* 1 / sqrt(x) for layer norm, as the library computes it: the RV32F square root (IEEE, correctly
 * rounded on both sides), then a division. */
static inline float ipu_ops_rsqrtf(float x) { return 1.0f / __builtin_sqrtf(x); }

/* A layer norm's sums over a row are taken in six column slices, slice s being columns
 * [columns s / 6, columns (s + 1) / 6), each added left to right from 0, and the six slices'
 * sums added in order: the same bits whether one worker takes the whole row or six workers a
 * slice each (a tile holding fewer rows than workers). */
#define IPU_OPS_ROW_SLICES 6
static inline uint32_t ipu_ops_slice_begin(uint32_t columns, uint32_t slice) {
  return columns * slice / IPU_OPS_ROW_SLICES;
}
/* The six slices' sums p[0 * stride], ..., p[5 * stride], added in order. */
static inline float ipu_ops_slices_total(const float* p, uint32_t stride) {
  return ((((p[0] + p[stride]) + p[2 * stride]) + p[3 * stride]) + p[4 * stride]) + p[5 * stride];
}

#endif
