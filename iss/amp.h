// The accumulating matrix product (AMP) unit of one context (docs/xipu.md).
//
// Weights stay in the unit (up to 4 phases of a 16x4 f16 block, or of an 8x2 f32 block); one
// `ipu.amp` streams an 8-byte input vector (4 f16 or 2 f32) from memory and multiply-accumulates
// it into the 16 (or 8) f32 accumulators against the current phase's weights: 64 f16 MACs or
// 16 f32 MACs per issue. After the last phase it writes the accumulators to memory and clears
// them. Six workers issuing `ipu.amp` in every one of their slots give the tile's peak of
// 64 f16 MAC/cycle (16 f32 MAC/cycle), and no more.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>

namespace ipu::iss {

struct AmpUnit {
  static constexpr unsigned kPhases = 4;
  static constexpr unsigned kRowsF16 = 16, kInputsF16 = 4;  // 64 MACs per issue
  static constexpr unsigned kRowsF32 = 8, kInputsF32 = 2;   // 16 MACs per issue
  static constexpr unsigned kInputBytes = 8;
  // A row's MACs of one issue run through a 4-stage lane, one MAC a stage (rtl/amp): the
  // results are ready 4 cycles after the issue, before the context's next issue slot 6 cycles
  // later, so the latency is hidden from programs (docs/tile.md).
  static constexpr unsigned kLaneLatency = 4;
  static constexpr unsigned kWeightBytesF16 = kRowsF16 * kInputsF16 * 2;  // 128 per phase
  static constexpr unsigned kWeightBytesF32 = kRowsF32 * kInputsF32 * 4;  // 64 per phase

  // CSR ipu_ampcfg: bit 0 mode (0 f16 inputs, 1 f32 inputs), bits 2:1 phases - 1,
  // bit 3 accumulate into the output (out += acc) instead of overwriting it.
  uint32_t config = 0;
  uint32_t input = 0;   // CSR ipu_ampin: address of the next input vector
  uint32_t output = 0;  // CSR ipu_ampout: address where the next result block is written
  unsigned phase = 0;
  std::array<std::array<float, kRowsF16 * kInputsF16>, kPhases> weights{};  // [phase][row*inputs+j]
  std::array<float, kRowsF16> acc{};

  bool f32_mode() const { return (config & 1) != 0; }
  unsigned phases() const { return ((config >> 1) & 3) + 1; }
  bool accumulate_output() const { return (config & 8) != 0; }
  unsigned rows() const { return f32_mode() ? kRowsF32 : kRowsF16; }
  unsigned inputs() const { return f32_mode() ? kInputsF32 : kInputsF16; }
  unsigned weight_bytes() const { return f32_mode() ? kWeightBytesF32 : kWeightBytesF16; }
  unsigned output_bytes() const { return rows() * 4; }

  // acc[r] = fma(w[r][j], x[j], acc[r]) for j = 0, 1, ... in order: one f32 rounding per MAC.
  void multiply_accumulate(const float* x) {
    const auto& w = weights[phase];
    const unsigned n = inputs();
    for (unsigned r = 0; r < rows(); ++r) {
      float a = acc[r];
      for (unsigned j = 0; j < n; ++j) a = std::fma(w[r * n + j], x[j], a);
      acc[r] = a;
    }
  }
};

}  // namespace ipu::iss
