// The general loop: every instruction, every scheduling and exchange effect, tracing and the
// debugger. It is the reference the fast loops (fast_loops.cpp) must match exactly; the bodies
// are the tables' (rv32imf.def, xipu.def) in the vocabulary of instruction_bodies.h.
#include "instruction_bodies.h"

namespace ipu::iss {

using namespace bodies;  // NOLINT(google-build-using-namespace): the bodies' vocabulary

Decoded& Core::predecode(uint32_t offset) {
  Decoded& d = decoded_[offset >> 2];
  uint32_t word;
  std::memcpy(&word, sram_ + offset, 4);
  d = decode(word);
  decoded_pages_[offset >> 12] = 1;
  const InsnSpec* spec = spec_of(d.op);
  if (spec != nullptr && spec->writes_xrd && d.rd == 0) d.rd = kZeroSink;
  return d;
}

template <bool kObserved>
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
    if constexpr (kObserved) {
      if (debug_ != nullptr) {  // may stop here, and change the pc
        c.pc = pc;
        debug_->before_issue(*this, c);
        pc = c.pc;
      }
    }
    TrapCause trap_cause{};
    uint32_t trap_value = 0;
    StopReason event = StopReason::kRunning;
    StopReason block = StopReason::kRunning;  // kSync / kExchangeEnd: stop without retiring
    bool stalled = false, scheduling_changed = false, worker_exit = false;
    uint64_t wait_until = 0;  // ipu.waitc: earliest next issue
    uint32_t npc = pc + 4;
    Op op = Op::kIllegal;  // the instruction run, for its action counts when it retires

    const uint32_t off = pc - base;
    if (off > size - 4) TRAP(TrapCause::kInstrAccessFault, pc);
    {
      Decoded& d = decoded[off >> 2];
      if (d.op == Op::kUndecoded) predecode(off);
      op = d.op;  // a store may forget d (self-modifying code)
      if constexpr (kObserved) {
        if (trace_) trace_(c, pc, read_word(pc));
      }

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
      count_retired(c.actions, op);
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
    count_retired(c.actions, op);
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

template void Core::execute<true>(Context&, uint64_t);
template void Core::execute<false>(Context&, uint64_t);

}  // namespace ipu::iss
