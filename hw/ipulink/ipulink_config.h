// Figures of the IPU-Links and of the ladder they form (Graphcore's own IPU-Link model, poplibs
// IPU Model): chips 2k and 2k+1 form a rung joined by `rung-links` links; each chip has
// `column-links` links up and as many down its column to the next rung; a POD64 closes the
// column into a ring (torus). A link is 8 lanes at PCIe Gen4 rate: 16 GB/s each way.
#pragma once

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
};

}  // namespace ipu::hw
