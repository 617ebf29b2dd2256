/* GeLU, GeLU's derivative and softmax's exponentials two elements at a time, in the lanes of
 * the f32x2 instructions (docs/xipu-model.md): ops_math.h's ipu_ops_gelu, ipu_ops_gelu_grad and
 * ipu_ops_expf, the same f32 operations in the same order, so the bits are the same (each lane
 * of ipu.f32v2mul / add / sub rounds as the scalar operation does; what the C code writes a * b
 * or a + b is taken in either order, which IEEE makes the same). e^x is each lane's ipu.f32exp,
 * which takes every argument (NaN and infinities too), so no pair leaves the fast path.
 *
 * GCC cannot give a register pair to a variable (ilp32f has no 64-bit FP type), so every pair
 * is two variables pinned to an even/odd register pair and each operation is one instruction
 * on them. */
#ifndef IPU_OPS_PAIRS_H
#define IPU_OPS_PAIRS_H

#include <stdint.h>

#include "ops_math.h"

#define PAIR(name, r0, r1) register float name##_0 __asm__(r0), name##_1 __asm__(r1)
/* D = A op B, lane by lane (funct7: 0 add, 1 sub, 2 mul). */
#define PAIR_OP(funct7, D, A, B)                     \
  __asm__(".insn r 0x2b, 0, " #funct7 ", %0, %2, %4" \
          : "=f"(D##_0), "=f"(D##_1)                 \
          : "f"(A##_0), "f"(A##_1), "f"(B##_0), "f"(B##_1))
#define PAIR_ADD(D, A, B) PAIR_OP(0, D, A, B)
#define PAIR_SUB(D, A, B) PAIR_OP(1, D, A, B)
#define PAIR_MUL(D, A, B) PAIR_OP(2, D, A, B)
#define PAIR_LOAD(D, at) \
  __asm__ volatile(".insn i 0x5b, 1, %0, 0(%2)" : "=f"(D##_0), "=f"(D##_1) : "r"(at) : "memory")
#define PAIR_STORE(S, at) \
  __asm__ volatile(".insn s 0x5b, 3, %0, 0(%2)" : : "f"(S##_0), "f"(S##_1), "r"(at) : "memory")
/* The same `bytes` (a literal) past `at`, in the instruction's offset: no address to compute. */
#define PAIR_LOAD_AT(D, at, bytes)                       \
  __asm__ volatile(".insn i 0x5b, 1, %0, " #bytes "(%2)" \
                   : "=f"(D##_0), "=f"(D##_1)            \
                   : "r"(at)                             \
                   : "memory")
#define PAIR_STORE_AT(S, at, bytes)                      \
  __asm__ volatile(".insn s 0x5b, 3, %0, " #bytes "(%2)" \
                   :                                     \
                   : "f"(S##_0), "f"(S##_1), "r"(at)     \
                   : "memory")

/* D = e^A, lane by lane: each lane's ipu.f32exp (3 issue slots). */
#define PAIR_EXP(D, A)                                                    \
  do {                                                                    \
    __asm__(".insn r 0x2b, 3, 0, %0, %1, x0" : "=f"(D##_0) : "f"(A##_0)); \
    __asm__(".insn r 0x2b, 3, 0, %0, %1, x0" : "=f"(D##_1) : "f"(A##_1)); \
  } while (0)

/* The constants as pairs; each written as ops_math.h writes it, so the compiler folds the same
 * f32 values. */
enum { kPairC1, kPairC0, kPairD0, kPairD1, kPairOne, kPairConstants };
/* clang-format off */
static const float kPairs[2 * kPairConstants] __attribute__((aligned(8))) = {
    -0.0713548162f, -0.0713548162f,  -1.5957691216f,   -1.5957691216f,
    1.5957691216f,  1.5957691216f,   0.2140644486f,    0.2140644486f,
    1.0f,           1.0f};
/* clang-format on */

/* S = the sigmoid of -2u for the pair X: minus_2u = x (c0 + c1 (x x)), s = 1 / (1 + e^minus_2u)
 * (the pairs T, M, P and the constants C1, C0, ONE in registers, as gelu_pairs pins them). */
#define GELU_PAIRS_SIGMOID_OF_X() \
  do {                            \
    PAIR_MUL(T, X, X);            \
    PAIR_MUL(T, C1, T);           \
    PAIR_ADD(T, C0, T);           \
    PAIR_MUL(M, X, T);            \
    PAIR_EXP(P, M);               \
    PAIR_ADD(T, ONE, P);          \
    S_0 = ONE_0 / T_0;            \
    S_1 = ONE_1 / T_1;            \
  } while (0)

/* The pairs GELU_PAIRS_SIGMOID_OF_X works in, pinned, and its constants loaded (they stay in
 * registers through the loops). */
#define GELU_PAIRS_REGISTERS()         \
  PAIR(X, "ft0", "ft1");               \
  PAIR(T, "ft2", "ft3");               \
  PAIR(M, "ft4", "ft5");               \
  PAIR(S, "ft6", "ft7");               \
  PAIR(P, "ft8", "ft9");               \
  PAIR(ONE, "ft10", "ft11");           \
  PAIR(C1, "fa0", "fa1");              \
  PAIR(C0, "fa2", "fa3");              \
  PAIR_LOAD(C1, kPairs + 2 * kPairC1); \
  PAIR_LOAD(C0, kPairs + 2 * kPairC0); \
  PAIR_LOAD(ONE, kPairs + 2 * kPairOne)

/* The derivative's constants pinned and loaded, beside GELU_PAIRS_REGISTERS'. */
#define GELU_PAIRS_DERIVATIVE_REGISTERS() \
  PAIR(D1, "fa4", "fa5");                 \
  PAIR(D0, "fa6", "fa7");                 \
  PAIR_LOAD(D1, kPairs + 2 * kPairD1);    \
  PAIR_LOAD(D0, kPairs + 2 * kPairD0)

/* T = the gradient pair at G times gelu'(X), from GELU_PAIRS_SIGMOID_OF_X's S:
 * s + x (s (1 - s)) (d0 + d1 (x x)), times the gradient (M a scratch pair). */
#define GELU_PAIRS_TIMES_DERIVATIVE(G) \
  do {                                 \
    PAIR_SUB(T, ONE, S);               \
    PAIR_MUL(T, S, T);                 \
    PAIR_MUL(T, X, T);                 \
    PAIR_MUL(M, X, X);                 \
    PAIR_MUL(M, D1, M);                \
    PAIR_ADD(M, D0, M);                \
    PAIR_MUL(T, T, M);                 \
    PAIR_ADD(T, S, T);                 \
    PAIR_LOAD(M, G);                   \
    PAIR_MUL(T, M, T);                 \
  } while (0)

/* out[i] = gelu(x[i]), or with grad, grad[i] x gelu'(x[i]), for pairs i, i + 1 < n; returns
 * how many elements it did (the caller does the last one of an odd n). x, grad and out must be
 * 8-byte aligned (the caller checks). The constants stay in registers. The compiled loops take
 * 19 issue slots a pair and 29 with the gradient (23 and 33 with an index beside the pointers),
 * where with e^x as a polynomial an element took about 27 and one at a time 50. */
static uint32_t gelu_pairs(const float* x, const float* grad, float* out, uint32_t n) {
  GELU_PAIRS_REGISTERS();
  GELU_PAIRS_DERIVATIVE_REGISTERS();
  /* The pointers step (no index beside them: its address arithmetic cost 4 issue slots a
   * pair), and each kind has its own loop. */
#define GELU_PAIRS_SIGMOID()   \
  do {                         \
    PAIR_LOAD(X, x);           \
    GELU_PAIRS_SIGMOID_OF_X(); \
  } while (0)
  const float* const end = x + (n & ~1u);
  if (!grad) {
    for (; x != end; x += 2, out += 2) {
      GELU_PAIRS_SIGMOID();
      PAIR_MUL(T, X, S); /* x s */
      PAIR_STORE(T, out);
    }
    return n & ~1u;
  }
  for (; x != end; x += 2, grad += 2, out += 2) {
    GELU_PAIRS_SIGMOID();
    GELU_PAIRS_TIMES_DERIVATIVE(grad);
    PAIR_STORE(T, out);
  }
#undef GELU_PAIRS_SIGMOID
  return n & ~1u;
}

/* out[i] = grad[i] x gelu'(x[i]) and out16[i] = out[i] rounded to f16 (nearest even), for
 * pairs i, i + 1 < n; returns how many elements it did. gelu_pairs' gradient loop and
 * narrow_pairs' rounding in one loop, the same operations in the same order: the compiled loop
 * is the gradient loop's 25 instructions and three more (the rounding, its store and out16's
 * step), where the cast took a pass of its own over memory. x, grad and out 8-byte aligned,
 * out16 4-byte. */
static uint32_t gelu_grad_f16_pairs(const float* x, const float* grad, float* out, uint16_t* out16,
                                    uint32_t n) {
  GELU_PAIRS_REGISTERS();
  GELU_PAIRS_DERIVATIVE_REGISTERS();
  float h;
  const float* const end = x + (n & ~1u);
  for (; x != end; x += 2, grad += 2, out += 2, out16 += 2) {
    PAIR_LOAD(X, x);
    GELU_PAIRS_SIGMOID_OF_X();
    GELU_PAIRS_TIMES_DERIVATIVE(grad);
    PAIR_STORE(T, out);
    __asm__(".insn r 0x2b, 2, 0, %0, %1, x0" : "=f"(h) : "f"(T_0), "f"(T_1));
    __asm__ volatile("fsw %0, 0(%1)" : : "f"(h), "r"(out16) : "memory");
  }
  return n & ~1u;
}

/* sum[i] = a[i] + b[j] and out[i] = gelu(sum[i]) rounded to f16 (nearest even), for pairs
 * i, i + 1 < n, j from `offset` wrapping at `period` (a bias along a's rows); returns how many
 * elements it did. binary's addition, gelu_pairs and narrow_pairs in one loop, the same
 * operations in the same order: gelu_pairs' 19 issue slots a pair and five more (the bias's
 * load and addition, the sum's store, the rounding), where the three loops took about 30 and
 * each its own pass over memory. a, b + offset and sum 8-byte aligned, out 4-byte; offset and
 * period even (no pair crosses the wrap). */
static uint32_t bias_gelu_pairs(const float* a, const float* b, uint32_t period, uint32_t offset,
                                float* sum, uint16_t* out, uint32_t n) {
  GELU_PAIRS_REGISTERS();
  PAIR(B, "fa4", "fa5");
  register float h __asm__("fa6");
  const float* const b_end = b + period;
  const float* bj = b + offset;
  const float* const a_end = a + (n & ~1u);
  while (a != a_end) { /* a run at a time, to b's wrap or a's end */
    const uint32_t left = (uint32_t)(a_end - a), to_wrap = (uint32_t)(b_end - bj);
    const float* const run_end = a + (left < to_wrap ? left : to_wrap);
    for (; a != run_end; a += 2, bj += 2, sum += 2, out += 2) {
      PAIR_LOAD(X, a);
      PAIR_LOAD(B, bj);
      PAIR_ADD(X, X, B);
      PAIR_STORE(X, sum);
      GELU_PAIRS_SIGMOID_OF_X();
      PAIR_MUL(T, X, S); /* x s */
      __asm__(".insn r 0x2b, 2, 0, %0, %1, x0" : "=f"(h) : "f"(T_0), "f"(T_1));
      __asm__ volatile("fsw %0, 0(%1)" : : "f"(h), "r"(out) : "memory");
    }
    if (bj == b_end) bj = b;
  }
  return n & ~1u;
}

/* A softmax row's exponentials in place: out[i] = e^(out[i] - m), added to *sum_out from left to
 * right (as the scalar loop adds them), for pairs i, i + 1 < n; returns how many elements it
 * did. out must be 8-byte aligned. About 12 issue slots a pair, where with e^x as a polynomial
 * (its constants in registers, its range tested) an element took about 16. */
static uint32_t softmax_exp_pairs(float* out, uint32_t n, float m, float* sum_out) {
  PAIR(M, "ft0", "ft1"); /* the argument, then e^x */
  PAIR(E, "ft2", "ft3");
  PAIR(X, "ft4", "ft5"); /* the row's largest score, both lanes */
  register float sum __asm__("ft6") = *sum_out;
  X_0 = m;
  X_1 = m;
  PAIR(M2, "ft8", "ft9"); /* the second pair of a round */
  PAIR(E2, "ft10", "ft11");
  /* The pointer steps (no index beside it), two pairs a round. */
  float* const quads_end = out + (n & ~3u);
  float* at = out;
  for (; at != quads_end; at += 4) {
    PAIR_LOAD(M, at);
    PAIR_LOAD_AT(M2, at, 8);
    PAIR_SUB(M, M, X);
    PAIR_SUB(M2, M2, X);
    PAIR_EXP(E, M);
    PAIR_EXP(E2, M2);
    PAIR_STORE(E, at);
    PAIR_STORE_AT(E2, at, 8);
    __asm__("fadd.s %0, %0, %1" : "+f"(sum) : "f"(E_0));
    __asm__("fadd.s %0, %0, %1" : "+f"(sum) : "f"(E_1));
    __asm__("fadd.s %0, %0, %1" : "+f"(sum) : "f"(E2_0));
    __asm__("fadd.s %0, %0, %1" : "+f"(sum) : "f"(E2_1));
  }
  if (n & 2) {
    PAIR_LOAD(M, at);
    PAIR_SUB(M, M, X);
    PAIR_EXP(E, M);
    PAIR_STORE(E, at);
    __asm__("fadd.s %0, %0, %1" : "+f"(sum) : "f"(E_0));
    __asm__("fadd.s %0, %0, %1" : "+f"(sum) : "f"(E_1));
  }
  *sum_out = sum;
  return n & ~1u;
}

/* A softmax row's scores two at a time, out = x (times *scale when scale is given, then + mask
 * with `masked`), and their largest: both lanes' ipu.f32v2max folded at the end. The largest is the
 * same value whichever order finds it; where the sequential `s > m ? s : m` and fmax differ (a NaN,
 * or +0 beside -0) the row's outputs do not: a NaN makes every output NaN either way, and s - (+0)
 * = s - (-0). x, mask and out 8-byte aligned, n even and at least 2. */
static float softmax_scores_pairs(const float* x, const float* mask, float* out, uint32_t n,
                                  int masked, const float* scale) {
  PAIR(A, "ft0", "ft1");
  PAIR(B, "ft2", "ft3");
  PAIR(MAX, "ft4", "ft5");
  PAIR(SCALE, "ft6", "ft7");
  if (scale) {
    SCALE_0 = *scale;
    SCALE_1 = *scale;
  }
  PAIR_LOAD(A, x);
  if (scale) PAIR_MUL(A, A, SCALE);
  if (masked) {
    PAIR_LOAD(B, mask);
    PAIR_ADD(A, A, B);
  }
  PAIR_STORE(A, out);
  MAX_0 = A_0;
  MAX_1 = A_1;
  /* The pointers step, two pairs a round, and each kind of score has its own loop. */
  PAIR(C, "ft8", "ft9");
  PAIR(D, "ft10", "ft11");
#define SCORES_PAIR(P, Q, AT)                                  \
  do {                                                         \
    PAIR_LOAD_AT(P, x, AT);                                    \
    if (SCALED) PAIR_MUL(P, P, SCALE);                         \
    if (MASKED) {                                              \
      PAIR_LOAD_AT(Q, mask, AT);                               \
      PAIR_ADD(P, P, Q);                                       \
    }                                                          \
    PAIR_STORE_AT(P, out, AT);                                 \
    __asm__(".insn r 0x2b, 0, 4, %0, %2, %4"                   \
            : "=f"(MAX_0), "=f"(MAX_1)                         \
            : "f"(MAX_0), "f"(MAX_1), "f"(P##_0), "f"(P##_1)); \
  } while (0)
#define SCORES_PAIRS(SCALED_, MASKED_)           \
  do {                                           \
    enum { SCALED = SCALED_, MASKED = MASKED_ }; \
    for (; x != quads_end; x += 4, out += 4) {   \
      SCORES_PAIR(A, B, 0);                      \
      SCORES_PAIR(C, D, 8);                      \
      if (MASKED) mask += 4;                     \
    }                                            \
    if (x != end) SCORES_PAIR(A, B, 0);          \
  } while (0)
  const float* const end = x + n;
  x += 2;
  out += 2;
  if (masked) mask += 2;
  const float* const quads_end = x + ((n - 2) & ~3u);
  if (scale && masked)
    SCORES_PAIRS(1, 1);
  else if (scale)
    SCORES_PAIRS(1, 0);
  else if (masked)
    SCORES_PAIRS(0, 1);
  else
    SCORES_PAIRS(0, 0);
#undef SCORES_PAIR
#undef SCORES_PAIRS
  return __builtin_fmaxf(MAX_0, MAX_1);
}

/* out[i] = out[i] / sum, two a load and store (ipu.f32v2 has no division: each lane's own
 * fdiv.s), and with out16 the quotients rounded to f16 too (the hardware's nearest even, as
 * cast_f32_f16), a word a pair. out 8-byte aligned, out16 4-byte; returns how many elements it
 * did. */
static uint32_t divide_pairs(float* out, uint16_t* out16, uint32_t n, float sum) {
  PAIR(A, "ft0", "ft1");
  register float h __asm__("ft2");
  float* const end = out + (n & ~1u);
  if (out16) {
    /* The pointers step, two pairs a round. */
    PAIR(B, "ft4", "ft5");
    register float k __asm__("ft3");
    float* const quads_end = out + (n & ~3u);
    for (; out != quads_end; out += 4, out16 += 4) {
      PAIR_LOAD(A, out);
      PAIR_LOAD_AT(B, out, 8);
      A_0 = A_0 / sum;
      A_1 = A_1 / sum;
      B_0 = B_0 / sum;
      B_1 = B_1 / sum;
      PAIR_STORE(A, out);
      PAIR_STORE_AT(B, out, 8);
      __asm__(".insn r 0x2b, 2, 0, %0, %1, x0" : "=f"(h) : "f"(A_0), "f"(A_1));
      __asm__(".insn r 0x2b, 2, 0, %0, %1, x0" : "=f"(k) : "f"(B_0), "f"(B_1));
      __asm__ volatile("fsw %0, 0(%1)" : : "f"(h), "r"(out16) : "memory");
      __asm__ volatile("fsw %0, 4(%1)" : : "f"(k), "r"(out16) : "memory");
    }
    if (out != end) {
      PAIR_LOAD(A, out);
      A_0 = A_0 / sum;
      A_1 = A_1 / sum;
      PAIR_STORE(A, out);
      __asm__(".insn r 0x2b, 2, 0, %0, %1, x0" : "=f"(h) : "f"(A_0), "f"(A_1));
      __asm__ volatile("fsw %0, 0(%1)" : : "f"(h), "r"(out16) : "memory");
    }
    return n & ~1u;
  }
  for (; out != end; out += 2) {
    PAIR_LOAD(A, out);
    A_0 = A_0 / sum;
    A_1 = A_1 / sum;
    PAIR_STORE(A, out);
  }
  return n & ~1u;
}

/* The loop of a trailing vector's pairs: a run at a time, to b's wrap (bj reaching b_end) or
 * a's end (a_end), two pairs a round (QUAD), then a pair alone (ONE), the pointers a, bj, out
 * and those STEP(k) names stepping k elements; bj back to b at the wrap. Where an index and a
 * test of the wrap took 6 issue slots an element, binary_pairs' rounds take 3. */
#define PAIRS_TO_THE_WRAP(QUAD, ONE, STEP)                                         \
  while (a != a_end) {                                                             \
    const uint32_t left = (uint32_t)(a_end - a), to_wrap = (uint32_t)(b_end - bj); \
    const float* const run_end = a + (left < to_wrap ? left : to_wrap);            \
    const float* const quads_end = run_end - ((uint32_t)(run_end - a) & 2u);       \
    for (; a != quads_end; a += 4, bj += 4, out += 4) {                            \
      QUAD;                                                                        \
      STEP(4);                                                                     \
    }                                                                              \
    if (a != run_end) {                                                            \
      ONE;                                                                         \
      a += 2, bj += 2, out += 2;                                                   \
      STEP(2);                                                                     \
    }                                                                              \
    if (bj == b_end) bj = b;                                                       \
  }
#define PAIRS_NO_OTHER_STEP(k) (void)0

/* out[i] = a[i] op b[(offset + i) % period] (op 0 +, 1 -, 2 x) two at a time: a load of each
 * operand's pair, one f32x2 instruction and a store, where the scalar loop takes two loads,
 * the operation, a store and (with the wrapping index of a trailing vector) five instructions
 * more an element. a, b + offset and out 8-byte aligned, offset and period even (a pair never
 * crosses the wrap); returns how many elements it did (all but an odd n's last). */
static uint32_t binary_pairs(const float* a, const float* b, float* out, uint32_t n, uint32_t op,
                             uint32_t period, uint32_t offset) {
  PAIR(A, "ft0", "ft1");
  PAIR(B, "ft2", "ft3");
  PAIR(C, "ft4", "ft5");
  PAIR(D, "ft6", "ft7");
  const float* const b_end = b + period;
  const float* bj = b + offset;
  const float* const a_end = a + (n & ~1u);
#define BINARY_QUAD(OP)       \
  do {                        \
    PAIR_LOAD(A, a);          \
    PAIR_LOAD(B, bj);         \
    PAIR_LOAD_AT(C, a, 8);    \
    PAIR_LOAD_AT(D, bj, 8);   \
    OP(A, A, B);              \
    OP(C, C, D);              \
    PAIR_STORE(A, out);       \
    PAIR_STORE_AT(C, out, 8); \
  } while (0)
#define BINARY_ONE(OP)  \
  do {                  \
    PAIR_LOAD(A, a);    \
    PAIR_LOAD(B, bj);   \
    OP(A, A, B);        \
    PAIR_STORE(A, out); \
  } while (0)
  if (op == 0) {
    PAIRS_TO_THE_WRAP(BINARY_QUAD(PAIR_ADD), BINARY_ONE(PAIR_ADD), PAIRS_NO_OTHER_STEP)
  } else if (op == 1) {
    PAIRS_TO_THE_WRAP(BINARY_QUAD(PAIR_SUB), BINARY_ONE(PAIR_SUB), PAIRS_NO_OTHER_STEP)
  } else {
    PAIRS_TO_THE_WRAP(BINARY_QUAD(PAIR_MUL), BINARY_ONE(PAIR_MUL), PAIRS_NO_OTHER_STEP)
  }
#undef BINARY_QUAD
#undef BINARY_ONE
  return n & ~1u;
}

/* out[i] = (a[i] + b[j]) + x[i] for pairs i, i + 1 < n, j from `offset` wrapping at `period`
 * (a bias along a's rows, then a residual): binary_pairs' two additions in one pass, in its
 * loop (PAIRS_TO_THE_WRAP) with x beside a: 17 instructions a round of two pairs (compiled),
 * where binary_pairs' take 12. a, b + offset, x and out 8-byte aligned, offset and period even
 * (no pair crosses the wrap); returns how many elements it did. */
static uint32_t bias_residual_pairs(const float* a, const float* b, uint32_t period,
                                    uint32_t offset, const float* x, float* out, uint32_t n) {
  PAIR(A, "ft0", "ft1");
  PAIR(B, "ft2", "ft3");
  PAIR(C, "ft4", "ft5");
  PAIR(D, "ft6", "ft7");
  PAIR(X, "ft8", "ft9");
  PAIR(Y, "ft10", "ft11");
  const float* const b_end = b + period;
  const float* bj = b + offset;
  const float* const a_end = a + (n & ~1u);
#define RESIDUAL_QUAD         \
  do {                        \
    PAIR_LOAD(A, a);          \
    PAIR_LOAD(B, bj);         \
    PAIR_LOAD_AT(C, a, 8);    \
    PAIR_LOAD_AT(D, bj, 8);   \
    PAIR_LOAD(X, x);          \
    PAIR_LOAD_AT(Y, x, 8);    \
    PAIR_ADD(A, A, B);        \
    PAIR_ADD(C, C, D);        \
    PAIR_ADD(A, A, X);        \
    PAIR_ADD(C, C, Y);        \
    PAIR_STORE(A, out);       \
    PAIR_STORE_AT(C, out, 8); \
  } while (0)
#define RESIDUAL_ONE    \
  do {                  \
    PAIR_LOAD(A, a);    \
    PAIR_LOAD(B, bj);   \
    PAIR_LOAD(X, x);    \
    PAIR_ADD(A, A, B);  \
    PAIR_ADD(A, A, X);  \
    PAIR_STORE(A, out); \
  } while (0)
#define RESIDUAL_STEP(k) x += (k)
  PAIRS_TO_THE_WRAP(RESIDUAL_QUAD, RESIDUAL_ONE, RESIDUAL_STEP)
#undef RESIDUAL_QUAD
#undef RESIDUAL_ONE
#undef RESIDUAL_STEP
  return n & ~1u;
}

/* out[c] = in[c] + in[stride + c] + ... down `rows` rows (rows >= 1), lane by lane in order
 * (as the scalar loop adds each column), four columns a pass down the rows: two loads and two
 * f32x2 additions a row and the row pointer's step, where two columns a pass took 3.5 issue
 * slots an element. in, out 8-byte aligned and stride even; returns how many columns it did
 * (columns rounded down to a multiple of 4). */
static uint32_t column_sums_quads(const float* in, float* out, uint32_t rows, uint32_t columns,
                                  uint32_t stride) {
  PAIR(S, "ft0", "ft1");
  PAIR(T, "ft2", "ft3");
  PAIR(A, "ft4", "ft5");
  PAIR(B, "ft6", "ft7");
  const uint32_t quads = columns & ~3u;
  for (uint32_t c = 0; c < quads; c += 4) {
    const float* at = in + c;
    const float* const last = at + (rows - 1) * stride;
    PAIR_LOAD(S, at);
    PAIR_LOAD_AT(T, at, 8);
    while (at != last) {
      at += stride;
      PAIR_LOAD(A, at);
      PAIR_LOAD_AT(B, at, 8);
      PAIR_ADD(S, S, A);
      PAIR_ADD(T, T, B);
    }
    PAIR_STORE(S, out + c);
    PAIR_STORE_AT(T, out + c, 8);
  }
  return quads;
}

/* out[c] = in[0][c] + in[1][c] + ... + in[rows - 1][c] (rows >= 2, a constant where it is
 * inlined, so the loop over the rows unrolls and each row's pointer stays in a register), lane
 * by lane in order (as the scalar loop adds each column), four columns a round: two loads and
 * two f32x2 additions a row, each row's pointer's step, two stores. in[r] and out 8-byte
 * aligned; returns how many columns it did (columns rounded down to a multiple of 4). */
static inline __attribute__((always_inline)) uint32_t sum_pieces_quads(const float* const* in,
                                                                       float* out, uint32_t columns,
                                                                       const uint32_t rows) {
  PAIR(S, "ft0", "ft1");
  PAIR(T, "ft2", "ft3");
  PAIR(A, "ft4", "ft5");
  PAIR(B, "ft6", "ft7");
  /* A pointer a row, each its own variable: in an array, the loads' memory clobbers kept it on
   * the stack, reloaded for every load. */
  const float *p0 = in[0], *p1 = in[1], *p2 = rows > 2 ? in[2] : 0, *p3 = rows > 3 ? in[3] : 0,
              *p4 = rows > 4 ? in[4] : 0, *p5 = rows > 5 ? in[5] : 0, *p6 = rows > 6 ? in[6] : 0,
              *p7 = rows > 7 ? in[7] : 0;
  const uint32_t quads = columns & ~3u;
  float* const end = out + quads;
#define SUM_PIECES_ROW(P)  \
  do {                     \
    PAIR_LOAD(A, P);       \
    PAIR_LOAD_AT(B, P, 8); \
    P += 4;                \
    PAIR_ADD(S, S, A);     \
    PAIR_ADD(T, T, B);     \
  } while (0)
  for (; out != end; out += 4) {
    PAIR_LOAD(S, p0);
    PAIR_LOAD_AT(T, p0, 8);
    p0 += 4;
    SUM_PIECES_ROW(p1);
    if (rows > 2) SUM_PIECES_ROW(p2);
    if (rows > 3) SUM_PIECES_ROW(p3);
    if (rows > 4) SUM_PIECES_ROW(p4);
    if (rows > 5) SUM_PIECES_ROW(p5);
    if (rows > 6) SUM_PIECES_ROW(p6);
    if (rows > 7) SUM_PIECES_ROW(p7);
    PAIR_STORE(S, out);
    PAIR_STORE_AT(T, out, 8);
  }
#undef SUM_PIECES_ROW
  return quads;
}

/* out[i] = a[i] rounded to f16 by the hardware, two at a time: a pair's load, one
 * ipu.f32v2tof16 and a word's store, where the intrinsic's fixed registers and the halves'
 * stores took 13 instructions a pair. Two pairs a round, the pointers stepping (no index beside
 * them): 4 instructions an element with an index and a pair a round, about 2.3 so. a 8-byte and
 * out 4-byte aligned; returns how many elements it did. */
static uint32_t narrow_pairs(const float* a, uint16_t* out, uint32_t n) {
  PAIR(A, "ft0", "ft1");
  PAIR(B, "ft4", "ft5"); /* a pair is an even register and the next */
  register float h __asm__("ft2");
  register float k __asm__("ft3");
  const float* const quads_end = a + (n & ~3u);
  const float* at = a;
  uint16_t* to = out;
  for (; at != quads_end; at += 4, to += 4) {
    PAIR_LOAD(A, at);
    PAIR_LOAD(B, at + 2);
    __asm__(".insn r 0x2b, 2, 0, %0, %1, x0" : "=f"(h) : "f"(A_0), "f"(A_1));
    __asm__(".insn r 0x2b, 2, 0, %0, %1, x0" : "=f"(k) : "f"(B_0), "f"(B_1));
    __asm__ volatile("fsw %0, 0(%1)" : : "f"(h), "r"(to) : "memory");
    __asm__ volatile("fsw %0, 4(%1)" : : "f"(k), "r"(to) : "memory");
  }
  if (n & 2) {
    PAIR_LOAD(A, at);
    __asm__(".insn r 0x2b, 2, 0, %0, %1, x0" : "=f"(h) : "f"(A_0), "f"(A_1));
    __asm__ volatile("fsw %0, 0(%1)" : : "f"(h), "r"(to) : "memory");
  }
  return n & ~1u;
}

/* A softmax gradient's row in pairs: s = the sum of dy y (each pair's products in the lanes, then
 * added to s from left to right, as the scalar loop adds them); dx = (y (dy - s)) x scale, the
 * scale's product only when scaled, stored as f32 or, with out16, rounded to f16 pairs (the
 * hardware's nearest even, as cast_f32_f16). y, dy, out 8-byte aligned (out16 4-byte), n even. */
static void softmax_grad_pairs(const float* y, const float* dy, float* out, uint16_t* out16,
                               uint32_t n, const float* scale) {
  PAIR(Y, "ft0", "ft1");
  PAIR(D, "ft2", "ft3");
  PAIR(S, "ft4", "ft5");
  PAIR(K, "ft6", "ft7");
  PAIR(Y2, "ft10", "ft11"); /* the second pair of a round */
  PAIR(D2, "fa0", "fa1");
  register float sum __asm__("ft8") = 0.0f;
  /* The pointers step, two pairs a round, and each kind of output has its own loop. */
  const float* const end = y + n;
  const float* const quads_end = y + (n & ~3u);
  const float *yi = y, *di = dy;
  for (; yi != quads_end; yi += 4, di += 4) {
    PAIR_LOAD(Y, yi);
    PAIR_LOAD(D, di);
    PAIR_LOAD_AT(Y2, yi, 8);
    PAIR_LOAD_AT(D2, di, 8);
    PAIR_MUL(D, D, Y);
    PAIR_MUL(D2, D2, Y2);
    __asm__("fadd.s %0, %0, %1" : "+f"(sum) : "f"(D_0));
    __asm__("fadd.s %0, %0, %1" : "+f"(sum) : "f"(D_1));
    __asm__("fadd.s %0, %0, %1" : "+f"(sum) : "f"(D2_0));
    __asm__("fadd.s %0, %0, %1" : "+f"(sum) : "f"(D2_1));
  }
  if (yi != end) {
    PAIR_LOAD(Y, yi);
    PAIR_LOAD(D, di);
    PAIR_MUL(D, D, Y);
    __asm__("fadd.s %0, %0, %1" : "+f"(sum) : "f"(D_0));
    __asm__("fadd.s %0, %0, %1" : "+f"(sum) : "f"(D_1));
  }
  S_0 = sum;
  S_1 = sum;
  if (scale) {
    K_0 = *scale;
    K_1 = *scale;
  }
  register float h __asm__("ft9");
  register float h2 __asm__("fa2");
  /* dx of the pair P (Q the gradient's) at `at` bytes past y and dy. */
#define SOFTMAX_GRAD_PAIR(P, Q, SCALED, AT) \
  do {                                      \
    PAIR_LOAD_AT(P, y, AT);                 \
    PAIR_LOAD_AT(Q, dy, AT);                \
    PAIR_SUB(Q, Q, S);                      \
    PAIR_MUL(Q, P, Q);                      \
    if (SCALED) PAIR_MUL(Q, Q, K);          \
  } while (0)
#define SOFTMAX_GRAD_PAIRS(SCALED, F16)                                              \
  do {                                                                               \
    for (; y != quads_end; y += 4, dy += 4) {                                        \
      SOFTMAX_GRAD_PAIR(Y, D, SCALED, 0);                                            \
      SOFTMAX_GRAD_PAIR(Y2, D2, SCALED, 8);                                          \
      if (F16) {                                                                     \
        __asm__(".insn r 0x2b, 2, 0, %0, %1, x0" : "=f"(h) : "f"(D_0), "f"(D_1));    \
        __asm__(".insn r 0x2b, 2, 0, %0, %1, x0" : "=f"(h2) : "f"(D2_0), "f"(D2_1)); \
        __asm__ volatile("fsw %0, 0(%1)" : : "f"(h), "r"(out16) : "memory");         \
        __asm__ volatile("fsw %0, 4(%1)" : : "f"(h2), "r"(out16) : "memory");        \
        out16 += 4;                                                                  \
      } else {                                                                       \
        PAIR_STORE(D, out);                                                          \
        PAIR_STORE_AT(D2, out, 8);                                                   \
        out += 4;                                                                    \
      }                                                                              \
    }                                                                                \
    if (y != end) {                                                                  \
      SOFTMAX_GRAD_PAIR(Y, D, SCALED, 0);                                            \
      if (F16) {                                                                     \
        __asm__(".insn r 0x2b, 2, 0, %0, %1, x0" : "=f"(h) : "f"(D_0), "f"(D_1));    \
        __asm__ volatile("fsw %0, 0(%1)" : : "f"(h), "r"(out16) : "memory");         \
      } else {                                                                       \
        PAIR_STORE(D, out);                                                          \
      }                                                                              \
    }                                                                                \
  } while (0)
  if (out16 && scale)
    SOFTMAX_GRAD_PAIRS(1, 1);
  else if (out16)
    SOFTMAX_GRAD_PAIRS(0, 1);
  else if (scale)
    SOFTMAX_GRAD_PAIRS(1, 0);
  else
    SOFTMAX_GRAD_PAIRS(0, 0);
#undef SOFTMAX_GRAD_PAIRS
#undef SOFTMAX_GRAD_PAIR
}

/* A layer norm's row statistics in both lanes of MEAN and INV, and X = xhat = (x - mean) inv of
 * the pair at `at`, lane by lane. */
#define LAYER_NORM_PAIRS_ROW(mean, inv) \
  PAIR(MEAN, "fa0", "fa1");             \
  PAIR(INV, "fa2", "fa3");              \
  MEAN_0 = (mean);                      \
  MEAN_1 = (mean);                      \
  INV_0 = (inv);                        \
  INV_1 = (inv)
#define LAYER_NORM_PAIRS_XHAT(at) \
  PAIR_LOAD(X, at);               \
  PAIR_SUB(X, X, MEAN);           \
  PAIR_MUL(X, X, INV)

/* A layer norm gradient's slice of a row two columns at a time (layer_norm_grad_slice_sums_f32):
 * xhat = (x - mean) inv and g = dy gamma in the lanes; g and g xhat added to *sum_g and *sum_gx
 * from left to right, as the scalar loop adds them; dgamma += dy xhat and dbeta += dy lane by
 * lane. Every pointer 8-byte aligned; returns how many columns it did (n rounded down to even). */
static uint32_t layer_norm_grad_sums_pairs(const float* x, const float* dy, const float* gamma,
                                           float mean, float inv, float* dgamma, float* dbeta,
                                           uint32_t n, float* sum_g_io, float* sum_gx_io,
                                           int first) {
  PAIR(X, "ft0", "ft1");
  PAIR(DY, "ft2", "ft3");
  PAIR(GM, "ft4", "ft5");
  PAIR(G, "ft6", "ft7");
  PAIR(T, "ft8", "ft9");
  PAIR(D, "ft10", "ft11");
  LAYER_NORM_PAIRS_ROW(mean, inv);
  register float sum_g __asm__("fa4") = *sum_g_io;
  register float sum_gx __asm__("fa5") = *sum_gx_io;
  PAIR(Z, "fa6", "fa7");
  Z_0 = 0.0f;
  Z_1 = 0.0f;
  const uint32_t pairs = n & ~1u;
  const float* const end = x + pairs;
  /* The pointers step. A vertex's first row adds its products to 0 without loading the zeros
   * (0 + p, not p: a -0 product comes out +0, as from the zeroed row). */
#define LN_GRAD_SUMS_PAIRS(FIRST)                                          \
  for (; x != end; x += 2, dy += 2, gamma += 2, dgamma += 2, dbeta += 2) { \
    LAYER_NORM_PAIRS_XHAT(x);                                              \
    PAIR_LOAD(DY, dy);                                                     \
    PAIR_LOAD(GM, gamma);                                                  \
    PAIR_MUL(G, DY, GM);                                                   \
    __asm__("fadd.s %0, %0, %1" : "+f"(sum_g) : "f"(G_0));                 \
    __asm__("fadd.s %0, %0, %1" : "+f"(sum_g) : "f"(G_1));                 \
    PAIR_MUL(T, G, X);                                                     \
    __asm__("fadd.s %0, %0, %1" : "+f"(sum_gx) : "f"(T_0));                \
    __asm__("fadd.s %0, %0, %1" : "+f"(sum_gx) : "f"(T_1));                \
    PAIR_MUL(T, DY, X);                                                    \
    if (FIRST) {                                                           \
      PAIR_ADD(T, Z, T);                                                   \
      PAIR_STORE(T, dgamma);                                               \
      PAIR_ADD(D, Z, DY);                                                  \
    } else {                                                               \
      PAIR_LOAD(D, dgamma);                                                \
      PAIR_ADD(T, D, T);                                                   \
      PAIR_STORE(T, dgamma);                                               \
      PAIR_LOAD(D, dbeta);                                                 \
      PAIR_ADD(D, D, DY);                                                  \
    }                                                                      \
    PAIR_STORE(D, dbeta);                                                  \
  }
  if (first) {
    LN_GRAD_SUMS_PAIRS(1)
  } else {
    LN_GRAD_SUMS_PAIRS(0)
  }
#undef LN_GRAD_SUMS_PAIRS
  *sum_g_io = sum_g;
  *sum_gx_io = sum_gx;
  return pairs;
}

/* The same slice's dx = inv ((g - a) - xhat b) two columns at a time
 * (layer_norm_grad_slice_apply_f32), lane by lane. Every pointer 8-byte aligned; returns how many
 * columns it did. */
static uint32_t layer_norm_grad_apply_pairs(const float* x, const float* dy, const float* gamma,
                                            float mean, float inv, float a, float b, float* dx,
                                            uint32_t n) {
  PAIR(X, "ft0", "ft1");
  PAIR(DY, "ft2", "ft3");
  PAIR(GM, "ft4", "ft5");
  PAIR(T, "ft6", "ft7");
  LAYER_NORM_PAIRS_ROW(mean, inv);
  PAIR(A, "fa4", "fa5");
  PAIR(B, "fa6", "fa7");
  A_0 = a;
  A_1 = a;
  B_0 = b;
  B_1 = b;
  const uint32_t pairs = n & ~1u;
  const float* const end = x + pairs;
  for (; x != end; x += 2, dy += 2, gamma += 2, dx += 2) { /* the pointers step */
    LAYER_NORM_PAIRS_XHAT(x);
    PAIR_LOAD(DY, dy);
    PAIR_LOAD(GM, gamma);
    PAIR_MUL(T, DY, GM); /* g */
    PAIR_SUB(T, T, A);
    PAIR_MUL(X, X, B);
    PAIR_SUB(T, T, X);
    PAIR_MUL(T, INV, T);
    PAIR_STORE(T, dx);
  }
  return pairs;
}

/* A layer norm's slice of a row two columns at a time (layer_norm_slice_apply_f32): y = ((x -
 * mean) inv) gamma + beta, lane by lane. Every pointer 8-byte aligned; returns how many columns
 * it did. */
static uint32_t layer_norm_apply_pairs(const float* x, const float* gamma, const float* beta,
                                       float mean, float inv, float* y, uint32_t n) {
  PAIR(X, "ft0", "ft1");
  PAIR(T, "ft2", "ft3");
  LAYER_NORM_PAIRS_ROW(mean, inv);
  const uint32_t pairs = n & ~1u;
  const float* const end = x + pairs;
  for (; x != end; x += 2, gamma += 2, beta += 2, y += 2) { /* the pointers step */
    LAYER_NORM_PAIRS_XHAT(x);
    PAIR_LOAD(T, gamma);
    PAIR_MUL(X, X, T);
    PAIR_LOAD(T, beta);
    PAIR_ADD(X, X, T);
    PAIR_STORE(X, y);
  }
  return pairs;
}

#undef LAYER_NORM_PAIRS_ROW
#undef LAYER_NORM_PAIRS_XHAT
#undef PAIR
#undef PAIR_OP
#undef PAIR_ADD
#undef PAIR_SUB
#undef PAIR_MUL
#undef PAIR_LOAD
#undef PAIR_STORE
#undef PAIR_EXP

#endif
