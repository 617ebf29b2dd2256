// Figures of the IPU-Gateway of an IPU-Machine (M2000 / Bow-2000): its DDR4 streaming memory,
// the PCIe Gen4 x8 attach of each of the board's chips, and the 100 GbE RoCE host ports.
// Datasheet figures where they exist (docs/gateway.md gives each source); latencies are
// assumptions, parameters to calibrate, since no public figure exists.
#pragma once

#include <cstdint>
#include <stdexcept>

#include "base/parameters.h"

namespace ipu::hw {

struct GatewayConfig {
  bool present = false;                      // m2000 and larger; a PCIe card (mk2, bow) has none
  unsigned chips_per_gateway = 4;            // an IPU-Machine: 4 chips share one gateway
  unsigned dimms = 2;                        // 2 DDR4-2400 DIMMs per machine
  uint64_t dimm_bytes = uint64_t{64} << 30;  // 64 GB (default) or 128 GB each
  double dimm_bytes_per_second = 19.2e9;     // DDR4-2400 x 64 bits
  double ddr_latency_ns = 50;                // read: request to first data (assumption)
  // Consecutive blocks of this size alternate DIMMs: fine-grained, as DDR controllers interleave
  // channels, so that tiles streaming in step do not all land on one DIMM at once.
  uint32_t interleave_bytes = 256;
  uint32_t burst_bytes = 64;  // the unit a transfer moves in (a DDR4 burst of 8 x 8 B)
  double chip_link_bytes_per_second = 16e9;    // PCIe Gen4 x8 each way, per chip
  double chip_link_latency_ns = 250;           // chip edge to gateway, one way (assumption)
  unsigned host_ports = 2;                     // 2 x 100 GbE RoCE
  double host_port_bytes_per_second = 12.5e9;  // 100 Gbit/s each way, per port
  double host_latency_ns = 2000;  // RoCE message, host to streaming memory (assumption)
};

template <typename C, typename Visitor, base::if_config_t<C, GatewayConfig> = 0>
void visit_parameters(C& g, Visitor&& v) {
  v(base::Parameter{"machine.gateway", "yes/no",
                    "IPU-Gateways with streaming memory (m2000 and larger; a PCIe card has none)"},
    g.present);
  v(base::Parameter{"gateway.chips-per-gateway", "chips",
                    "chips sharing one gateway and its streaming memory (4: an IPU-Machine)", 1,
                    64},
    g.chips_per_gateway);
  v(base::Parameter{"gateway.dimms", "DIMMs", "DDR4 DIMMs of a gateway's streaming memory", 1, 16},
    g.dimms);
  v(base::Parameter{"gateway.dimm-bytes", "bytes", "capacity of each DIMM (64 GiB or 128 GiB)",
                    1 << 20, 0x1p40},
    g.dimm_bytes);
  v(
      base::Parameter{
          "gateway.dimm-bytes-per-second", "B/s",
          "bandwidth of each DIMM, reads and writes together (DDR4-2400 x 64 bits: 19.2e9)", 1e6,
          1e13},
      g.dimm_bytes_per_second);
  v(base::Parameter{"gateway.ddr-latency-ns", "ns",
                    "streaming-memory read latency after the DIMM's transfer (an assumption)", 0,
                    1e9},
    g.ddr_latency_ns);
  v(base::Parameter{"gateway.interleave-bytes", "bytes",
                    "consecutive blocks of this size alternate DIMMs", 4, 0x1p40},
    g.interleave_bytes);
  v(base::Parameter{"gateway.burst-bytes", "bytes",
                    "unit a tile's streaming-memory transfer moves in (a multiple of 4)", 4, 4096},
    g.burst_bytes);
  v(base::Parameter{"gateway.chip-link-bytes-per-second", "B/s",
                    "each chip's PCIe link to the gateway, each way (Gen4 x8: 16e9)", 1e6, 1e13},
    g.chip_link_bytes_per_second);
  v(base::Parameter{"gateway.chip-link-latency-ns", "ns",
                    "chip edge to gateway, one way (an assumption: no public figure)", 0, 1e9},
    g.chip_link_latency_ns);
  v(base::Parameter{"gateway.host-ports", "ports", "100 GbE RoCE host ports of a gateway", 1, 16},
    g.host_ports);
  v(base::Parameter{"gateway.host-port-bytes-per-second", "B/s",
                    "each host port's bandwidth each way (100 GbE: 12.5e9)", 1e6, 1e13},
    g.host_port_bytes_per_second);
  v(base::Parameter{"gateway.host-latency-ns", "ns",
                    "host to streaming memory over RoCE, per message (an assumption)", 0, 1e9},
    g.host_latency_ns);
}

// Throws std::invalid_argument naming the parameter.
inline void validate(const GatewayConfig& g) {
  base::check_ranges(g);
  if (g.burst_bytes % 4 != 0)
    throw std::invalid_argument("gateway.burst-bytes must be a multiple of 4 from 4 to 4096");
  if (g.interleave_bytes % g.burst_bytes != 0)
    throw std::invalid_argument(
        "gateway.interleave-bytes must be a multiple of gateway.burst-bytes");
  if (g.dimm_bytes % g.interleave_bytes != 0)
    throw std::invalid_argument(
        "gateway.dimm-bytes must be 1 MiB to 1 TiB and a multiple of gateway.interleave-bytes");
}

}  // namespace ipu::hw
