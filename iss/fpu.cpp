#include "fpu.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#if defined(__SSE2__)
#include <xmmintrin.h>
#else
#include <cfenv>
#endif

namespace ipu::iss::fpu {
namespace {

uint64_t bits_of(double d) {
  uint64_t u;
  std::memcpy(&u, &d, 8);
  return u;
}
double as_double(uint64_t u) {
  double d;
  std::memcpy(&d, &u, 8);
  return d;
}

uint32_t magnitude(const Format& f, uint32_t a) { return a & ((1u << (f.width - 1)) - 1); }
bool is_nan(const Format& f, uint32_t a) { return magnitude(f, a) > f.infinity; }
bool is_signalling(const Format& f, uint32_t a) {
  return is_nan(f, a) && (a & (1u << (f.mantissa_bits - 1))) == 0;
}
bool is_zero(const Format& f, uint32_t a) { return magnitude(f, a) == 0; }
bool is_nan(uint32_t a) { return is_nan(kF32, a); }
bool is_signalling(uint32_t a) { return is_signalling(kF32, a); }
bool is_zero(uint32_t a) { return is_zero(kF32, a); }

// Host exception flags around one double operation computed toward zero. The operands are
// passed through empty asm statements so that the compiler cannot move the arithmetic across
// the control-register accesses (it does not model the rounding mode as a dependency).
struct HostRoundToZero {
#if defined(__SSE2__)
  // All exceptions masked (bits 7-12), round toward zero (RC = 11), DAZ and FTZ off.
  static constexpr unsigned kRtz = 0x1f80u | (3u << 13);
  static constexpr unsigned kDefault = 0x1f80u;
  HostRoundToZero() { _mm_setcsr(kRtz); }
  ~HostRoundToZero() { _mm_setcsr(kDefault); }
  // x86 MXCSR: IE=1 DE=2 ZE=4 OE=8 UE=16 PE=32.
  static bool inexact() { return (_mm_getcsr() & 0x20u) != 0; }
  static bool invalid() { return (_mm_getcsr() & 0x01u) != 0; }
  static bool divide_by_zero() { return (_mm_getcsr() & 0x04u) != 0; }
#else
  int saved_ = std::fegetround();
  HostRoundToZero() {
    std::feclearexcept(FE_ALL_EXCEPT);
    std::fesetround(FE_TOWARDZERO);
  }
  ~HostRoundToZero() { std::fesetround(saved_); }
  static bool inexact() { return std::fetestexcept(FE_INEXACT) != 0; }
  static bool invalid() { return std::fetestexcept(FE_INVALID) != 0; }
  static bool divide_by_zero() { return std::fetestexcept(FE_DIVBYZERO) != 0; }
#endif
};

template <typename T>
inline void opaque(T& v) {
  asm volatile("" : "+m"(v));
}

// Finishes a host operation: round-to-odd the double, then round it to f32 in mode rm.
uint32_t finish(double r, const HostRoundToZero& host, const Format& fmt, unsigned rm,
                uint32_t& flags, uint32_t random = 0) {
  if (host.invalid()) flags |= kNV;
  if (host.divide_by_zero()) flags |= kDZ;
  if (std::isnan(r)) return fmt.canonical_nan;
  if (host.inexact() && std::isfinite(r)) r = as_double(bits_of(r) | 1u);
  return round_to_format(r, fmt, rm, flags, random);
}

// x + y where both are exact f32 values (or an exact f32 product) as doubles. An exact zero
// sum is +0 except when rounding down, or when both addends are -0 (IEEE 754 section 6.3); the
// host computed it toward zero, which gives +0 for cancellation, so only RDN needs mending.
uint32_t sum(double x, double y, const Format& fmt, unsigned rm, uint32_t& flags,
             uint32_t random = 0) {
  HostRoundToZero host;
  opaque(x);
  opaque(y);
  double r = x + y;
  opaque(r);
  const bool both_plus_zero = x == 0 && y == 0 && !std::signbit(x) && !std::signbit(y);
  if (r == 0 && rm == kRdn && !both_plus_zero) r = -0.0;
  return finish(r, host, fmt, rm, flags, random);
}

// Signalling NaN operands raise NV. Checked on the bits because the host's conversion of an
// sNaN to double may raise its flag before the flags are cleared for the operation.
void check_signalling(uint32_t a, uint32_t b, uint32_t& flags) {
  if (is_signalling(a) || is_signalling(b)) flags |= kNV;
}

}  // namespace

uint32_t round_to_format(double value, const Format& fmt, unsigned rm, uint32_t& flags,
                         uint32_t random) {
  const uint64_t u = bits_of(value);
  const uint32_t sign = static_cast<uint32_t>(u >> 63) << (fmt.width - 1);
  const int exp_field = static_cast<int>((u >> 52) & 0x7ff);
  const uint64_t frac = u & ((uint64_t{1} << 52) - 1);
  if (exp_field == 0x7ff) return frac ? fmt.canonical_nan : (sign | fmt.infinity);
  if (exp_field == 0 && frac == 0) return sign;

  // value = mant * 2^(e - 52); doubles below 2^-1022 are far under every target's range.
  const uint64_t mant = exp_field ? (frac | (uint64_t{1} << 52)) : frac;
  int e = exp_field ? exp_field - 1023 : -1022;
  const unsigned normal_shift = 52 - fmt.mantissa_bits;
  const uint64_t hidden = uint64_t{1} << fmt.mantissa_bits;

  const bool negative = sign != 0;
  auto rounds_up = [&](uint64_t q, uint64_t rem, unsigned shift) {
    const uint64_t half = shift >= 64 ? ~uint64_t{0} : uint64_t{1} << (shift - 1);
    switch (rm) {
      case kRne: return rem > half || (rem == half && (q & 1));
      case kRtz: return false;
      case kRdn: return negative && rem != 0;
      case kRup: return !negative && rem != 0;
      case kRmm: return rem >= half;
      case kStochastic: {
        // The discarded part as a 32-bit fraction of the last place, truncated; round the
        // magnitude up iff fraction + random >= 2^32 (probability fraction / 2^32).
        const uint64_t fraction = shift >= 96  ? 0
                                  : shift > 32 ? rem >> (shift - 32)
                                               : rem << (32 - shift);
        return fraction + random >= (uint64_t{1} << 32);
      }
      default: return false;
    }
  };
  // Drops `shift` low bits of mant with rounding; reports inexactness.
  auto round_shift = [&](unsigned shift, bool& inexact) {
    if (shift >= 64) {
      inexact = mant != 0;
      return rounds_up(0, mant, shift) ? uint64_t{1} : uint64_t{0};
    }
    const uint64_t q = mant >> shift;
    const uint64_t rem = mant & ((uint64_t{1} << shift) - 1);
    inexact = rem != 0;
    return q + (rounds_up(q, rem, shift) ? 1 : 0);
  };

  bool inexact = false;
  if (e < fmt.emin) {
    // Tininess after rounding (as RISC-V): would the result, rounded with an unbounded exponent,
    // be below the smallest normal? Stochastic rounding decides tininess before rounding.
    bool tiny = true;
    if (rm != kStochastic) {
      const uint64_t q = round_shift(normal_shift, inexact);
      tiny = q < (hidden << 1) || e < fmt.emin - 1;  // hidden<<1: rounded up to the smallest normal
    }
    const unsigned shift = normal_shift + static_cast<unsigned>(fmt.emin - e);
    const uint64_t sub = round_shift(shift, inexact);  // <= hidden: hidden is the smallest normal
    if (inexact) flags |= kNX | (tiny ? uint32_t{kUF} : 0u);
    return sign | static_cast<uint32_t>(sub);
  }
  uint64_t q = round_shift(normal_shift, inexact);
  if (q == (hidden << 1)) {
    q >>= 1;
    ++e;
  }
  if (e > fmt.emax) {
    flags |= kOF | kNX;
    const bool to_infinity = rm == kRne || rm == kRmm || rm == kStochastic ||
                             (rm == kRup && !negative) || (rm == kRdn && negative);
    return sign | (to_infinity ? fmt.infinity : fmt.infinity - 1);
  }
  if (inexact) flags |= kNX;
  return sign | (static_cast<uint32_t>(e + fmt.emax) << fmt.mantissa_bits) |
         static_cast<uint32_t>(q & (hidden - 1));
}

uint32_t round_to_f32(double value, unsigned rm, uint32_t& flags) {
  return round_to_format(value, kF32, rm, flags, 0);
}

uint32_t add(uint32_t a, uint32_t b, unsigned rm, uint32_t& flags) {
  check_signalling(a, b, flags);
  return sum(float_of(a), float_of(b), kF32, rm, flags);
}

uint32_t sub(uint32_t a, uint32_t b, unsigned rm, uint32_t& flags) {
  check_signalling(a, b, flags);
  return sum(float_of(a), float_of(b ^ 0x80000000u), kF32, rm, flags);
}

uint32_t mul(uint32_t a, uint32_t b, unsigned rm, uint32_t& flags) {
  check_signalling(a, b, flags);
  HostRoundToZero host;
  double x = float_of(a), y = float_of(b);
  opaque(x);
  opaque(y);
  double r = x * y;  // exact: 24 x 24 bits fit in 53
  opaque(r);
  return finish(r, host, kF32, rm, flags);
}

uint32_t div(uint32_t a, uint32_t b, unsigned rm, uint32_t& flags) {
  check_signalling(a, b, flags);
  HostRoundToZero host;
  double x = float_of(a), y = float_of(b);
  opaque(x);
  opaque(y);
  double r = x / y;
  opaque(r);
  return finish(r, host, kF32, rm, flags);
}

uint32_t sqrt(uint32_t a, unsigned rm, uint32_t& flags) {
  check_signalling(a, a, flags);
  HostRoundToZero host;
  double x = float_of(a);
  opaque(x);
  double r = std::sqrt(x);
  opaque(r);
  return finish(r, host, kF32, rm, flags);
}

uint32_t exp(uint32_t a, uint32_t& flags) {
  if (is_nan(a)) {
    if (is_signalling(a)) flags |= kNV;
    return kCanonicalNaN;
  }
  if (a == 0xff800000u) return 0;  // e^-inf: +0, exact
  if (a == 0x7f800000u) return a;  // e^+inf: +inf, exact
  if (is_zero(a)) return 0x3f800000u;
  // Beyond [-110, 100] the result is 0 or +inf either way (f32's smallest subnormal is e^-103.3,
  // its largest finite e^88.7), so the argument is clamped: 2^n below stays a double.
  const double x = std::clamp(static_cast<double>(float_of(a)), -110.0, 100.0);
  // x = n ln 2 + r, |r| <= ln 2 / 2 (Cody and Waite: n ln2_hi is exact, ln2_hi's low 32 bits
  // being 0), e^r by its Taylor series to r^13 (the next term is below 2^-57) as
  // 1 + r (1 + r / 2 (1 + r / 3 (... (1 + r / 13)))), then times 2^n.
  const double n = std::floor(x * 1.4426950408889634 + 0.5);
  const double r = (x - n * 6.93147180369123816490e-01) - n * 1.90821492927058770002e-10;
  double p = 1.0;
  for (int k = 13; k >= 1; --k) p = 1.0 + p * r / k;
  const double value = std::ldexp(p, static_cast<int>(n));
  flags |= kNX;  // e^x is irrational for every rational x but 0
  return round_to_f32(value, kRne, flags);
}

uint32_t fma(uint32_t a, uint32_t b, uint32_t c, bool negate_product, bool negate_addend,
             unsigned rm, uint32_t& flags) {
  // RISC-V requires NV for inf * 0 even when the addend is a quiet NaN.
  const bool inf_times_zero = ((a & 0x7fffffffu) == 0x7f800000u && is_zero(b)) ||
                              ((b & 0x7fffffffu) == 0x7f800000u && is_zero(a));
  if (inf_times_zero) flags |= kNV;
  if (is_signalling(a) || is_signalling(b) || is_signalling(c)) flags |= kNV;
  if (is_nan(a) || is_nan(b) || is_nan(c) || inf_times_zero) return kCanonicalNaN;
  const uint32_t sa = negate_product ? a ^ 0x80000000u : a;
  const uint32_t sc = negate_addend ? c ^ 0x80000000u : c;
  const double product = static_cast<double>(float_of(sa)) * float_of(b);  // exact
  return sum(product, float_of(sc), kF32, rm, flags);
}

namespace {

double value_of(const Format& f, uint32_t a) {
  return f.width == 32 ? static_cast<double>(float_of(a)) : f16_value(a);
}

// IEEE 754-2008 minNum/maxNum as RISC-V specifies them: a NaN operand is ignored, both NaN
// give the canonical NaN, signalling NaNs raise NV, and -0 orders below +0.
uint32_t min_max(const Format& f, uint32_t a, uint32_t b, bool want_max, uint32_t& flags) {
  if (is_signalling(f, a) || is_signalling(f, b)) flags |= kNV;
  if (is_nan(f, a) && is_nan(f, b)) return f.canonical_nan;
  if (is_nan(f, a)) return b;
  if (is_nan(f, b)) return a;
  if (is_zero(f, a) && is_zero(f, b)) return want_max ? (a & b) : (a | b);
  const double x = value_of(f, a), y = value_of(f, b);
  return (want_max ? x > y : x < y) ? a : b;
}

// Quiet (eq) or signalling (lt, le) comparison.
enum class Compare { kEq, kLt, kLe };
uint32_t compare(const Format& f, uint32_t a, uint32_t b, Compare op, uint32_t& flags) {
  if (is_nan(f, a) || is_nan(f, b)) {
    if (op != Compare::kEq || is_signalling(f, a) || is_signalling(f, b)) flags |= kNV;
    return 0;
  }
  const double x = value_of(f, a), y = value_of(f, b);
  switch (op) {
    case Compare::kEq: return x == y ? 1 : 0;
    case Compare::kLt: return x < y ? 1 : 0;
    case Compare::kLe: return x <= y ? 1 : 0;
  }
  return 0;
}

}  // namespace

uint32_t min(uint32_t a, uint32_t b, uint32_t& flags) { return min_max(kF32, a, b, false, flags); }
uint32_t max(uint32_t a, uint32_t b, uint32_t& flags) { return min_max(kF32, a, b, true, flags); }
uint32_t eq(uint32_t a, uint32_t b, uint32_t& flags) {
  return compare(kF32, a, b, Compare::kEq, flags);
}
uint32_t lt(uint32_t a, uint32_t b, uint32_t& flags) {
  return compare(kF32, a, b, Compare::kLt, flags);
}
uint32_t le(uint32_t a, uint32_t b, uint32_t& flags) {
  return compare(kF32, a, b, Compare::kLe, flags);
}

// ---- f16 ----

double f16_value(uint32_t h) {
  const bool negative = (h & 0x8000u) != 0;
  const int exp = static_cast<int>((h >> 10) & 0x1f);
  const unsigned frac = h & 0x3ffu;
  double magnitude_value;
  if (exp == 0x1f)
    magnitude_value = frac ? std::numeric_limits<double>::quiet_NaN() : HUGE_VAL;
  else if (exp == 0)
    magnitude_value = std::ldexp(frac, -24);
  else
    magnitude_value = std::ldexp(frac | 0x400u, exp - 25);
  return negative ? -magnitude_value : magnitude_value;
}

uint32_t f16_to_f32(uint32_t h, uint32_t& flags) {
  if (is_nan(kF16, h)) {
    if (is_signalling(kF16, h)) flags |= kNV;
    return kCanonicalNaN;
  }
  return round_to_f32(f16_value(h), kRne, flags);  // exact
}

uint32_t f32_to_f16(uint32_t f, unsigned rm, uint32_t& flags, uint32_t random) {
  if (is_nan(kF32, f)) {
    if (is_signalling(kF32, f)) flags |= kNV;
    return kCanonicalNaN16;
  }
  return round_to_format(float_of(f), kF16, rm, flags, random);
}

uint32_t add16(uint32_t a, uint32_t b, unsigned rm, uint32_t& flags, uint32_t random) {
  if (is_signalling(kF16, a) || is_signalling(kF16, b)) flags |= kNV;
  return sum(f16_value(a), f16_value(b), kF16, rm, flags, random);
}

uint32_t sub16(uint32_t a, uint32_t b, unsigned rm, uint32_t& flags, uint32_t random) {
  if (is_signalling(kF16, a) || is_signalling(kF16, b)) flags |= kNV;
  return sum(f16_value(a), f16_value(b ^ 0x8000u), kF16, rm, flags, random);
}

uint32_t mul16(uint32_t a, uint32_t b, unsigned rm, uint32_t& flags, uint32_t random) {
  if (is_signalling(kF16, a) || is_signalling(kF16, b)) flags |= kNV;
  HostRoundToZero host;
  double x = f16_value(a), y = f16_value(b);
  opaque(x);
  opaque(y);
  double r = x * y;  // exact: 11 x 11 bits
  opaque(r);
  return finish(r, host, kF16, rm, flags, random);
}

uint32_t fma16(uint32_t a, uint32_t b, uint32_t c, unsigned rm, uint32_t& flags, uint32_t random) {
  const bool inf_times_zero = (magnitude(kF16, a) == kF16.infinity && is_zero(kF16, b)) ||
                              (magnitude(kF16, b) == kF16.infinity && is_zero(kF16, a));
  if (inf_times_zero || is_signalling(kF16, a) || is_signalling(kF16, b) || is_signalling(kF16, c))
    flags |= kNV;
  if (is_nan(kF16, a) || is_nan(kF16, b) || is_nan(kF16, c) || inf_times_zero)
    return kCanonicalNaN16;
  return sum(f16_value(a) * f16_value(b), f16_value(c), kF16, rm, flags, random);  // product exact
}

uint32_t min16(uint32_t a, uint32_t b, uint32_t& flags) {
  return min_max(kF16, a, b, false, flags);
}
uint32_t max16(uint32_t a, uint32_t b, uint32_t& flags) { return min_max(kF16, a, b, true, flags); }
uint32_t eq16(uint32_t a, uint32_t b, uint32_t& flags) {
  return compare(kF16, a, b, Compare::kEq, flags);
}
uint32_t lt16(uint32_t a, uint32_t b, uint32_t& flags) {
  return compare(kF16, a, b, Compare::kLt, flags);
}
uint32_t le16(uint32_t a, uint32_t b, uint32_t& flags) {
  return compare(kF16, a, b, Compare::kLe, flags);
}

uint32_t classify(uint32_t a) {
  const bool negative = (a >> 31) != 0;
  const uint32_t exp = (a >> 23) & 0xff, frac = a & 0x7fffffu;
  if (exp == 0xff) {
    if (frac == 0) return negative ? 1u << 0 : 1u << 7;
    return (frac & 0x400000u) ? 1u << 9 : 1u << 8;
  }
  if (exp == 0) {
    if (frac == 0) return negative ? 1u << 3 : 1u << 4;
    return negative ? 1u << 2 : 1u << 5;
  }
  return negative ? 1u << 1 : 1u << 6;
}

namespace {

// Rounds an f32 value (exact in double) to an integral double in mode rm.
double round_integral(double x, unsigned rm) {
  const double lower = std::floor(x);
  const double diff = x - lower;  // exact: x has at most 24 significant bits
  switch (rm) {
    case kRtz: return std::trunc(x);
    case kRdn: return lower;
    case kRup: return std::ceil(x);
    case kRmm:
      if (diff != 0.5) return diff < 0.5 ? lower : lower + 1;
      return x > 0 ? lower + 1 : lower;
    default:  // kRne
      if (diff != 0.5) return diff < 0.5 ? lower : lower + 1;
      return std::fmod(lower, 2.0) == 0 ? lower : lower + 1;
  }
}

// fcvt to integer: NaN and +overflow give the maximum, -overflow the minimum, each with NV;
// an in-range inexact result sets NX (RISC-V unprivileged spec, table "fcvt ... invalid").
uint32_t to_integer(uint32_t a, unsigned rm, uint32_t& flags, double lo, double hi,
                    uint32_t lo_result, uint32_t hi_result) {
  if (is_nan(a)) {
    flags |= kNV;
    return hi_result;
  }
  const double x = float_of(a);
  const double r = round_integral(x, rm);
  if (r < lo) {
    flags |= kNV;
    return lo_result;
  }
  if (r > hi) {
    flags |= kNV;
    return hi_result;
  }
  if (r != x) flags |= kNX;
  return r < 0 ? static_cast<uint32_t>(static_cast<int32_t>(r)) : static_cast<uint32_t>(r);
}

}  // namespace

uint32_t to_i32(uint32_t a, unsigned rm, uint32_t& flags) {
  return to_integer(a, rm, flags, -2147483648.0, 2147483647.0, 0x80000000u, 0x7fffffffu);
}

uint32_t to_u32(uint32_t a, unsigned rm, uint32_t& flags) {
  return to_integer(a, rm, flags, 0.0, 4294967295.0, 0u, 0xffffffffu);
}

uint32_t from_i32(uint32_t v, unsigned rm, uint32_t& flags) {
  return round_to_f32(static_cast<double>(static_cast<int32_t>(v)), rm, flags);
}

uint32_t from_u32(uint32_t v, unsigned rm, uint32_t& flags) {
  return round_to_f32(static_cast<double>(v), rm, flags);
}

}  // namespace ipu::iss::fpu
