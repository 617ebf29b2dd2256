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

namespace ipu::hw::fpu {

enum RoundingMode : unsigned { kRne = 0, kRtz = 1, kRdn = 2, kRup = 3, kRmm = 4, kDynamic = 7 };
enum Flag : uint32_t { kNX = 1, kUF = 2, kOF = 4, kDZ = 8, kNV = 16 };

inline constexpr uint32_t kCanonicalNaN = 0x7fc00000u;

uint32_t add(uint32_t a, uint32_t b, unsigned rm, uint32_t& flags);
uint32_t sub(uint32_t a, uint32_t b, unsigned rm, uint32_t& flags);
uint32_t mul(uint32_t a, uint32_t b, unsigned rm, uint32_t& flags);
uint32_t div(uint32_t a, uint32_t b, unsigned rm, uint32_t& flags);
uint32_t sqrt(uint32_t a, unsigned rm, uint32_t& flags);
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

// Rounds a finite or infinite double (or NaN) to f32 in mode rm, accruing NX/UF/OF.
uint32_t round_to_f32(double value, unsigned rm, uint32_t& flags);

}  // namespace ipu::hw::fpu
