// Xipu on the tile core: f16/f32 conversions (all 65,536 f16 values), round-to-nearest-even
// against a brute-force reference, stochastic rounding (exact given the PRNG state, unbiased on
// average), the PRNG against the published xoroshiro128aox equations, and the SIMD lanes.
// Every expectation is computed here, independently of iss/fpu.cpp and prng.h.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "tests/support/core_harness.h"
#include "tests/support/rv_asm.h"

namespace ipu::test {
namespace {

using iss::StopReason;
using namespace rv;

// ---- independent references ----

// IEEE binary16 value of a bit pattern, by the definition (sign, exponent, fraction).
double f16_reference_value(uint16_t h) {
  const int sign = (h >> 15) ? -1 : 1;
  const int exp = (h >> 10) & 0x1f;
  const int frac = h & 0x3ff;
  if (exp == 31) return frac ? NAN : sign * INFINITY;
  if (exp == 0) return sign * std::ldexp(frac, -24);
  return sign * std::ldexp(1024 + frac, exp - 25);
}

uint32_t f32_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// All finite non-negative f16 values in increasing order (bit patterns 0x0000-0x7bff).
const std::vector<double>& positive_f16_values() {
  static const std::vector<double> values = [] {
    std::vector<double> v;
    for (uint32_t h = 0; h <= 0x7bff; ++h)
      v.push_back(f16_reference_value(static_cast<uint16_t>(h)));
    return v;
  }();
  return values;
}

// Round-to-nearest-even of a finite double to f16 by searching the table of f16 values.
uint16_t f16_nearest_even(double x) {
  const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  const double m = std::fabs(x);
  const auto& v = positive_f16_values();
  const double max = v.back(), next = 65536.0;      // 2^16 would be the next value
  if (m >= (max + next) / 2) return sign | 0x7c00;  // the tie at 65520 goes to "even" 2^16 = inf
  if (m > max) return sign | 0x7bff;
  const size_t hi = std::lower_bound(v.begin(), v.end(), m) - v.begin();
  if (v[hi] == m) return sign | static_cast<uint16_t>(hi);
  const size_t lo = hi - 1;
  const double dlo = m - v[lo], dhi = v[hi] - m;
  const size_t pick = dlo < dhi ? lo : dhi < dlo ? hi : (lo % 2 == 0 ? lo : hi);
  return sign | static_cast<uint16_t>(pick);
}

// xoroshiro128aox written from the published equations.
struct ReferencePrng {
  uint64_t s0, s1;
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t next() {
    const uint64_t sx = s0 ^ s1, sa = s0 & s1;
    const uint64_t out = sx ^ (rotl(sa, 1) | rotl(sa, 2));
    s0 = rotl(s0, 55) ^ sx ^ (sx << 14);
    s1 = rotl(sx, 36);
    return out;
  }
};

// ---- running Xipu instructions ----

// Encodings typed from docs/xipu.md's table.
constexpr uint32_t simd(uint32_t funct3, uint32_t funct7, uint32_t rd, uint32_t rs1, uint32_t rs2) {
  return R(0x2b, funct3, funct7, rd, rs1, rs2);
}
enum : uint32_t {
  kAdd = 0,
  kSub = 1,
  kMul = 2,
  kMin = 3,
  kMax = 4,
  kCmpEq = 5,
  kCmpLt = 6,
  kCmpLe = 7,
  kAbs = 8,
  kNeg = 9
};
constexpr uint32_t F32 = 0, F16 = 1, CONV = 2;
constexpr uint32_t kToF16x2 = 0, kToF32x2 = 1, kToF16x4 = 2, kToF32x4 = 3, kHsum32 = 4, kHsum16 = 5;
constexpr uint32_t urand64(uint32_t rd) { return R(0x0b, 3, 1, rd, 0, 0); }
constexpr uint32_t urand32(uint32_t rd) { return R(0x0b, 3, 0, rd, 0, 0); }
constexpr uint32_t fma_v(uint32_t funct2, uint32_t rd, uint32_t rs1, uint32_t rs2, uint32_t rs3) {
  return (rs3 << 27) | (funct2 << 25) | (rs2 << 20) | (rs1 << 15) | (rd << 7) | 0x5b;
}

struct Program {
  CoreHarness h;
  explicit Program(std::vector<uint32_t> words) {
    words.push_back(ecall());
    h.load_words(words);
    h.x(a7) = 93;
  }
  void run() { ASSERT_EQ(h.run(), StopReason::kExited) << h.core.fault().message; }
};

uint32_t pack16(uint16_t lo, uint16_t hi) { return lo | (uint32_t{hi} << 16); }

TEST(XipuConvert, EveryF16ValueWidensExactlyAndNarrowsBack) {
  // Program: a0 -> f16 pairs, a1 -> f32 output, a2 = pair count. For each pair:
  //   flw f0; ipu.f16v2tof32 f2 (pair f2,f3) <- f0; ipu.f32v2tof16 f4 <- (f2,f3);
  //   fsw f2, f3 to a1; fsw f4 to a3 (round trip).
  CoreHarness h;
  const uint32_t src = h.base() + 0x1000, wide = src + 0x20000, back = wide + 0x40000;
  std::vector<uint32_t> prog = {I(0x07, 2, 0, a0, 0),           // flw f0, 0(a0)
                                simd(CONV, kToF32x2, 2, 0, 0),  // ipu.f16v2tof32 f2, f0
                                simd(CONV, kToF16x2, 4, 2, 0),  // ipu.f32v2tof16 f4, f2
                                S(0x27, 2, a1, 2, 0),           // fsw f2, 0(a1)
                                S(0x27, 2, a1, 3, 4),           // fsw f3, 4(a1)
                                S(0x27, 2, a3, 4, 0),           // fsw f4, 0(a3)
                                addi(a0, a0, 4),
                                addi(a1, a1, 8),
                                addi(a3, a3, 4),
                                addi(a2, a2, -1),
                                B(1, a2, zero, -40),  // bne a2, zero, loop
                                ecall()};
  h.load_words(prog);
  for (uint32_t i = 0; i < 65536; i += 2) h.write_word(src + 2 * i, pack16(i, i + 1));
  h.x(a7) = 93;
  h.x(a0) = src;
  h.x(a1) = wide;
  h.x(a2) = 32768;
  h.x(a3) = back;
  ASSERT_EQ(h.run(10'000'000'000), StopReason::kExited) << h.core.fault().message;

  unsigned nans = 0;
  for (uint32_t i = 0; i < 65536; ++i) {
    const uint32_t widened = h.read_word(wide + 4 * i);
    const uint32_t narrowed = (h.read_word(back + 2 * (i & ~1u)) >> (16 * (i & 1))) & 0xffff;
    const double expected = f16_reference_value(static_cast<uint16_t>(i));
    if (std::isnan(expected)) {
      ++nans;
      EXPECT_EQ(widened, 0x7fc00000u) << "f16 NaN " << i << " widens to the canonical f32 NaN";
      EXPECT_EQ(narrowed, 0x7e00u) << "and narrows to the canonical f16 NaN";
      continue;
    }
    EXPECT_EQ(widened, f32_bits(static_cast<float>(expected))) << "f16 0x" << std::hex << i;
    EXPECT_EQ(narrowed, i) << "round trip of f16 0x" << std::hex << i;
  }
  EXPECT_EQ(nans, 2u * 1023);
  // Signalling NaN inputs (fraction MSB clear) raised NV; nothing else may have.
  EXPECT_EQ(h.supervisor().fflags, 16u);
}

// Converts f32 lanes (a, b) to f16 with the given fpctl, returning both lanes and the flags.
struct Narrowed {
  uint16_t lane0, lane1;
  uint32_t flags;
};
Narrowed narrow(uint32_t a, uint32_t b, uint32_t fpctl = 0) {
  Program p({simd(CONV, kToF16x2, 4, 2, 0)});
  p.h.f(2) = a;
  p.h.f(3) = b;
  p.h.supervisor().fpctl = fpctl;
  p.run();
  return {static_cast<uint16_t>(p.h.f(4)), static_cast<uint16_t>(p.h.f(4) >> 16),
          p.h.supervisor().fflags};
}

TEST(XipuConvert, NearestEvenTiesSubnormalsOverflowAndNaNs) {
  constexpr uint32_t NX = 1, UF = 2, OF = 4, NV = 16;
  struct Case {
    float x;
    uint16_t expected;
    uint32_t flags;
    const char* what;
  };
  const Case cases[] = {
      {1.0f + 0x1p-11f, 0x3c00, NX, "tie between 1 and 1+2^-10: even is 1"},
      {1.0f + 3 * 0x1p-11f, 0x3c02, NX, "tie between 1+2^-10 and 1+2^-9: even is the upper"},
      {1.0f + 0x1p-11f + 0x1p-20f, 0x3c01, NX, "just above the tie rounds up"},
      {0x1p-24f, 0x0001, 0, "smallest subnormal, exact"},
      {0x1p-25f, 0x0000, UF | NX, "half the smallest subnormal: tie to even zero"},
      {3 * 0x1p-25f, 0x0002, UF | NX, "tie between 1 and 2 subnormal units: even is 2"},
      {0x1p-14f - 0x1p-26f, 0x0400, NX,
       "rounds up to the smallest normal: not tiny after rounding"},
      {65504.0f, 0x7bff, 0, "largest finite"},
      {65519.0f, 0x7bff, NX, "below the overflow threshold"},
      {65520.0f, 0x7c00, OF | NX, "the tie at the threshold overflows"},
      {1e10f, 0x7c00, OF | NX, "far above"},
      {-0.0f, 0x8000, 0, "negative zero"},
      {-INFINITY, 0xfc00, 0, "negative infinity"},
  };
  for (const Case& c : cases) {
    const Narrowed r = narrow(f32_bits(c.x), 0);
    EXPECT_EQ(r.lane0, c.expected) << c.what;
    EXPECT_EQ(r.flags, c.flags) << c.what;
    EXPECT_EQ(r.lane0, f16_nearest_even(c.x)) << c.what << " (brute-force reference)";
  }
  // NaNs: any NaN becomes the canonical f16 NaN; only a signalling one raises NV.
  Narrowed r = narrow(0x7fc12345, 0xffc00000);
  EXPECT_EQ(r.lane0, 0x7e00);
  EXPECT_EQ(r.lane1, 0x7e00);
  EXPECT_EQ(r.flags, 0u);
  r = narrow(0x7f800001, 0);
  EXPECT_EQ(r.lane0, 0x7e00);
  EXPECT_EQ(r.flags, NV);
}

TEST(XipuConvert, RandomF32ValuesMatchTheBruteForceReference) {
  // 20,000 random f32 values spread over f16's range, two per instruction, converted by one
  // program looping over them in memory (a core a value took a minute under the sanitizers):
  //   flw f2, 0(a0); flw f3, 4(a0); ipu.f32v2tof16 f4, f2; fsw f4, 0(a1); a0 += 8; a1 += 4.
  uint64_t state = 0x243f6a8885a308d3u;
  auto next = [&state] {
    state = state * 6364136223846793005u + 1442695040888963407u;
    return static_cast<uint32_t>(state >> 32);
  };
  constexpr uint32_t kPairs = 10000;
  CoreHarness h;
  const uint32_t src = h.base() + 0x1000, dst = src + 8 * kPairs;
  h.load_words({I(0x07, 2, 2, a0, 0),           // flw f2, 0(a0)
                I(0x07, 2, 3, a0, 4),           // flw f3, 4(a0)
                simd(CONV, kToF16x2, 4, 2, 0),  // ipu.f32v2tof16 f4, f2
                S(0x27, 2, a1, 4, 0),           // fsw f4, 0(a1)
                addi(a0, a0, 8), addi(a1, a1, 4), addi(a2, a2, -1),
                B(1, a2, zero, -28),  // bne a2, zero, loop
                ecall()});
  std::vector<uint32_t> lanes(2 * kPairs);
  for (uint32_t& lane : lanes) {
    const uint32_t exponent = 127 - 26 + next() % 44;  // 2^-26 .. 2^17
    lane = (next() & 0x80000000u) | (exponent << 23) | (next() & 0x7fffffu);
  }
  for (uint32_t i = 0; i < lanes.size(); ++i) h.write_word(src + 4 * i, lanes[i]);
  h.x(a7) = 93;
  h.x(a0) = src;
  h.x(a1) = dst;
  h.x(a2) = kPairs;
  ASSERT_EQ(h.run(), StopReason::kExited) << h.core.fault().message;
  for (uint32_t i = 0; i < kPairs; ++i) {
    const uint32_t out = h.read_word(dst + 4 * i);
    float x0, x1;
    std::memcpy(&x0, &lanes[2 * i], 4);
    std::memcpy(&x1, &lanes[2 * i + 1], 4);
    ASSERT_EQ(out & 0xffff, f16_nearest_even(x0)) << std::hexfloat << x0;
    ASSERT_EQ(out >> 16, f16_nearest_even(x1)) << std::hexfloat << x1;
  }
}

// ---- stochastic rounding ----

// Stochastic rounding by the documented formula: F = the discarded part of |x| as a 32-bit
// fraction of the gap between the two neighbouring f16 values (truncated); round the magnitude
// up iff F + random >= 2^32.
uint16_t stochastic_reference(float x, uint32_t random) {
  const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  const double m = std::fabs(static_cast<double>(x));
  const auto& v = positive_f16_values();
  if (m > v.back()) {
    const double frac = (m - v.back()) / (65536.0 - v.back());
    const uint64_t f = static_cast<uint64_t>(std::floor(std::ldexp(std::min(frac, 1.0), 32)));
    return sign | (f + random >= (uint64_t{1} << 32) || m >= 65536.0 ? 0x7c00 : 0x7bff);
  }
  const size_t hi = std::lower_bound(v.begin(), v.end(), m) - v.begin();
  if (v[hi] == m) return sign | static_cast<uint16_t>(hi);
  const size_t lo = hi - 1;
  const double frac = (m - v[lo]) / (v[hi] - v[lo]);
  const uint64_t f = static_cast<uint64_t>(std::floor(std::ldexp(frac, 32)));
  return sign | static_cast<uint16_t>(f + random >= (uint64_t{1} << 32) ? hi : lo);
}

TEST(XipuStochasticRounding, ExactGivenThePrngState) {
  // Seed the PRNG through its CSRs, convert pairs of values; each lane pair uses one 64-bit
  // draw (lane 0 the low word, lane 1 the high word).
  const float values[][2] = {{1.0f + 0x1p-12f, -3.14159265f},
                             {0x1p-20f * 1.37f, 1000.123f},
                             {65510.0f, -0.000123456f},
                             {2.0f, 0x1p-24f * 0.3f}};
  CoreHarness h;
  std::vector<uint32_t> prog = {
      csrrw(zero, 0x7c3, a1), csrrw(zero, 0x7c4, a2),     csrrw(zero, 0x7c5, a3),
      csrrw(zero, 0x7c6, a4), I(0x73, 5, zero, 1, 0x7c2),  // csrrwi ipu_fpctl, 1: stochastic
                                                           // rounding on
  };
  for (unsigned i = 0; i < 4; ++i) prog.push_back(simd(CONV, kToF16x2, 20 + i, 2 * i, 0));
  prog.push_back(ecall());
  h.load_words(prog);
  ReferencePrng ref{0x0123456789abcdefu, 0xfedcba9876543210u};
  h.x(a1) = static_cast<uint32_t>(ref.s0);
  h.x(a2) = static_cast<uint32_t>(ref.s0 >> 32);
  h.x(a3) = static_cast<uint32_t>(ref.s1);
  h.x(a4) = static_cast<uint32_t>(ref.s1 >> 32);
  h.x(a7) = 93;
  for (unsigned i = 0; i < 4; ++i) {
    h.f(2 * i) = f32_bits(values[i][0]);
    h.f(2 * i + 1) = f32_bits(values[i][1]);
  }
  ASSERT_EQ(h.run(), StopReason::kExited) << h.core.fault().message;
  for (unsigned i = 0; i < 4; ++i) {
    const uint64_t draw = ref.next();
    const uint32_t got = h.f(20 + i);
    EXPECT_EQ(got & 0xffff, stochastic_reference(values[i][0], static_cast<uint32_t>(draw)))
        << values[i][0];
    EXPECT_EQ(got >> 16, stochastic_reference(values[i][1], static_cast<uint32_t>(draw >> 32)))
        << values[i][1];
  }
}

TEST(XipuStochasticRounding, MeanOfManyDrawsEqualsTheValue) {
  // 100,000 stochastic conversions of each value: the mean must equal the value within five
  // standard errors (the variance of one draw is p(1-p) gap^2).
  const float values[] = {1.0f + 0x1p-12f, 0.1f, -7.77f, 1234.567f, 0x1p-20f * 1.3f, 60000.5f};
  constexpr uint32_t kDraws = 100000;
  for (const float x : values) {
    CoreHarness h;
    const uint32_t out = h.base() + 0x1000;
    // Loop: ipu.f32v2tof16 f4 <- (f0, f1) (both lanes x); fsw f4; a0 += 4; a2 -= 1.
    h.load_words({I(0x73, 5, zero, 1, 0x7c2), simd(CONV, kToF16x2, 4, 0, 0), S(0x27, 2, a0, 4, 0),
                  addi(a0, a0, 4), addi(a2, a2, -1), B(1, a2, zero, -16), ecall()});
    h.x(a7) = 93;
    h.x(a0) = out;
    h.x(a2) = kDraws / 2;
    h.f(0) = h.f(1) = f32_bits(x);
    ASSERT_EQ(h.run(1'000'000'000), StopReason::kExited) << h.core.fault().message;
    double sum = 0;
    for (uint32_t i = 0; i < kDraws / 2; ++i) {
      const uint32_t w = h.read_word(out + 4 * i);
      sum += f16_reference_value(static_cast<uint16_t>(w)) +
             f16_reference_value(static_cast<uint16_t>(w >> 16));
    }
    const double mean = sum / kDraws;
    const double m = std::fabs(static_cast<double>(x));
    const auto& v = positive_f16_values();
    const size_t hi = std::lower_bound(v.begin(), v.end(), m) - v.begin();
    const double gap = v[hi] - v[hi - 1], p = (m - v[hi - 1]) / gap;
    const double standard_error = gap * std::sqrt(p * (1 - p) / kDraws);
    EXPECT_NEAR(mean, static_cast<double>(x), 5 * standard_error + 1e-12 * m) << "x = " << x;
    // And it is genuinely random: both neighbours occur.
    EXPECT_GT(p, 0.0);
  }
}

// ---- PRNG ----

TEST(XipuPrng, OutputFollowsThePublishedXoroshiro128aox) {
  const uint64_t seeds[][2] = {{1, 0},
                               {0x0123456789abcdefu, 0x0f1e2d3c4b5a6978u},
                               {0xffffffffffffffffu, 0x8000000000000001u},
                               {0xdeadbeefu, 0xcafef00du}};
  for (const auto& seed : seeds) {
    CoreHarness h;
    const uint32_t out = h.base() + 0x1000;
    // Seed, then 64 x (urand64 t3:t4; sw t3; sw t4) and one urand32.
    std::vector<uint32_t> prog = {csrrw(zero, 0x7c3, a1), csrrw(zero, 0x7c4, a2),
                                  csrrw(zero, 0x7c5, a3), csrrw(zero, 0x7c6, a4)};
    for (int i = 0; i < 64; ++i) {
      prog.push_back(urand64(28));
      prog.push_back(sw(28, a0, 8 * i));
      prog.push_back(sw(29, a0, 8 * i + 4));
    }
    prog.push_back(urand32(a5));
    prog.push_back(ecall());
    h.load_words(prog);
    h.x(a7) = 93;
    h.x(a0) = out;
    h.x(a1) = static_cast<uint32_t>(seed[0]);
    h.x(a2) = static_cast<uint32_t>(seed[0] >> 32);
    h.x(a3) = static_cast<uint32_t>(seed[1]);
    h.x(a4) = static_cast<uint32_t>(seed[1] >> 32);
    ASSERT_EQ(h.run(), StopReason::kExited) << h.core.fault().message;
    ReferencePrng ref{seed[0], seed[1]};
    for (int i = 0; i < 64; ++i) {
      const uint64_t expected = ref.next();
      const uint64_t got =
          h.read_word(out + 8 * i) | (uint64_t{h.read_word(out + 8 * i + 4)} << 32);
      ASSERT_EQ(got, expected) << "draw " << i << " of seed " << seed[0];
    }
    EXPECT_EQ(h.x(a5), static_cast<uint32_t>(ref.next()));
  }
}

// A PRNG datapath as ipu-sim --rtl prng installs one: it gives the model's draws and counts
// them, or departs from the model at draw `fail_at`.
struct CountingPrng : iss::PrngDatapath {
  int draws = 0, fail_at = -1;
  uint64_t next(iss::Xoroshiro128aox& state) override {
    if (draws++ == fail_at) throw iss::DatapathMismatch("the PRNG RTL gave 0x1, the model 0x2");
    return state.next();
  }
};

TEST(XipuPrng, EveryDrawGoesThroughAnInstalledDatapath) {
  CoreHarness h;
  CountingPrng prng;
  h.core.set_datapaths({&prng, nullptr, nullptr});
  h.load_words({urand32(a5), urand64(28), urand32(30), ecall()});
  h.x(a7) = 93;
  const iss::Xoroshiro128aox reset = h.supervisor().prng;
  ASSERT_EQ(h.run(), StopReason::kExited) << h.core.fault().message;
  EXPECT_EQ(prng.draws, 3);
  ReferencePrng ref{reset.s0, reset.s1};
  EXPECT_EQ(h.x(a5), static_cast<uint32_t>(ref.next()));
  const uint64_t pair = ref.next();
  EXPECT_EQ(h.x(28), static_cast<uint32_t>(pair));
  EXPECT_EQ(h.x(29), static_cast<uint32_t>(pair >> 32));
  EXPECT_EQ(h.x(30), static_cast<uint32_t>(ref.next()));
}

TEST(XipuPrng, ADatapathMismatchStopsTheTileNamingContextPcAndCycle) {
  CoreHarness h;
  CountingPrng prng;
  prng.fail_at = 1;  // the urand64, the supervisor's second issue: pc base + 4, cycle 6
  h.core.set_datapaths({&prng, nullptr, nullptr});
  h.load_words({urand32(a5), urand64(28), ecall()});
  h.x(a7) = 93;
  ASSERT_EQ(h.run(), StopReason::kFault);
  const std::string& report = h.core.fault().message;
  EXPECT_NE(report.find("tile 0 context 0 (supervisor): RTL mismatch: the PRNG RTL gave 0x1, the "
                        "model 0x2 at pc 0x0004c004: ipu.urand64"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("(cycle 6)"), std::string::npos) << report;
  EXPECT_EQ(h.core.fault().cause, iss::TrapCause::kIpuError);
}

TEST(XipuPrng, EveryContextStartsOnItsOwnStream) {
  CoreHarness h;
  h.core.reset(h.base());
  for (unsigned a = 0; a <= 6; ++a)
    for (unsigned b = a + 1; b <= 6; ++b) {
      EXPECT_NE(h.core.context(a).prng.s0, h.core.context(b).prng.s0) << a << " " << b;
    }
  for (unsigned a = 0; a <= 6; ++a)
    EXPECT_NE(h.core.context(a).prng.s0 | h.core.context(a).prng.s1, 0u);
}

TEST(XipuPrng, OddRegisterPairIsIllegal) {
  Program p({urand64(a1)});
  ASSERT_EQ(p.h.run(), StopReason::kFault);
  EXPECT_EQ(p.h.core.fault().cause, iss::TrapCause::kIllegalInstruction);
}

// ---- SIMD lanes ----

TEST(XipuSimd, F32x2LanesAreIndependent) {
  auto run = [](uint32_t insn, float a0v, float a1v, float b0v, float b1v) {
    Program p({insn});
    p.h.f(2) = f32_bits(a0v);
    p.h.f(3) = f32_bits(a1v);
    p.h.f(4) = f32_bits(b0v);
    p.h.f(5) = f32_bits(b1v);
    p.run();
    return std::pair<uint32_t, uint32_t>{p.h.f(8), p.h.f(9)};
  };
  using P = std::pair<uint32_t, uint32_t>;
  EXPECT_EQ(run(simd(F32, kAdd, 8, 2, 4), 1.5f, -2.0f, 0.25f, 8.0f),
            P(f32_bits(1.75f), f32_bits(6.0f)));
  EXPECT_EQ(run(simd(F32, kSub, 8, 2, 4), 1.5f, -2.0f, 0.25f, 8.0f),
            P(f32_bits(1.25f), f32_bits(-10.0f)));
  EXPECT_EQ(run(simd(F32, kMul, 8, 2, 4), 1.5f, -2.0f, 0.25f, 8.0f),
            P(f32_bits(0.375f), f32_bits(-16.0f)));
  EXPECT_EQ(run(simd(F32, kMin, 8, 2, 4), 1.5f, -0.0f, 0.25f, 0.0f),
            P(f32_bits(0.25f), f32_bits(-0.0f)));
  EXPECT_EQ(run(simd(F32, kMax, 8, 2, 4), 1.5f, -0.0f, 0.25f, 0.0f),
            P(f32_bits(1.5f), f32_bits(0.0f)));
  EXPECT_EQ(run(simd(F32, kCmpEq, 8, 2, 4), 1.0f, 2.0f, 1.0f, 3.0f), P(0xffffffffu, 0u));
  EXPECT_EQ(run(simd(F32, kCmpLt, 8, 2, 4), 1.0f, 2.0f, 1.0f, 3.0f), P(0u, 0xffffffffu));
  EXPECT_EQ(run(simd(F32, kCmpLe, 8, 2, 4), 1.0f, 2.0f, 1.0f, 3.0f), P(0xffffffffu, 0xffffffffu));
  EXPECT_EQ(run(simd(F32, kAbs, 8, 2, 0), -1.0f, 2.0f, 0, 0), P(f32_bits(1.0f), f32_bits(2.0f)));
  EXPECT_EQ(run(simd(F32, kNeg, 8, 2, 0), -1.0f, 2.0f, 0, 0), P(f32_bits(1.0f), f32_bits(-2.0f)));
}

TEST(XipuSimd, F16x4LanesPackedInARegisterPair) {
  // a = (1, 2, -3, 0.5), b = (0.25, 2, 4, -0.5) as f16 bit patterns.
  const uint16_t a[4] = {0x3c00, 0x4000, 0xc200, 0x3800}, b[4] = {0x3400, 0x4000, 0x4400, 0xb800};
  auto run = [&](uint32_t insn) {
    Program p({insn});
    p.h.f(2) = pack16(a[0], a[1]);
    p.h.f(3) = pack16(a[2], a[3]);
    p.h.f(4) = pack16(b[0], b[1]);
    p.h.f(5) = pack16(b[2], b[3]);
    p.run();
    return std::vector<uint32_t>{p.h.f(8) & 0xffff, p.h.f(8) >> 16, p.h.f(9) & 0xffff,
                                 p.h.f(9) >> 16};
  };
  using V = std::vector<uint32_t>;
  EXPECT_EQ(run(simd(F16, kAdd, 8, 2, 4)), V({0x3d00, 0x4400, 0x3c00, 0x0000}));  // 1.25 4 1 0
  EXPECT_EQ(run(simd(F16, kMul, 8, 2, 4)), V({0x3400, 0x4400, 0xca00, 0xb400}));  // .25 4 -12 -.25
  EXPECT_EQ(run(simd(F16, kSub, 8, 2, 4)), V({0x3a00, 0x0000, 0xc700, 0x3c00}));  // .75 0 -7 1
  EXPECT_EQ(run(simd(F16, kMax, 8, 2, 4)), V({0x3c00, 0x4000, 0x4400, 0x3800}));
  EXPECT_EQ(run(simd(F16, kMin, 8, 2, 4)), V({0x3400, 0x4000, 0xc200, 0xb800}));
  EXPECT_EQ(run(simd(F16, kCmpEq, 8, 2, 4)), V({0, 0xffff, 0, 0}));
  EXPECT_EQ(run(simd(F16, kCmpLt, 8, 2, 4)), V({0, 0, 0xffff, 0}));
  EXPECT_EQ(run(simd(F16, kAbs, 8, 2, 0)), V({0x3c00, 0x4000, 0x4200, 0x3800}));
  EXPECT_EQ(run(simd(F16, kNeg, 8, 2, 0)), V({0xbc00, 0xc000, 0x4200, 0xb800}));
}

TEST(XipuSimd, FusedMultiplyAddRoundsOnce) {
  // f32x2: (1 + 2^-23)(1 - 2^-23) - 1 = -2^-46 exactly (a separate multiply would give 0).
  Program p({fma_v(0, 8, 2, 4, 6), fma_v(1, 10, 12, 14, 16)});
  p.h.f(2) = p.h.f(3) = 0x3f800001;
  p.h.f(4) = p.h.f(5) = 0x3f7ffffe;
  p.h.f(6) = p.h.f(7) = 0xbf800000;
  // f16x4: (1 + 2^-10)(1 - 2^-11) - 1 = 2^-11 - 2^-21: a separate f16 multiply rounds the
  // product to 1 + 2^-10 (tie to even) and would give 2^-10.
  for (unsigned r : {12u, 13u}) p.h.f(r) = pack16(0x3c01, 0x3c01);
  for (unsigned r : {14u, 15u}) p.h.f(r) = pack16(0x3bff, 0x3bff);
  for (unsigned r : {16u, 17u}) p.h.f(r) = pack16(0xbc00, 0xbc00);
  p.run();
  EXPECT_EQ(p.h.f(8), 0xa8800000u);
  EXPECT_EQ(p.h.f(9), 0xa8800000u);
  // 2^-11 - 2^-21 = 1.111111111b x 2^-12 is exactly representable in f16: 0x0ffe.
  EXPECT_EQ(f16_reference_value(0x0ffe), std::ldexp(1.0, -11) - std::ldexp(1.0, -21));
  EXPECT_EQ(p.h.f(10), pack16(0x0ffe, 0x0ffe));
  EXPECT_EQ(p.h.f(11), pack16(0x0ffe, 0x0ffe));
}

TEST(XipuSimd, HorizontalSumsAccumulateInF32) {
  Program p({simd(CONV, kHsum32, 10, 2, 0), simd(CONV, kHsum16, 11, 4, 0)});
  p.h.f(10) = f32_bits(100.0f);
  p.h.f(2) = f32_bits(1.5f);
  p.h.f(3) = f32_bits(-0.25f);
  p.h.f(11) = f32_bits(0.5f);
  p.h.f(4) = pack16(0x3c00, 0x4000);  // 1, 2
  p.h.f(5) = pack16(0x4200, 0x7bff);  // 3, 65504
  p.run();
  EXPECT_EQ(p.h.f(10), f32_bits(101.25f));
  EXPECT_EQ(p.h.f(11), f32_bits(65510.5f));
}

TEST(XipuSimd, FourLaneConversionsUseTwoPairsOrAQuad) {
  Program p({simd(CONV, kToF16x4, 8, 2, 4), simd(CONV, kToF32x4, 12, 8, 0)});
  p.h.f(2) = f32_bits(1.0f);
  p.h.f(3) = f32_bits(-2.0f);
  p.h.f(4) = f32_bits(0.5f);
  p.h.f(5) = f32_bits(65504.0f);
  p.run();
  EXPECT_EQ(p.h.f(8), pack16(0x3c00, 0xc000));
  EXPECT_EQ(p.h.f(9), pack16(0x3800, 0x7bff));
  EXPECT_EQ(p.h.f(12), f32_bits(1.0f));
  EXPECT_EQ(p.h.f(13), f32_bits(-2.0f));
  EXPECT_EQ(p.h.f(14), f32_bits(0.5f));
  EXPECT_EQ(p.h.f(15), f32_bits(65504.0f));
}

TEST(XipuSimd, OddPairRegistersAreIllegal) {
  for (uint32_t insn :
       {simd(F32, kAdd, 9, 2, 4), simd(F16, kAdd, 8, 3, 4), simd(F32, kAdd, 8, 2, 5),
        simd(CONV, kToF32x4, 10, 8, 0), fma_v(0, 8, 2, 4, 7)}) {
    Program p({insn});
    ASSERT_EQ(p.h.run(), StopReason::kFault);
    EXPECT_EQ(p.h.core.fault().cause, iss::TrapCause::kIllegalInstruction);
    EXPECT_EQ(p.h.core.fault().tval, insn);
  }
}

TEST(XipuSimd, FlagsAccrueAndOverflowInF16) {
  Program p({simd(F16, kMul, 8, 2, 4)});
  p.h.f(2) = pack16(0x7bff, 0x3c00);  // 65504, 1
  p.h.f(3) = 0;
  p.h.f(4) = pack16(0x4000, 0x3c00);  // 2, 1
  p.h.f(5) = 0;
  p.run();
  EXPECT_EQ(p.h.f(8), pack16(0x7c00, 0x3c00));
  EXPECT_EQ(p.h.supervisor().fflags, 4u | 1u);  // OF | NX
}

// ---- e^x (ipu.f32exp) ----

constexpr uint32_t f32exp(uint32_t rd, uint32_t rs1) { return R(0x2b, 3, 0, rd, rs1, 0); }

// The instruction's result and accrued flags for one argument.
std::pair<uint32_t, uint32_t> exp_on_the_tile(uint32_t x) {
  Program p({f32exp(8, 2)});
  p.h.f(2) = x;
  p.run();
  return {p.h.f(8), p.h.supervisor().fflags};
}

// e^x correctly rounded to f32, from long double's 64-bit significand (glibc's expl): an
// independent reference that the double-precision evaluation may differ from only next to a
// tie, which 20,000 draws almost never land on (each within 2^-40 of one: about 1 in 2^16).
uint32_t exp_reference(float x) {
  return f32_bits(static_cast<float>(std::exp(static_cast<long double>(x))));
}

TEST(XipuExp, MatchesTheCorrectlyRoundedValueAcrossTheRange) {
  std::mt19937 rng(31);
  std::uniform_real_distribution<float> arg(-104.0f, 89.0f);
  size_t equal = 0, within_one = 0;
  constexpr size_t kDraws = 20000;
  for (size_t i = 0; i < kDraws; ++i) {
    const float x = i < 200 ? -1.0f + static_cast<float>(i) / 100.0f : arg(rng);  // near 0 too
    const uint32_t got = exp_on_the_tile(f32_bits(x)).first, want = exp_reference(x);
    equal += got == want;
    within_one += got == want || got + 1 == want || got == want + 1;
  }
  EXPECT_GE(equal, kDraws - 2);
  EXPECT_EQ(within_one, kDraws);
  // Hand-checked points: e^1 = 2.71828182... -> 0x402df854; e^-1 = 0.36787944... -> 0x3ebc5ab2.
  EXPECT_EQ(exp_on_the_tile(f32_bits(1.0f)).first, 0x402df854u);
  EXPECT_EQ(exp_on_the_tile(f32_bits(-1.0f)).first, 0x3ebc5ab2u);
}

TEST(XipuExp, EdgesOfTheRangeSpecialValuesAndFlags) {
  using P = std::pair<uint32_t, uint32_t>;
  constexpr uint32_t NX = 1, UF = 2, OF = 4, NV = 16;
  EXPECT_EQ(exp_on_the_tile(f32_bits(0.0f)), P(f32_bits(1.0f), 0u));         // exact
  EXPECT_EQ(exp_on_the_tile(f32_bits(-0.0f)), P(f32_bits(1.0f), 0u));        // exact
  EXPECT_EQ(exp_on_the_tile(0xff800000u), P(0u, 0u));                        // e^-inf = +0, exact
  EXPECT_EQ(exp_on_the_tile(0x7f800000u), P(0x7f800000u, 0u));               // e^+inf = +inf, exact
  EXPECT_EQ(exp_on_the_tile(0x7fc00001u), P(0x7fc00000u, 0u));               // quiet NaN: canonical
  EXPECT_EQ(exp_on_the_tile(0x7f800001u), P(0x7fc00000u, NV));               // signalling: NV
  EXPECT_EQ(exp_on_the_tile(f32_bits(88.5f)), P(exp_reference(88.5f), NX));  // finite, near the top
  EXPECT_EQ(exp_on_the_tile(f32_bits(88.75f)), P(0x7f800000u, OF | NX));     // beyond FLT_MAX
  EXPECT_EQ(exp_on_the_tile(f32_bits(1000.0f)), P(0x7f800000u, OF | NX));
  // Subnormal results: e^-90 = 8.19e-40 (tiny and inexact), and beyond the smallest one 0.
  EXPECT_EQ(exp_on_the_tile(f32_bits(-90.0f)), P(exp_reference(-90.0f), UF | NX));
  EXPECT_LT(exp_reference(-90.0f), 0x00800000u);
  EXPECT_EQ(exp_on_the_tile(f32_bits(-110.0f)), P(0u, UF | NX));
  EXPECT_EQ(exp_on_the_tile(0xff7fffffu), P(0u, UF | NX));  // -FLT_MAX
}

// ipu.f32exp holds its context for 3 issue slots (poplibs' figure): the supervisor alone issues
// every 6 cycles, so csrr mcycle after it at 0 issues at 18, where after a one-slot instruction
// it is at 6.
TEST(XipuExp, TakesThreeIssueSlots) {
  CoreHarness h;
  h.load_words({f32exp(8, 2), csrrs(a3, 0xb00, zero), ecall()});
  h.x(a7) = 93;
  h.f(2) = f32_bits(0.5f);
  ASSERT_EQ(h.run(), StopReason::kExited) << h.core.fault().message;
  EXPECT_EQ(h.x(a3), 18u);
  EXPECT_EQ(h.f(8), exp_reference(0.5f));
}

// ---- AMP ----

constexpr uint32_t amp() { return R(0x0b, 4, 1, 0, 0, 0); }
constexpr uint32_t ampw(uint32_t rs1, uint32_t rs2) { return R(0x0b, 4, 0, 0, rs1, rs2); }

TEST(XipuAmp, IssueCostsAndResultOfOnePass) {
  // Supervisor alone: one issue every 6 cycles; ipu.ampw occupies 8 issue slots (48 cycles).
  //   csrw ampin @0, csrw ampout @6, csrwi ampcfg (f16, 4 phases) @12, ampw phase 0 @18,
  //   amp @66, @72, @78, @84 (the fourth writes the results), csrr mcycle @90, ecall @96.
  CoreHarness h;
  const uint32_t in = h.base() + 0x1000, out = in + 0x100, w = in + 0x200;
  h.load_words({csrrw(zero, 0x7c8, a0), csrrw(zero, 0x7c9, a1), I(0x73, 5, zero, 6, 0x7c7),
                ampw(a2, zero), amp(), amp(), amp(), amp(), csrrs(a3, 0xb00, zero), ecall()});
  h.x(a7) = 93;
  h.x(a0) = in;
  h.x(a1) = out;
  h.x(a2) = w;
  for (uint32_t i = 0; i < 32; i += 4) h.write_word(in + i, pack16(0x3c00, 0x3c00));  // inputs 1.0
  for (uint32_t i = 0; i < 128; i += 4) h.write_word(w + i, pack16(0x4000, 0x4000));  // weights 2.0
  ASSERT_EQ(h.run(), StopReason::kExited) << h.core.fault().message;
  EXPECT_EQ(h.x(a3), 90u);
  EXPECT_EQ(h.core.cycles(), 97u);
  // Only phase 0 has weights (the others are zero): each of the 16 results is 4 x 2 x 1 = 8.
  for (uint32_t r = 0; r < 16; ++r)
    EXPECT_EQ(h.read_word(out + 4 * r), f32_bits(8.0f)) << "row " << r;
  EXPECT_EQ(h.supervisor().amp.input, in + 32);
  EXPECT_EQ(h.supervisor().amp.output, out + 64);
}

TEST(XipuAmp, InputOutsideSramFaultsNamingTheInstruction) {
  Program p({amp()});  // ipu_ampin is 0 after reset
  ASSERT_EQ(p.h.run(), StopReason::kFault);
  EXPECT_EQ(p.h.core.fault().cause, iss::TrapCause::kLoadAccessFault);
  EXPECT_EQ(p.h.core.fault().tval, 0u);
  EXPECT_NE(p.h.core.fault().message.find("ipu.amp"), std::string::npos)
      << p.h.core.fault().message;
}

TEST(XipuAmp, WeightPhaseBeyondThreeIsIllegal) {
  Program p({ampw(a0, a1)});
  p.h.x(a0) = p.h.base() + 0x1000;
  p.h.x(a1) = 4;
  ASSERT_EQ(p.h.run(), StopReason::kFault);
  EXPECT_EQ(p.h.core.fault().cause, iss::TrapCause::kIllegalInstruction);
}

// ---- wide loads and stores (encodings from docs/xipu.md: custom-2, funct3 1-3) ----
constexpr uint32_t ld64(uint32_t rd, uint32_t rs1, int32_t off) { return I(0x5b, 1, rd, rs1, off); }
constexpr uint32_t ld128(uint32_t rd, uint32_t rs1, int32_t off) {
  return I(0x5b, 2, rd, rs1, off);
}
constexpr uint32_t st64(uint32_t rs2, uint32_t rs1, int32_t off) {
  return S(0x5b, 3, rs1, rs2, off);
}

TEST(XipuWideMemory, LoadsAndStoresMoveWholePairsAndQuadsAtAnOffset) {
  Program p({ld128(8, a0, 24), ld64(4, a0, -8), st64(8, a1, 16), st64(10, a1, 24), st64(4, a1, 0)});
  const uint32_t data = p.h.base() + 0x1000, out = p.h.base() + 0x2000;
  for (uint32_t i = 0; i < 16; ++i) p.h.write_word(data - 16 + 4 * i, 0x1000u + i);
  p.h.x(a0) = data;
  p.h.x(a1) = out;
  p.run();
  // ld128 at data + 24: words 10..13 of the block (from data - 16); ld64 at data - 8: words 2, 3.
  for (uint32_t i = 0; i < 4; ++i) EXPECT_EQ(p.h.f(8 + i), 0x100au + i) << "quad lane " << i;
  EXPECT_EQ(p.h.f(4), 0x1002u);
  EXPECT_EQ(p.h.f(5), 0x1003u);
  const uint32_t expected[] = {0x1002, 0x1003, 0, 0, 0x100a, 0x100b, 0x100c, 0x100d};
  for (uint32_t i = 0; i < 8; ++i) EXPECT_EQ(p.h.read_word(out + 4 * i), expected[i]) << i;
  // The bytes each moves, as the energy model counts them.
  EXPECT_EQ(iss::insn_cost("ipu.ld128").read_bytes, 16);
  EXPECT_EQ(iss::insn_cost("ipu.ld64").read_bytes, 8);
  EXPECT_EQ(iss::insn_cost("ipu.st64").written_bytes, 8);
}

TEST(XipuWideMemory, MisalignedOutsideSramAndOddRegistersTrap) {
  auto fault = [](uint32_t insn, uint32_t address) {
    Program p({insn});
    p.h.x(a0) = address;
    EXPECT_EQ(p.h.run(), StopReason::kFault);
    return p.h.core.fault();
  };
  const uint32_t base = CoreHarness().base();
  EXPECT_EQ(fault(ld64(8, a0, 4), base + 0x1000).cause, iss::TrapCause::kLoadMisaligned);
  EXPECT_EQ(fault(ld128(8, a0, 0), base + 0x1004).cause, iss::TrapCause::kLoadMisaligned);
  EXPECT_EQ(fault(st64(8, a0, 0), base + 0x1004).cause, iss::TrapCause::kStoreMisaligned);
  EXPECT_EQ(fault(ld128(8, a0, 0), base - 8).cause, iss::TrapCause::kLoadAccessFault);
  EXPECT_EQ(fault(st64(8, a0, 0), base - 8).tval, base - 8);
  EXPECT_EQ(fault(ld64(9, a0, 0), base + 0x1000).cause, iss::TrapCause::kIllegalInstruction);
  EXPECT_EQ(fault(ld128(10, a0, 0), base + 0x1000).cause, iss::TrapCause::kIllegalInstruction);
  EXPECT_EQ(fault(st64(9, a0, 0), base + 0x1000).cause, iss::TrapCause::kIllegalInstruction);
  EXPECT_EQ(iss::disassemble(ld128(8, a0, 24), 0), "ipu.ld128 fs0,24(a0)");
  EXPECT_EQ(iss::disassemble(st64(4, a1, -8), 0), "ipu.st64 ft4,-8(a1)");
}

// ---- half-word shuffles (custom-0, funct3 7; docs/xipu.md) ----
constexpr uint32_t sort_lo(uint32_t rd, uint32_t rs1, uint32_t rs2) {
  return R(0x0b, 7, 0, rd, rs1, rs2);
}
constexpr uint32_t sort_hi(uint32_t rd, uint32_t rs1, uint32_t rs2) {
  return R(0x0b, 7, 1, rd, rs1, rs2);
}

TEST(XipuSort, InterleavesTheHalvesOfTwoWords) {
  // Two f16 rows' words (k and k + 1, each two columns' values) become a word of each column,
  // as a matrix product's packing transposes them; then a register both read and written, and
  // x0 as the destination.
  Program p({sort_lo(a3, a0, a1), sort_hi(a4, a0, a1), sort_lo(a5, a5, a5), sort_hi(zero, a0, a1)});
  p.h.x(a0) = 0x1111aaaa;
  p.h.x(a1) = 0x2222bbbb;
  p.h.x(a5) = 0x3333cccc;
  p.run();
  EXPECT_EQ(p.h.x(a3), 0xbbbbaaaau);
  EXPECT_EQ(p.h.x(a4), 0x22221111u);
  EXPECT_EQ(p.h.x(a5), 0xcccccccc);
  EXPECT_EQ(p.h.x(zero), 0u);
  EXPECT_EQ(p.h.core.cycles(), 6u * 4 + 1);  // one slot each, the ecall at cycle 24
  EXPECT_EQ(iss::insn_cost("ipu.sort4x16lo").cls, iss::InsnClass::kInteger);
  EXPECT_EQ(iss::disassemble(sort_lo(a3, a0, a1), 0), "ipu.sort4x16lo a3,a0,a1");
  EXPECT_EQ(iss::disassemble(sort_hi(a4, a0, a1), 0), "ipu.sort4x16hi a4,a0,a1");
}

TEST(XipuDisassembly, PairsPrintTheirFirstRegister) {
  EXPECT_EQ(iss::disassemble(simd(F16, kAdd, 8, 2, 4), 0), "ipu.f16v4add fs0,ft2,ft4");
  EXPECT_EQ(iss::disassemble(fma_v(0, 8, 2, 4, 6), 0), "ipu.f32v2fma fs0,ft2,ft4,ft6");
  EXPECT_EQ(iss::disassemble(urand64(28), 0), "ipu.urand64 t3");
  EXPECT_EQ(iss::disassemble(R(0x0b, 4, 1, 0, 0, 0), 0), "ipu.amp");
}

}  // namespace
}  // namespace ipu::test
