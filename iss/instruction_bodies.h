// The vocabulary of the instruction bodies: the names the semantics in rv32imf.def and
// xipu.def are written with (operands, results, loads and stores, traps, jumps, SIMD lanes, the
// AMP, sync and exchange), as the general loop (general_loop.cpp) defines them. The fast loops
// (fast_loops.cpp) include this too and redefine the names whose effect must leave the loop.
// Included only by those two files, inside namespace ipu::hw.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "amp_datapath.h"
#include "core.h"
#include "fpu.h"

namespace ipu::iss::bodies {

inline constexpr uint8_t kZeroSink = 32;  // index of the register that absorbs writes to x0

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
inline constexpr auto kIssueSlots = make_issue_slots();

constexpr std::array<InsnCost, static_cast<size_t>(Op::kCount)> make_insn_costs() {
  std::array<InsnCost, static_cast<size_t>(Op::kCount)> costs{};
  costs[static_cast<size_t>(Op::kUndecoded)] = {InsnClass::kCount};
  costs[static_cast<size_t>(Op::kIllegal)] = {InsnClass::kCount};
#define INSN(id, mnemonic, ...) costs[static_cast<size_t>(Op::id)] = insn_cost(mnemonic);
#define XINSN(id, mnemonic, ...) costs[static_cast<size_t>(Op::id)] = insn_cost(mnemonic);
#include "rv32imf.def"
#include "xipu.def"
#undef XINSN
#undef INSN
  return costs;
}
inline constexpr auto kInsnCosts = make_insn_costs();

// Counts a retired instruction's actions (the AMP's count themselves in their bodies). Integer
// instructions, the most common, are not counted one by one: they are the retired instructions
// the other classes leave (Core::actions), which spares the fast loops a chain of increments.
inline void count_retired(ActionCounts& a, Op op) {
  const InsnCost& k = kInsnCosts[static_cast<size_t>(op)];
  if (k.cls != InsnClass::kCount && k.cls != InsnClass::kInteger) {
    a.count(k.cls);
    a.flops += k.flops;
  }
  a.sram_read_bytes += k.read_bytes;
  a.sram_written_bytes += k.written_bytes;
}
// The fast loops' form: every test is decided at compile time, so each body pays only for what
// its own instruction counts (the function above, not inlined into a huge loop, costs a call
// an instruction: it halved the six workers' speed once flops were counted).
template <Op kOp>
inline void count_retired(ActionCounts& a) {
  constexpr InsnCost k = kInsnCosts[static_cast<size_t>(kOp)];
  if constexpr (k.cls != InsnClass::kCount && k.cls != InsnClass::kInteger) {
    ++a.instructions[static_cast<size_t>(k.cls)];
    if constexpr (k.flops != 0) a.flops += k.flops;
  }
  if constexpr (k.read_bytes != 0) a.sram_read_bytes += k.read_bytes;
  if constexpr (k.written_bytes != 0) a.sram_written_bytes += k.written_bytes;
}

// Lane `lane` (0-3) of the f16x4 value in the register pair starting at `reg`.
inline uint32_t half(const Context& c, unsigned reg, unsigned lane) {
  return (c.f[reg + lane / 2] >> (16 * (lane & 1))) & 0xffffu;
}
inline void set_half(Context& c, unsigned reg, unsigned lane, uint32_t value) {
  uint32_t& word = c.f[reg + lane / 2];
  const unsigned shift = 16 * (lane & 1);
  word = (word & ~(0xffffu << shift)) | ((value & 0xffffu) << shift);
}

using fpu::bits_of;
using fpu::float_of;

}  // namespace ipu::iss::bodies

// Names the semantic bodies of rv32imf.def and xipu.def use.
// A debugger's watchpoints see every load and store of the general loop while it is attached.
#define WATCH_ACCESS(address, bytes, write)                                            \
  do {                                                                                 \
    if constexpr (kObserved) {                                                         \
      if (debug_ != nullptr) debug_->on_access(*this, c, (address), (bytes), (write)); \
    }                                                                                  \
  } while (0)
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
#define JUMP_RELATIVE(offset) JUMP(PC + (offset))  // jal and branches: pc + immediate
#define LOAD(var, address)                                              \
  do {                                                                  \
    const uint32_t a_ = (address);                                      \
    const uint32_t o_ = a_ - base;                                      \
    if (a_ & (sizeof(var) - 1)) TRAP(TrapCause::kLoadMisaligned, a_);   \
    if (o_ > size - sizeof(var)) TRAP(TrapCause::kLoadAccessFault, a_); \
    WATCH_ACCESS(a_, sizeof(var), false);                               \
    std::memcpy(&(var), mem + o_, sizeof(var));                         \
  } while (0)
#define STORE(value, address)                                           \
  do {                                                                  \
    const auto v_ = (value);                                            \
    const uint32_t a_ = (address);                                      \
    const uint32_t o_ = a_ - base;                                      \
    if (a_ & (sizeof(v_) - 1)) TRAP(TrapCause::kStoreMisaligned, a_);   \
    if (o_ > size - sizeof(v_)) TRAP(TrapCause::kStoreAccessFault, a_); \
    if (d.rs1 == 2 && a_ < c.stack_low) /* past the stack's end */      \
      TRAP(TrapCause::kStoreAccessFault, a_);                           \
    WATCH_ACCESS(a_, sizeof(v_), true);                                 \
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
// Starting workers: the supervisor's only, and outside an exchange phase (a start in one ends
// the phase first, without retiring: `break` leaves the caller's do-while).
#define WORKER_START_ALLOWED()        \
  if (c.id != 0) ILLEGAL();           \
  if (exchange_phase_) {              \
    exchange_phase_ = false;          \
    block = StopReason::kExchangeEnd; \
    break;                            \
  }
#define WORKER_RUN()                                                       \
  do {                                                                     \
    WORKER_START_ALLOWED();                                                \
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
// Every worker at once, as a vertex with six shares needs: each share then has its own
// context. Started one by one with ipu.run, an early share's context could be free again and
// taken by a later share before the last one started.
#define WORKER_RUN_ALL()                                                                \
  do {                                                                                  \
    WORKER_START_ALLOWED();                                                             \
    for (unsigned w = 1; w <= workers_; ++w)                                            \
      if (contexts_[w].state == ContextState::kRunning) stalled = true;                 \
    if (!stalled)                                                                       \
      for (unsigned w = 1; w <= workers_; ++w) start_worker(c, contexts_[w], RS1, RS2); \
    scheduling_changed = true;                                                          \
  } while (0)
#define WORKER_JOIN()                                                   \
  do {                                                                  \
    if (c.id != 0) ILLEGAL();                                           \
    for (unsigned w = 1; w <= workers_; ++w)                            \
      if (contexts_[w].state == ContextState::kRunning) stalled = true; \
    if (!stalled && profile_.enabled()) profile_.joined();              \
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
    WATCH_ACCESS(a_, n_, false);                                      \
    load_amp_weights(amp_, phase_, mem + (a_ - base));                \
    c.actions.count(InsnClass::kAmpWeights);                          \
    c.actions.sram_read_bytes += n_;                                  \
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
    WATCH_ACCESS(in_, AmpUnit::kInputBytes, false);                                       \
    if (last_) WATCH_ACCESS(out_, n_, true);                                              \
    uint8_t* const result_ = last_ ? mem + (out_ - base) : nullptr;                       \
    if (datapaths_.amp == nullptr)                                                        \
      amp_step(amp_, mem + (in_ - base), result_, nullptr);                               \
    else                                                                                  \
      RTL_CALL(amp_step(amp_, mem + (in_ - base), result_, datapaths_.amp))               \
    if (last_) invalidate(out_, n_);                                                      \
    c.actions.count(amp_.f32_mode() ? InsnClass::kAmpF32 : InsnClass::kAmpF16);           \
    c.actions.flops += 2 * (amp_.f32_mode() ? kAmpF32Macs : kAmpF16Macs);                 \
    c.actions.sram_read_bytes += AmpUnit::kInputBytes;                                    \
    if (last_) c.actions.sram_written_bytes += n_;                                        \
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
    send_port_free_at_ =                                                                           \
        exchange_->send(c.issue_cycle, pc, a_, std::move(words_), std::move(dests_));              \
  } while (0)
#define IPU_RECVSRC()                                                                        \
  do {                                                                                       \
    REQUIRE_EXCHANGE();                                                                      \
    const uint32_t src_ = RS1;                                                               \
    unsigned from_ = 0;                                                                      \
    if (src_ != ~0u && !machine_tile(src_, from_))                                           \
      IPU_ERROR("source {} does not exist", describe_tile_ref(src_));                        \
    exchange_->select_source(c.issue_cycle, pc, src_ == ~0u ? -1 : static_cast<int>(from_)); \
  } while (0)
#define IPU_RECV()                                                                          \
  do {                                                                                      \
    REQUIRE_EXCHANGE();                                                                     \
    const uint32_t a_ = RS1, n_ = RS2;                                                      \
    if (a_ & 3) TRAP(TrapCause::kStoreMisaligned, a_);                                      \
    if (n_ > size / 4 || a_ - base > size - 4 * n_) TRAP(TrapCause::kStoreAccessFault, a_); \
    exchange_->receive_buffer(c.issue_cycle, pc, a_, n_);                                   \
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
// `regs` FP registers (a pair or a quad, the first a multiple of regs) loaded from
// x[rs1] + imm: 8 or 16 bytes, 8-byte aligned (as ipu.ld2x64st64's load).
#define IPU_LOAD_WIDE(regs)                                                   \
  do {                                                                        \
    FP_ENABLED();                                                             \
    if (d.rd & ((regs)-1)) ILLEGAL();                                         \
    const uint32_t a_ = RS1 + IMM;                                            \
    if (a_ & 7) TRAP(TrapCause::kLoadMisaligned, a_);                         \
    if (a_ - base > size - 4 * (regs)) TRAP(TrapCause::kLoadAccessFault, a_); \
    WATCH_ACCESS(a_, 4 * (regs), false);                                      \
    std::memcpy(&c.f[d.rd], mem + (a_ - base), 4 * (regs));                   \
    c.mstatus |= kMstatusFs;                                                  \
  } while (0)
// The pair fs2 stored at x[rs1] + imm, 8-byte aligned: STORE's checks for one 8-byte value
// (bounds, the stack's end, tohost, code pages), and the second word's code page too. With
// tohost the second word, two word stores, so that the write to it is seen.
#define IPU_STORE64()                                                                        \
  do {                                                                                       \
    FP_ENABLED();                                                                            \
    if (d.rs2 & 1) ILLEGAL();                                                                \
    const uint32_t at_ = RS1 + IMM;                                                          \
    if ((at_ & 7) == 0 && at_ + 4 == tohost_) {                                              \
      STORE(c.f[d.rs2], at_);                                                                \
      STORE(c.f[d.rs2 + 1], at_ + 4);                                                        \
    } else {                                                                                 \
      uint64_t pair_;                                                                        \
      std::memcpy(&pair_, &c.f[d.rs2], 8);                                                   \
      STORE(pair_, at_);                                                                     \
      if (pages[(at_ + 4 - base) >> 12]) decoded[(at_ + 4 - base) >> 2].op = Op::kUndecoded; \
    }                                                                                        \
  } while (0)
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
    WATCH_ACCESS(la_, 16, false);                                         \
    WATCH_ACCESS(sa_, 8, true);                                           \
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
