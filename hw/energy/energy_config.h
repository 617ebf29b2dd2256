// The energy model's table: an energy per action for each block's actions and a static power
// for what draws it whether busy or not, as architecture tools model energy (Accelergy, McPAT):
// energy = sum over actions of count x energy per action, plus static power x time.
//
// No public figure gives an energy per action for the IPU, so every default is an assumption,
// calibrated to the figures that are public (docs/energy.md gives each source): a GC200 at
// 1.325 GHz is rated at 300 W, and bench/power checks that a full chip running the AMP at peak
// draws that within 10 %; an IPU-Machine M2000 is rated at 1.5 kW. Energies per action do not
// depend on the clock (Bow's wafer-on-wafer power delivery runs it 1.4x faster at the same
// energy per operation), and static power is in watts at any clock, so a faster clock spends
// less static energy on the same work.
#pragma once

#include <stdexcept>

#include "base/parameters.h"

namespace ipu::hw {

struct EnergyConfig {
  // A tile's retired instructions by class, in pJ each (iss/isa.h InsnClass).
  double integer_pj = 4;
  double branch_pj = 5;
  double load_pj = 5;  // the access; its bytes are priced below
  double store_pj = 5;
  double fpu_pj = 9;
  double simd_pj = 14;
  double control_pj = 5;
  double amp_f16_mac_pj = 1.8;  // per multiply-accumulate: 64 an ipu.amp in f16 mode
  double amp_f32_mac_pj = 7.2;  // 16 an ipu.amp in f32 mode: the same energy per issue
  double amp_weights_pj = 40;   // an ipu.ampw: one phase of weights into the unit
  double sram_read_pj_per_byte = 0.8;
  double sram_write_pj_per_byte = 1.0;
  // Leakage and clock of one tile with its share of the exchange fabric, busy or not.
  double tile_static_w = 0.035;
  double chip_static_w = 10;        // the rest of a chip: PLLs, sync and I/O
  double exchange_pj_per_byte = 7;  // a byte delivered to a tile over the exchange
  // and for each exchange column between its sender and receiver on the chip: an all-to-all
  // on a Mk2's 23 columns of 64 tiles crosses 7.7 on average, 7.8 pJ a byte in all
  double exchange_pj_per_byte_column = 0.1;
  double sync_arrival_pj = 2;       // a tile's arrival at an internal barrier
  double external_sync_pj = 200;    // a chip's part in an external barrier
  double ipulink_pj_per_byte = 40;  // a byte over one IPU-Link hop (SerDes, ~5 pJ/bit)
  double ipulink_idle_w = 0.5;      // a link's SerDes kept up, both ends
  double pcie_pj_per_byte = 40;     // a byte over a chip's PCIe endpoint or gateway link
  double ddr_pj_per_byte = 120;     // a streaming-memory byte read or written (DDR4 + I/O)
  double dimm_background_w = 4;     // a DDR4 RDIMM refreshing and idle
  double roce_pj_per_byte = 100;    // a byte through a gateway's 100 GbE host port
  double gateway_static_w = 250;    // a gateway with its board: SoC, fans, conversion
};

template <typename C, typename Visitor, base::if_config_t<C, EnergyConfig> = 0>
void visit_parameters(C& e, Visitor&& v) {
  constexpr double kMax = 1e6;
  v(base::Parameter{"energy.tile.integer", "pJ", "an integer instruction (an assumption)", 0, kMax},
    e.integer_pj);
  v(base::Parameter{"energy.tile.branch", "pJ", "a jump or branch (an assumption)", 0, kMax},
    e.branch_pj);
  v(base::Parameter{"energy.tile.load", "pJ", "a load, besides its bytes (an assumption)", 0, kMax},
    e.load_pj);
  v(base::Parameter{"energy.tile.store", "pJ", "a store, besides its bytes (an assumption)", 0,
                    kMax},
    e.store_pj);
  v(base::Parameter{"energy.tile.fpu", "pJ", "a scalar f32 instruction (an assumption)", 0, kMax},
    e.fpu_pj);
  v(base::Parameter{"energy.tile.simd", "pJ",
                    "an f16x4 or f32x2 vector instruction (an assumption)", 0, kMax},
    e.simd_pj);
  v(base::Parameter{"energy.tile.control", "pJ",
                    "a CSR, worker-control, sync or exchange instruction (an assumption)", 0, kMax},
    e.control_pj);
  v(
      base::Parameter{
          "energy.tile.amp-f16-mac", "pJ",
          "an f16 multiply-accumulate of the AMP (calibrated: a chip at AMP peak draws its "
          "rated 300 W)",
          0, kMax},
      e.amp_f16_mac_pj);
  v(base::Parameter{"energy.tile.amp-f32-mac", "pJ", "an f32 multiply-accumulate of the AMP", 0,
                    kMax},
    e.amp_f32_mac_pj);
  v(base::Parameter{"energy.tile.amp-weights", "pJ",
                    "an ipu.ampw (one phase of weights), besides its bytes (an assumption)", 0,
                    kMax},
    e.amp_weights_pj);
  v(base::Parameter{"energy.tile.sram-read", "pJ/B", "a byte read from tile SRAM (an assumption)",
                    0, kMax},
    e.sram_read_pj_per_byte);
  v(base::Parameter{"energy.tile.sram-write", "pJ/B", "a byte written to tile SRAM (an assumption)",
                    0, kMax},
    e.sram_write_pj_per_byte);
  v(
      base::Parameter{
          "energy.tile.static", "W",
          "static power of one tile and its share of the exchange fabric, busy or not (an "
          "assumption)",
          0, 1e3},
      e.tile_static_w);
  v(base::Parameter{"energy.chip.static", "W",
                    "static power of a chip beside its tiles: PLLs, sync, I/O (an assumption)", 0,
                    1e4},
    e.chip_static_w);
  v(base::Parameter{"energy.exchange.byte", "pJ/B",
                    "a byte delivered over the exchange (an assumption)", 0, kMax},
    e.exchange_pj_per_byte);
  v(base::Parameter{"energy.exchange.byte-column", "pJ/B",
                    "a byte over the exchange, for each column between its sender and receiver "
                    "(an assumption)",
                    0, kMax},
    e.exchange_pj_per_byte_column);
  v(base::Parameter{"energy.sync.arrival", "pJ", "a tile's arrival at an internal barrier", 0,
                    kMax},
    e.sync_arrival_pj);
  v(base::Parameter{"energy.sync.external", "pJ", "a chip's part in an external barrier", 0, kMax},
    e.external_sync_pj);
  v(base::Parameter{"energy.ipulink.byte", "pJ/B", "a byte over one IPU-Link hop (an assumption)",
                    0, kMax},
    e.ipulink_pj_per_byte);
  v(base::Parameter{"energy.ipulink.idle", "W", "static power of one IPU-Link (an assumption)", 0,
                    1e3},
    e.ipulink_idle_w);
  v(base::Parameter{"energy.pcie.byte", "pJ/B",
                    "a byte over a chip's PCIe endpoint or its gateway link (an assumption)", 0,
                    kMax},
    e.pcie_pj_per_byte);
  v(base::Parameter{"energy.gateway.ddr-byte", "pJ/B",
                    "a streaming-memory byte read or written (an assumption)", 0, kMax},
    e.ddr_pj_per_byte);
  v(base::Parameter{"energy.gateway.dimm-background", "W",
                    "static power of one DIMM (an assumption)", 0, 1e3},
    e.dimm_background_w);
  v(base::Parameter{"energy.gateway.roce-byte", "pJ/B",
                    "a byte through a gateway's RoCE host port (an assumption)", 0, kMax},
    e.roce_pj_per_byte);
  v(
      base::Parameter{
          "energy.gateway.static", "W",
          "static power of a gateway and its board (calibrated: an M2000 at AMP peak draws "
          "its rated 1.5 kW)",
          0, 1e5},
      e.gateway_static_w);
}

// Throws std::invalid_argument naming the parameter.
inline void validate(const EnergyConfig& e) { base::check_ranges(e); }

}  // namespace ipu::hw
