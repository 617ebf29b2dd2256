#include "core.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "csr.h"
#include "fpu.h"

namespace ipu::hw {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "tile memory is accessed in host order");

namespace {

constexpr uint64_t kNever = ~uint64_t{0};
constexpr uint8_t kZeroSink = 32;  // index of the register that absorbs writes to x0

constexpr std::array<uint8_t, static_cast<size_t>(Op::kCount)> make_issue_slots() {
  std::array<uint8_t, static_cast<size_t>(Op::kCount)> slots{};
  slots[static_cast<size_t>(Op::kUndecoded)] = 1;
  slots[static_cast<size_t>(Op::kIllegal)] = 1;
#define INSN(id, mnemonic, match, mask, imm, operands, issue, ...) \
  slots[static_cast<size_t>(Op::id)] = issue;
#define XINSN(id, mnemonic, match, mask, imm, operands, issue, ...) \
  slots[static_cast<size_t>(Op::id)] = issue;
#include "rv32imf.def"
#include "xipu.def"
#undef XINSN
#undef INSN
  return slots;
}
constexpr auto kIssueSlots = make_issue_slots();

// Lane `lane` (0-3) of the f16x4 value in the register pair starting at `reg`.
uint32_t half(const Context& c, unsigned reg, unsigned lane) {
  return (c.f[reg + lane / 2] >> (16 * (lane & 1))) & 0xffffu;
}
void set_half(Context& c, unsigned reg, unsigned lane, uint32_t value) {
  uint32_t& word = c.f[reg + lane / 2];
  const unsigned shift = 16 * (lane & 1);
  word = (word & ~(0xffffu << shift)) | ((value & 0xffffu) << shift);
}

using fpu::bits_of;
using fpu::float_of;

// Loads one phase of weights (row-major, f16 or f32 per the mode) as f32 values.
void load_amp_weights(AmpUnit& amp, unsigned phase, const uint8_t* src) {
  const unsigned n = amp.rows() * amp.inputs();
  for (unsigned i = 0; i < n; ++i) {
    if (amp.f32_mode()) {
      uint32_t w;
      std::memcpy(&w, src + 4 * i, 4);
      amp.weights[phase][i] = float_of(w);
    } else {
      uint16_t h;
      std::memcpy(&h, src + 2 * i, 2);
      amp.weights[phase][i] = static_cast<float>(fpu::f16_value(h));
    }
  }
}

// Each row's MACs of one ipu.amp on the AMP lane RTL (datapaths.h): the same arithmetic as
// AmpUnit::multiply_accumulate, operands as the bits the unit was given.
void amp_lanes(AmpUnit& amp, const std::array<uint32_t, AmpUnit::kInputsF16>& x,
               AmpDatapath& lanes) {
  std::vector<AmpLaneRow> rows(amp.rows());
  const unsigned n = amp.inputs();
  for (unsigned r = 0; r < amp.rows(); ++r) {
    AmpLaneRow& row = rows[r];
    row.half = !amp.f32_mode();
    row.terms = n;
    for (unsigned j = 0; j < n; ++j) {
      const uint32_t w = bits_of(amp.weights[amp.phase][r * n + j]);
      uint32_t flags = 0;  // f16 weights are f16 values: the conversion back is exact
      row.w[j] = row.half ? fpu::f32_to_f16(w, fpu::kRne, flags, 0) : w;
      row.x[j] = x[j];
    }
    row.acc = bits_of(amp.acc[r]);
  }
  lanes.run(rows);
  for (unsigned r = 0; r < amp.rows(); ++r) amp.acc[r] = float_of(rows[r].acc);
}

// One ipu.amp: multiply-accumulate the input vector at `in`; after the last phase write the
// results at `out` (NaN results canonical, as every tile FP result) and start over. With `lanes`
// the arithmetic runs on the AMP lane RTL.
void amp_step(AmpUnit& amp, const uint8_t* in, uint8_t* out, AmpDatapath* lanes) {
  std::array<uint32_t, AmpUnit::kInputsF16> raw{};
  std::array<float, AmpUnit::kInputsF16> x{};
  for (unsigned j = 0; j < amp.inputs(); ++j) {
    if (amp.f32_mode()) {
      std::memcpy(&raw[j], in + 4 * j, 4);
      x[j] = float_of(raw[j]);
    } else {
      uint16_t h;
      std::memcpy(&h, in + 2 * j, 2);
      raw[j] = h;
      x[j] = static_cast<float>(fpu::f16_value(h));
    }
  }
  if (lanes != nullptr)
    amp_lanes(amp, raw, *lanes);
  else
    amp.multiply_accumulate(x.data());
  amp.input += AmpUnit::kInputBytes;
  if (out == nullptr) {
    ++amp.phase;
    return;
  }
  std::vector<AmpLaneRow> write_back;  // out += acc on the lanes: one term, 1.0 * out + acc
  for (unsigned r = 0; r < amp.rows(); ++r) {
    float result = amp.acc[r];
    if (amp.accumulate_output()) {
      uint32_t old;
      std::memcpy(&old, out + 4 * r, 4);
      if (lanes != nullptr)
        write_back.push_back({false, 1, {bits_of(1.0f), 0, 0, 0}, {old, 0, 0, 0}, bits_of(result)});
      else
        result = float_of(old) + result;
    }
    amp.acc[r] = result;
  }
  if (!write_back.empty()) {
    lanes->run(write_back);
    for (unsigned r = 0; r < amp.rows(); ++r) amp.acc[r] = float_of(write_back[r].acc);
  }
  for (unsigned r = 0; r < amp.rows(); ++r) {
    uint32_t bits = bits_of(amp.acc[r]);
    if (std::isnan(amp.acc[r])) bits = fpu::kCanonicalNaN;
    std::memcpy(out + 4 * r, &bits, 4);
  }
  amp.output += amp.output_bytes();
  amp.acc.fill(0.0f);
  amp.phase = 0;
}

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
      decoded_(config.sram_bytes / 4),
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

uint64_t Core::instructions_retired() const {
  uint64_t n = 0;
  for (unsigned i = 0; i <= workers_; ++i) n += contexts_[i].instret;
  return n;
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
      if (trace_)
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
    if (trace_)
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
template <bool kTrace>
void Core::run_full_barrel(uint64_t until) {
  uint64_t t = time_;
  unsigned slot =
      static_cast<unsigned>(t % workers_);  // kept in step with t: no division per cycle
  for (; t < until; ++t, slot = slot + 1 == workers_ ? 0 : slot + 1) {
    Context& w = contexts_[1 + slot];
    if (w.next_issue != t) continue;  // still inside a multi-slot instruction
    execute<kTrace>(w, 1);
    if (stop_ != StopReason::kRunning || w.state != ContextState::kRunning) {
      time_ = t + 1;
      return;
    }
  }
  time_ = t;
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
  end_run(StopReason::kFault, c.issue_cycle);
}

// ---- workers, console, end of run ----

void Core::start_worker(Context& supervisor, Context& worker, uint32_t function,
                        uint32_t argument) {
  const unsigned id = worker.id;
  const uint64_t runs = worker.runs, active = worker.active_cycles, instret = worker.instret,
                 issues = worker.issues;
  std::string pending_console = std::move(worker.console_line);
  const Xoroshiro128aox prng = worker.prng;  // a worker's random stream continues across runs
  worker = Context{};
  worker.prng = prng;
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
}

void Core::finish_worker(Context& worker) {
  worker.state = ContextState::kIdle;
  worker.active_cycles += worker.issue_cycle + 1 - worker.started_at;
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
  return fmt::format("pc 0x{:08x}: {}", pc, disassemble(read_word(pc), pc));
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
    case TrapCause::kLoadAccessFault:
    case TrapCause::kStoreAccessFault:
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
  end_run(StopReason::kFault, c.issue_cycle);
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

// ---- the interpreter ----

// Names the semantic bodies of rv32imf.def and xipu.def use.
#define PC pc
#define RS1 c.x[d.rs1]
#define RS2 c.x[d.rs2]
#define SRS1 static_cast<int32_t>(c.x[d.rs1])
#define SRS2 static_cast<int32_t>(c.x[d.rs2])
#define IMM d.imm
#define SET_RD(v) (c.x[d.rd] = static_cast<uint32_t>(v))
#define FS1 c.f[d.rs1]
#define FS2 c.f[d.rs2]
#define FS3 c.f[d.rs3]
#define FFLAGS c.fflags
#define SET_FRD(v) (c.f[d.rd] = (v), c.mstatus |= kMstatusFs)
#define TRAP(cause, tval) \
  do {                    \
    trap_cause = (cause); \
    trap_value = (tval);  \
    goto trap;            \
  } while (0)
#define ILLEGAL() TRAP(TrapCause::kIllegalInstruction, read_word(pc))
#define JUMP(target)                                                     \
  do {                                                                   \
    const uint32_t jump_target = (target);                               \
    if (jump_target & 3) TRAP(TrapCause::kInstrMisaligned, jump_target); \
    c.last_jump_from = pc;                                               \
    npc = jump_target;                                                   \
  } while (0)
#define LOAD(var, address)                                              \
  do {                                                                  \
    const uint32_t a_ = (address);                                      \
    const uint32_t o_ = a_ - base;                                      \
    if (a_ & (sizeof(var) - 1)) TRAP(TrapCause::kLoadMisaligned, a_);   \
    if (o_ > size - sizeof(var)) TRAP(TrapCause::kLoadAccessFault, a_); \
    std::memcpy(&(var), mem + o_, sizeof(var));                         \
  } while (0)
#define STORE(value, address)                                           \
  do {                                                                  \
    const auto v_ = (value);                                            \
    const uint32_t a_ = (address);                                      \
    const uint32_t o_ = a_ - base;                                      \
    if (a_ & (sizeof(v_) - 1)) TRAP(TrapCause::kStoreMisaligned, a_);   \
    if (o_ > size - sizeof(v_)) TRAP(TrapCause::kStoreAccessFault, a_); \
    std::memcpy(mem + o_, &v_, sizeof(v_));                             \
    if (pages[o_ >> 12]) decoded[o_ >> 2].op = Op::kUndecoded;          \
    if ((a_ & ~3u) == tohost_) {                                        \
      const uint32_t word_ = read_word(tohost_);                        \
      if (word_ & 1) {                                                  \
        exit_status_ = static_cast<int>(word_ >> 1);                    \
        event = StopReason::kExited;                                    \
      }                                                                 \
    }                                                                   \
  } while (0)
#define FP_ENABLED() \
  if ((c.mstatus & kMstatusFs) == 0) ILLEGAL()
#define FP_RM(name)                               \
  FP_ENABLED();                                   \
  const unsigned name = d.rm == 7 ? c.frm : d.rm; \
  if (name > 4) ILLEGAL();                        \
  c.mstatus |= kMstatusFs
#define CSR_OP(op, operand, write)                                                         \
  do {                                                                                     \
    uint32_t old_;                                                                         \
    if (!csr_access(c, static_cast<unsigned>(d.imm), op, operand, write, old_)) ILLEGAL(); \
    SET_RD(old_);                                                                          \
  } while (0)
#define ECALL()                                         \
  do {                                                  \
    if (c.x[17] != 93) TRAP(TrapCause::kEcallFromM, 0); \
    if (exchange_phase_) {                              \
      exchange_phase_ = false;                          \
      block = StopReason::kExchangeEnd;                 \
      break;                                            \
    }                                                   \
    exit_status_ = static_cast<int>(c.x[10]);           \
    event = StopReason::kExited;                        \
  } while (0)
#define MRET()                                                                                \
  do {                                                                                        \
    npc = c.mepc;                                                                             \
    c.mstatus = (c.mstatus & ~kMstatusMie) | ((c.mstatus & kMstatusMpie) ? kMstatusMie : 0) | \
                kMstatusMpie;                                                                 \
    c.last_jump_from = pc;                                                                    \
  } while (0)
#define WORKER_RUN()                                                       \
  do {                                                                     \
    if (c.id != 0) ILLEGAL();                                              \
    if (exchange_phase_) {                                                 \
      exchange_phase_ = false;                                             \
      block = StopReason::kExchangeEnd;                                    \
      break;                                                               \
    }                                                                      \
    Context* idle = nullptr;                                               \
    for (unsigned w = 1; w <= workers_ && idle == nullptr; ++w)            \
      if (contexts_[w].state == ContextState::kIdle) idle = &contexts_[w]; \
    if (idle == nullptr) {                                                 \
      stalled = true; /* retry at the next issue */                        \
    } else {                                                               \
      start_worker(c, *idle, RS1, RS2);                                    \
      SET_RD(idle->id);                                                    \
    }                                                                      \
    scheduling_changed = true;                                             \
  } while (0)
#define WORKER_JOIN()                                                   \
  do {                                                                  \
    if (c.id != 0) ILLEGAL();                                           \
    for (unsigned w = 1; w <= workers_; ++w)                            \
      if (contexts_[w].state == ContextState::kRunning) stalled = true; \
    scheduling_changed = true;                                          \
  } while (0)
#define WORKER_EXIT()          \
  do {                         \
    if (c.id == 0) ILLEGAL();  \
    worker_exit = true;        \
    scheduling_changed = true; \
  } while (0)

// A use of an RTL datapath (ipu-sim --rtl, datapaths.h): an RTL that departs from its C++
// model stops the tile with a report naming tile, context, pc and cycle.
#define RTL_CALL(statement)                   \
  try {                                       \
    statement;                                \
  } catch (const DatapathMismatch& e_) {      \
    IPU_ERROR("RTL mismatch: {}", e_.what()); \
  }
// 64 random bits from the context's PRNG, or from the PRNG RTL.
#define DRAW_RANDOM(out)          \
  if (datapaths_.prng == nullptr) \
    (out) = c.prng.next();        \
  else                            \
    RTL_CALL((out) = datapaths_.prng->next(c.prng))
#define URAND32()                         \
  do {                                    \
    uint64_t bits_ = 0;                   \
    DRAW_RANDOM(bits_);                   \
    SET_RD(static_cast<uint32_t>(bits_)); \
  } while (0)
#define URAND64()                                            \
  do {                                                       \
    if (d.rd & 1) ILLEGAL();                                 \
    uint64_t bits_ = 0;                                      \
    DRAW_RANDOM(bits_);                                      \
    if (d.rd != 0) c.x[d.rd] = static_cast<uint32_t>(bits_); \
    c.x[d.rd + 1] = static_cast<uint32_t>(bits_ >> 32);      \
  } while (0)

// ---- SIMD: lanes of register pairs (xipu.def explains the layout) ----
// The f16 rounding mode and, when stochastic, 32 random bits per lane from the context's PRNG:
// lanes 0 and 1 take the low and high words of one 64-bit draw, lanes 2 and 3 of the next.
#define F16_ROUNDING(lanes)                                           \
  const unsigned RM16 = (c.fpctl & 1) ? fpu::kStochastic : fpu::kRne; \
  std::array<uint32_t, 4> random_{};                                  \
  if (RM16 == fpu::kStochastic) {                                     \
    for (unsigned l_ = 0; l_ < (lanes); l_ += 2) {                    \
      uint64_t r_ = 0;                                                \
      DRAW_RANDOM(r_);                                                \
      random_[l_] = static_cast<uint32_t>(r_);                        \
      random_[l_ + 1] = static_cast<uint32_t>(r_ >> 32);              \
    }                                                                 \
  }
#define RANDOM random_[lane]
#define SIMD_REGISTERS(mask_of_operands) \
  FP_ENABLED();                          \
  if ((mask_of_operands)&1) ILLEGAL();   \
  c.mstatus |= kMstatusFs
#define F32X2_BINARY(expr)                                       \
  SIMD_REGISTERS(d.rd | d.rs1 | d.rs2);                          \
  for (unsigned lane = 0; lane < 2; ++lane) {                    \
    const uint32_t A = c.f[d.rs1 + lane], B = c.f[d.rs2 + lane]; \
    c.f[d.rd + lane] = (expr);                                   \
  }
#define F32X2_UNARY(expr)                     \
  SIMD_REGISTERS(d.rd | d.rs1);               \
  for (unsigned lane = 0; lane < 2; ++lane) { \
    const uint32_t A = c.f[d.rs1 + lane];     \
    c.f[d.rd + lane] = (expr);                \
  }
#define F32X2_TERNARY(expr)                                                             \
  SIMD_REGISTERS(d.rd | d.rs1 | d.rs2 | d.rs3);                                         \
  for (unsigned lane = 0; lane < 2; ++lane) {                                           \
    const uint32_t A = c.f[d.rs1 + lane], B = c.f[d.rs2 + lane], C = c.f[d.rs3 + lane]; \
    c.f[d.rd + lane] = (expr);                                                          \
  }
#define F16X4_BINARY(expr)                                             \
  SIMD_REGISTERS(d.rd | d.rs1 | d.rs2);                                \
  F16_ROUNDING(4);                                                     \
  for (unsigned lane = 0; lane < 4; ++lane) {                          \
    const uint32_t A = half(c, d.rs1, lane), B = half(c, d.rs2, lane); \
    set_half(c, d.rd, lane, (expr));                                   \
  }
#define F16X4_UNARY(expr)                     \
  SIMD_REGISTERS(d.rd | d.rs1);               \
  for (unsigned lane = 0; lane < 4; ++lane) { \
    const uint32_t A = half(c, d.rs1, lane);  \
    set_half(c, d.rd, lane, (expr));          \
  }
#define F16X4_TERNARY(expr)                                                                      \
  SIMD_REGISTERS(d.rd | d.rs1 | d.rs2 | d.rs3);                                                  \
  F16_ROUNDING(4);                                                                               \
  for (unsigned lane = 0; lane < 4; ++lane) {                                                    \
    const uint32_t A = half(c, d.rs1, lane), B = half(c, d.rs2, lane), C = half(c, d.rs3, lane); \
    set_half(c, d.rd, lane, (expr));                                                             \
  }
// f32 lanes (from one or two pairs) to f16 lanes packed into fd (one register or a pair).
#define CONVERT_F32_TO_F16(lanes)                                                   \
  SIMD_REGISTERS(d.rs1 | ((lanes) == 4 ? (d.rd | d.rs2) : 0u));                     \
  F16_ROUNDING(lanes);                                                              \
  std::array<uint32_t, 4> h_{};                                                     \
  for (unsigned lane = 0; lane < (lanes); ++lane) {                                 \
    const uint32_t f_ = lane < 2 ? c.f[d.rs1 + lane] : c.f[d.rs2 + lane - 2];       \
    if (datapaths_.f32_to_f16 == nullptr)                                           \
      h_[lane] = fpu::f32_to_f16(f_, RM16, FFLAGS, RANDOM);                         \
    else                                                                            \
      RTL_CALL(h_[lane] = datapaths_.f32_to_f16->convert(f_, RM16, FFLAGS, RANDOM)) \
  }                                                                                 \
  for (unsigned lane = 0; lane < (lanes); ++lane) set_half(c, d.rd, lane, h_[lane])
// f16 lanes (one register or a pair) widened to f32 registers (a pair or a quad).
#define CONVERT_F16_TO_F32(lanes)                             \
  SIMD_REGISTERS(d.rd | ((lanes) == 4 ? d.rs1 : 0u));         \
  if ((lanes) == 4 && (d.rd & 3)) ILLEGAL();                  \
  std::array<uint32_t, 4> w_{};                               \
  for (unsigned lane = 0; lane < (lanes); ++lane)             \
    w_[lane] = fpu::f16_to_f32(half(c, d.rs1, lane), FFLAGS); \
  for (unsigned lane = 0; lane < (lanes); ++lane) c.f[d.rd + lane] = w_[lane]
#define HORIZONTAL_SUM(lanes, lane_value)                   \
  SIMD_REGISTERS(d.rs1);                                    \
  uint32_t sum_ = c.f[d.rd];                                \
  for (unsigned lane = 0; lane < (lanes); ++lane)           \
    sum_ = fpu::add(sum_, (lane_value), fpu::kRne, FFLAGS); \
  c.f[d.rd] = sum_

// ---- AMP ----
#define AMP_LOAD_WEIGHTS()                                            \
  do {                                                                \
    AmpUnit& amp_ = c.amp;                                            \
    const uint32_t phase_ = RS2, a_ = RS1, n_ = amp_.weight_bytes();  \
    if (phase_ >= AmpUnit::kPhases) ILLEGAL();                        \
    if (a_ & 7) TRAP(TrapCause::kLoadMisaligned, a_);                 \
    if (a_ - base > size - n_) TRAP(TrapCause::kLoadAccessFault, a_); \
    load_amp_weights(amp_, phase_, mem + (a_ - base));                \
  } while (0)
#define AMP_STEP()                                                                        \
  do {                                                                                    \
    AmpUnit& amp_ = c.amp;                                                                \
    const uint32_t in_ = amp_.input;                                                      \
    if (in_ & 7) TRAP(TrapCause::kLoadMisaligned, in_);                                   \
    if (in_ - base > size - AmpUnit::kInputBytes) TRAP(TrapCause::kLoadAccessFault, in_); \
    const bool last_ = amp_.phase + 1 == amp_.phases();                                   \
    const uint32_t out_ = amp_.output, n_ = amp_.output_bytes();                          \
    if (last_ && (out_ & 3)) TRAP(TrapCause::kStoreMisaligned, out_);                     \
    if (last_ && out_ - base > size - n_) TRAP(TrapCause::kStoreAccessFault, out_);       \
    uint8_t* const result_ = last_ ? mem + (out_ - base) : nullptr;                       \
    if (datapaths_.amp == nullptr)                                                        \
      amp_step(amp_, mem + (in_ - base), result_, nullptr);                               \
    else                                                                                  \
      RTL_CALL(amp_step(amp_, mem + (in_ - base), result_, datapaths_.amp))               \
    if (last_) invalidate(out_, n_);                                                      \
  } while (0)

// ---- sync and exchange (docs/chip.md) ----
#define IPU_ERROR(...)                    \
  do {                                    \
    ipu_error = fmt::format(__VA_ARGS__); \
    goto ipu_error;                       \
  } while (0)
// The exchange phase ends at the first ipu.run, ipu.xend, ipu.sync or exit after a sync: the
// tile stops there until the exchange block has resolved the phase, then runs the instruction.
#define END_OF_EXCHANGE_PHASE()       \
  if (exchange_phase_) {              \
    exchange_phase_ = false;          \
    block = StopReason::kExchangeEnd; \
    break;                            \
  }
#define SUPERVISOR_ONLY() \
  if (c.id != 0) ILLEGAL()
#define ANY_WORKER_RUNNING() any_worker_running()
#define IPU_SYNC()                                                                      \
  SUPERVISOR_ONLY();                                                                    \
  if (sync_released_) { /* the barrier released this tile: the sync completes */        \
    sync_released_ = false;                                                             \
    exchange_phase_ = true;                                                             \
    scheduling_changed = true;                                                          \
    break;                                                                              \
  }                                                                                     \
  if (ANY_WORKER_RUNNING()) { /* the compute phase ends when every worker has exited */ \
    stalled = scheduling_changed = true;                                                \
    break;                                                                              \
  }                                                                                     \
  END_OF_EXCHANGE_PHASE();                                                              \
  sync_group_ = RS1;                                                                    \
  block = StopReason::kSync
#define IPU_XEND()   \
  SUPERVISOR_ONLY(); \
  END_OF_EXCHANGE_PHASE()
#define REQUIRE_EXCHANGE()                                                             \
  SUPERVISOR_ONLY();                                                                   \
  if (exchange_ == nullptr)                                                            \
    IPU_ERROR("exchange instruction on a tile with no exchange connected");            \
  if (!exchange_phase_)                                                                \
  IPU_ERROR(                                                                           \
      "{} outside the exchange phase (exchange runs between an ipu.sync and the next " \
      "ipu.run, ipu.xend, ipu.sync or exit)",                                          \
      spec_of(d.op)->mnemonic)
// Inside a do { } while (0): the send port has no queue, so the instruction waits for it.
#define WAIT_FOR_SEND_PORT()                    \
  if (send_port_free_at_ > c.issue_cycle + 1) { \
    stalled = true;                             \
    break;                                      \
  }
// `n` (1 or more) words at `a` inside SRAM, else the trap the access would take.
#define CHECK_WORDS(a, n, misaligned, fault) \
  if ((a)&3) TRAP(misaligned, a);            \
  if ((n) == 0 || (n) > size / 4 || (a)-base > size - 4 * (n)) TRAP(fault, a)
#define IPU_SEND()                                                                                 \
  do {                                                                                             \
    REQUIRE_EXCHANGE();                                                                            \
    WAIT_FOR_SEND_PORT();                                                                          \
    const uint32_t a_ = RS1, n_ = RS2, list_ = exchange_dests_;                                    \
    CHECK_WORDS(a_, n_, TrapCause::kLoadMisaligned, TrapCause::kLoadAccessFault);                  \
    if ((list_ & 3) || list_ - base > size - 4) TRAP(TrapCause::kLoadAccessFault, list_);          \
    uint32_t count_;                                                                               \
    std::memcpy(&count_, mem + (list_ - base), 4);                                                 \
    if (count_ == 0 || count_ > tile_count_ * chip_count_ || list_ - base > size - 4 - 4 * count_) \
      IPU_ERROR("destination list at 0x{:08x} holds {} tiles (1..{} fit in this machine)", list_,  \
                count_, tile_count_* chip_count_);                                                 \
    std::vector<unsigned> dests_(count_);                                                          \
    for (uint32_t i_ = 0; i_ < count_; ++i_) {                                                     \
      uint32_t t_;                                                                                 \
      std::memcpy(&t_, mem + (list_ - base) + 4 + 4 * i_, 4);                                      \
      if (!machine_tile(t_, dests_[i_]))                                                           \
        IPU_ERROR("destination {} does not exist", describe_tile_ref(t_));                         \
    }                                                                                              \
    std::vector<uint32_t> words_(n_);                                                              \
    std::memcpy(words_.data(), mem + (a_ - base), 4 * n_);                                         \
    send_port_free_at_ = exchange_->send(c.issue_cycle, a_, std::move(words_), std::move(dests_)); \
  } while (0)
#define IPU_RECVSRC()                                                                    \
  do {                                                                                   \
    REQUIRE_EXCHANGE();                                                                  \
    const uint32_t src_ = RS1;                                                           \
    unsigned from_ = 0;                                                                  \
    if (src_ != ~0u && !machine_tile(src_, from_))                                       \
      IPU_ERROR("source {} does not exist", describe_tile_ref(src_));                    \
    exchange_->select_source(c.issue_cycle, src_ == ~0u ? -1 : static_cast<int>(from_)); \
  } while (0)
#define IPU_RECV()                                                                          \
  do {                                                                                      \
    REQUIRE_EXCHANGE();                                                                     \
    const uint32_t a_ = RS1, n_ = RS2;                                                      \
    if (a_ & 3) TRAP(TrapCause::kStoreMisaligned, a_);                                      \
    if (n_ > size / 4 || a_ - base > size - 4 * n_) TRAP(TrapCause::kStoreAccessFault, a_); \
    exchange_->receive_buffer(c.issue_cycle, a_, n_);                                       \
  } while (0)
// ipu.smwrite / ipu.smread: words between the tile and streaming memory at CSR ipu.smaddr,
// which advances past them. The words (or the read request) leave through the send port.
#define IPU_STREAM(kWrite)                                                                         \
  do {                                                                                             \
    REQUIRE_EXCHANGE();                                                                            \
    WAIT_FOR_SEND_PORT();                                                                          \
    const uint32_t a_ = RS1, n_ = RS2;                                                             \
    const uint64_t sm_ = sm_address_;                                                              \
    CHECK_WORDS(a_, n_, kWrite ? TrapCause::kLoadMisaligned : TrapCause::kStoreMisaligned,         \
                kWrite ? TrapCause::kLoadAccessFault : TrapCause::kStoreAccessFault);              \
    if (streaming_bytes_ == 0)                                                                     \
      IPU_ERROR(                                                                                   \
          "{} on a platform without streaming memory (a PCIe card has none; a machine "            \
          "such as --preset m2000 has its gateway's)",                                             \
          spec_of(d.op)->mnemonic);                                                                \
    if (sm_ & 3)                                                                                   \
      IPU_ERROR("streaming-memory address 0x{:x} (CSR ipu.smaddr) is not word aligned", sm_);      \
    if (sm_ > streaming_bytes_ || 4 * uint64_t{n_} > streaming_bytes_ - sm_)                       \
      IPU_ERROR(                                                                                   \
          "{} of {} words at streaming-memory address 0x{:x} reaches past the end of the "         \
          "gateway's {} bytes of streaming memory (0x0..0x{:x})",                                  \
          spec_of(d.op)->mnemonic, n_, sm_, streaming_bytes_, streaming_bytes_);                   \
    std::vector<uint32_t> words_;                                                                  \
    if (kWrite) {                                                                                  \
      words_.resize(n_);                                                                           \
      std::memcpy(words_.data(), mem + (a_ - base), 4 * n_);                                       \
    }                                                                                              \
    send_port_free_at_ = exchange_->stream(c.issue_cycle, kWrite, sm_, a_, n_, std::move(words_)); \
    sm_address_ = sm_ + 4 * uint64_t{n_};                                                          \
  } while (0)
#define IPU_SMWRITE() IPU_STREAM(true)
#define IPU_SMREAD() IPU_STREAM(false)
#define IPU_WAITC() wait_until = c.issue_cycle + RS1
// 16 bytes loaded into fd..fd+3 from x[rs1], 8 bytes stored from the pair fs2 to x[rs1+1];
// both pointers advance. The store data is read before the loads write (fs2 may overlap fd).
#define IPU_LD2X64ST64()                                                  \
  do {                                                                    \
    FP_ENABLED();                                                         \
    if ((d.rd & 3) || (d.rs1 & 1) || (d.rs2 & 1)) ILLEGAL();              \
    const uint32_t la_ = c.x[d.rs1], sa_ = c.x[d.rs1 + 1];                \
    if (la_ & 7) TRAP(TrapCause::kLoadMisaligned, la_);                   \
    if (la_ - base > size - 16) TRAP(TrapCause::kLoadAccessFault, la_);   \
    if (sa_ & 7) TRAP(TrapCause::kStoreMisaligned, sa_);                  \
    if (sa_ - base > size - 8) TRAP(TrapCause::kStoreAccessFault, sa_);   \
    const uint32_t st_[2] = {c.f[d.rs2], c.f[d.rs2 + 1]};                 \
    std::memcpy(&c.f[d.rd], mem + (la_ - base), 16);                      \
    std::memcpy(mem + (sa_ - base), st_, 8);                              \
    if (pages[(sa_ - base) >> 12]) { /* only pages that ever held code */ \
      decoded[(sa_ - base) >> 2].op = Op::kUndecoded;                     \
      decoded[((sa_ - base) >> 2) + 1].op = Op::kUndecoded;               \
    }                                                                     \
    if (d.rs1 != 0) c.x[d.rs1] = la_ + 16;                                \
    c.x[d.rs1 + 1] = sa_ + 8;                                             \
    c.mstatus |= kMstatusFs;                                              \
  } while (0)

template <bool kTrace>
void Core::execute(Context& c, uint64_t budget) {
  uint8_t* const mem = sram_;
  const uint32_t base = base_, size = size_;
  Decoded* const decoded = decoded_.data();
  const uint8_t* const pages = decoded_pages_.data();
  const uint64_t stride = workers_;
  uint32_t pc = c.pc;
  std::string ipu_error;  // the report of an IPU program error (rare: kept out of the loop)

  for (; budget != 0; --budget) {
    c.issue_cycle = c.next_issue;
    ++c.issues;
    TrapCause trap_cause{};
    uint32_t trap_value = 0;
    StopReason event = StopReason::kRunning;
    StopReason block = StopReason::kRunning;  // kSync / kExchangeEnd: stop without retiring
    bool stalled = false, scheduling_changed = false, worker_exit = false;
    uint64_t wait_until = 0;  // ipu.waitc: earliest next issue
    uint32_t npc = pc + 4;

    const uint32_t off = pc - base;
    if (off > size - 4) TRAP(TrapCause::kInstrAccessFault, pc);
    {
      Decoded& d = decoded[off >> 2];
      if (d.op == Op::kUndecoded) {
        uint32_t word;
        std::memcpy(&word, mem + off, 4);
        d = decode(word);
        decoded_pages_[off >> 12] = 1;
        const InsnSpec* spec = spec_of(d.op);
        if (spec != nullptr && spec->writes_xrd && d.rd == 0) d.rd = kZeroSink;
      }
      if constexpr (kTrace) trace_(c, pc, read_word(pc));

      switch (d.op) {
#define INSN(id, mnemonic, match, mask, imm, operands, issue, ...) \
  case Op::id: {                                                   \
    __VA_ARGS__                                                    \
  } break;
#define XINSN(id, mnemonic, match, mask, imm, operands, issue, c_return, c_name, c_params, \
              summary, ...)                                                                \
  case Op::id: {                                                                           \
    __VA_ARGS__                                                                            \
  } break;
#include "rv32imf.def"
#include "xipu.def"
#undef XINSN
#undef INSN
        case Op::kUndecoded:
        case Op::kIllegal:
        case Op::kCount: ILLEGAL();
      }
      c.next_issue = c.issue_cycle + stride * kIssueSlots[static_cast<size_t>(d.op)];
    }
    // The common case in one test: nothing but retiring the instruction.
    if (__builtin_expect(!(stalled | scheduling_changed | worker_exit | (wait_until != 0) |
                           (block != StopReason::kRunning) | (event != StopReason::kRunning)),
                         1)) {
      ++c.instret;
      pc = npc;
      continue;
    }
    if (wait_until > c.next_issue) {
      // A worker keeps its slot: round the wait up to a whole number of its turns.
      c.next_issue =
          c.id == 0 ? wait_until
                    : c.issue_cycle + stride * ((wait_until - c.issue_cycle + stride - 1) / stride);
    }
    if (block != StopReason::kRunning) {
      c.pc = pc;
      blocked_at_ = c.issue_cycle;
      cycles_ = std::max(cycles_, c.issue_cycle + 1);
      stop_ = block;
      return;
    }
    if (stalled) {
      c.pc = pc;
      return;
    }
    ++c.instret;
    pc = npc;
    c.pc = pc;
    if (event != StopReason::kRunning) {
      end_run(event, c.issue_cycle);
      return;
    }
    if (worker_exit) finish_worker(c);
    if (scheduling_changed) return;
    continue;

  ipu_error:
    c.next_issue = c.issue_cycle + stride;
    c.pc = pc;
    report_error(c, pc, ipu_error);
    return;

  trap:
    c.next_issue = c.issue_cycle + stride;
    if (c.mtvec == 0) {
      c.pc = pc;
      report_fault(c, pc, trap_cause, trap_value);
      return;
    }
    c.mepc = pc;
    c.mcause = static_cast<uint32_t>(trap_cause);
    c.mtval = trap_value;
    c.mstatus = (c.mstatus & ~(kMstatusMie | kMstatusMpie)) |
                ((c.mstatus & kMstatusMie) ? kMstatusMpie : 0);
    c.last_jump_from = pc;
    pc = c.mtvec & ~3u;
    c.pc = pc;
  }
  c.pc = pc;
}

}  // namespace ipu::hw
