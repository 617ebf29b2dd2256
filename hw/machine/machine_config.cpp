#include "machine_config.h"

#include <fmt/format.h>

#include <stdexcept>

#include "hw/ipulink/link_fabric.h"
#include "hw/sync/sync_network.h"

namespace ipu::hw {
namespace {

struct Preset {
  const char* name;
  const char* chip;  // chip preset
  unsigned chips;
  bool torus;
};
constexpr Preset kPresets[] = {
    {"mk2", "mk2", 1, false},     {"bow", "bow", 1, false},       {"m2000", "mk2", 4, false},
    {"bow2000", "bow", 4, false}, {"pod16", "mk2", 16, false},    {"bow-pod16", "bow", 16, false},
    {"pod64", "mk2", 64, true},   {"bow-pod64", "bow", 64, true},
};

}  // namespace

std::vector<std::string> machine_preset_names() {
  std::vector<std::string> names;
  for (const Preset& p : kPresets) names.emplace_back(p.name);
  return names;
}

MachineConfig machine_preset(const std::string& name) {
  for (const Preset& p : kPresets) {
    if (name != p.name) continue;
    MachineConfig m;
    m.preset = name;
    m.chip = chip_preset(p.chip);
    m.chip.preset = name;
    m.chips = p.chips;
    m.ipulink.torus = p.torus;
    return m;
  }
  throw std::invalid_argument(fmt::format("unknown preset '{}' (known: {})", name,
                                          fmt::join(machine_preset_names(), ", ")));
}

void validate(const MachineConfig& m) {
  validate(m.chip);
  if (m.chips == 0 || m.chips > 1024 || (m.chips & (m.chips - 1)) != 0)
    throw std::invalid_argument(
        fmt::format("machine.chips must be a power of two from 1 to 1024, not {}", m.chips));
  if (uint64_t{m.chips} * m.chip.tiles > (1u << 24))
    throw std::invalid_argument(fmt::format(
        "machine.chips x chip.tiles = {} tiles: at most 16777216 fit the machine's tile numbering",
        uint64_t{m.chips} * m.chip.tiles));
  if (!(m.ipulink.bytes_per_second >= 1e6))
    throw std::invalid_argument("ipulink.bytes-per-second must be at least 1e6");
  if (!(m.ipulink.latency_ns >= 0) || m.ipulink.latency_ns > 1e9)
    throw std::invalid_argument("ipulink.latency-ns must be 0 to 1e9");
  if (!(m.chip.sync.external_ns_per_hop >= 0) || m.chip.sync.external_ns_per_hop > 1e9)
    throw std::invalid_argument("sync.external-ns-per-hop must be 0 to 1e9");
  parse_chip_groups("sync.gs1", m.chip.sync.gs1, m.chips);
  parse_chip_groups("sync.gs2", m.chip.sync.gs2, m.chips);
  ipulinks_per_chip(m.chips, m.ipulink);  // throws when a chip has too few ports
}

}  // namespace ipu::hw
