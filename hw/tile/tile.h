// One IPU tile as a SystemC module: the core (core.h) and its SRAM, 624 KiB at 0x4c000 on the
// Mk2. The SRAM is reachable from outside through a TLM-2.0 target socket (b_transport, DMI
// for reads, debug transport for loaders). The core runs temporally decoupled: it executes a
// burst of up to `quantum_cycles` tile cycles, then waits for that much simulated time.
//
// The tile's process is an SC_METHOD, a state machine that returns at each wait (a burst on the
// compute pool, a barrier, the end of an exchange phase, simulated time), rather than an
// SC_THREAD: a chip has 1472 of them, each woken about seven times a superstep, and a method's
// wake-up is a call where a thread's is a switch onto a cold stack of its own (the serial share
// that limits the speed-up of tile compute on host threads; docs/simulating.md).
#pragma once

#include <tlm_utils/multi_passthrough_target_socket.h>

#include <cstdint>
#include <exception>
#include <string>
#include <systemc>
#include <tlm>
#include <vector>

#include "hw/energy/tile_prices.h"
#include "hw/exchange/deferred_exchange.h"
#include "hw/exchange/exchange.h"
#include "hw/parallel/compute_pool.h"
#include "hw/sync/sync_network.h"
#include "iss/core.h"
#include "iss/tile_config.h"

namespace ipu::hw {

struct TileOutcome {
  iss::StopReason reason = iss::StopReason::kRunning;
  int exit_status = 0;
  std::string message;  // fault or cycle-limit report; empty on a normal exit
};

// What a tile spent a stretch of cycles on, for statistics, traces and energy.
struct TileSegment {
  enum Kind : uint8_t { kCompute, kSync, kExchange } kind;
  uint64_t begin, end;  // tile cycles [begin, end)
  // A sync's or exchange's: its barrier's phase; a compute segment's: the phase whose exchange
  // it follows (0 before the first sync).
  uint64_t phase;
  // The tile's dynamic energy since the run began, at the segment's end (the instructions it
  // retired, priced with set_energy_prices): a superstep's is the difference of two.
  double dynamic_pj = 0;
};

// Where a tile is blocked (for deadlock reports).
enum class TileWait : uint8_t { kRunning, kSync, kExchange, kFinished };

class Tile : public sc_core::sc_module, private iss::ExchangeSink, private ComputeBurst {
 public:
  // SRAM as seen from outside the tile: the exchange, the PCIe DMA engine, test benches.
  tlm_utils::multi_passthrough_target_socket<Tile> memory;
  // The chip's sync network and exchange; unbound on the single-tile platform.
  sc_core::sc_port<SyncIf, 1, sc_core::SC_ZERO_OR_MORE_BOUND> sync;
  sc_core::sc_port<ExchangeIf, 1, sc_core::SC_ZERO_OR_MORE_BOUND> exchange;

  Tile(const sc_core::sc_module_name& name, const iss::TileConfig& config, unsigned tile_id = 0);

  // Starts the supervisor at `entry` when simulation runs; the run ends at exit, at a fault,
  // or when the tile reaches max_cycles.
  void start(uint32_t entry, uint64_t max_cycles);
  void set_quantum_cycles(uint64_t cycles) { quantum_cycles_ = cycles; }
  // Runs the core's bursts on `pool` (null: on the tile's own thread). While a burst runs on
  // the pool, the tile buffers its exchange instructions and console lines, and the pool
  // commits them in machine-tile order.
  void set_compute_pool(ComputePool* pool) { pool_ = pool; }
  // What the timeline's segments charge for the instructions retired (hw/energy/).
  void set_energy_prices(const TilePrices& prices) { prices_ = prices; }
  // Another simulator process runs this tile (hw/parallel/ranks.h): this one keeps a replica
  // whose core status follows the bursts' results, and leaves its memory untouched (writes into
  // it are dropped, so its pages are never allocated here).
  void set_replica(bool replica) { replica_ = replica; }
  bool replica() const { return replica_; }
  // Where the core's console lines go (a line is passed without its newline).
  void set_console(iss::Core::ConsoleSink sink);
  // Places the tile on chip `chip` of a machine of `chips` chips of `tiles_per_chip` tiles: its
  // sync and exchange traffic then carries its machine tile number.
  void set_machine(unsigned chip, unsigned chips, unsigned tiles_per_chip, unsigned program_tiles);

  iss::Core& core() { return core_; }
  const iss::Core& core() const { return core_; }
  const iss::TileConfig& config() const { return config_; }
  unsigned id() const { return id_; }  // the tile's number on its chip
  unsigned machine_id() const { return machine_id_; }
  unsigned chip() const { return core_.chip(); }
  bool finished() const { return outcome_.reason != iss::StopReason::kRunning; }
  const TileOutcome& outcome() const { return outcome_; }
  const sc_core::sc_event& finished_event() const { return finished_event_; }
  sc_core::sc_time cycle_time() const { return period_; }
  const std::vector<TileSegment>& timeline() const { return timeline_; }
  // Off: no timeline is kept (nothing will write statistics or a trace of the run).
  void keep_timeline(bool keep) { keep_timeline_ = keep; }
  TileWait waiting() const { return waiting_; }
  // Zero-time write into and read from SRAM (image loader, host runtime).
  void load(uint32_t address, const uint8_t* data, size_t size);
  void read(uint32_t address, uint8_t* data, size_t size) const;

 private:
  SC_HAS_PROCESS(Tile);
  // What the tile's process does when it next runs.
  enum class Step : uint8_t {
    kStart,      // waits for start()
    kRun,        // runs the core's next burst
    kBurstDone,  // the pool ran and committed the burst
    kStopped,    // acts on why the burst stopped (stop_)
    kReleased,   // the barrier it arrived at released it (release_)
    kPhaseEnd,   // its exchange phase is resolved
    kFinished,
  };
  // The tile's SC_METHOD: runs steps until one has to wait, and returns with next_trigger set.
  void step();
  // Waits until simulated time reaches tile cycle `cycle`, then goes on with `next`; false
  // when time is there already.
  bool wait_for_cycle(uint64_t cycle, Step next);
  // Adds a segment to the timeline with the tile's dynamic energy so far.
  void add_segment(TileSegment::Kind kind, uint64_t begin, uint64_t end, uint64_t phase);
  void b_transport(int initiator, tlm::tlm_generic_payload& payload, sc_core::sc_time& delay);
  bool get_direct_mem_ptr(int initiator, tlm::tlm_generic_payload& payload, tlm::tlm_dmi& dmi);
  unsigned transport_dbg(int initiator, tlm::tlm_generic_payload& payload);
  // Checks the payload's range; on success returns the SRAM offset.
  bool access(tlm::tlm_generic_payload& payload, uint32_t& offset);
  void finish(iss::StopReason reason);
  // ComputeBurst: the burst on a host thread, then its effects on the simulation thread.
  void run_burst() noexcept override;
  void commit_burst() override;
  void save_burst(base::ByteWriter& out) const override;
  void load_burst(base::ByteReader& in) override;
  sc_core::sc_time resume_delay() const override;
  // Simulated time from the cycle simulated time is at (synced_) to `cycle`.
  sc_core::sc_time time_until(uint64_t cycle) const;
  // ExchangeSink: the core's exchange instructions, forwarded with the current phase.
  uint64_t send(uint64_t cycle, uint32_t pc, uint32_t address, std::vector<uint32_t> words,
                std::vector<unsigned> destinations) override;
  void select_source(uint64_t cycle, uint32_t pc, int source) override;
  void receive_buffer(uint64_t cycle, uint32_t pc, uint32_t address, uint32_t words) override;
  uint64_t latency_to(unsigned tile) const override;
  uint64_t stream(uint64_t cycle, bool write, uint64_t sm_address, uint32_t address, uint32_t count,
                  std::vector<uint32_t> words) override;

  iss::TileConfig config_;
  unsigned id_;
  unsigned machine_id_;
  iss::ZeroPages<uint8_t> sram_;
  iss::Core core_;
  sc_core::sc_time period_;
  uint64_t quantum_cycles_ = 1u << 20;
  uint64_t max_cycles_ = 0;
  bool started_ = false;
  sc_core::sc_event start_event_;
  sc_core::sc_event finished_event_;
  TileOutcome outcome_;
  uint64_t synced_ = 0;  // tile cycles already matched by simulated time
  uint64_t phase_ = 0;   // current exchange phase (from the last sync release)
  uint64_t compute_begin_ = 0;
  uint64_t streaming_done_ = 0;  // when the last phase's streaming-memory transfers completed
  std::vector<TileSegment> timeline_;
  bool keep_timeline_ = true;
  TilePrices prices_;
  TileWait waiting_ = TileWait::kRunning;
  Step step_ = Step::kStart;
  iss::StopReason stop_ = iss::StopReason::kRunning;  // why the last burst stopped
  SyncRelease release_;                               // the last barrier's outcome
  const SyncRelease* awaited_release_ = nullptr;      // where it appears when the barrier releases
  uint64_t exchange_begin_ = 0;

  // A burst on the pool and what it buffers (exchange calls, console lines) until committed.
  ComputePool* pool_ = nullptr;
  bool replica_ = false;
  sc_core::sc_event burst_done_;
  bool deferring_ = false;
  uint64_t burst_until_ = 0;
  iss::StopReason burst_result_ = iss::StopReason::kRunning;
  std::exception_ptr burst_error_;
  DeferredExchange deferred_exchange_;
  std::vector<std::pair<unsigned, std::string>> deferred_console_;
  iss::Core::ConsoleSink console_;
};

}  // namespace ipu::hw
