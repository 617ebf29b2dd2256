#include "sync_network.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>
#include <stdexcept>

namespace ipu::hw {

SyncNetwork::SyncNetwork(const sc_core::sc_module_name& name, const SyncConfig& config,
                         const MachineShape& shape, const std::vector<unsigned>& active_tiles)
    : sc_module(name),
      config_(config),
      shape_(shape),
      active_(active_tiles),
      declared_(parse_sync_groups(config.groups, shape.tiles_per_chip)),
      sync_arrivals_(shape.chips),
      external_syncs_(shape.chips) {
  gs_[0] = parse_chip_groups("sync.gs1", config.gs1, shape.chips);
  gs_[1] = parse_chip_groups("sync.gs2", config.gs2, shape.chips);
  SC_THREAD(host_sync_thread);
}

std::string SyncNetwork::kind(uint32_t group) {
  if ((group & kHostSync) != 0) {
    const uint32_t transfer = group & ~kHostSync;
    return transfer == kHostCommand ? "host dispatch" : fmt::format("host transfer {}", transfer);
  }
  switch (group) {
    case 0: return "internal";
    case kExternal: return "external";
    case kGs1: return "GS1";
    case kGs2: return "GS2";
    default: return fmt::format("GSP group {}", group);
  }
}

std::string SyncNetwork::group_label(unsigned id, unsigned chip,
                                     const std::vector<unsigned>& chips) const {
  if ((id & kHostSync) != 0) return fmt::format("host sync {}", id & ~kHostSync);
  if (id == kExternal) return "external sync (every chip)";
  if (id == kGs1 || id == kGs2)
    return fmt::format("external sync GS{} (chips {})", id - kGs1 + 1, fmt::join(chips, ","));
  return shape_.chips > 1 ? fmt::format("sync group {} of chip {}", id, chip)
                          : fmt::format("sync group {}", id);
}

SyncNetwork::Group* SyncNetwork::group(unsigned tile, unsigned id, std::string& error) {
  const unsigned chip = tile / shape_.tiles_per_chip;
  Key key{chip, id, 0};
  std::vector<unsigned> chips;  // external groups: the chips they span
  if ((id & kHostSync) != 0) {
    key = {kAllChips, kHostSync, 0};
  } else if (id == kExternal) {
    key = {kAllChips, id, 0};
    for (unsigned c = 0; c < shape_.chips; ++c) chips.push_back(c);
  } else if (id == kGs1 || id == kGs2) {
    const unsigned gs = id - kGs1;
    const auto& parts = gs_[gs];
    const auto part = std::find_if(parts.begin(), parts.end(), [chip](const auto& p) {
      return std::binary_search(p.begin(), p.end(), chip);
    });
    if (part == parts.end()) {
      error = fmt::format("ipu.sync on GS{}, but chip {} is in no part of sync.gs{}", gs + 1, chip,
                          gs + 1);
      return nullptr;
    }
    key = {kAllChips, id, static_cast<unsigned>(part - parts.begin())};
    chips = *part;
  } else if (id > kExternal) {
    error = fmt::format(
        "ipu.sync on group 0x{:x}, which is no sync group (0, 1..0x{:x} for "
        "sync.groups, 0x{:x} external, 0x{:x} GS1, 0x{:x} GS2)",
        id, kExternal - 1, kExternal, kGs1, kGs2);
    return nullptr;
  }
  auto it = groups_.find(key);
  if (it != groups_.end()) return &it->second;  // every arrival after the group's first

  std::vector<unsigned> members;
  const unsigned per_chip = shape_.tiles_per_chip;
  if ((id & kHostSync) != 0) {
    members = active_;
  } else if (!chips.empty()) {
    for (unsigned t : active_)
      if (std::binary_search(chips.begin(), chips.end(), t / per_chip)) members.push_back(t);
  } else if (id == 0) {
    for (unsigned t : active_)
      if (t / per_chip == chip) members.push_back(t);
  } else {
    auto d = declared_.find(id);
    if (d == declared_.end()) {
      error = fmt::format("ipu.sync on group {}, which sync.groups does not declare", id);
      return nullptr;
    }
    for (unsigned t : d->second)
      if (std::binary_search(active_.begin(), active_.end(), chip * per_chip + t))
        members.push_back(chip * per_chip + t);
  }
  Group& g = groups_[key];
  g.name = group_label(id, chip, chips);
  g.members = std::move(members);
  g.arrivals.assign(g.members.size(), kNotArrived);
  g.chips = chips.empty() ? 1u : static_cast<unsigned>(chips.size());
  return &g;
}

SyncArrival SyncNetwork::arrive(unsigned tile, unsigned id, uint64_t cycle) {
  const auto refused = [](std::string error) { return SyncArrival{{0, 0, std::move(error)}}; };
  if ((id & kHostSync) != 0 && !on_host_sync_ && id != (kHostSync | kHostCommand))
    return refused(fmt::format("host sync {} with no host connected to move its stream data",
                               id & ~kHostSync));
  std::string error;
  Group* found = group(tile, id, error);
  if (found == nullptr) return refused(error);
  Group& g = *found;
  const auto member = std::lower_bound(g.members.begin(), g.members.end(), tile);
  if (member == g.members.end() || *member != tile)
    return refused(fmt::format("ipu.sync on group {}, which does not include tile {}", id,
                               tile % shape_.tiles_per_chip));
  uint64_t& arrival = g.arrivals[static_cast<size_t>(member - g.members.begin())];
  if (arrival == kNotArrived) ++g.arrived;
  arrival = cycle;
  // g.last changes only when this barrier completes, and every member (this one too) must
  // arrive again before the next one does.
  if (g.arrived < g.members.size()) return {{}, &g.released, &g.last};
  // The last member: release everybody.
  BarrierRecord record;
  record.group = id;
  const bool internal = id < kExternal;
  record.chip = internal ? static_cast<int>(tile / shape_.tiles_per_chip) : -1;
  uint64_t latest = 0;
  record.tiles = g.members;
  record.arrivals = g.arrivals;
  for (const uint64_t c : g.arrivals) latest = std::max(latest, c);
  if (internal && barrier_datapath_ != nullptr) {
    // The barrier tree of one chip sees the chip's own tile numbers.
    const unsigned base = static_cast<unsigned>(record.chip) * shape_.tiles_per_chip;
    std::vector<unsigned> members;
    std::vector<std::pair<unsigned, uint64_t>> arrivals;
    for (unsigned t : g.members) members.push_back(t - base);
    for (size_t m = 0; m < g.members.size(); ++m)
      arrivals.emplace_back(g.members[m] - base, g.arrivals[m]);
    record.release = barrier_datapath_->release(members, arrivals, config_.internal_cycles);
  } else {
    record.release = latest + config_.internal_cycles;
  }
  if (id == kExternal || id == kGs1 || id == kGs2)
    record.release += external_sync_cycles(config_, shape_.clock_hz, g.chips);
  if ((id & kHostSync) != 0 && on_host_sync_) {
    // The host moves its data in simulated time, which a tile's SC_METHOD cannot wait through:
    // the network's own thread does, and the last member waits for the release with the others.
    host_syncs_.push_back({&g, std::move(record)});
    host_sync_requested_.notify(sc_core::SC_ZERO_TIME);
    return {{}, &g.released, &g.last};
  }
  release(g, std::move(record));
  return {g.last};
}

void SyncNetwork::release(Group& g, BarrierRecord record) {
  record.phase = next_phase_++;
  std::fill(g.arrivals.begin(), g.arrivals.end(), kNotArrived);
  g.arrived = 0;
  g.last = {record.release, record.phase, {}};
  ++barrier_count_;
  if (record.chip >= 0) {
    sync_arrivals_.at(static_cast<unsigned>(record.chip)) += record.tiles.size();
  } else {
    std::vector<bool> taking_part(shape_.chips);
    for (unsigned tile : record.tiles) taking_part.at(tile / shape_.tiles_per_chip) = true;
    for (unsigned chip = 0; chip < shape_.chips; ++chip) external_syncs_[chip] += taking_part[chip];
  }
  if (on_release_) on_release_(record);
  if (keep_records_) barriers_.push_back(std::move(record));
  g.released.notify(sc_core::SC_ZERO_TIME);
}

void SyncNetwork::host_sync_thread() {
  for (;;) {
    while (host_syncs_.empty()) wait(host_sync_requested_);
    auto [g, record] = std::move(host_syncs_.front());
    host_syncs_.pop_front();
    record.release += on_host_sync_(record.group & ~kHostSync, record.release);
    release(*g, std::move(record));
  }
}

std::vector<SyncNetwork::Pending> SyncNetwork::pending() const {
  std::vector<Pending> out;
  for (const auto& [key, g] : groups_) {
    if (g.arrived == 0) continue;
    Pending p{g.name, {}, {}};
    for (size_t m = 0; m < g.members.size(); ++m) {
      if (g.arrivals[m] == kNotArrived)
        p.missing.push_back(g.members[m]);
      else
        p.arrived.emplace_back(g.members[m], g.arrivals[m]);
    }
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace ipu::hw
