#include "link_fabric.h"

#include <fmt/format.h>

#include <stdexcept>

namespace ipu::hw {

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
