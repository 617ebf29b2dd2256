#include "machine_config.h"

#include <fmt/format.h>

#include <stdexcept>

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
    base::apply_config_file(config_file, config,
                            [&config](const std::string& name) { config = machine_preset(name); });
  base::set_options(config, overrides);
  validate(config);
  return config;
}

void write_machine_config(std::ostream& out, const MachineConfig& config) {
  out << fmt::format("preset = {}\n", config.preset);
  base::write_config_file(out, config);
}

void validate(const MachineConfig& m) {
  if (m.chips == 0 || m.chips > 1024 || (m.chips & (m.chips - 1)) != 0)
    throw std::invalid_argument(
        fmt::format("machine.chips must be a power of two from 1 to 1024, not {}", m.chips));
  validate(m.chip, m.chips);
  if (uint64_t{m.chips} * m.chip.tiles > (1u << 24))
    throw std::invalid_argument(fmt::format(
        "machine.chips x chip.tiles = {} tiles: at most 16777216 fit the machine's tile numbering",
        uint64_t{m.chips} * m.chip.tiles));
  validate(m.ipulink, m.chips);
  validate(m.gateway);
  validate(m.energy);
}

}  // namespace ipu::hw
