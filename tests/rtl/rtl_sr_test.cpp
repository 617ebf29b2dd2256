// The f32 -> f16 converter in Verilog (rtl/sr/ipu_f32_to_f16.v), verilated, against the C++
// model the fast platform uses (iss::fpu::f32_to_f16): results and flags equal for every
// rounding mode over random and directed corner inputs, streamed one per clock, each output
// arriving exactly two clocks after its input. The first mismatch is reported with its inputs.
#include <gtest/gtest.h>

#include <array>
#include <deque>
#include <memory>
#include <random>
#include <vector>

#include "Vipu_f32_to_f16.h"
#include "iss/fpu.h"
#include "verilated.h"

namespace ipu::test {
namespace {

namespace fpu = iss::fpu;

struct Conversion {
  uint32_t a, rm, random;
};

constexpr int kLatency = 2;  // clocks from input to output
constexpr std::array<uint32_t, 6> kModes = {fpu::kRne, fpu::kRtz, fpu::kRdn,
                                            fpu::kRup, fpu::kRmm, fpu::kStochastic};

// Streams `inputs` through the pipeline one per clock and compares each output with the model.
void expect_equal_to_model(const std::vector<Conversion>& inputs) {
  VerilatedContext context;
  auto rtl = std::make_unique<Vipu_f32_to_f16>(&context);
  std::deque<Conversion> in_flight;
  for (size_t i = 0; i < inputs.size() + kLatency; ++i) {
    const bool feeding = i < inputs.size();
    if (feeding) {
      rtl->a = inputs[i].a;
      rtl->rm = inputs[i].rm;
      rtl->random = inputs[i].random;
      in_flight.push_back(inputs[i]);
    }
    rtl->in_valid = feeding;
    rtl->clk = 0;
    rtl->eval();
    rtl->clk = 1;
    rtl->eval();
    if (i + 1 < kLatency || i + 1 >= inputs.size() + kLatency) {
      ASSERT_FALSE(rtl->out_valid) << "output valid without an input, clock " << i;
      continue;
    }
    ASSERT_TRUE(rtl->out_valid) << "no output " << kLatency << " clocks after input "
                                << i + 1 - kLatency;
    const Conversion c = in_flight.front();
    in_flight.pop_front();
    uint32_t flags = 0;
    const uint32_t expected = fpu::f32_to_f16(c.a, c.rm, flags, c.random);
    ASSERT_EQ(rtl->y, expected) << std::hex << "first mismatch: a 0x" << c.a << " rm " << c.rm
                                << " random 0x" << c.random;
    ASSERT_EQ(rtl->flags, flags) << std::hex << "first flags mismatch: a 0x" << c.a << " rm "
                                 << c.rm << " random 0x" << c.random;
  }
}

TEST(RtlF32ToF16, EqualsTheCppModelOnRandomInputs) {
  std::mt19937 rng(20261122);
  std::vector<Conversion> inputs;
  // Half uniform bit patterns; half with exponents near the f16 range (2^-30 .. 2^20), where
  // subnormals, tininess, carries and overflow happen.
  std::uniform_int_distribution<uint32_t> near_exponent(127 - 30, 127 + 20);
  while (inputs.size() < 1'200'000) {
    uint32_t a = static_cast<uint32_t>(rng());
    if (inputs.size() % 2) a = (a & 0x807fffffu) | (near_exponent(rng) << 23);
    inputs.push_back({a, kModes[inputs.size() % kModes.size()], static_cast<uint32_t>(rng())});
  }
  expect_equal_to_model(inputs);
}

TEST(RtlF32ToF16, EqualsTheCppModelOnCorners) {
  // Specials, the f16 boundaries and their neighbours, ties and near-ties, with random bits
  // 0, 1, 2^31 and 2^32-1 (never, rarely, half and almost always rounding up).
  std::vector<uint32_t> values = {0x00000000, 0x00000001, 0x007fffff, 0x00800000, 0x7f7fffff,
                                  0x7f800000, 0x7f800001, 0x7fbfffff, 0x7fc00000, 0x7fffffff};
  for (uint32_t f16_boundary : {0x33000000u, 0x33800000u, 0x38800000u, 0x387fc000u, 0x477fe000u,
                                0x477ff000u, 0x47800000u, 0x3f800000u}) {
    for (int delta = -2; delta <= 2; ++delta) values.push_back(f16_boundary + delta);
    for (uint32_t low = 0; low < (1u << 13); low += 0x400) values.push_back(f16_boundary + low);
    values.push_back((f16_boundary & ~0x1fffu) | 0x1000u);  // a tie at the normal alignment
    values.push_back((f16_boundary & ~0x1fffu) | 0x3000u);
  }
  std::vector<Conversion> inputs;
  for (uint32_t v : values)
    for (uint32_t sign : {0u, 0x80000000u})
      for (uint32_t rm : kModes)
        for (uint32_t random : {0u, 1u, 0x80000000u, 0xffffffffu})
          inputs.push_back({v | sign, rm, random});
  expect_equal_to_model(inputs);
}

TEST(RtlF32ToF16, EqualsTheCppModelExhaustivelyAcrossTheSubnormalBinades) {
  // Every f32 exponent from 2^-26 to 2^-13 with a stride through the mantissa, each mode.
  std::vector<Conversion> inputs;
  std::mt19937 rng(7);
  for (uint32_t exponent = 127 - 26; exponent <= 127 - 13; ++exponent)
    for (uint32_t mantissa = 0; mantissa < (1u << 23); mantissa += 97)
      inputs.push_back({(exponent << 23) | mantissa, kModes[mantissa % kModes.size()],
                        static_cast<uint32_t>(rng())});
  expect_equal_to_model(inputs);
}

}  // namespace
}  // namespace ipu::test
