/* GeLU and its derivative two elements at a time, in the lanes of the f32x2 instructions
 * (docs/xipu-model.md): ops_math.h's ipu_ops_gelu and ipu_ops_gelu_grad, the same f32 operations
 * in the same order, so the bits are the same (each lane of ipu.f32v2mul / add / sub rounds as
 * the scalar operation does; the products and sums the C code writes a * b or a + b are taken
 * in either order, which IEEE makes the same). A pair whose e^x argument leaves e^x's main
 * range ([-87.3, 88], where 2^n is one normal factor), or is NaN, takes the scalar functions.
 *
 * GCC cannot give a register pair to a variable (ilp32f has no 64-bit FP type), so every pair
 * is two variables pinned to an even/odd register pair and each operation is one instruction
 * on them: the 32 FP registers hold the working pairs, the polynomial's coefficients and the
 * constants, and nothing moves between them. About 27 instructions an element where the
 * scalar loop takes 50. */
#ifndef IPU_OPS_GELU_PAIRS_H
#define IPU_OPS_GELU_PAIRS_H

#include <stdint.h>

#include "ops_math.h"

#define GELU_PAIR(name, r0, r1) register float name##_0 __asm__(r0), name##_1 __asm__(r1)
/* D = A op B, lane by lane (funct7: 0 add, 1 sub, 2 mul). */
#define GELU_V2(funct7, D, A, B)                     \
  __asm__(".insn r 0x2b, 0, " #funct7 ", %0, %2, %4" \
          : "=f"(D##_0), "=f"(D##_1)                 \
          : "f"(A##_0), "f"(A##_1), "f"(B##_0), "f"(B##_1))
#define GELU_ADD(D, A, B) GELU_V2(0, D, A, B)
#define GELU_SUB(D, A, B) GELU_V2(1, D, A, B)
#define GELU_MUL(D, A, B) GELU_V2(2, D, A, B)
#define GELU_LOAD(D, at) \
  __asm__ volatile(".insn i 0x5b, 1, %0, 0(%2)" : "=f"(D##_0), "=f"(D##_1) : "r"(at) : "memory")
#define GELU_STORE(S, at) \
  __asm__ volatile(".insn s 0x5b, 3, %0, 0(%2)" : : "f"(S##_0), "f"(S##_1), "r"(at) : "memory")

/* The constants as pairs, in the order the loop loads them; each written as ops_math.h writes
 * it, so the compiler folds the same f32 values. */
enum {
  kGeluC1,
  kGeluC0,
  kGeluLn2Hi,
  kGeluLn2Lo,
  kGeluD0,
  kGeluD1,
  kGeluL2e,
  kGeluShift,
  kGeluP6,
  kGeluP5,
  kGeluP4,
  kGeluP3,
  kGeluP2,
  kGeluP1,
  kGeluConstants
};
static const float kGeluPairs[2 * kGeluConstants] __attribute__((aligned(8))) = {-0.0713548162f,
                                                                                 -0.0713548162f,
                                                                                 -1.5957691216f,
                                                                                 -1.5957691216f,
                                                                                 0.693359375f,
                                                                                 0.693359375f,
                                                                                 -2.12194440e-4f,
                                                                                 -2.12194440e-4f,
                                                                                 1.5957691216f,
                                                                                 1.5957691216f,
                                                                                 0.2140644486f,
                                                                                 0.2140644486f,
                                                                                 1.44269504f,
                                                                                 1.44269504f,
                                                                                 12582912.0f,
                                                                                 12582912.0f,
                                                                                 1.0f / 720.0f,
                                                                                 1.0f / 720.0f,
                                                                                 1.0f / 120.0f,
                                                                                 1.0f / 120.0f,
                                                                                 1.0f / 24.0f,
                                                                                 1.0f / 24.0f,
                                                                                 1.0f / 6.0f,
                                                                                 1.0f / 6.0f,
                                                                                 0.5f,
                                                                                 0.5f,
                                                                                 1.0f,
                                                                                 1.0f};

/* The scalar functions for a pair that leaves the fast path (rare: |x| beyond about 7.4, or
 * NaN or infinite), out of line so that the loop's registers stay put. */
static __attribute__((noinline)) void gelu_pair_scalar(const float* x, const float* grad,
                                                       float* out) {
  for (int lane = 0; lane < 2; ++lane)
    out[lane] = grad ? grad[lane] * ipu_ops_gelu_grad(x[lane]) : ipu_ops_gelu(x[lane]);
}

/* out[i] = gelu(x[i]), or with grad, grad[i] x gelu'(x[i]), for pairs i, i + 1 < n; returns
 * how many elements it did (the caller does the last one of an odd n). x, grad and out must be
 * 8-byte aligned (the caller checks). */
static inline uint32_t gelu_pairs(const float* x, const float* grad, float* out, uint32_t n) {
  GELU_PAIR(X, "ft0", "ft1");
  GELU_PAIR(T, "ft2", "ft3");
  GELU_PAIR(M, "ft4", "ft5");
  GELU_PAIR(S, "ft6", "ft7");
  GELU_PAIR(R, "fa0", "fa1");
  GELU_PAIR(P, "fa2", "fa3");
  GELU_PAIR(L2E, "fa4", "fa5");
  GELU_PAIR(SHIFT, "fa6", "fa7");
  GELU_PAIR(P6, "fs2", "fs3");
  GELU_PAIR(P5, "fs4", "fs5");
  GELU_PAIR(P4, "fs6", "fs7");
  GELU_PAIR(P3, "fs8", "fs9");
  GELU_PAIR(P2, "fs10", "fs11");
  GELU_PAIR(P1, "ft8", "ft9");
  GELU_PAIR(K, "ft10", "ft11");
  register float lo __asm__("fs0") = -87.3f, hi __asm__("fs1") = 88.0f;
  const float* c = kGeluPairs;
  GELU_LOAD(L2E, c + 2 * kGeluL2e);
  GELU_LOAD(SHIFT, c + 2 * kGeluShift);
  GELU_LOAD(P6, c + 2 * kGeluP6);
  GELU_LOAD(P5, c + 2 * kGeluP5);
  GELU_LOAD(P4, c + 2 * kGeluP4);
  GELU_LOAD(P3, c + 2 * kGeluP3);
  GELU_LOAD(P2, c + 2 * kGeluP2);
  GELU_LOAD(P1, c + 2 * kGeluP1);
  uint32_t i = 0;
  for (; i + 2 <= n; i += 2) {
    /* minus_2u = x (c0 + c1 (x x)) */
    GELU_LOAD(X, x + i);
    GELU_MUL(T, X, X);
    GELU_LOAD(K, c + 2 * kGeluC1);
    GELU_MUL(T, K, T);
    GELU_LOAD(K, c + 2 * kGeluC0);
    GELU_ADD(T, K, T);
    GELU_MUL(M, X, T);
    if (!(M_0 >= lo && M_0 <= hi && M_1 >= lo && M_1 <= hi)) {
      gelu_pair_scalar(x + i, grad ? grad + i : 0, out + i);
      /* The call took the caller-saved registers: the constants kept in them again. */
      GELU_LOAD(L2E, c + 2 * kGeluL2e);
      GELU_LOAD(SHIFT, c + 2 * kGeluShift);
      GELU_LOAD(P1, c + 2 * kGeluP1);
      continue;
    }
    /* e^m: n = m / ln 2 rounded by adding 1.5 2^23; r = (m - n ln2hi) - n ln2lo */
    GELU_MUL(S, M, L2E);
    GELU_ADD(S, S, SHIFT);
    uint32_t b0, b1;
    __asm__("fmv.x.w %0, %1" : "=r"(b0) : "f"(S_0));
    __asm__("fmv.x.w %0, %1" : "=r"(b1) : "f"(S_1));
    GELU_SUB(T, S, SHIFT);
    GELU_LOAD(K, c + 2 * kGeluLn2Hi);
    GELU_MUL(R, T, K);
    GELU_SUB(R, M, R);
    GELU_LOAD(K, c + 2 * kGeluLn2Lo);
    GELU_MUL(T, T, K);
    GELU_SUB(R, R, T);
    GELU_MUL(P, P6, R);
    GELU_ADD(P, P, P5);
    GELU_MUL(P, P, R);
    GELU_ADD(P, P, P4);
    GELU_MUL(P, P, R);
    GELU_ADD(P, P, P3);
    GELU_MUL(P, P, R);
    GELU_ADD(P, P, P2);
    GELU_MUL(P, P, R);
    GELU_ADD(P, P, P1);
    GELU_MUL(P, P, R);
    GELU_ADD(P, P, P1);
    /* 2^n: (n + 127) << 23, n the shifted sum's bits less 0x4b400000 */
    b0 = (b0 - 0x4b400000u + 127u) << 23;
    b1 = (b1 - 0x4b400000u + 127u) << 23;
    __asm__("fmv.w.x %0, %1" : "=f"(S_0) : "r"(b0));
    __asm__("fmv.w.x %0, %1" : "=f"(S_1) : "r"(b1));
    GELU_MUL(P, P, S);
    /* s = 1 / (1 + e^m) */
    GELU_ADD(T, P1, P);
    S_0 = P1_0 / T_0;
    S_1 = P1_1 / T_1;
    if (!grad) {
      GELU_MUL(T, X, S); /* x s */
      GELU_STORE(T, out + i);
      continue;
    }
    /* s + x (s (1 - s)) (d0 + d1 (x x)), times the gradient */
    GELU_SUB(T, P1, S);
    GELU_MUL(T, S, T);
    GELU_MUL(T, X, T);
    GELU_MUL(M, X, X);
    GELU_LOAD(K, c + 2 * kGeluD1);
    GELU_MUL(M, K, M);
    GELU_LOAD(K, c + 2 * kGeluD0);
    GELU_ADD(M, K, M);
    GELU_MUL(T, T, M);
    GELU_ADD(T, S, T);
    GELU_LOAD(M, grad + i);
    GELU_MUL(T, M, T);
    GELU_STORE(T, out + i);
  }
  return i;
}

#undef GELU_PAIR
#undef GELU_V2
#undef GELU_ADD
#undef GELU_SUB
#undef GELU_MUL
#undef GELU_LOAD
#undef GELU_STORE

#endif
