#include "ladder.h"

#include <fmt/format.h>

#include <stdexcept>

namespace ipu::hw {

std::vector<unsigned> ipulinks_per_chip(unsigned chips, const IpuLinkConfig& config) {
  if (chips == 0 || (chips & (chips - 1)) != 0)
    throw std::invalid_argument(
        fmt::format("machine.chips must be a power of two (1, 2, 4, ...), not {}", chips));
  std::vector<unsigned> links(chips, 0);
  if (chips == 1) return links;
  if (config.rung_links == 0)
    throw std::invalid_argument("ipulink.rung-links must be at least 1 to join a rung's chips");
  const bool columns = chips > 2;
  if (columns && config.column_links == 0)
    throw std::invalid_argument(
        "ipulink.column-links must be at least 1 to join the rungs of a ladder");
  for (unsigned c = 0; c < chips; ++c) {
    const bool has_up = columns && (c + 2 < chips || config.torus);
    const bool has_down = columns && (c >= 2 || config.torus);
    links[c] = config.rung_links + (has_up ? config.column_links : 0) +
               (has_down ? config.column_links : 0);
    if (links[c] > config.ports_per_chip)
      throw std::invalid_argument(fmt::format(
          "chip {} would have {} IPU-Links (rung {}{}{}) but a chip has {} ports "
          "(ipulink.ports-per-chip)",
          c, links[c], config.rung_links,
          has_up ? fmt::format(" + up {}", config.column_links) : "",
          has_down ? fmt::format(" + down {}", config.column_links) : "", config.ports_per_chip));
  }
  return links;
}

void validate(const IpuLinkConfig& config, unsigned chips) {
  base::check_ranges(config);
  ipulinks_per_chip(chips, config);  // throws when a chip has too few ports
}

std::vector<LadderHop> ladder_route(unsigned chips, bool torus, unsigned from, unsigned to) {
  std::vector<LadderHop> hops;
  unsigned at = from;
  if ((at & 1) != (to & 1)) {  // the other column: cross the rung first
    hops.push_back({LadderHop::kRung, at, at ^ 1});
    at ^= 1;
  }
  const unsigned rungs = chips / 2;
  if (rungs == 0) return hops;
  const unsigned here = at / 2, there = to / 2;
  unsigned steps_up = (there + rungs - here) % rungs, steps_down = (here + rungs - there) % rungs;
  bool up = true;
  if (torus) {
    up = steps_up <= steps_down;
  } else {
    up = there >= here;
    steps_up = there - here;
    steps_down = here - there;
  }
  for (unsigned s = 0, n = up ? steps_up : steps_down; s < n; ++s) {
    const unsigned next = up ? (at + 2) % chips : (at + chips - 2) % chips;
    hops.push_back({up ? LadderHop::kUp : LadderHop::kDown, at, next});
    at = next;
  }
  return hops;
}

}  // namespace ipu::hw
