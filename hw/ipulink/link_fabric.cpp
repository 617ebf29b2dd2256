#include "link_fabric.h"

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

LinkFabric::LinkFabric(const sc_core::sc_module_name& name, unsigned chips,
                       const IpuLinkConfig& config, double clock_hz)
    : sc_module(name),
      chips_(chips),
      torus_(config.torus),
      rung_(chips, -1),
      up_(chips, -1),
      down_(chips, -1),
      links_per_chip_(ipulinks_per_chip(chips, config)) {
  if (chips == 1) {
    routes_.assign(1, {});
    return;
  }
  const unsigned rungs = chips / 2;
  const bool columns = rungs > 1;
  const unsigned up_port = config.rung_links, down_port = config.rung_links + config.column_links;
  for (unsigned r = 0; r < rungs; ++r) {
    const unsigned bundle =
        add_bundle(Bundle::kRung, 2 * r, 2 * r + 1, config.rung_links, 0, 0, config, clock_hz);
    rung_[2 * r] = rung_[2 * r + 1] = static_cast<int>(bundle);
  }
  if (columns) {
    for (unsigned c = 0; c < chips; ++c) {
      const bool wraps = c + 2 >= chips;
      if (wraps && !torus_) continue;
      const unsigned next = (c + 2) % chips;
      const unsigned bundle = add_bundle(Bundle::kColumn, c, next, config.column_links, up_port,
                                         down_port, config, clock_hz);
      up_[c] = static_cast<int>(bundle);
      down_[next] = static_cast<int>(bundle);
    }
  }
  routes_.resize(size_t{chips} * chips);
  for (unsigned from = 0; from < chips; ++from)
    for (unsigned to = 0; to < chips; ++to)
      for (const LadderHop& h : ladder_route(chips, torus_, from, to)) {
        // Direction 0 carries a bundle's chip a to chip b: a rung's lower chip upwards, a
        // column bundle upwards.
        unsigned bundle = 0, direction = 0;
        if (h.kind == LadderHop::kRung) {
          bundle = static_cast<unsigned>(rung_[h.from]);
          direction = bundles_[bundle].a == h.from ? 0 : 1;
        } else {
          const bool up = h.kind == LadderHop::kUp;
          bundle = static_cast<unsigned>(up ? up_[h.from] : down_[h.from]);
          direction = up ? 0 : 1;
        }
        routes_[from * chips + to].push_back({bundle, direction});
      }
}

unsigned LinkFabric::add_bundle(Bundle::Kind kind, unsigned a, unsigned b, unsigned count,
                                unsigned first_port_a, unsigned first_port_b,
                                const IpuLinkConfig& config, double clock_hz) {
  Bundle bundle{kind, a, b, {}};
  for (unsigned i = 0; i < count; ++i) {
    links_.push_back(std::make_unique<IpuLink>(
        fmt::format("link_{}_{}_{}{}", a, b, kind == Bundle::kRung ? "rung" : "column", i).c_str(),
        config, clock_hz, IpuLink::End{a, first_port_a + i}, IpuLink::End{b, first_port_b + i}));
    bundle.links.push_back(links_.back().get());
  }
  bundles_.push_back(std::move(bundle));
  return static_cast<unsigned>(bundles_.size() - 1);
}

std::string LinkFabric::describe_route(unsigned from, unsigned to) const {
  std::string out = std::to_string(from);
  unsigned at = from;
  for (const Hop& h : route(from, to)) {
    const Bundle& b = bundles_[h.bundle];
    at = h.direction == 0 ? b.b : b.a;
    out += fmt::format(" -> {}", at);
  }
  return out;
}

}  // namespace ipu::hw
