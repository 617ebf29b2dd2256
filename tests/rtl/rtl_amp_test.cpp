// The AMP lane in Verilog (rtl/amp/ipu_amp_lane.v with ipu_fma32.v), verilated, against the
// C++ AMP model the fast platform uses (iss::AmpUnit): each row's accumulator after one issue's
// MACs equal bit for bit (any NaN is the canonical NaN the AMP writes), in the f16 mode (4 f16
// terms), the f32 mode (2 f32 terms) and the write-back add (one term, w = 1.0), over random and
// directed corner inputs streamed one row per clock, each result arriving exactly
// AmpUnit::kLaneLatency clocks after its row. The first mismatch is reported with its inputs.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <deque>
#include <memory>
#include <random>
#include <vector>

#include "Vipu_amp_lane.h"
#include "iss/amp.h"
#include "iss/fpu.h"
#include "tests/support/stimulus_budget.h"
#include "verilated.h"

namespace ipu::test {
namespace {

using iss::AmpUnit;
using iss::fpu::bits_of;
using iss::fpu::float_of;

struct Row {
  bool half;
  unsigned terms;
  std::array<uint32_t, 4> w, x;
  uint32_t acc;
};

float operand(bool half, uint32_t v) {
  return half ? static_cast<float>(iss::fpu::f16_value(v & 0xffff)) : float_of(v);
}

// The model's result for one row: AmpUnit::multiply_accumulate on row 0, or the write-back add.
uint32_t model(const Row& r) {
  if (r.terms == 1)
    return bits_of(operand(r.half, r.x[0]) * operand(r.half, r.w[0]) + float_of(r.acc));
  AmpUnit amp;
  amp.config = r.half ? 0 : 1;
  EXPECT_EQ(r.terms, amp.inputs());
  for (unsigned j = 0; j < r.terms; ++j) amp.weights[0][j] = operand(r.half, r.w[j]);
  amp.acc[0] = float_of(r.acc);
  std::array<float, AmpUnit::kInputsF16> x{};
  for (unsigned j = 0; j < r.terms; ++j) x[j] = operand(r.half, r.x[j]);
  amp.multiply_accumulate(x.data());
  return bits_of(amp.acc[0]);
}

void expect_equal_to_model(const std::vector<Row>& rows) {
  constexpr size_t kLatency = AmpUnit::kLaneLatency;
  VerilatedContext context;
  auto rtl = std::make_unique<Vipu_amp_lane>(&context);
  std::deque<Row> in_flight;
  for (size_t i = 0; i < rows.size() + kLatency; ++i) {
    const bool feeding = i < rows.size();
    if (feeding) {
      const Row& r = rows[i];
      rtl->half = r.half;
      rtl->terms = r.terms;
      for (unsigned j = 0; j < 4; ++j) {
        rtl->w[j] = r.w[j];
        rtl->x[j] = r.x[j];
      }
      rtl->acc_in = r.acc;
      in_flight.push_back(r);
    }
    rtl->in_valid = feeding;
    rtl->clk = 0;
    rtl->eval();
    rtl->clk = 1;
    rtl->eval();
    if (i + 1 < kLatency || i + 1 >= rows.size() + kLatency) {
      ASSERT_FALSE(rtl->out_valid) << "output valid without an input, clock " << i;
      continue;
    }
    ASSERT_TRUE(rtl->out_valid) << "no output " << kLatency << " clocks after row "
                                << i + 1 - kLatency;
    const Row r = in_flight.front();
    in_flight.pop_front();
    uint32_t expected = model(r);
    if (std::isnan(float_of(expected))) expected = iss::fpu::kCanonicalNaN;
    ASSERT_EQ(rtl->acc_out, expected)
        << std::hex << "first mismatch: " << (r.half ? "f16" : "f32") << " terms " << r.terms
        << " w {0x" << r.w[0] << " 0x" << r.w[1] << " 0x" << r.w[2] << " 0x" << r.w[3] << "} x {0x"
        << r.x[0] << " 0x" << r.x[1] << " 0x" << r.x[2] << " 0x" << r.x[3] << "} acc 0x" << r.acc;
  }
}

Row f16_row(const std::array<uint32_t, 4>& w, const std::array<uint32_t, 4>& x, uint32_t acc) {
  return {true, AmpUnit::kInputsF16, w, x, acc};
}
Row f32_row(uint32_t w0, uint32_t w1, uint32_t x0, uint32_t x1, uint32_t acc) {
  return {false, AmpUnit::kInputsF32, {w0, w1, 0, 0}, {x0, x1, 0, 0}, acc};
}
Row write_back(uint32_t out, uint32_t acc) {
  return {false, 1, {0x3f800000, 0, 0, 0}, {out, 0, 0, 0}, acc};
}

TEST(RtlAmpLane, EqualsTheCppModelOnRandomInputs) {
  std::mt19937 rng(20261122);
  auto u32 = [&rng] { return static_cast<uint32_t>(rng()); };
  // Operands with exponents near each other (cancellation, ties, carries), or anywhere.
  std::uniform_int_distribution<uint32_t> f16_exponent(10, 20), f32_exponent(110, 140);
  auto near16 = [&] { return (u32() & 0x83ff) | (f16_exponent(rng) << 10); };
  auto near32 = [&] { return (u32() & 0x807fffff) | (f32_exponent(rng) << 23); };
  std::vector<Row> rows;
  while (rows.size() < test::stimulus_budget(1'200'000)) {
    const size_t k = rows.size();
    const bool near = k % 2 == 0;
    switch (k % 5) {
      case 0:
      case 1:
      case 2:
        rows.push_back(
            near ? f16_row({near16(), near16(), near16(), near16()},
                           {near16(), near16(), near16(), near16()}, near32())
                 : f16_row({u32(), u32(), u32(), u32()}, {u32(), u32(), u32(), u32()}, u32()));
        break;
      case 3:
        rows.push_back(near ? f32_row(near32(), near32(), near32(), near32(), near32())
                            : f32_row(u32(), u32(), u32(), u32(), u32()));
        break;
      default: rows.push_back(near ? write_back(near32(), near32()) : write_back(u32(), u32()));
    }
  }
  expect_equal_to_model(rows);
}

TEST(RtlAmpLane, EqualsTheCppModelOnCorners) {
  // f16 specials and boundaries, against f32 accumulators at the specials, at the boundaries
  // of the normal range, and at values whose last place the products land on (ties).
  const std::vector<uint32_t> halves = {0x0000, 0x8000, 0x0001, 0x03ff, 0x0400, 0x3c00,
                                        0xbc00, 0x3c01, 0x7bff, 0xfbff, 0x7c00, 0xfc00,
                                        0x7e00, 0x7c01, 0x1400, 0x2400, 0x3800};
  const std::vector<uint32_t> singles = {
      0x00000000, 0x80000000, 0x00000001, 0x807fffff, 0x00800000, 0x3f800000, 0xbf800000,
      0x3f800001, 0x3f800003, 0xbf800001, 0x7f7fffff, 0xff7fffff, 0x7f800000, 0xff800000,
      0x7fc00000, 0x7f800001, 0x33800000, 0x34000000, 0x4b800000, 0x477fe000, 0x0c800000};
  std::vector<Row> rows;
  for (uint32_t w : halves)
    for (uint32_t x : halves)
      for (uint32_t acc : singles) {
        rows.push_back(f16_row({w, 0, 0, 0}, {x, 0, 0, 0}, acc));
        rows.push_back(f16_row({w, w, x, x}, {x, w, w, x}, acc));
      }
  for (uint32_t a : singles)
    for (uint32_t b : singles)
      for (uint32_t acc : singles) {
        rows.push_back(f32_row(a, b, b, a, acc));
        rows.push_back(f32_row(a, 0, b, 0, acc));
        rows.push_back(write_back(a, acc));
      }
  // Exact ties: 1 + k ulp plus 2^-24 (half an ulp of 1.0) as a product of 2^-12 * 2^-12.
  for (uint32_t k = 0; k < 8; ++k)
    for (uint32_t sign : {0u, 0x8000u}) {
      rows.push_back(f16_row({0x1400 | sign, 0, 0, 0}, {0x1400, 0, 0, 0}, 0x3f800000 + k));
      rows.push_back(f32_row(0x39800000 | sign << 16, 0, 0x39800000, 0, 0x3f800000 + k));
    }
  expect_equal_to_model(rows);
}

}  // namespace
}  // namespace ipu::test
