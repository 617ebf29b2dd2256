#include "core.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "base/byte_stream.h"
#include "csr.h"
#include "fpu.h"

namespace ipu::iss {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "tile memory is accessed in host order");

namespace {

constexpr uint64_t kNever = ~uint64_t{0};

std::string context_name(unsigned id) {
  return id == 0 ? std::string("context 0 (supervisor)") : fmt::format("context {} (worker)", id);
}

}  // namespace

std::string_view trap_cause_name(TrapCause cause) {
  switch (cause) {
    case TrapCause::kInstrMisaligned: return "instruction address misaligned";
    case TrapCause::kInstrAccessFault: return "instruction access fault";
    case TrapCause::kIllegalInstruction: return "illegal instruction";
    case TrapCause::kBreakpoint: return "breakpoint";
    case TrapCause::kLoadMisaligned: return "load address misaligned";
    case TrapCause::kLoadAccessFault: return "load access fault";
    case TrapCause::kStoreMisaligned: return "store address misaligned";
    case TrapCause::kStoreAccessFault: return "store access fault";
    case TrapCause::kEcallFromM: return "environment call";
    case TrapCause::kIpuError: return "IPU program error";
  }
  return "unknown trap";
}

// ---- CSRs: behaviour bound to the table in csr.h, one entry per CsrId ----

struct Core::CsrBehaviour {
  uint32_t (*read)(const Core&, const Context&);
  void (*write)(Core&, Context&, uint32_t);  // nullptr: writes ignored (WARL constant)
};

namespace {
constexpr uint32_t kMisa = (1u << 30) | (1u << 23) | (1u << 12) | (1u << 8) | (1u << 5);
uint32_t sd_bit(uint32_t mstatus) { return (mstatus & kMstatusFs) == kMstatusFs ? 1u << 31 : 0; }
}  // namespace

const Core::CsrBehaviour Core::kCsrBehaviour[] = {
    // fflags, frm, fcsr
    {[](const Core&, const Context& c) { return c.fflags; },
     [](Core&, Context& c, uint32_t v) {
       c.fflags = v & 0x1f;
       c.mstatus |= kMstatusFs;
     }},
    {[](const Core&, const Context& c) { return c.frm; },
     [](Core&, Context& c, uint32_t v) {
       c.frm = v & 7;
       c.mstatus |= kMstatusFs;
     }},
    {[](const Core&, const Context& c) { return (c.frm << 5) | c.fflags; },
     [](Core&, Context& c, uint32_t v) {
       c.fflags = v & 0x1f;
       c.frm = (v >> 5) & 7;
       c.mstatus |= kMstatusFs;
     }},
    // cycle, instret, cycleh, instreth
    {[](const Core&, const Context& c) {
       return static_cast<uint32_t>(c.issue_cycle + c.cycle_offset);
     },
     nullptr},
    {[](const Core&, const Context& c) {
       return static_cast<uint32_t>(c.instret + c.instret_offset);
     },
     nullptr},
    {[](const Core&, const Context& c) {
       return static_cast<uint32_t>((c.issue_cycle + c.cycle_offset) >> 32);
     },
     nullptr},
    {[](const Core&, const Context& c) {
       return static_cast<uint32_t>((c.instret + c.instret_offset) >> 32);
     },
     nullptr},
    // mstatus, misa, mie, mtvec
    {[](const Core&, const Context& c) { return c.mstatus | kMstatusMpp | sd_bit(c.mstatus); },
     [](Core&, Context& c, uint32_t v) {
       c.mstatus = v & (kMstatusMie | kMstatusMpie | kMstatusFs);
     }},
    {[](const Core&, const Context&) { return kMisa; }, [](Core&, Context&, uint32_t) {}},
    {[](const Core&, const Context&) { return 0u; }, [](Core&, Context&, uint32_t) {}},
    {[](const Core&, const Context& c) { return c.mtvec; },
     [](Core&, Context& c, uint32_t v) { c.mtvec = v & ~2u; }},  // modes: direct (0), vectored (1)
    // mscratch, mepc, mcause, mtval, mip
    {[](const Core&, const Context& c) { return c.mscratch; },
     [](Core&, Context& c, uint32_t v) { c.mscratch = v; }},
    {[](const Core&, const Context& c) { return c.mepc; },
     [](Core&, Context& c, uint32_t v) { c.mepc = v & ~3u; }},
    {[](const Core&, const Context& c) { return c.mcause; },
     [](Core&, Context& c, uint32_t v) { c.mcause = v; }},
    {[](const Core&, const Context& c) { return c.mtval; },
     [](Core&, Context& c, uint32_t v) { c.mtval = v; }},
    {[](const Core&, const Context&) { return 0u; }, [](Core&, Context&, uint32_t) {}},
    // mcycle, minstret, mcycleh, minstreth: a write sets this context's view of the counter
    {[](const Core&, const Context& c) {
       return static_cast<uint32_t>(c.issue_cycle + c.cycle_offset);
     },
     [](Core&, Context& c, uint32_t v) {
       const uint64_t now = c.issue_cycle + c.cycle_offset;
       c.cycle_offset = ((now & ~uint64_t{0xffffffff}) | v) - c.issue_cycle;
     }},
    {[](const Core&, const Context& c) {
       return static_cast<uint32_t>(c.instret + c.instret_offset);
     },
     [](Core&, Context& c, uint32_t v) {
       const uint64_t now = c.instret + c.instret_offset;
       c.instret_offset = ((now & ~uint64_t{0xffffffff}) | v) - c.instret;
     }},
    {[](const Core&, const Context& c) {
       return static_cast<uint32_t>((c.issue_cycle + c.cycle_offset) >> 32);
     },
     [](Core&, Context& c, uint32_t v) {
       const uint64_t now = c.issue_cycle + c.cycle_offset;
       c.cycle_offset = ((uint64_t{v} << 32) | (now & 0xffffffff)) - c.issue_cycle;
     }},
    {[](const Core&, const Context& c) {
       return static_cast<uint32_t>((c.instret + c.instret_offset) >> 32);
     },
     [](Core&, Context& c, uint32_t v) {
       const uint64_t now = c.instret + c.instret_offset;
       c.instret_offset = ((uint64_t{v} << 32) | (now & 0xffffffff)) - c.instret;
     }},
    // mvendorid, marchid, mimpid, mhartid
    {[](const Core&, const Context&) { return 0u; }, nullptr},
    {[](const Core&, const Context&) { return 0u; }, nullptr},
    {[](const Core&, const Context&) { return 0u; }, nullptr},
    {[](const Core&, const Context& c) { return c.id; }, nullptr},
    // ipu.console, ipu.wentry
    {[](const Core&, const Context&) { return 0u; },
     [](Core& core, Context& c, uint32_t v) { core.console_put(c, v); }},
    {[](const Core& core, const Context&) { return core.worker_entry_; },
     [](Core& core, Context&, uint32_t v) { core.worker_entry_ = v & ~3u; }},
    // ipu.fpctl
    {[](const Core&, const Context& c) { return c.fpctl; },
     [](Core&, Context& c, uint32_t v) { c.fpctl = v & 1; }},
    // ipu.prng0..3: the context's PRNG state words s0 low, s0 high, s1 low, s1 high
    {[](const Core&, const Context& c) { return static_cast<uint32_t>(c.prng.s0); },
     [](Core&, Context& c, uint32_t v) { c.prng.s0 = (c.prng.s0 & ~uint64_t{0xffffffff}) | v; }},
    {[](const Core&, const Context& c) { return static_cast<uint32_t>(c.prng.s0 >> 32); },
     [](Core&, Context& c, uint32_t v) {
       c.prng.s0 = (c.prng.s0 & 0xffffffff) | (uint64_t{v} << 32);
     }},
    {[](const Core&, const Context& c) { return static_cast<uint32_t>(c.prng.s1); },
     [](Core&, Context& c, uint32_t v) { c.prng.s1 = (c.prng.s1 & ~uint64_t{0xffffffff}) | v; }},
    {[](const Core&, const Context& c) { return static_cast<uint32_t>(c.prng.s1 >> 32); },
     [](Core&, Context& c, uint32_t v) {
       c.prng.s1 = (c.prng.s1 & 0xffffffff) | (uint64_t{v} << 32);
     }},
    // ipu.ampcfg (writing it restarts the phase count and clears the accumulators), ampin, ampout
    {[](const Core&, const Context& c) { return c.amp.config; },
     [](Core&, Context& c, uint32_t v) {
       c.amp.config = v & 0xf;
       c.amp.phase = 0;
       c.amp.acc.fill(0.0f);
     }},
    {[](const Core&, const Context& c) { return c.amp.input; },
     [](Core&, Context& c, uint32_t v) { c.amp.input = v; }},
    {[](const Core&, const Context& c) { return c.amp.output; },
     [](Core&, Context& c, uint32_t v) { c.amp.output = v; }},
    // ipu.xdests, ipu.tileid, ipu.tiles, ipu.chipid, ipu.chips
    {[](const Core& core, const Context&) { return core.exchange_dests_; },
     [](Core& core, Context&, uint32_t v) { core.exchange_dests_ = v; }},
    // ipu.smaddr, ipu.smaddrh: the streaming-memory address, low and high words
    {[](const Core& core, const Context&) { return static_cast<uint32_t>(core.sm_address_); },
     [](Core& core, Context&, uint32_t v) {
       core.sm_address_ = (core.sm_address_ & ~uint64_t{0xffffffff}) | v;
     }},
    {[](const Core& core, const Context&) { return static_cast<uint32_t>(core.sm_address_ >> 32); },
     [](Core& core, Context&, uint32_t v) {
       core.sm_address_ = (core.sm_address_ & 0xffffffff) | (uint64_t{v} << 32);
     }},
    // ipu.stacklo, ipu.stackhi: this context's stack bounds (word-aligned)
    {[](const Core&, const Context& c) { return c.stack_low; },
     [](Core&, Context& c, uint32_t v) { c.stack_low = v & ~3u; }},
    {[](const Core&, const Context& c) { return c.stack_high; },
     [](Core&, Context& c, uint32_t v) { c.stack_high = v & ~3u; }},
    // ipu.xlat: the exchange latency to the tile last written (the configuration's: base,
    // columns, IPU-Link hops), for firmware that times its sends (ipu.h, ipu_exchange_latency);
    // ~0 for a tile the machine does not have.
    {[](const Core& core, const Context&) { return core.latency_query_; },
     [](Core& core, Context&, uint32_t v) {
       unsigned to = 0;
       core.latency_query_ = core.exchange_ != nullptr && core.machine_tile(v, to)
                                 ? static_cast<uint32_t>(core.exchange_->latency_to(to))
                                 : ~0u;
     }},
    {[](const Core& core, const Context&) { return core.tile_id_; }, nullptr},
    {[](const Core& core, const Context&) { return core.tile_count_; }, nullptr},
    {[](const Core& core, const Context&) { return core.chip_; }, nullptr},
    {[](const Core& core, const Context&) { return core.chip_count_; }, nullptr},
    {[](const Core& core, const Context&) { return core.program_tiles_; }, nullptr},
};

std::string_view csr_name(unsigned number) {
  const int i = csr_index(number);
  return i < 0 ? std::string_view{} : kCsrTable[i].name;
}

int csr_index(unsigned number) {
  static const auto index = [] {
    std::array<int16_t, 4096> table;
    table.fill(-1);
    for (size_t i = 0; i < std::size(kCsrTable); ++i)
      table[kCsrTable[i].number] = static_cast<int16_t>(i);
    return table;
  }();
  return number < 4096 ? index[number] : -1;
}

bool Core::csr_access(Context& c, unsigned number, CsrOp op, uint32_t operand, bool write,
                      uint32_t& old) {
  const int i = csr_index(number);
  if (i < 0) return false;
  const CsrBehaviour& b = kCsrBehaviour[i];
  // Writing a read-only CSR (number bits 11:10 == 3, or no write behaviour) is illegal.
  const bool read_only = kCsrTable[i].access == CsrAccess::kReadOnly || b.write == nullptr;
  if (write && read_only) return false;
  old = b.read(*this, c);
  if (!write) return true;
  const uint32_t value = op == CsrOp::kWrite ? operand
                         : op == CsrOp::kSet ? (old | operand)
                                             : (old & ~operand);
  b.write(*this, c, value);
  return true;
}

// ---- construction and reset ----

Core::Core(const TileConfig& config, uint8_t* sram)
    : config_(config),
      sram_(sram),
      base_(config.sram_base),
      size_(config.sram_bytes),
      workers_(config.worker_contexts),
      decoded_(config.sram_bytes / 4 + 1),  // + 1: never decoded, past the end of SRAM
      decoded_pages_(config.sram_bytes / 4096 + 1, 0) {
  static_assert(std::size(kCsrTable) == static_cast<size_t>(CsrId::kCount));
  if (std::size(kCsrBehaviour) != std::size(kCsrTable))
    throw std::logic_error("CSR behaviour table does not match csr.h");
  if (workers_ < 1 || workers_ > kMaxWorkerContexts)
    throw std::invalid_argument(
        fmt::format("tile.worker-contexts must be 1..{}, not {}", kMaxWorkerContexts, workers_));
  if (size_ == 0 || size_ % 4 != 0 || base_ % 4 != 0 || base_ == 0 ||
      uint64_t{base_} + size_ > (uint64_t{1} << 32))
    throw std::invalid_argument(fmt::format(
        "tile SRAM window base 0x{:x} size 0x{:x} must be word-aligned, non-empty, above 0 and "
        "within 32 bits",
        base_, size_));
}

void Core::reset(uint32_t entry) {
  for (unsigned i = 0; i <= kMaxWorkerContexts; ++i) {
    contexts_[i] = Context{};
    contexts_[i].id = i;
    contexts_[i].prng = Xoroshiro128aox::reset_state(tile_id_, i);
  }
  decoded_.clear();
  std::fill(decoded_pages_.begin(), decoded_pages_.end(), 0);
  worker_entry_ = 0;
  cycles_ = 0;
  time_ = 0;
  stop_ = StopReason::kRunning;
  exit_status_ = 0;
  fault_ = {};
  exchange_phase_ = false;
  sync_released_ = false;
  sync_group_ = 0;
  blocked_at_ = 0;
  send_port_free_at_ = 0;
  exchange_dests_ = 0;
  sm_address_ = 0;
  profile_.clear();
  Context& supervisor = contexts_[0];
  supervisor.state = ContextState::kRunning;
  supervisor.pc = entry;
  supervisor.runs = 1;
}

void Core::invalidate(uint32_t address, uint32_t bytes) {
  const uint64_t begin = std::max<uint64_t>(address, base_);
  const uint64_t end = std::min<uint64_t>(uint64_t{address} + bytes, uint64_t{base_} + size_);
  for (uint64_t a = begin & ~uint64_t{3}; a < end; a += 4) {
    const uint64_t page = (a - base_) / 4096;
    if (!decoded_pages_[page]) {
      a = base_ + (page + 1) * 4096 - 4;  // nothing decoded in this page: skip it
      continue;
    }
    decoded_[(a - base_) / 4] = Decoded{};
  }
}

uint32_t Core::read_word(uint32_t address) const {
  const uint32_t off = address - base_;
  if (off > size_ - 4 || (address & 3)) return 0;
  uint32_t w;
  std::memcpy(&w, sram_ + off, 4);
  return w;
}

bool Core::debug_read(uint32_t address, uint8_t* out, uint32_t bytes) const {
  const uint64_t off = uint64_t{address} - base_;
  if (address < base_ || off + bytes > size_) return false;
  std::memcpy(out, sram_ + off, bytes);
  return true;
}

bool Core::debug_write(uint32_t address, const uint8_t* data, uint32_t bytes) {
  const uint64_t off = uint64_t{address} - base_;
  if (address < base_ || off + bytes > size_) return false;
  std::memcpy(sram_ + off, data, bytes);
  invalidate(address, bytes);
  return true;
}

bool Core::debug_csr(Context& c, unsigned number, uint32_t& value) {
  return csr_access(c, number, CsrOp::kSet, 0, false, value);
}

bool Core::debug_set_csr(Context& c, unsigned number, uint32_t value) {
  uint32_t old = 0;
  return csr_access(c, number, CsrOp::kWrite, value, true, old);
}

uint64_t Core::instructions_retired() const {
  uint64_t n = 0;
  for (unsigned i = 0; i <= workers_; ++i) n += contexts_[i].instret;
  return n;
}

ActionCounts Core::actions() const {
  ActionCounts sum;
  for (unsigned i = 0; i <= workers_; ++i) {
    // Integer instructions are those the other classes leave (count_retired).
    ActionCounts a = contexts_[i].actions;
    uint64_t others = 0;
    for (size_t k = 0; k < kInsnClasses; ++k)
      if (k != static_cast<size_t>(InsnClass::kInteger)) others += a.instructions[k];
    a.instructions[static_cast<size_t>(InsnClass::kInteger)] = contexts_[i].instret - others;
    sum += a;
  }
  return sum;
}

// ---- scheduling ----

uint64_t Core::supervisor_issue_cycle(uint64_t earliest) const {
  for (uint64_t t = earliest; t < earliest + workers_; ++t)
    if (contexts_[1 + t % workers_].state != ContextState::kRunning) return t;
  return kNever;  // every slot is held by a running worker
}

StopReason Core::run(uint64_t until) {
  if (stop_ == StopReason::kCycleLimit) stop_ = StopReason::kRunning;
  while (stop_ == StopReason::kRunning) {
    Context* next = nullptr;
    uint64_t t = kNever;
    unsigned running_workers = 0;
    for (unsigned w = 1; w <= workers_; ++w) {
      Context& c = contexts_[w];
      if (c.state != ContextState::kRunning) continue;
      ++running_workers;
      if (c.next_issue < t) {
        t = c.next_issue;
        next = &c;
      }
    }
    Context& supervisor = contexts_[0];
    if (supervisor.state == ContextState::kRunning) {
      // The supervisor may have been shut out while every slot was held: never in the past.
      const uint64_t s = supervisor_issue_cycle(std::max(supervisor.next_issue, time_));
      if (s < t) {
        t = s;
        next = &supervisor;
      }
    }
    if (running_workers == workers_ && t < until) {
      if (observed())
        run_full_barrel<true>(until);
      else
        run_full_barrel<false>(until);
      continue;
    }
    if (next == nullptr || t >= until) {
      stop_ = StopReason::kCycleLimit;
      if (until != kNever) cycles_ = std::max(cycles_, until);
      break;
    }
    next->next_issue = t;
    // The supervisor alone issues every N cycles with nothing to arbitrate: run it in a batch.
    const uint64_t budget = running_workers == 0 ? (until - t + workers_ - 1) / workers_ : 1;
    if (running_workers == 0 && fast_path_usable()) {
      const uint64_t ran = run_fast_supervisor(t, budget);
      // Stopped early: the general loop runs the next instruction.
      if (ran < budget) execute<false>(*next, 1);
      time_ = next->issue_cycle + 1;
      continue;
    }
    if (observed())
      execute<true>(*next, budget);
    else
      execute<false>(*next, budget);
    time_ = next->issue_cycle + 1;
  }
  return stop_;
}

// Every slot is held by a running worker, so the supervisor cannot issue and the workers issue
// in slot order, one per cycle, each in its own slot. This loop keeps that exact interleaving
// without the general scheduler's search; it returns at the first change (a worker exits, the
// run ends) or at `until`.
template <bool kObserved>
void Core::run_full_barrel(uint64_t until) {
  uint64_t t = time_;
  unsigned slot =
      static_cast<unsigned>(t % workers_);  // kept in step with t: no division per cycle
  for (; t < until; ++t, slot = slot + 1 == workers_ ? 0 : slot + 1) {
    if constexpr (!kObserved) {
      if (fast_path_usable() && workers_in_step(t)) {
        t = run_fast_barrel(t, until);
        if (t == until) break;
        slot = static_cast<unsigned>(t % workers_);  // the general loop runs this worker's next
      }
    }
    Context& w = contexts_[1 + slot];
    if (w.next_issue != t) continue;  // still inside a multi-slot instruction
    execute<kObserved>(w, 1);
    if (stop_ != StopReason::kRunning || w.state != ContextState::kRunning) {
      time_ = t + 1;
      return;
    }
  }
  time_ = t;
}

bool Core::workers_in_step(uint64_t t) const {
  for (unsigned w = 1; w <= workers_; ++w) {
    const Context& c = contexts_[w];
    if (c.state != ContextState::kRunning ||
        c.next_issue != t + (w - 1 + workers_ - t % workers_) % workers_)
      return false;
  }
  return true;
}

// ---- sync and exchange ----

bool Core::any_worker_running() const {
  for (unsigned w = 1; w <= workers_; ++w)
    if (contexts_[w].state == ContextState::kRunning) return true;
  return false;
}

void Core::resume_after_sync(uint64_t cycle) {
  Context& supervisor = contexts_[0];
  sync_released_ = true;
  supervisor.next_issue = std::max(supervisor.next_issue, cycle);
  time_ = std::max(time_, cycle);
  stop_ = StopReason::kRunning;
}

void Core::resume_after_exchange() { stop_ = StopReason::kRunning; }

void Core::stop_with_error(const std::string& message) {
  fault_ = {};
  fault_.context = 0;
  fault_.pc = contexts_[0].pc;
  fault_.cycle = blocked_at_;
  fault_.cause = TrapCause::kIpuError;
  fault_.message = message;
  end_run(StopReason::kFault, blocked_at_);
}

void Core::report_error(Context& c, uint32_t pc, const std::string& what) {
  fault_.context = c.id;
  fault_.pc = pc;
  fault_.cycle = c.issue_cycle;
  fault_.cause = TrapCause::kIpuError;
  fault_.tval = 0;
  fault_.message = fmt::format("{} {}: {} at {} (cycle {})", tile_label(), context_name(c.id), what,
                               where(pc), c.issue_cycle);
  if (debug_ != nullptr) debug_->on_fault(*this, c);
  end_run(StopReason::kFault, c.issue_cycle);
}

// ---- workers, console, end of run ----

void Core::start_worker(Context& supervisor, Context& worker, uint32_t function,
                        uint32_t argument) {
  const unsigned id = worker.id;
  const uint64_t runs = worker.runs, active = worker.active_cycles, instret = worker.instret,
                 issues = worker.issues;
  std::string pending_console = std::move(worker.console_line);
  const Xoroshiro128aox prng = worker.prng;     // a worker's random stream continues across runs
  const ActionCounts actions = worker.actions;  // counted over the whole run, as instret
  worker = Context{};
  worker.prng = prng;
  worker.actions = actions;
  worker.id = id;
  worker.runs = runs + 1;
  worker.active_cycles = active;
  worker.instret = instret;
  worker.issues = issues;
  worker.console_line = std::move(pending_console);
  worker.state = ContextState::kRunning;
  worker.pc = worker_entry_ != 0 ? worker_entry_ : function;
  worker.x[10] = argument;
  worker.x[11] = function;
  worker.x[12] = id;
  worker.mtvec = supervisor.mtvec;
  // First issue: the next cycle of the worker's own slot after the supervisor's `run`.
  const uint64_t after = supervisor.issue_cycle + 1;
  const uint64_t slot = id - 1;
  worker.next_issue = after + (slot + workers_ - after % workers_) % workers_;
  worker.issue_cycle = worker.next_issue;
  worker.started_at = worker.next_issue;
  if (profile_.enabled())
    profile_.started(id, worker.started_at, worker.instret, worker.actions.flops, function,
                     argument);
}

void Core::finish_worker(Context& worker) {
  worker.state = ContextState::kIdle;
  worker.active_cycles += worker.issue_cycle + 1 - worker.started_at;
  if (profile_.enabled())
    profile_.finished(worker.id, worker.issue_cycle + 1, worker.instret, worker.actions.flops);
}

void Core::console_put(Context& c, uint32_t byte) {
  const char ch = static_cast<char>(byte & 0xff);
  if (ch == '\n') {
    if (console_) console_(c.id, c.console_line);
    c.console_line.clear();
  } else {
    c.console_line.push_back(ch);
  }
}

void Core::flush_console() {
  for (unsigned i = 0; i <= workers_; ++i) {
    Context& c = contexts_[i];
    if (!c.console_line.empty()) {
      if (console_) console_(c.id, c.console_line);
      c.console_line.clear();
    }
  }
}

void Core::end_run(StopReason reason, uint64_t last_cycle) {
  stop_ = reason;
  cycles_ = std::max(cycles_, last_cycle + 1);
  flush_console();
}

bool Core::machine_tile(uint32_t ref, unsigned& tile) const {
  unsigned chip = chip_, local = ref;
  if ((ref & 0xc0000000u) == kRemoteTile) {
    chip = (ref >> 16) & 0x3fff;
    local = ref & 0xffff;
  } else if (ref >= tile_count_) {
    return false;
  }
  if (chip >= chip_count_ || local >= tile_count_) return false;
  tile = chip * tile_count_ + local;
  return true;
}

std::string Core::tile_label() const {
  return chip_count_ > 1 ? fmt::format("chip {} tile {}", chip_, tile_id_)
                         : fmt::format("tile {}", tile_id_);
}

std::string Core::describe_tile_ref(uint32_t ref) const {
  if ((ref & 0xc0000000u) == kRemoteTile)
    return fmt::format("chip {} tile {} (0x{:08x}; the machine has {} chips of {} tiles)",
                       (ref >> 16) & 0x3fff, ref & 0xffff, ref, chip_count_, tile_count_);
  return fmt::format("tile {} ({} tiles on the chip)", ref, tile_count_);
}

std::string Core::where(uint32_t pc) const {
  const uint32_t off = pc - base_;
  if (off > size_ - 4 || (pc & 3)) return fmt::format("pc 0x{:08x} (outside SRAM)", pc);
  const std::string source = locator_ ? locator_(pc) : std::string();
  uint32_t word = read_word(pc);
  for (const auto& [at, status_word] : status_words_)
    if (at == pc) word = status_word;
  return fmt::format("pc 0x{:08x}: {}{}{}", pc, disassemble(word, pc), source.empty() ? "" : " in ",
                     source);
}

void Core::report_fault(Context& c, uint32_t pc, TrapCause cause, uint32_t tval) {
  fault_.context = c.id;
  fault_.pc = pc;
  fault_.cycle = c.issue_cycle;
  fault_.cause = cause;
  fault_.tval = tval;
  const uint32_t window_end = base_ + size_ - 1;
  std::string detail;
  switch (cause) {
    case TrapCause::kIllegalInstruction:
      detail = fmt::format("instruction word 0x{:08x}", tval);
      break;
    case TrapCause::kInstrAccessFault:
      detail = fmt::format("fetch from 0x{:08x}, outside SRAM 0x{:08x}-0x{:08x}; last jump from {}",
                           tval, base_, window_end, where(c.last_jump_from));
      break;
    case TrapCause::kInstrMisaligned:
      detail = fmt::format("jump target 0x{:08x} is not 4-byte aligned", tval);
      break;
    case TrapCause::kStoreAccessFault:
      if (tval - base_ < size_ && tval < c.stack_low) {
        detail = fmt::format(
            "stack overflow: a store through sp to 0x{:08x} is below the context's stack "
            "0x{:08x}-0x{:08x} (sp = 0x{:08x})",
            tval, c.stack_low, c.stack_high, c.x[2]);
        break;
      }
      [[fallthrough]];
    case TrapCause::kLoadAccessFault:
      detail = fmt::format("address 0x{:08x} is outside SRAM 0x{:08x}-0x{:08x}", tval, base_,
                           window_end);
      break;
    case TrapCause::kLoadMisaligned:
    case TrapCause::kStoreMisaligned:
      detail = fmt::format("address 0x{:08x} is misaligned", tval);
      break;
    case TrapCause::kBreakpoint: detail = "ebreak"; break;
    case TrapCause::kEcallFromM:
      detail = fmt::format("ecall with unsupported a7 = {} (93 = exit)", c.x[17]);
      break;
    case TrapCause::kIpuError: break;
  }
  const std::string at =
      cause == TrapCause::kInstrAccessFault ? fmt::format("pc 0x{:08x}", pc) : where(pc);
  fault_.message =
      fmt::format("{} {}: {} at {} (cycle {}): {}; no trap handler (mtvec = 0)", tile_label(),
                  context_name(c.id), trap_cause_name(cause), at, c.issue_cycle, detail);
  if (debug_ != nullptr) debug_->on_fault(*this, c);
  end_run(StopReason::kFault, c.issue_cycle);
}

void Core::save_status(base::ByteWriter& out) const {
  out.put(cycles_), out.put(time_), out.put(blocked_at_), out.put(send_port_free_at_);
  out.put(sync_group_), out.put(exchange_phase_), out.put(sync_released_);
  out.put(stop_), out.put(exit_status_);
  out.put(fault_.context), out.put(fault_.pc), out.put(fault_.cycle), out.put(fault_.cause);
  out.put(fault_.tval), out.put(fault_.message);
  for (unsigned i = 0; i <= workers_; ++i) {
    const Context& c = contexts_[i];
    out.put(c.state), out.put(c.pc), out.put(c.instret), out.put(c.issues);
    out.put(c.issue_cycle), out.put(c.next_issue), out.put(c.runs), out.put(c.active_cycles);
    out.put(c.started_at), out.put(read_word(c.pc));
  }
  // The tile's action counts, summed: a replica keeps them in its supervisor's context.
  const ActionCounts actions = this->actions();
  for (const uint64_t n : actions.instructions) out.put(n);
  out.put(actions.sram_read_bytes), out.put(actions.sram_written_bytes), out.put(actions.flops);
  if (profile_.enabled()) profile_.save(out);
}

void Core::load_status(base::ByteReader& in) {
  in.get(cycles_), in.get(time_), in.get(blocked_at_), in.get(send_port_free_at_);
  in.get(sync_group_), in.get(exchange_phase_), in.get(sync_released_);
  in.get(stop_), in.get(exit_status_);
  in.get(fault_.context), in.get(fault_.pc), in.get(fault_.cycle), in.get(fault_.cause);
  in.get(fault_.tval), in.get(fault_.message);
  status_words_.clear();
  for (unsigned i = 0; i <= workers_; ++i) {
    Context& c = contexts_[i];
    in.get(c.state), in.get(c.pc), in.get(c.instret), in.get(c.issues);
    in.get(c.issue_cycle), in.get(c.next_issue), in.get(c.runs), in.get(c.active_cycles);
    in.get(c.started_at);
    status_words_.emplace_back(c.pc, in.get<uint32_t>());
    c.actions = {};
  }
  ActionCounts& actions = contexts_[0].actions;
  for (uint64_t& n : actions.instructions) in.get(n);
  in.get(actions.sram_read_bytes), in.get(actions.sram_written_bytes), in.get(actions.flops);
  if (profile_.enabled()) profile_.load(in);
}

std::string Core::describe_running_contexts() const {
  std::string out;
  for (unsigned i = 0; i <= workers_; ++i) {
    const Context& c = contexts_[i];
    if (c.state != ContextState::kRunning) continue;
    out += fmt::format("  {} {}: {}\n", tile_label(), context_name(i), where(c.pc));
  }
  return out;
}

}  // namespace ipu::iss
