// A tile's dynamic energy per action, from the energy table: what price_energy charges a chip's
// tiles, and what each tile charges a compute segment of its timeline as it ends, so the
// supersteps' energies add up to the run's.
#pragma once

#include <array>
#include <cstddef>

#include "hw/energy/energy_config.h"
#include "iss/core.h"
#include "iss/insn_class.h"

namespace ipu::hw {

struct TilePrices {
  // An instruction of each class, in pJ: an ipu.amp's its multiply-accumulates (64 in f16
  // mode, 16 in f32 mode).
  std::array<double, iss::kInsnClasses> instruction_pj{};
  double sram_read_pj_per_byte = 0, sram_write_pj_per_byte = 0;

  double pj(const iss::ActionCounts& a) const {
    double pj = sram_read_pj_per_byte * static_cast<double>(a.sram_read_bytes) +
                sram_write_pj_per_byte * static_cast<double>(a.sram_written_bytes);
    for (size_t i = 0; i < iss::kInsnClasses; ++i)
      pj += instruction_pj[i] * static_cast<double>(a.instructions[i]);
    return pj;
  }
};

inline TilePrices tile_prices(const EnergyConfig& e) {
  using iss::InsnClass;
  TilePrices p;
  auto set = [&p](InsnClass cls, double pj) { p.instruction_pj[static_cast<size_t>(cls)] = pj; };
  set(InsnClass::kInteger, e.integer_pj);
  set(InsnClass::kBranch, e.branch_pj);
  set(InsnClass::kLoad, e.load_pj);
  set(InsnClass::kStore, e.store_pj);
  set(InsnClass::kFpu, e.fpu_pj);
  set(InsnClass::kSimd, e.simd_pj);
  set(InsnClass::kControl, e.control_pj);
  set(InsnClass::kAmpF16, iss::kAmpF16Macs * e.amp_f16_mac_pj);
  set(InsnClass::kAmpF32, iss::kAmpF32Macs * e.amp_f32_mac_pj);
  set(InsnClass::kAmpWeights, e.amp_weights_pj);
  p.sram_read_pj_per_byte = e.sram_read_pj_per_byte;
  p.sram_write_pj_per_byte = e.sram_write_pj_per_byte;
  return p;
}

}  // namespace ipu::hw
