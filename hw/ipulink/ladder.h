// The ladder the IPU-Links of a machine form (Graphcore's own IPU-Link model): which chips a
// link joins, how many links each chip has, and the route a word takes. Pure topology, free of
// SystemC: the link fabric (link_fabric.h), the configuration checks and the SDK compiler all
// route by it.
#pragma once

#include <vector>

#include "ipulink_config.h"

namespace ipu::hw {

// One step of a route over the ladder: to the other chip of the rung, or to the next rung up
// (chip + 2) or down (chip - 2) the column, wrapping on a torus.
struct LadderHop {
  enum Kind { kRung, kUp, kDown } kind;
  unsigned from, to;
};

// The route a word takes from chip `from` to chip `to` of a `chips`-chip ladder (empty for the
// same chip): the rung first, then along the column, the short way round on a torus (up on a
// tie). The exchange (through LinkFabric) and the SDK compiler both route by it.
std::vector<LadderHop> ladder_route(unsigned chips, bool torus, unsigned from, unsigned to);

// IPU-Links connected at each chip of the ladder; throws std::invalid_argument when `chips` is
// not a power of two, a rung or column has no link, or a chip would need more links than it
// has ports (naming the chip and the counts).
std::vector<unsigned> ipulinks_per_chip(unsigned chips, const IpuLinkConfig& config);

}  // namespace ipu::hw
