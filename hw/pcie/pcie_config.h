// Figures of a chip's PCIe host link (hw/pcie/pcie_endpoint.h): its DMA engine's bandwidth
// each way and its latency per transaction.
#pragma once

#include "base/parameters.h"

namespace ipu::hw {

struct PcieConfig {
  double bytes_per_second = 32e9;  // PCIe Gen4 x16: 32 GB/s each way, 64 GB/s both together
  double latency_ns = 1000;        // per DMA transaction: descriptor fetch to first data
};

template <typename C, typename Visitor, base::if_config_t<C, PcieConfig> = 0>
void visit_parameters(C& c, Visitor&& v) {
  v(
      base::Parameter{
          "pcie.bytes-per-second", "B/s",
          "host link DMA bandwidth in each direction (PCIe Gen4 x16: 32e9; both directions "
          "at once)",
          1e6, 1e13},
      c.bytes_per_second);
  v(base::Parameter{"pcie.latency-ns", "ns", "host link latency per DMA transaction", 0, 1e9},
    c.latency_ns);
}

inline void validate(const PcieConfig& c) { base::check_ranges(c); }

}  // namespace ipu::hw
