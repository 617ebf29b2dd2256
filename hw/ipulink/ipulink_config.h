// Figures of the IPU-Links and of the ladder they form (Graphcore's own IPU-Link model, poplibs
// IPU Model): chips 2k and 2k+1 form a rung joined by `rung-links` links; each chip has
// `column-links` links up and as many down its column to the next rung; a POD64 closes the
// column into a ring (torus). A link is 8 lanes at PCIe Gen4 rate: 16 GB/s each way.
#pragma once

#include <cmath>
#include <cstdint>

#include "base/parameters.h"

namespace ipu::hw {

struct IpuLinkConfig {
  double bytes_per_second = 16e9;  // each way, per link (x8 lanes at 16 GT/s)
  // Per hop, port to port. No public Mk2 figure exists (research notes, "not found"): 100 ns is
  // an assumption of the order of a PCIe Gen4 PHY-to-PHY crossing, a parameter to calibrate.
  double latency_ns = 100;
  unsigned rung_links = 6;       // between chips 2k and 2k+1 (4 direct + 2 cross-routing)
  unsigned column_links = 2;     // from a chip to the next rung up (and as many down)
  unsigned ports_per_chip = 10;  // IPU-Link ports of a GC200
  bool torus = false;            // close each column into a ring (POD64)

  // Bytes a link carries each way per tile cycle at `clock_hz`.
  double bytes_per_cycle(double clock_hz) const { return bytes_per_second / clock_hz; }
};

template <typename C, typename Visitor, base::if_config_t<C, IpuLinkConfig> = 0>
void visit_parameters(C& c, Visitor&& v) {
  v(base::Parameter{"ipulink.bytes-per-second", "B/s",
                    "IPU-Link bandwidth each way (x8 lanes at PCIe Gen4 rate: 16e9)", 1e6, 1e13},
    c.bytes_per_second);
  v(base::Parameter{"ipulink.latency-ns", "ns",
                    "IPU-Link latency per hop, port to port (an assumption: no public figure)", 0,
                    1e9},
    c.latency_ns);
  v(base::Parameter{"ipulink.rung-links", "links",
                    "IPU-Links between the chips of a rung (2k and 2k+1)", 0, 64},
    c.rung_links);
  v(base::Parameter{"ipulink.column-links", "links",
                    "IPU-Links from a chip to the next rung up its column (and as many down)", 0,
                    64},
    c.column_links);
  v(base::Parameter{"ipulink.ports-per-chip", "ports", "IPU-Link ports of a chip", 0, 256},
    c.ports_per_chip);
  v(base::Parameter{"ipulink.torus", "yes/no",
                    "close each column of the ladder into a ring (POD64's torus)"},
    c.torus);
}

// Tile cycles from a word entering a link to leaving it at the far port: the link's latency plus
// one word's serialisation, rounded up.
inline uint64_t ipulink_hop_cycles(const IpuLinkConfig& config, double clock_hz) {
  return static_cast<uint64_t>(
      std::ceil((config.latency_ns * 1e-9 + 4.0 / config.bytes_per_second) * clock_hz));
}

// Checks the ranges, and that each of `chips` chips has the ports its links need; throws
// std::invalid_argument naming the parameter.
void validate(const IpuLinkConfig& config, unsigned chips);

}  // namespace ipu::hw
