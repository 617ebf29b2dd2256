// Figures of the IPU-Gateway of an IPU-Machine (M2000 / Bow-2000): its DDR4 streaming memory,
// the PCIe Gen4 x8 attach of each of the board's chips, and the 100 GbE RoCE host ports.
// Datasheet figures where they exist (docs/gateway.md gives each source); latencies are
// assumptions, parameters to calibrate, since no public figure exists.
#pragma once

#include <cstdint>

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

}  // namespace ipu::hw
