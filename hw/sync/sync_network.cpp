#include "sync_network.h"

#include <fmt/format.h>

#include <algorithm>
#include <sstream>
#include <stdexcept>

namespace ipu::hw {

std::map<unsigned, std::vector<unsigned>> parse_sync_groups(const std::string& text,
                                                            unsigned tiles) {
  std::map<unsigned, std::vector<unsigned>> groups;
  std::istringstream in(text);
  std::string item;
  while (std::getline(in, item, ';')) {
    if (item.find_first_not_of(' ') == std::string::npos) continue;
    unsigned id = 0;
    char colon = 0;
    std::istringstream entry(item);
    if (!(entry >> id >> colon) || colon != ':' || id == 0)
      throw std::invalid_argument(
          fmt::format("sync.groups: '{}' is not 'group:tiles' with group >= 1", item));
    std::string range;
    while (std::getline(entry, range, ',')) {
      unsigned first = 0, last = 0;
      char dash = 0;
      std::istringstream r(range);
      if (!(r >> first))
        throw std::invalid_argument(fmt::format("sync.groups: bad tile range '{}'", range));
      last = first;
      if (r >> dash && !(dash == '-' && r >> last))
        throw std::invalid_argument(fmt::format("sync.groups: bad tile range '{}'", range));
      if (last < first || last >= tiles)
        throw std::invalid_argument(
            fmt::format("sync.groups: range {} is outside tiles 0-{}", range, tiles - 1));
      for (unsigned t = first; t <= last; ++t) groups[id].push_back(t);
    }
  }
  return groups;
}

SyncNetwork::SyncNetwork(const sc_core::sc_module_name& name, const ChipConfig& config,
                         const std::vector<unsigned>& active_tiles)
    : sc_module(name),
      config_(config),
      active_(active_tiles),
      declared_(parse_sync_groups(config.sync.groups, config.tiles)) {}

SyncNetwork::Group* SyncNetwork::group(unsigned id) {
  auto it = groups_.find(id);
  if (it != groups_.end()) return &it->second;
  std::vector<unsigned> members;
  if (id == 0 || (id & kHostSync) != 0) {
    members = active_;
  } else {
    auto d = declared_.find(id);
    if (d == declared_.end()) return nullptr;
    for (unsigned t : d->second)
      if (std::binary_search(active_.begin(), active_.end(), t)) members.push_back(t);
  }
  Group& g = groups_[id];
  g.members = std::move(members);
  return &g;
}

SyncRelease SyncNetwork::arrive(unsigned tile, unsigned id, uint64_t cycle) {
  if ((id & kHostSync) != 0 && !on_host_sync_)
    return {0, 0,
            fmt::format("host sync {} with no host connected to move its stream data",
                        id & ~kHostSync)};
  Group* found = group(id);
  if (found == nullptr)
    return {0, 0, fmt::format("ipu.sync on group {}, which sync.groups does not declare", id)};
  Group& g = *found;
  if (!std::binary_search(g.members.begin(), g.members.end(), tile))
    return {0, 0, fmt::format("ipu.sync on group {}, which does not include tile {}", id, tile)};
  g.arrived[tile] = cycle;
  if (g.arrived.size() < g.members.size()) {
    const uint64_t barrier = g.completed;
    while (g.completed == barrier) wait(g.released);
    return g.last;
  }
  // The last member: release everybody.
  BarrierRecord record;
  record.group = id;
  uint64_t latest = 0;
  for (const auto& [t, c] : g.arrived) {
    record.tiles.push_back(t);
    record.arrivals.push_back(c);
    latest = std::max(latest, c);
  }
  if (barrier_datapath_ != nullptr) {
    std::vector<std::pair<unsigned, uint64_t>> arrivals(g.arrived.begin(), g.arrived.end());
    record.release = barrier_datapath_->release(g.members, arrivals, config_.sync.internal_cycles);
  } else {
    record.release = latest + config_.sync.internal_cycles;
  }
  if ((id & kHostSync) != 0) record.release += on_host_sync_(id & ~kHostSync, record.release);
  record.phase = next_phase_++;
  g.arrived.clear();
  g.last = {record.release, record.phase, {}};
  ++g.completed;
  barriers_.push_back(record);
  if (on_release_) on_release_(barriers_.back());
  g.released.notify(sc_core::SC_ZERO_TIME);
  return g.last;
}

std::vector<SyncNetwork::Pending> SyncNetwork::pending() const {
  std::vector<Pending> out;
  for (const auto& [id, g] : groups_) {
    if (g.arrived.empty()) continue;
    Pending p{id, {}, {}};
    for (const auto& [t, c] : g.arrived) p.arrived.emplace_back(t, c);
    for (unsigned t : g.members)
      if (g.arrived.count(t) == 0) p.missing.push_back(t);
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace ipu::hw
