// RV32F arithmetic with RISC-V semantics: the five rounding modes (RNE RTZ RDN RUP RMM), the
// accrued flags (fflags bits NX=1 UF=2 OF=4 DZ=8 NV=16), the canonical NaN 0x7fc00000,
// tininess detected after rounding, and fcvt saturation. Values are f32 bit patterns.
//
// How: every operation is computed in host double precision with round-toward-zero, and an
// inexact result gets its last bit set ("round to odd"). With 53 >= 24 + 2 bits this keeps
// enough information for round_to_f32() to give the correctly rounded f32 in any mode (Boldo &
// Melquiond, "Emulation of FMA and correctly rounded sums: proved algorithms using rounding to
// odd", IEEE TC 2008). That one rounding routine is where modes and flags are decided.
#pragma once

#include <cstdint>
#include <cstring>

namespace ipu::iss::fpu {

enum RoundingMode : unsigned {
  kRne = 0,
  kRtz = 1,
  kRdn = 2,
  kRup = 3,
  kRmm = 4,
  kDynamic = 7,
  kStochastic = 8,  // Xipu: f16 results only, with 32 random bits per result (docs/xipu.md)
};
enum Flag : uint32_t { kNX = 1, kUF = 2, kOF = 4, kDZ = 8, kNV = 16 };

inline constexpr uint32_t kCanonicalNaN = 0x7fc00000u;

// An f32's bits and back.
inline float float_of(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
inline uint32_t bits_of(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return bits;
}

uint32_t add(uint32_t a, uint32_t b, unsigned rm, uint32_t& flags);
uint32_t sub(uint32_t a, uint32_t b, unsigned rm, uint32_t& flags);
uint32_t mul(uint32_t a, uint32_t b, unsigned rm, uint32_t& flags);
uint32_t div(uint32_t a, uint32_t b, unsigned rm, uint32_t& flags);
uint32_t sqrt(uint32_t a, unsigned rm, uint32_t& flags);
// Xipu's ipu.f32exp: e^a rounded to nearest even, from a double-precision evaluation (its
// error, below 2^-50 relative, rounds otherwise than the exact value only within that distance
// of a tie). e^0 = 1 exactly, e^-inf = +0, e^+inf = +inf; NX for every other number, OF above
// the f32 range, UF for a tiny result; NaN -> canonical NaN (NV if signalling).
uint32_t exp(uint32_t a, uint32_t& flags);
// (negate_product ? -(a*b) : a*b) + (negate_addend ? -c : c), rounded once.
uint32_t fma(uint32_t a, uint32_t b, uint32_t c, bool negate_product, bool negate_addend,
             unsigned rm, uint32_t& flags);

uint32_t min(uint32_t a, uint32_t b, uint32_t& flags);
uint32_t max(uint32_t a, uint32_t b, uint32_t& flags);
uint32_t eq(uint32_t a, uint32_t b, uint32_t& flags);  // quiet: NV only for signalling NaN
uint32_t lt(uint32_t a, uint32_t b, uint32_t& flags);  // signalling: NV for any NaN
uint32_t le(uint32_t a, uint32_t b, uint32_t& flags);
uint32_t classify(uint32_t a);

uint32_t to_i32(uint32_t a, unsigned rm, uint32_t& flags);
uint32_t to_u32(uint32_t a, unsigned rm, uint32_t& flags);
uint32_t from_i32(uint32_t v, unsigned rm, uint32_t& flags);
uint32_t from_u32(uint32_t v, unsigned rm, uint32_t& flags);

// An IEEE 754 binary format: f32 (binary32) or f16 (binary16).
struct Format {
  unsigned width;          // bits
  unsigned mantissa_bits;  // stored fraction bits
  int emax, emin;          // exponent range of normal numbers (bias = emax)
  uint32_t infinity;       // +inf bit pattern (+inf - 1 is the largest finite)
  uint32_t canonical_nan;
};
inline constexpr Format kF32{32, 23, 127, -126, 0x7f800000u, kCanonicalNaN};
inline constexpr Format kF16{16, 10, 15, -14, 0x7c00u, 0x7e00u};

// Rounds a double (exact, or rounded to odd with >= mantissa_bits + 3 bits) to `fmt` in mode
// rm, accruing NX/UF/OF. kStochastic uses the 32 bits of `random`: with the discarded part as a
// 32-bit fraction F of the last place (truncated), the magnitude rounds up iff F + random >= 2^32.
uint32_t round_to_format(double value, const Format& fmt, unsigned rm, uint32_t& flags,
                         uint32_t random);
uint32_t round_to_f32(double value, unsigned rm, uint32_t& flags);

// ---- f16 (IEEE binary16) lanes for the Xipu SIMD instructions; values are 16-bit patterns ----
inline constexpr uint32_t kCanonicalNaN16 = 0x7e00u;
double f16_value(uint32_t h);                      // exact
uint32_t f16_to_f32(uint32_t h, uint32_t& flags);  // exact; NaN -> canonical f32 NaN (NV if sNaN)
uint32_t f32_to_f16(uint32_t f, unsigned rm, uint32_t& flags, uint32_t random);
uint32_t add16(uint32_t a, uint32_t b, unsigned rm, uint32_t& flags, uint32_t random);
uint32_t sub16(uint32_t a, uint32_t b, unsigned rm, uint32_t& flags, uint32_t random);
uint32_t mul16(uint32_t a, uint32_t b, unsigned rm, uint32_t& flags, uint32_t random);
uint32_t fma16(uint32_t a, uint32_t b, uint32_t c, unsigned rm, uint32_t& flags, uint32_t random);
uint32_t min16(uint32_t a, uint32_t b, uint32_t& flags);
uint32_t max16(uint32_t a, uint32_t b, uint32_t& flags);
uint32_t eq16(uint32_t a, uint32_t b, uint32_t& flags);
uint32_t lt16(uint32_t a, uint32_t b, uint32_t& flags);
uint32_t le16(uint32_t a, uint32_t b, uint32_t& flags);

}  // namespace ipu::iss::fpu
