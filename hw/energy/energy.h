// What a run cost in joules: its counts (RunReport's chip and gateway actions, IPU-Link bytes,
// its simulated time) priced with the machine's energy table (energy_config.h). Plain data, so
// the reports, the SDK's DeviceReport and sweeps share one pricing.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hw/common/run_report.h"
#include "hw/machine/machine_config.h"

namespace ipu::hw {

// One priced line: `count` of `unit` (instructions, MACs, bytes, arrivals, seconds) cost
// `joules`.
struct EnergyLine {
  std::string action;  // "tile.integer", "exchange.byte", "static", ...
  std::string unit;
  double count = 0;
  double joules = 0;
};

// A chip's, a gateway's or the IPU-Links' energy: dynamic lines, then the static line.
struct BlockEnergy {
  std::string block;  // "chip 0", "gateway 0", "ipulinks"
  std::vector<EnergyLine> lines;
  double dynamic_joules = 0, static_joules = 0;
  double joules() const { return dynamic_joules + static_joules; }
};

struct EnergyReport {
  double seconds = 0;  // simulated time: the run's cycles at the tile clock
  std::vector<BlockEnergy> chips, gateways;
  BlockEnergy links;
  double joules = 0;  // everything
  double chip_joules() const;
  double static_joules() const;  // every block's static line
  double watts() const { return seconds > 0 ? joules / seconds : 0; }
  // Average power of one chip (of all chips' energy over their number).
  double watts_per_chip() const;
};

// What one superstep did, as its energy counts it: its tiles' instructions since their previous
// superstep (their timelines' dynamic energy, tile_prices.h), its exchange and its barrier, and
// the static power of its chips over its span (the end of the previous superstep of its sync
// group to the end of its own exchange). The IPU-Links, PCIe and gateways are in the run's
// totals only.
struct SuperstepActions {
  double tile_pj = 0;
  uint64_t exchange_bytes = 0;
  uint64_t exchange_column_bytes = 0;  // each byte within a chip x the columns it crossed
  uint64_t arrivals = 0;               // tiles arriving at an internal barrier
  uint64_t external_chips = 0;         // chips taking part in an external barrier
  unsigned chips = 0;                  // chips whose static power its span draws
  double seconds = 0;                  // its span
};

struct SuperstepEnergy {
  double dynamic_joules = 0, static_joules = 0, seconds = 0;
  double joules() const { return dynamic_joules + static_joules; }
  double watts() const { return seconds > 0 ? joules() / seconds : 0; }
};

SuperstepEnergy price_superstep(const MachineConfig& machine, const SuperstepActions& step);

// Prices `run` with `machine.energy`; the static lines cover every tile of every chip (idle
// tiles leak too), each link, DIMM and gateway, for run.cycles at the tile clock.
EnergyReport price_energy(const MachineConfig& machine, const RunReport& run);

}  // namespace ipu::hw
