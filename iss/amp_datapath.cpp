#include "amp_datapath.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "fpu.h"

namespace ipu::iss {
namespace {

using fpu::bits_of;
using fpu::float_of;

// Each row's MACs of one ipu.amp on the AMP lane RTL (datapaths.h): the same arithmetic as
// AmpUnit::multiply_accumulate, operands as the bits the unit was given.
void amp_lanes(AmpUnit& amp, const std::array<uint32_t, AmpUnit::kInputsF16>& x,
               AmpDatapath& lanes) {
  std::vector<AmpLaneRow> rows(amp.rows());
  const unsigned n = amp.inputs();
  for (unsigned r = 0; r < amp.rows(); ++r) {
    AmpLaneRow& row = rows[r];
    row.half = !amp.f32_mode();
    row.terms = n;
    for (unsigned j = 0; j < n; ++j) {
      const uint32_t w = bits_of(amp.weights[amp.phase][r * n + j]);
      uint32_t flags = 0;  // f16 weights are f16 values: the conversion back is exact
      row.w[j] = row.half ? fpu::f32_to_f16(w, fpu::kRne, flags, 0) : w;
      row.x[j] = x[j];
    }
    row.acc = bits_of(amp.acc[r]);
  }
  lanes.run(rows);
  for (unsigned r = 0; r < amp.rows(); ++r) amp.acc[r] = float_of(rows[r].acc);
}

}  // namespace

// Loads one phase of weights (row-major, f16 or f32 per the mode) as f32 values.
void load_amp_weights(AmpUnit& amp, unsigned phase, const uint8_t* src) {
  const unsigned n = amp.rows() * amp.inputs();
  for (unsigned i = 0; i < n; ++i) {
    if (amp.f32_mode()) {
      uint32_t w;
      std::memcpy(&w, src + 4 * i, 4);
      amp.weights[phase][i] = float_of(w);
    } else {
      uint16_t h;
      std::memcpy(&h, src + 2 * i, 2);
      amp.weights[phase][i] = static_cast<float>(fpu::f16_value(h));
    }
  }
}

// One ipu.amp: multiply-accumulate the input vector at `in`; after the last phase write the
// results at `out` (NaN results canonical, as every tile FP result) and start over. With `lanes`
// the arithmetic runs on the AMP lane RTL.
void amp_step(AmpUnit& amp, const uint8_t* in, uint8_t* out, AmpDatapath* lanes) {
  std::array<uint32_t, AmpUnit::kInputsF16> raw{};
  std::array<float, AmpUnit::kInputsF16> x{};
  for (unsigned j = 0; j < amp.inputs(); ++j) {
    if (amp.f32_mode()) {
      std::memcpy(&raw[j], in + 4 * j, 4);
      x[j] = float_of(raw[j]);
    } else {
      uint16_t h;
      std::memcpy(&h, in + 2 * j, 2);
      raw[j] = h;
      x[j] = static_cast<float>(fpu::f16_value(h));
    }
  }
  if (lanes != nullptr)
    amp_lanes(amp, raw, *lanes);
  else
    amp.multiply_accumulate(x.data());
  amp.input += AmpUnit::kInputBytes;
  if (out == nullptr) {
    ++amp.phase;
    return;
  }
  std::vector<AmpLaneRow> write_back;  // out += acc on the lanes: one term, 1.0 * out + acc
  for (unsigned r = 0; r < amp.rows(); ++r) {
    float result = amp.acc[r];
    if (amp.accumulate_output()) {
      uint32_t old;
      std::memcpy(&old, out + 4 * r, 4);
      if (lanes != nullptr)
        write_back.push_back({false, 1, {bits_of(1.0f), 0, 0, 0}, {old, 0, 0, 0}, bits_of(result)});
      else
        result = float_of(old) + result;
    }
    amp.acc[r] = result;
  }
  if (!write_back.empty()) {
    lanes->run(write_back);
    for (unsigned r = 0; r < amp.rows(); ++r) amp.acc[r] = float_of(write_back[r].acc);
  }
  for (unsigned r = 0; r < amp.rows(); ++r) {
    uint32_t bits = bits_of(amp.acc[r]);
    if (std::isnan(amp.acc[r])) bits = fpu::kCanonicalNaN;
    std::memcpy(out + 4 * r, &bits, 4);
  }
  amp.output += amp.output_bytes();
  amp.acc.fill(0.0f);
  amp.phase = 0;
}

}  // namespace ipu::iss
