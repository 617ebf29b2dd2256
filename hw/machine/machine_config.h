// Figures of a machine: how many chips, each chip's figures (ChipConfig), the IPU-Links that
// join them and the gateways that serve them. Each block owns its figures; this file only
// composes them, so ipu-sim's --help, --config-dump and configuration files share the names.
// Presets: "mk2" and "bow" (one chip on a PCIe card), "m2000" and "bow2000" (one IPU-Machine:
// 4 chips, two rungs), "pod16" / "bow-pod16" (4 machines stacked: a ladder of 8 rungs) and
// "pod64" / "bow-pod64" (16 machines, the ladder closed into a torus).
#pragma once

#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "hw/energy/energy_config.h"
#include "hw/gateway/gateway_config.h"
#include "hw/ipu/chip_config.h"
#include "hw/ipulink/ipulink_config.h"

namespace ipu::hw {

struct MachineConfig {
  std::string preset = "mk2";
  unsigned chips = 1;
  ChipConfig chip;
  IpuLinkConfig ipulink;
  GatewayConfig gateway;
  EnergyConfig energy;

  MachineShape shape() const { return chip.shape(chips); }
};

template <typename C, typename Visitor, base::if_config_t<C, MachineConfig> = 0>
void visit_parameters(C& m, Visitor&& v) {
  v(
      base::Parameter{
          "machine.chips", "chips",
          "chips in the machine, a power of two: 1 (PCIe card), 4 (IPU-Machine), 16 (POD16), "
          "64 (POD64)",
          1, 1024},
      m.chips);
  visit_parameters(m.chip, v);
  visit_parameters(m.ipulink, v);
  visit_parameters(m.gateway, v);
  visit_parameters(m.energy, v);
}

// The named preset; throws std::invalid_argument for an unknown name, listing the known ones.
MachineConfig machine_preset(const std::string& name);
std::vector<std::string> machine_preset_names();

// Checks the figures make a machine (the chip's, the chip count, the links per chip, the sync
// groups); throws std::invalid_argument naming the parameter.
void validate(const MachineConfig& config);

// The machine a command line describes: the preset, then the configuration file (whose
// "preset = NAME" line, if it has one, starts it from that preset instead), then each
// "--name value" override in order; validated. Throws std::invalid_argument naming the file and
// line, or the option, and what is wrong.
MachineConfig configure_machine(const std::string& preset, const std::string& config_file,
                                const std::vector<std::pair<std::string, std::string>>& overrides);

// Writes `config` as a configuration file: its preset, then every parameter with its unit.
// configure_machine(any preset, that file, {}) gives `config` back.
void write_machine_config(std::ostream& out, const MachineConfig& config);

}  // namespace ipu::hw
