// A machine built from a configuration: its chips (hw/ipu), the IPU-Links of the ladder that
// joins them (hw/ipulink), its IPU-Gateways with their streaming memory (hw/gateway), and one
// sync network and one exchange spanning every chip, so that internal, grouped and external
// syncs, and exchange within and between chips and to streaming memory, all resolve in one
// place. One chip (a PCIe card) is the machine with machine.chips = 1.
#pragma once

#include <map>
#include <memory>
#include <systemc>
#include <vector>

#include "hw/exchange/exchange.h"
#include "hw/gateway/gateway.h"
#include "hw/ipu/ipu.h"
#include "hw/ipulink/link_fabric.h"
#include "hw/machine/machine_config.h"
#include "hw/parallel/compute_pool.h"
#include "hw/sync/sync_network.h"

namespace ipu::hw {

class Machine : public sc_core::sc_module {
 public:
  // `active_tiles`: machine tile numbers (chip * chip.tiles + tile) of the tiles with a program.
  Machine(const sc_core::sc_module_name& name, const MachineConfig& config,
          std::vector<unsigned> active_tiles);

  // Starts every active tile's supervisor at `entry` (cycle 0 for all of them).
  void start(uint32_t entry, uint64_t max_cycles);
  // The host threads that run the tiles' compute bursts (1 by default). Results, cycles and
  // statistics are the same for every count.
  void set_host_threads(unsigned threads) { compute_.set_threads(threads); }
  ComputePool& compute_pool() { return compute_; }
  // Whether the tiles' timelines, the barriers and the exchange phases are kept for statistics
  // and traces (on by default); the counts are kept either way.
  void keep_records(bool keep);

  const MachineConfig& config() const { return config_; }
  unsigned chips() const { return config_.chips; }
  Ipu& chip(unsigned c) { return *chips_.at(c); }
  const Ipu& chip(unsigned c) const { return *chips_.at(c); }
  Tile& tile(unsigned machine_tile) {
    return chip(machine_tile / config_.chip.tiles).tile(machine_tile % config_.chip.tiles);
  }
  const Tile& tile(unsigned machine_tile) const {
    return chip(machine_tile / config_.chip.tiles).tile(machine_tile % config_.chip.tiles);
  }
  const std::vector<unsigned>& active_tiles() const { return active_; }
  std::string tile_name(unsigned machine_tile) const {
    return hw::tile_name(machine_tile, config_.chip.tiles, config_.chips);
  }
  SyncNetwork& sync_network() { return sync_; }
  const SyncNetwork& sync_network() const { return sync_; }
  Exchange& exchange() { return exchange_; }
  const Exchange& exchange() const { return exchange_; }
  const LinkFabric& links() const { return links_; }
  Gateways& gateways() { return gateways_; }
  const Gateways& gateways() const { return gateways_; }

  // Call after sc_start() has returned.
  ChipOutcome outcome() const;
  uint64_t cycles() const;  // the latest tile cycle reached
  uint64_t instructions_retired() const;

 private:
  MachineConfig config_;
  std::vector<unsigned> active_;
  LinkFabric links_;
  SyncNetwork sync_;
  Exchange exchange_;
  Gateways gateways_;
  ComputePool compute_;
  std::vector<std::unique_ptr<Ipu>> chips_;
};

// The machine's counts so far: cycles, instructions, supersteps, exchange, IPU-Link and
// streaming-memory traffic (the outcome, clock and host time are the caller's to fill).
RunReport count_run(const Machine& machine);

// Context `context`'s counts on `core`; a worker still running when the run ended counts its
// cycles up to its last issue.
ContextCounts context_counts(const iss::Core& core, unsigned context);

}  // namespace ipu::hw
