// The machine's sync network: bulk-synchronous barriers. A tile's supervisor arrives with
// ipu.sync on a group; when every member of the group has arrived, the barrier releases them
// all in a new exchange phase:
// - internal: group 0 is every tile of the tile's chip that has a program; groups 1.. (GSP) are
//   subsets of the chip's tiles (sync.groups) that sync on their own. Release at last arrival
//   + sync.internal-cycles (~150 on Mk2).
// - external: kExternal (every chip of the machine) or the hardware sync groups kGs1 / kGs2
//   (sync.gs1, sync.gs2: the chips of each part). Release at last arrival + the internal sync
//   + Graphcore's external cost, ceil(2 x hops x sync.external-ns-per-hop x clock) with
//   hops = 1 + (chips / 2) / 2 for the chips of the group. Only an external phase may carry
//   words between chips.
// - host: kHostSync | id syncs every tile of the machine with the host.
// Tiles are machine tile numbers (chip * tiles per chip + tile).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <systemc>
#include <tuple>
#include <vector>

#include "hw/common/machine_shape.h"
#include "hw/sync/sync_config.h"

namespace ipu::hw {

struct SyncRelease {
  uint64_t cycle = 0;  // tile cycle at which the members resume
  uint64_t phase = 0;  // id of the exchange phase that starts (unique per barrier)
  std::string error;   // non-empty: the sync was invalid (the tile stops with this report)
};

// One completed barrier, for the statistics.
struct BarrierRecord {
  uint64_t phase = 0;
  unsigned group = 0;  // as the tiles named it (0, a GSP group, kExternal, kGs1, ...)
  int chip = 0;        // the chip of an internal barrier; -1 for external and host syncs
  uint64_t release = 0;
  std::vector<unsigned> tiles;
  std::vector<uint64_t> arrivals;  // per member, in `tiles` order
};

// The barrier's release for one completed internal barrier: the C++ model is last arrival +
// latency; ipu-sim --rtl sync installs the barrier tree RTL (rtl/sync, through tlm/) instead.
class BarrierDatapath {
 public:
  virtual ~BarrierDatapath() = default;
  // `arrivals`: (tile, arrival cycle) of every member of the group, `members` ascending; tiles
  // are the chip's own numbers.
  virtual uint64_t release(const std::vector<unsigned>& members,
                           const std::vector<std::pair<unsigned, uint64_t>>& arrivals,
                           unsigned latency) = 0;
};

// How an arrival at a barrier goes on. Tiles are SC_METHODs (hw/tile/tile.h), which cannot
// block: an arrival that completes the barrier, or is refused, has its outcome at once (`now`);
// any other waits for `released`, and `*later` is its outcome when that fires.
struct SyncArrival {
  SyncRelease now;
  const sc_core::sc_event* released = nullptr;
  const SyncRelease* later = nullptr;
};

class SyncIf : public virtual sc_core::sc_interface {
 public:
  virtual SyncArrival arrive(unsigned tile, unsigned group, uint64_t cycle) = 0;
};

class SyncNetwork : public sc_core::sc_module, public SyncIf {
 public:
  using ReleaseHook = std::function<void(const BarrierRecord&)>;
  static constexpr uint32_t kExternal = sync_group::kExternal;
  static constexpr uint32_t kGs1 = sync_group::kGs1;
  static constexpr uint32_t kGs2 = sync_group::kGs2;

  SyncNetwork(const sc_core::sc_module_name& name, const SyncConfig& config,
              const MachineShape& shape, const std::vector<unsigned>& active_tiles);

  SyncArrival arrive(unsigned tile, unsigned group, uint64_t cycle) override;

  // Called at each release before the members resume (the exchange opens the phase).
  void on_release(ReleaseHook hook) { on_release_ = std::move(hook); }

  // Host syncs: group 0x80000000 | id syncs every active tile with the host, which moves data
  // for transfer `id` (sdk streams) while the tiles wait. The hook does that and returns the
  // cycles it took, which delay the release.
  static constexpr uint32_t kHostSync = sync_group::kHost;
  // Transfer kHostCommand is the host choosing the tiles' next program (the SDK's engine): with
  // no host connected it passes at no cost, and the tiles run the program their image names.
  static constexpr uint32_t kHostCommand = sync_group::kHostCommand;
  // What a sync group is, for people: "internal" (group 0), "GSP group 2", "external", "GS1",
  // "GS2", "host transfer 3", "host dispatch" (kHostCommand).
  static std::string kind(uint32_t group);
  using HostHook = std::function<uint64_t(unsigned transfer, uint64_t cycle)>;
  void on_host_sync(HostHook hook) { on_host_sync_ = std::move(hook); }

  void set_barrier_datapath(BarrierDatapath* datapath) { barrier_datapath_ = datapath; }

  // Every barrier since the run began, for statistics and traces (kept unless keep_records is
  // off: a device that runs programs again and again without writing them stays bounded).
  const std::vector<BarrierRecord>& barriers() const { return barriers_; }
  void keep_records(bool keep) { keep_records_ = keep; }
  // What the counts need, kept whether or not the records are: barriers completed, each chip's
  // tile arrivals at its internal barriers, and the external barriers each chip took part in.
  uint64_t barrier_count() const { return barrier_count_; }
  uint64_t sync_arrivals(unsigned chip) const { return sync_arrivals_.at(chip); }
  uint64_t external_syncs(unsigned chip) const { return external_syncs_.at(chip); }
  // Groups with waiting tiles: what the group is, arrived tiles with their cycles, missing tiles.
  struct Pending {
    std::string group;  // "sync group 0 of chip 1", "external sync GS1 (chips 0-3)"
    std::vector<std::pair<unsigned, uint64_t>> arrived;
    std::vector<unsigned> missing;
  };
  std::vector<Pending> pending() const;

 private:
  // (chip, group id, part): chip is kAllChips for machine-wide groups; part tells the GS parts.
  using Key = std::tuple<unsigned, unsigned, unsigned>;
  static constexpr unsigned kAllChips = ~0u;
  static constexpr uint64_t kNotArrived = ~uint64_t{0};
  struct Group {
    std::string name;
    std::vector<unsigned> members;
    unsigned chips = 1;  // chips spanned (the external cost)
    // Each member's arrival cycle at the current barrier (kNotArrived until it arrives), in
    // `members` order: a POD's external sync has 23,552 members, and a map costs an allocation
    // each.
    std::vector<uint64_t> arrivals;
    size_t arrived = 0;
    SyncRelease last;
    sc_core::sc_event released;
  };
  // The group tile `tile` means by `id`; null with `error` set when there is none.
  Group* group(unsigned tile, unsigned id, std::string& error);
  // What reports call a group, made once, when its first member arrives.
  std::string group_label(unsigned id, unsigned chip, const std::vector<unsigned>& chips) const;
  std::string name(unsigned tile) const { return tile_name(tile, shape_); }

  // Records a completed barrier and releases its members.
  void release(Group& g, BarrierRecord record);
  // Runs the host's part of each completed host sync (on_host_sync), then releases it.
  void host_sync_thread();

  SC_HAS_PROCESS(SyncNetwork);
  SyncConfig config_;
  MachineShape shape_;
  std::vector<unsigned> active_;
  std::map<unsigned, std::vector<unsigned>> declared_;
  std::vector<std::vector<unsigned>> gs_[2];
  std::map<Key, Group> groups_;
  uint64_t next_phase_ = 1;
  std::vector<BarrierRecord> barriers_;
  bool keep_records_ = true;
  uint64_t barrier_count_ = 0;
  std::vector<uint64_t> sync_arrivals_, external_syncs_;  // per chip
  ReleaseHook on_release_;
  HostHook on_host_sync_;
  std::deque<std::pair<Group*, BarrierRecord>> host_syncs_;
  sc_core::sc_event host_sync_requested_;
  BarrierDatapath* barrier_datapath_ = nullptr;
};

}  // namespace ipu::hw
