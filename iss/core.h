// The tile's processor: an instruction-set simulator for RV32IMF + Zicsr + Xipu running one
// supervisor context and N worker contexts (N = 6 on the Mk2/Bow) on a barrel of N issue slots.
//
// Issue model (docs/tile.md): tile cycle t belongs to slot t mod N. Worker w (1..N) owns slot
// w-1 while it runs and issues in every cycle of that slot, so a context issues at most once
// every N cycles and its pipeline latency is hidden. The supervisor (context 0) issues at most
// once every N cycles, in slots that no running worker owns. An instruction occupying k issue
// slots delays its context's next issue by k*N cycles.
//
// The core works on the tile's SRAM through a raw pointer (the SystemC tile owns the memory and
// grants it to the core, as DMI would) and predecodes each instruction word once.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "amp.h"
#include "datapaths.h"
#include "isa.h"
#include "prng.h"
#include "tile_config.h"
#include "worker_profile.h"
#include "zero_pages.h"

namespace ipu::base {
class ByteWriter;
class ByteReader;
}  // namespace ipu::base

namespace ipu::iss {

enum class TrapCause : uint32_t {
  kInstrMisaligned = 0,
  kInstrAccessFault = 1,
  kIllegalInstruction = 2,
  kBreakpoint = 3,
  kLoadMisaligned = 4,
  kLoadAccessFault = 5,
  kStoreMisaligned = 6,
  kStoreAccessFault = 7,
  kEcallFromM = 11,
  // Not an architectural trap: a program error the IPU model detects (exchange or sync misuse).
  // It always stops the run with a report and is never delivered to mtvec.
  kIpuError = 24,
};
std::string_view trap_cause_name(TrapCause cause);

enum class ContextState : uint8_t { kIdle, kRunning };

// Worker slots the fast barrel loop has a copy of its instruction bodies for (the Mk2's six);
// a tile with more workers runs them through one more, shared, copy.
inline constexpr unsigned kBarrelSlots = 6;
inline constexpr uint32_t kMstatusMie = 1u << 3;
inline constexpr uint32_t kMstatusMpie = 1u << 7;
inline constexpr uint32_t kMstatusMpp = 3u << 11;
inline constexpr uint32_t kMstatusFs = 3u << 13;
inline constexpr uint32_t kMstatusFsInitial = 1u << 13;

// What a context's retired instructions did, for the energy model (hw/energy/) and the flop
// counts: instructions by class, SRAM bytes and flops (iss/insn_class.h, InsnCost). Counted as they
// retire, the same in every loop.
struct ActionCounts {
  std::array<uint64_t, kInsnClasses> instructions{};
  uint64_t sram_read_bytes = 0, sram_written_bytes = 0;
  uint64_t flops = 0;  // floating-point operations (InsnCost::flops; the AMP's, 2 a MAC)
  ActionCounts& operator+=(const ActionCounts& o) {
    for (size_t i = 0; i < kInsnClasses; ++i) instructions[i] += o.instructions[i];
    sram_read_bytes += o.sram_read_bytes, sram_written_bytes += o.sram_written_bytes;
    flops += o.flops;
    return *this;
  }
  void count(InsnClass cls) { ++instructions[static_cast<size_t>(cls)]; }
};

struct Context {
  unsigned id = 0;  // 0 = supervisor, 1..N = workers
  ContextState state = ContextState::kIdle;
  std::array<uint32_t, 33> x{};  // x[32] receives writes to x0, so x[0] stays zero
  std::array<uint32_t, 32> f{};
  uint32_t pc = 0;
  uint32_t fflags = 0, frm = 0;
  uint32_t mstatus = kMstatusFsInitial, mtvec = 0, mscratch = 0, mepc = 0, mcause = 0, mtval = 0;
  uint64_t instret = 0;        // instructions retired
  uint64_t issues = 0;         // issue slots used (retired + stalled + trapped)
  uint64_t issue_cycle = 0;    // tile cycle of the current (or last) issue
  uint64_t next_issue = 0;     // earliest tile cycle of the next issue
  uint64_t runs = 0;           // times started (workers)
  uint64_t active_cycles = 0;  // tile cycles spent running (start to exit), summed over runs
  uint64_t started_at = 0;
  uint64_t cycle_offset = 0;  // mcycle writes shift this context's view of the tile cycle
  uint64_t instret_offset = 0;
  uint32_t last_jump_from = 0;  // pc of the last taken jump, reported when a fetch faults
  uint32_t fpctl = 0;           // CSR ipu_fpctl: bit 0 = stochastic rounding of f16 results
  // CSRs ipu_stacklo, ipu_stackhi: a store through sp below stack_low faults (0: no guard).
  uint32_t stack_low = 0, stack_high = 0;
  Xoroshiro128aox prng;  // this context's PRNG stream (kept across worker runs)
  AmpUnit amp;           // this context's AMP weights and accumulators
  ActionCounts actions;
  std::string console_line;
  // The fast barrel's program counter for this worker while it runs (fast_loops.cpp).
  const Decoded* fast_entry = nullptr;
};

enum class StopReason : uint8_t {
  kRunning,
  kExited,
  kFault,
  kCycleLimit,
  kSync,  // the supervisor arrived at ipu.sync: call resume_after_sync() with the release cycle
  kExchangeEnd,  // the exchange phase ended: call resume_after_exchange() once it is resolved
};

// A tile reference in ipu.send's destination list or ipu.recvsrc: a plain number is a tile of
// the sender's own chip (so a one-chip program replicated over chips stays on its chip);
// kRemoteTile | chip << 16 | tile names a tile of any chip of the machine.
inline constexpr uint32_t kRemoteTile = 0x40000000u;
inline constexpr uint32_t remote_tile(unsigned chip, unsigned tile) {
  return kRemoteTile | chip << 16 | tile;
}

// Where the core's exchange instructions go: the SystemC tile forwards them to the exchange
// block. Cycles are the tile's local cycles (global once syncs have aligned the tiles).
class ExchangeSink {
 public:
  virtual ~ExchangeSink() = default;
  // `pc` is the instruction's, for the exchange's error reports to name its source line.
  // Words leave the tile from cycle + 1; returns the cycle from which the send port is free.
  virtual uint64_t send(uint64_t cycle, uint32_t pc, uint32_t address, std::vector<uint32_t> words,
                        std::vector<unsigned> destinations) = 0;
  // Tiles are machine tile numbers (chip * tiles per chip + tile; the tile itself on one chip).
  // Listen to tile `source` (-1: nothing) for words arriving from cycle + 1.
  virtual void select_source(uint64_t cycle, uint32_t pc, int source) = 0;
  // Words arriving from cycle + 1 land at address, address + 4, ... up to `words` of them.
  virtual void receive_buffer(uint64_t cycle, uint32_t pc, uint32_t address, uint32_t words) = 0;
  // A streaming-memory transfer of `count` words between tile address `address` and
  // streaming-memory address `sm_address`: a write carries `words`; a read's words land by the
  // tile's next sync. Returns the cycle from which the send port is free.
  virtual uint64_t stream(uint64_t cycle, bool write, uint64_t sm_address, uint32_t address,
                          uint32_t count, std::vector<uint32_t> words) = 0;
  // Cycles from a word leaving this tile to its arrival at machine tile `tile` (the exchange's
  // configuration; CSR ipu.xlat).
  virtual uint64_t latency_to(unsigned tile) const = 0;
};

struct FaultReport {
  unsigned context = 0;
  uint32_t pc = 0;
  uint64_t cycle = 0;
  TrapCause cause = TrapCause::kIllegalInstruction;
  uint32_t tval = 0;
  std::string message;  // one line naming context, pc, cycle, instruction and address
};

class Core;

// A debugger's hooks into the core (the GDB server, debug/gdb_server.h). While one is attached
// every instruction goes through the interpreter's general loop, which calls it; a hook may block
// (the debugger has stopped the platform) and change registers, pcs and memory meanwhile.
class DebugHook {
 public:
  virtual ~DebugHook() = default;
  // Context c is about to issue the instruction at c.pc in cycle c.issue_cycle. On return the
  // instruction at c.pc (changed or not) issues.
  virtual void before_issue(Core& core, Context& c) = 0;
  // c's instruction loads (write false) or stores `bytes` bytes at `address`.
  virtual void on_access(Core& core, const Context& c, uint32_t address, uint32_t bytes,
                         bool write) = 0;
  // c faulted with no trap handler: the report is in core.fault(); the run then ends as usual.
  virtual void on_fault(Core& core, Context& c) = 0;
};

class Core {
 public:
  using ConsoleSink = std::function<void(unsigned context, std::string_view line)>;
  using TraceSink = std::function<void(const Context&, uint32_t pc, uint32_t word)>;
  // Where a pc is in the program's source ("main at hello.c:12"; "" unknown), for reports. May
  // be called from the compute pool's threads.
  using PcLocator = std::function<std::string(uint32_t pc)>;

  Core(const TileConfig& config, uint8_t* sram);

  // Puts every context in its reset state; the supervisor starts at `entry` in cycle 0.
  void reset(uint32_t entry);
  // Address of the `tohost` word (0: none). A store of (status << 1) | 1 there ends the run.
  void set_tohost(uint32_t address) { tohost_ = address; }
  void set_console(ConsoleSink sink) { console_ = std::move(sink); }
  void set_trace(TraceSink sink) { trace_ = std::move(sink); }
  void set_locator(PcLocator locator) { locator_ = std::move(locator); }
  void set_tile_id(unsigned id) { tile_id_ = id; }
  void set_tile_count(unsigned count) { tile_count_ = count; }
  void set_program_tiles(unsigned count) { program_tiles_ = count; }
  // The tile's chip and the machine's chip count (CSRs ipu.chipid, ipu.chips).
  void set_chip(unsigned chip, unsigned chips) { chip_ = chip, chip_count_ = chips; }
  // Bytes of streaming memory the tile's gateway holds (0: none, ipu.smwrite/smread fail).
  void set_streaming_memory(uint64_t bytes) { streaming_bytes_ = bytes; }
  void set_exchange(ExchangeSink* sink) { exchange_ = sink; }
  // Blocks to compute with their RTL instead of the C++ models (datapaths.h).
  void set_datapaths(const TileDatapaths& datapaths) { datapaths_ = datapaths; }
  // false: every instruction goes through the general interpreter loop, the reference the
  // fast loops must match exactly (ipu-sim --interpreter general). Tracing always does.
  void set_fast_path(bool on) { fast_path_ = on; }
  // A debugger to call before each instruction, on each load and store, and on a fault (null:
  // none). Call between runs, or from the hook itself to detach.
  void set_debug(DebugHook* hook) { debug_ = hook; }
  DebugHook* debug() const { return debug_; }
  // What the workers ran (worker_profile.h): off until enabled, kept across reset().
  WorkerProfile& profile() { return profile_; }
  const WorkerProfile& profile() const { return profile_; }
  // Worker `worker`'s run in progress, up to its last issue; nullopt when it is idle.
  std::optional<WorkerRun> open_run(unsigned worker) const {
    const Context& c = contexts_.at(worker);
    if (worker == 0 || c.state != ContextState::kRunning) return std::nullopt;
    return profile_.open_run(worker, c.issue_cycle + 1, c.instret, c.actions.flops);
  }

  // After StopReason::kSync: the barrier released at `cycle`; the tile resumes then, in a new
  // exchange phase.
  void resume_after_sync(uint64_t cycle);
  // After StopReason::kExchangeEnd: the exchange was resolved; the boundary instruction runs.
  void resume_after_exchange();
  // Stops the run from outside (an error the exchange or sync block found for this tile).
  void stop_with_error(const std::string& message);
  uint32_t sync_group() const { return sync_group_; }
  // Tile cycle of the pending sync arrival or exchange boundary.
  uint64_t blocked_at() const { return blocked_at_; }
  bool in_exchange_phase() const { return exchange_phase_; }
  unsigned tile_id() const { return tile_id_; }
  unsigned tile_count() const { return tile_count_; }  // tiles per chip
  unsigned machine_tile_id() const { return chip_ * tile_count_ + tile_id_; }
  unsigned chip() const { return chip_; }

  // A tile reference of ipu.send's destination list or ipu.recvsrc (kRemoteTile below) as a
  // machine tile number (chip * tiles per chip + tile); false when no such tile exists.
  bool machine_tile(uint32_t ref, unsigned& tile) const;
  std::string describe_tile_ref(uint32_t ref) const;
  std::string tile_label() const;  // "tile 5" on one chip, "chip 1 tile 5" on a machine  // "tile
                                   // 5" / "chip 2 tile 5 (4 chips)"

  // Runs until the program ends or every remaining issue is at tile cycle >= until.
  // Returns kCycleLimit when paused by `until`; call again to continue.
  StopReason run(uint64_t until);

  // Forgets predecoded instructions in [address, address + bytes) after an external write.
  void invalidate(uint32_t address, uint32_t bytes);

  StopReason stop_reason() const { return stop_; }
  int exit_status() const { return exit_status_; }
  const FaultReport& fault() const { return fault_; }
  // Tile cycles elapsed: one past the last issue cycle.
  uint64_t cycles() const { return cycles_; }
  uint64_t instructions_retired() const;
  ActionCounts actions() const;  // every context's, summed
  unsigned worker_contexts() const { return workers_; }
  const Context& context(unsigned id) const { return contexts_.at(id); }
  Context& context(unsigned id) { return contexts_.at(id); }
  // One line per running context: "context N pc 0x...: <instruction>", for stall reports.
  std::string describe_running_contexts() const;
  uint32_t read_word(uint32_t address) const;  // 0 outside SRAM
  uint32_t sram_base() const { return base_; }
  uint32_t sram_bytes() const { return size_; }
  // A debugger's view of memory: false (and nothing copied) unless all of it lies in SRAM. A
  // write forgets the predecoded instructions it covers.
  bool debug_read(uint32_t address, uint8_t* out, uint32_t bytes) const;
  bool debug_write(uint32_t address, const uint8_t* data, uint32_t bytes);
  // A debugger's view of a context's CSR `number` (as csrr would read it; a write as csrw, with
  // the same masks): false for a CSR the core does not have or that cannot be written.
  bool debug_csr(Context& c, unsigned number, uint32_t& value);
  // CSR ipu.wentry: where workers started by ipu.run begin (0: at the function itself).
  uint32_t worker_entry() const { return worker_entry_; }
  bool debug_set_csr(Context& c, unsigned number, uint32_t value);
  // "pc 0x0004c010: addi a0,a0,1 in main at hello.c:12" (the source only with a locator).
  std::string where(uint32_t pc) const;

  // What the rest of the machine reads of the core after a run (its cycles, stop and sync
  // state, each context's state, pc and counters, the fault): the simulator process that runs
  // the tile sends it to those that keep a replica of it (hw/parallel/ranks.h). A replica's
  // registers and memory stay as they were.
  void save_status(base::ByteWriter& out) const;
  void load_status(base::ByteReader& in);

 private:
  enum class CsrOp : uint8_t { kWrite, kSet, kClear };
  struct CsrBehaviour;
  static const CsrBehaviour kCsrBehaviour[];

  // kObserved: an instruction trace or a debugger watches each instruction.
  template <bool kObserved>
  void execute(Context& c, uint64_t budget);
  // The fast loops (fast_loops.cpp). Supervisor alone: runs at most `limit` instructions
  // from tile cycle t and returns how many ran. Every worker in step: runs from cycle t, one
  // worker a cycle, up to cycle `limit` and returns the cycle it stopped at. Both stop before
  // the first instruction the general loop must run.
  uint64_t run_fast_supervisor(uint64_t t, uint64_t limit);
  uint64_t run_fast_barrel(uint64_t t, uint64_t limit);
  // Every worker runs and issues next in the first cycle of its slot from t: the fast barrel
  // can take over at t.
  bool workers_in_step(uint64_t t) const;
  bool fast_path_usable() const {
    return fast_path_ && !observed() && datapaths_.prng == nullptr &&
           datapaths_.f32_to_f16 == nullptr && datapaths_.amp == nullptr;
  }
  bool observed() const { return trace_ || debug_ != nullptr; }
  Decoded& predecode(uint32_t offset);  // decodes the SRAM word at offset into its entry
  template <bool kObserved>
  void run_full_barrel(uint64_t until);
  uint64_t supervisor_issue_cycle(uint64_t earliest) const;
  bool any_worker_running() const;
  bool csr_access(Context& c, unsigned number, CsrOp op, uint32_t operand, bool write,
                  uint32_t& old);
  void console_put(Context& c, uint32_t byte);
  void flush_console();
  void start_worker(Context& supervisor, Context& worker, uint32_t function, uint32_t argument);
  void finish_worker(Context& worker);
  void end_run(StopReason reason, uint64_t last_cycle);
  void report_fault(Context& c, uint32_t pc, TrapCause cause, uint32_t tval);
  void report_error(Context& c, uint32_t pc, const std::string& what);

  TileConfig config_;
  uint8_t* sram_;
  uint32_t base_, size_;
  unsigned workers_;
  unsigned tile_id_ = 0;
  // One per SRAM word, and one past the end that stays undecoded; all-zero bytes = kUndecoded.
  ZeroPages<Decoded> decoded_;
  // One flag per 4 KiB of SRAM that has ever held a decoded instruction: invalidating data
  // pages (loads, exchange, DMA) then never touches their predecode entries.
  std::vector<uint8_t> decoded_pages_;
  // The supervisor, then the workers.
  std::array<Context, kMaxWorkerContexts + 1> contexts_{};
  uint32_t tohost_ = 0;
  uint32_t worker_entry_ = 0;    // CSR ipu.wentry (crt0: __ipu_worker_entry)
  uint32_t latency_query_ = 0;   // CSR ipu.xlat: the latency to the tile last written
  uint32_t exchange_dests_ = 0;  // CSR ipu.xdests: address of {count, tile ids...}
  unsigned tile_count_ = 1;
  unsigned program_tiles_ = 1;  // tiles of this chip that have a program
  unsigned chip_ = 0, chip_count_ = 1;
  ExchangeSink* exchange_ = nullptr;
  TileDatapaths datapaths_;
  bool fast_path_ = true;
  bool exchange_phase_ = false;  // between a sync release and the next run/xend/sync/exit
  bool sync_released_ = false;   // the pending ipu.sync completes when re-executed
  uint32_t sync_group_ = 0;
  uint64_t blocked_at_ = 0;
  uint64_t send_port_free_at_ = 0;
  uint64_t sm_address_ = 0;  // CSRs ipu.smaddr, ipu.smaddrh
  uint64_t streaming_bytes_ = 0;
  uint64_t cycles_ = 0;
  uint64_t time_ = 0;  // the scheduler has issued everything before this tile cycle
  StopReason stop_ = StopReason::kRunning;
  int exit_status_ = 0;
  FaultReport fault_;
  ConsoleSink console_;
  TraceSink trace_;
  PcLocator locator_;
  DebugHook* debug_ = nullptr;
  // A replica's view of the instruction at each context's pc, as load_status() received it
  // (its SRAM holds no program), for where(); empty in a core that runs.
  std::vector<std::pair<uint32_t, uint32_t>> status_words_;
  WorkerProfile profile_;
};

}  // namespace ipu::iss
