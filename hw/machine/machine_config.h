// Figures of a machine: how many chips, each chip's figures (ChipConfig) and the IPU-Links that
// join them. Every figure is a named parameter visited by visit_parameters(), so ipu-sim's
// --help, --config-dump and configuration files share the names.
// Presets: "mk2" and "bow" (one chip on a PCIe card), "m2000" and "bow2000" (one IPU-Machine:
// 4 chips, two rungs), "pod16" / "bow-pod16" (4 machines stacked: a ladder of 8 rungs) and
// "pod64" / "bow-pod64" (16 machines, the ladder closed into a torus).
#pragma once

#include <ostream>
#include <string>
#include <utility>
#include <vector>

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
};

template <typename Visitor>
void visit_parameters(MachineConfig& m, Visitor&& v) {
  v("machine.chips", m.chips, "chips",
    "chips in the machine, a power of two: 1 (PCIe card), 4 (IPU-Machine), 16 (POD16), 64 "
    "(POD64)");
  visit_parameters(m.chip, v);
  v("ipulink.bytes-per-second", m.ipulink.bytes_per_second, "B/s",
    "IPU-Link bandwidth each way (x8 lanes at PCIe Gen4 rate: 16e9)");
  v("ipulink.latency-ns", m.ipulink.latency_ns, "ns",
    "IPU-Link latency per hop, port to port (an assumption: no public figure)");
  v("ipulink.rung-links", m.ipulink.rung_links, "links",
    "IPU-Links between the chips of a rung (2k and 2k+1)");
  v("ipulink.column-links", m.ipulink.column_links, "links",
    "IPU-Links from a chip to the next rung up its column (and as many down)");
  v("ipulink.ports-per-chip", m.ipulink.ports_per_chip, "ports", "IPU-Link ports of a chip");
  v("ipulink.torus", m.ipulink.torus, "yes/no",
    "close each column of the ladder into a ring (POD64's torus)");
  GatewayConfig& g = m.gateway;
  v("machine.gateway", g.present, "yes/no",
    "IPU-Gateways with streaming memory (m2000 and larger; a PCIe card has none)");
  v("gateway.chips-per-gateway", g.chips_per_gateway, "chips",
    "chips sharing one gateway and its streaming memory (4: an IPU-Machine)");
  v("gateway.dimms", g.dimms, "DIMMs", "DDR4 DIMMs of a gateway's streaming memory");
  v("gateway.dimm-bytes", g.dimm_bytes, "bytes", "capacity of each DIMM (64 GiB or 128 GiB)");
  v("gateway.dimm-bytes-per-second", g.dimm_bytes_per_second, "B/s",
    "bandwidth of each DIMM, reads and writes together (DDR4-2400 x 64 bits: 19.2e9)");
  v("gateway.ddr-latency-ns", g.ddr_latency_ns, "ns",
    "streaming-memory read latency after the DIMM's transfer (an assumption)");
  v("gateway.interleave-bytes", g.interleave_bytes, "bytes",
    "consecutive blocks of this size alternate DIMMs");
  v("gateway.burst-bytes", g.burst_bytes, "bytes",
    "unit a tile's streaming-memory transfer moves in (a multiple of 4)");
  v("gateway.chip-link-bytes-per-second", g.chip_link_bytes_per_second, "B/s",
    "each chip's PCIe link to the gateway, each way (Gen4 x8: 16e9)");
  v("gateway.chip-link-latency-ns", g.chip_link_latency_ns, "ns",
    "chip edge to gateway, one way (an assumption: no public figure)");
  v("gateway.host-ports", g.host_ports, "ports", "100 GbE RoCE host ports of a gateway");
  v("gateway.host-port-bytes-per-second", g.host_port_bytes_per_second, "B/s",
    "each host port's bandwidth each way (100 GbE: 12.5e9)");
  v("gateway.host-latency-ns", g.host_latency_ns, "ns",
    "host to streaming memory over RoCE, per message (an assumption)");
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
