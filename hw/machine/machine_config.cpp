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
    m.gateway.present = p.chips > 1;  // every IPU-Machine has one; a PCIe card does not
    return m;
  }
  throw std::invalid_argument(fmt::format("unknown preset '{}' (known: {})", name,
                                          fmt::join(machine_preset_names(), ", ")));
}

MachineConfig configure_machine(const std::string& preset, const std::string& config_file,
                                const std::vector<std::pair<std::string, std::string>>& overrides) {
  MachineConfig config = machine_preset(preset);
  if (!config_file.empty())
    apply_config_file(config_file, config,
                      [&config](const std::string& name) { config = machine_preset(name); });
  for (const auto& [name, value] : overrides) {
    try {
      set_parameter(config, name, value);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(fmt::format("option --{}: {}", name, e.what()));
    }
  }
  validate(config);
  return config;
}

void write_machine_config(std::ostream& out, const MachineConfig& config) {
  out << fmt::format("preset = {}\n", config.preset);
  MachineConfig copy = config;  // visit_parameters visits mutable members
  write_config_file(out, copy);
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
  const GatewayConfig& g = m.gateway;
  auto in = [](double v, double low, double high) { return v >= low && v <= high; };
  if (g.chips_per_gateway == 0 || g.chips_per_gateway > 64)
    throw std::invalid_argument("gateway.chips-per-gateway must be 1 to 64");
  if (g.dimms == 0 || g.dimms > 16) throw std::invalid_argument("gateway.dimms must be 1 to 16");
  if (g.burst_bytes < 4 || g.burst_bytes > 4096 || g.burst_bytes % 4 != 0)
    throw std::invalid_argument("gateway.burst-bytes must be a multiple of 4 from 4 to 4096");
  if (g.interleave_bytes == 0 || g.interleave_bytes % g.burst_bytes != 0)
    throw std::invalid_argument(
        "gateway.interleave-bytes must be a multiple of gateway.burst-bytes");
  if (g.dimm_bytes < (uint64_t{1} << 20) || g.dimm_bytes > (uint64_t{1} << 40) ||
      g.dimm_bytes % g.interleave_bytes != 0)
    throw std::invalid_argument(
        "gateway.dimm-bytes must be 1 MiB to 1 TiB and a multiple of gateway.interleave-bytes");
  if (!in(g.dimm_bytes_per_second, 1e6, 1e13) || !in(g.chip_link_bytes_per_second, 1e6, 1e13) ||
      !in(g.host_port_bytes_per_second, 1e6, 1e13))
    throw std::invalid_argument("gateway bandwidths (bytes-per-second) must be 1e6 to 1e13");
  if (!in(g.ddr_latency_ns, 0, 1e9) || !in(g.chip_link_latency_ns, 0, 1e9) ||
      !in(g.host_latency_ns, 0, 1e9))
    throw std::invalid_argument("gateway latencies (latency-ns) must be 0 to 1e9");
  if (g.host_ports == 0 || g.host_ports > 16)
    throw std::invalid_argument("gateway.host-ports must be 1 to 16");
  parse_chip_groups("sync.gs1", m.chip.sync.gs1, m.chips);
  parse_chip_groups("sync.gs2", m.chip.sync.gs2, m.chips);
  ipulinks_per_chip(m.chips, m.ipulink);  // throws when a chip has too few ports
}

}  // namespace ipu::hw
