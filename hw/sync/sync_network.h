// The chip's sync network: bulk-synchronous barriers. A tile's supervisor arrives with
// ipu.sync on a group; when every member of the group has arrived, the barrier releases them
// all at (last arrival + sync.internal-cycles), in a new exchange phase. Group 0 is every tile
// with a program; groups 1.. (GSP) are subsets that sync on their own, so independent groups
// progress independently. Reproduces the internal sync cost of ~150 cycles (Mk2).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <systemc>
#include <vector>

#include "hw/ipu/chip_config.h"

namespace ipu::hw {

struct SyncRelease {
  uint64_t cycle = 0;  // tile cycle at which the members resume
  uint64_t phase = 0;  // id of the exchange phase that starts (unique per barrier)
  std::string error;   // non-empty: the sync was invalid (the tile stops with this report)
};

// One completed barrier, for the statistics.
struct BarrierRecord {
  uint64_t phase = 0;
  unsigned group = 0;
  uint64_t release = 0;
  std::vector<unsigned> tiles;
  std::vector<uint64_t> arrivals;  // per member, in `tiles` order
};

// The barrier's release for one completed barrier: the C++ model is last arrival + latency;
// ipu-sim --rtl sync installs the barrier tree RTL (rtl/sync, through tlm/) instead.
class BarrierDatapath {
 public:
  virtual ~BarrierDatapath() = default;
  // `arrivals`: (tile, arrival cycle) of every member of the group, `members` ascending.
  virtual uint64_t release(const std::vector<unsigned>& members,
                           const std::vector<std::pair<unsigned, uint64_t>>& arrivals,
                           unsigned latency) = 0;
};

class SyncIf : public virtual sc_core::sc_interface {
 public:
  // Called from the tile's thread: blocks until the group's barrier releases.
  virtual SyncRelease arrive(unsigned tile, unsigned group, uint64_t cycle) = 0;
};

// Parses sync.groups ("1:0-31;2:32-63;3:5") into group -> member tiles.
std::map<unsigned, std::vector<unsigned>> parse_sync_groups(const std::string& text,
                                                            unsigned tiles);

class SyncNetwork : public sc_core::sc_module, public SyncIf {
 public:
  using ReleaseHook = std::function<void(const BarrierRecord&)>;

  SyncNetwork(const sc_core::sc_module_name& name, const ChipConfig& config,
              const std::vector<unsigned>& active_tiles);

  SyncRelease arrive(unsigned tile, unsigned group, uint64_t cycle) override;

  // Called at each release before the members resume (the chip opens the exchange phase).
  void on_release(ReleaseHook hook) { on_release_ = std::move(hook); }

  // Host syncs: group 0x80000000 | id syncs every active tile with the host, which moves data
  // for transfer `id` (sdk streams) while the tiles wait. The hook does that and returns the
  // cycles it took, which delay the release.
  static constexpr uint32_t kHostSync = 0x80000000u;
  using HostHook = std::function<uint64_t(unsigned transfer, uint64_t cycle)>;
  void on_host_sync(HostHook hook) { on_host_sync_ = std::move(hook); }

  void set_barrier_datapath(BarrierDatapath* datapath) { barrier_datapath_ = datapath; }

  const std::vector<BarrierRecord>& barriers() const { return barriers_; }
  // Groups with waiting tiles: group -> (arrived tiles with their cycles, missing tiles).
  struct Pending {
    unsigned group;
    std::vector<std::pair<unsigned, uint64_t>> arrived;
    std::vector<unsigned> missing;
  };
  std::vector<Pending> pending() const;

 private:
  struct Group {
    std::vector<unsigned> members;
    std::map<unsigned, uint64_t> arrived;  // tile -> arrival cycle, current barrier
    uint64_t completed = 0;                // barriers released so far
    SyncRelease last;
    sc_core::sc_event released;
  };
  Group* group(unsigned id);

  ChipConfig config_;
  std::vector<unsigned> active_;
  std::map<unsigned, std::vector<unsigned>> declared_;
  std::map<unsigned, Group> groups_;
  uint64_t next_phase_ = 1;
  std::vector<BarrierRecord> barriers_;
  ReleaseHook on_release_;
  HostHook on_host_sync_;
  BarrierDatapath* barrier_datapath_ = nullptr;
};

}  // namespace ipu::hw
