#include "hw/energy/energy.h"

#include <fmt/format.h>

#include "hw/energy/tile_prices.h"

namespace ipu::hw {

namespace {

constexpr double kPico = 1e-12;

void add(BlockEnergy& b, std::string action, std::string unit, double count, double pj) {
  const double joules = count * pj * kPico;
  b.dynamic_joules += joules;
  b.lines.push_back({std::move(action), std::move(unit), count, joules});
}

void add_static(BlockEnergy& b, double seconds, double watts) {
  b.static_joules += seconds * watts;
  b.lines.push_back({"static", "s", seconds, seconds * watts});
}

}  // namespace

double EnergyReport::chip_joules() const {
  double j = 0;
  for (const BlockEnergy& c : chips) j += c.joules();
  return j;
}

double EnergyReport::static_joules() const {
  double j = links.static_joules;
  for (const BlockEnergy& c : chips) j += c.static_joules;
  for (const BlockEnergy& g : gateways) j += g.static_joules;
  return j;
}

double EnergyReport::watts_per_chip() const {
  return chips.empty() || seconds <= 0 ? 0 : chip_joules() / seconds / chips.size();
}

SuperstepEnergy price_superstep(const MachineConfig& machine, const SuperstepActions& step) {
  const EnergyConfig& e = machine.energy;
  SuperstepEnergy r;
  r.seconds = step.seconds;
  r.dynamic_joules =
      kPico * (step.tile_pj + e.exchange_pj_per_byte * step.exchange_bytes +
               e.exchange_pj_per_byte_column * step.exchange_column_bytes +
               e.sync_arrival_pj * step.arrivals + e.external_sync_pj * step.external_chips);
  r.static_joules =
      step.seconds * step.chips * (machine.chip.tiles * e.tile_static_w + e.chip_static_w);
  return r;
}

EnergyReport price_energy(const MachineConfig& machine, const RunReport& run) {
  const EnergyConfig& e = machine.energy;
  EnergyReport r;
  r.seconds = run.clock_hz > 0 ? static_cast<double>(run.cycles) / run.clock_hz : 0;
  const TilePrices tile = tile_prices(e);
  for (size_t chip = 0; chip < run.chip_actions.size(); ++chip) {
    const ChipActions& a = run.chip_actions[chip];
    BlockEnergy& b = r.chips.emplace_back();
    b.block = fmt::format("chip {}", chip);
    // The tile's lines at the prices its timeline charges (tile_prices.h).
    auto line = [&](const char* action, const char* unit, iss::InsnClass cls, double per) {
      const auto i = static_cast<size_t>(cls);
      const auto n = static_cast<double>(a.instructions[i]);
      add(b, action, unit, n * per, tile.instruction_pj[i] / per);
    };
    line("tile.integer", "instructions", iss::InsnClass::kInteger, 1);
    line("tile.branch", "instructions", iss::InsnClass::kBranch, 1);
    line("tile.load", "instructions", iss::InsnClass::kLoad, 1);
    line("tile.store", "instructions", iss::InsnClass::kStore, 1);
    line("tile.fpu", "instructions", iss::InsnClass::kFpu, 1);
    line("tile.simd", "instructions", iss::InsnClass::kSimd, 1);
    line("tile.control", "instructions", iss::InsnClass::kControl, 1);
    line("tile.amp-f16-mac", "MACs", iss::InsnClass::kAmpF16, iss::kAmpF16Macs);
    line("tile.amp-f32-mac", "MACs", iss::InsnClass::kAmpF32, iss::kAmpF32Macs);
    line("tile.amp-weights", "instructions", iss::InsnClass::kAmpWeights, 1);
    add(b, "tile.sram-read", "bytes", static_cast<double>(a.sram_read_bytes),
        tile.sram_read_pj_per_byte);
    add(b, "tile.sram-write", "bytes", static_cast<double>(a.sram_written_bytes),
        tile.sram_write_pj_per_byte);
    add(b, "exchange.byte", "bytes", static_cast<double>(a.exchange_bytes), e.exchange_pj_per_byte);
    add(b, "exchange.distance", "byte-columns", static_cast<double>(a.exchange_column_bytes),
        e.exchange_pj_per_byte_column);
    add(b, "sync.arrival", "arrivals", static_cast<double>(a.sync_arrivals), e.sync_arrival_pj);
    add(b, "sync.external", "barriers", static_cast<double>(a.external_syncs), e.external_sync_pj);
    add(b, "pcie.byte", "bytes", static_cast<double>(a.pcie_bytes), e.pcie_pj_per_byte);
    add_static(b, r.seconds, machine.chip.tiles * e.tile_static_w + e.chip_static_w);
  }
  for (size_t g = 0; g < run.gateway_actions.size(); ++g) {
    const GatewayActions& a = run.gateway_actions[g];
    BlockEnergy& b = r.gateways.emplace_back();
    b.block = fmt::format("gateway {}", g);
    add(b, "gateway.ddr-byte", "bytes", static_cast<double>(a.ddr_bytes), e.ddr_pj_per_byte);
    add(b, "pcie.byte", "bytes", static_cast<double>(a.chip_link_bytes), e.pcie_pj_per_byte);
    add(b, "gateway.roce-byte", "bytes", static_cast<double>(a.host_port_bytes),
        e.roce_pj_per_byte);
    add_static(b, r.seconds, machine.gateway.dimms * e.dimm_background_w + e.gateway_static_w);
  }
  r.links.block = "ipulinks";
  if (run.ipulinks > 0) {
    add(r.links, "ipulink.byte", "bytes", static_cast<double>(run.ipulink_bytes),
        e.ipulink_pj_per_byte);
    add_static(r.links, r.seconds, run.ipulinks * e.ipulink_idle_w);
  }
  r.joules = r.chip_joules() + r.links.joules();
  for (const BlockEnergy& b : r.gateways) r.joules += b.joules();
  return r;
}

}  // namespace ipu::hw
