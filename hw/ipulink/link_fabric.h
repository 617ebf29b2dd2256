// The IPU-Links of a machine and the routes over them, after Graphcore's own IPU-Link model:
// a two-column ladder where chips 2k and 2k+1 form rung k, joined by `ipulink.rung-links`
// links, and chip c joins chip c + 2 (the next rung up its column) by `ipulink.column-links`
// links; `ipulink.torus` closes each column into a ring. Ports per chip: the rung's first,
// then up, then down.
//
// A route crosses the rung first (when the chips are in different columns), then moves along
// the column, the short way round on a torus (up on a tie). Within a bundle of parallel links,
// a word takes link (sending tile mod links), so the compiler, not an arbiter, spreads traffic.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <systemc>
#include <vector>

#include "ipulink.h"
#include "ipulink_config.h"
#include "ladder.h"

namespace ipu::hw {

class LinkFabric : public sc_core::sc_module {
 public:
  // Links joining two chips in one direction of travel.
  struct Bundle {
    enum Kind { kRung, kColumn } kind;
    unsigned a, b;  // chips; direction 0 carries a -> b
    std::vector<IpuLink*> links;
  };
  struct Hop {
    unsigned bundle;
    unsigned direction;  // 0: bundle.a -> bundle.b
  };

  // Throws as ipulinks_per_chip().
  LinkFabric(const sc_core::sc_module_name& name, unsigned chips, const IpuLinkConfig& config,
             double clock_hz);

  unsigned chips() const { return chips_; }
  const std::vector<Bundle>& bundles() const { return bundles_; }
  const std::vector<std::unique_ptr<IpuLink>>& links() const { return links_; }
  // The hops from chip `from` to chip `to` (empty when they are the same chip).
  const std::vector<Hop>& route(unsigned from, unsigned to) const {
    return routes_[from * chips_ + to];
  }
  // The link of bundle hop.bundle that a word from `tile` (a chip-local tile number) takes.
  IpuLink& link_for(const Hop& hop, unsigned tile) const {
    const Bundle& b = bundles_[hop.bundle];
    return *b.links[tile % b.links.size()];
  }
  uint64_t hop_cycles() const { return links_.empty() ? 0 : links_.front()->hop_cycles(); }
  // IPU-Links connected at each chip.
  unsigned links_of(unsigned chip) const { return links_per_chip_[chip]; }
  std::string describe_route(unsigned from, unsigned to) const;  // "0 -> 1 -> 3"

 private:
  unsigned add_bundle(Bundle::Kind kind, unsigned a, unsigned b, unsigned count,
                      unsigned first_port_a, unsigned first_port_b, const IpuLinkConfig& config,
                      double clock_hz);

  unsigned chips_;
  bool torus_;
  std::vector<std::unique_ptr<IpuLink>> links_;
  std::vector<Bundle> bundles_;
  std::vector<int> rung_;       // per chip: its rung bundle (-1 on a one-chip machine)
  std::vector<int> up_, down_;  // per chip: bundle to the next rung up / down, or -1
  std::vector<unsigned> links_per_chip_;
  std::vector<std::vector<Hop>> routes_;
};

}  // namespace ipu::hw
