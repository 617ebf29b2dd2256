// The tile's interpreter: the general loop (every instruction, every scheduling and exchange
// effect, tracing) and the fast loops that run plain instructions between such events with the
// context's state in host registers. Both expand the semantics written once in rv32imf.def and
// xipu.def; the names the bodies use are defined here.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core.h"
#include "fpu.h"

namespace ipu::hw {

namespace {

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

}  // namespace

// ---- the interpreter ----

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

    const uint32_t off = pc - base;
    if (off > size - 4) TRAP(TrapCause::kInstrAccessFault, pc);
    {
      Decoded& d = decoded[off >> 2];
      if (d.op == Op::kUndecoded) predecode(off);
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

// ---- the fast loops ----
//
// Between scheduling events a tile runs nothing but its contexts' own instructions: the
// supervisor alone issues every N cycles (N = worker contexts), or all N workers issue in slot
// order, one a cycle. These loops run such stretches with the program counter held as a pointer
// to the predecode entry (the next instruction is the next entry), the counts in host
// registers, and a jump from the end of each instruction's body straight to the next one's
// through a table of label addresses (threaded dispatch: one indirect jump per instruction,
// predicted per instruction). Cycles and counts are written back once, when the loop stops.
//
// The bodies are the same table's, expanded again with the names below. An instruction with an
// effect outside its context's registers and memory (CSRs, ecall, mret, worker control, sync,
// exchange, ipu.waitc), any trap, a jump out of SRAM, a store to tohost and, among workers, an
// instruction of more than one issue slot, stops the loop before it has had any effect, and the
// general loop runs it. So results, cycles and counts are the general loop's exactly
// (ipu-sim --interpreter general runs that loop alone; tests compare the two).
#undef PC
#define PC (base + static_cast<uint32_t>(dp - decoded) * 4)
#undef WATCH_ACCESS
#define WATCH_ACCESS(address, bytes, write) ((void)0)  // never with a debugger attached
#undef TRAP
#define TRAP(cause, tval) FAST_LEAVE
#undef JUMP
#define JUMP(target)                                    \
  do {                                                  \
    const uint32_t jt_ = (target);                      \
    if ((jt_ & 3) || jt_ - base > size - 4) FAST_LEAVE; \
    c.last_jump_from = PC;                              \
    npc = decoded + ((jt_ - base) >> 2);                \
  } while (0)
// The target entry of a pc-relative jump is the current one plus the offset in words.
#undef JUMP_RELATIVE
#define JUMP_RELATIVE(offset)                                                 \
  do {                                                                        \
    const int32_t o_ = (offset);                                              \
    const uint32_t from_ = static_cast<uint32_t>(dp - decoded);               \
    const uint32_t to_ = from_ + static_cast<uint32_t>(o_ >> 2);              \
    if ((o_ & 3) || to_ >= size / 4) FAST_LEAVE; /* the general loop traps */ \
    c.last_jump_from = base + from_ * 4;                                      \
    npc = decoded + to_;                                                      \
  } while (0)
#undef STORE
#define STORE(value, address)                                                                  \
  do {                                                                                         \
    const auto v_ = (value);                                                                   \
    const uint32_t a_ = (address);                                                             \
    const uint32_t o_ = a_ - base;                                                             \
    if ((a_ & (sizeof(v_) - 1)) || o_ > size - sizeof(v_) || (a_ & ~3u) == tohost) FAST_LEAVE; \
    if (d.rs1 == 2 && a_ < c.stack_low) FAST_LEAVE; /* the general loop faults */              \
    std::memcpy(mem + o_, &v_, sizeof(v_));                                                    \
    if (pages[o_ >> 12]) decoded[o_ >> 2].op = Op::kUndecoded;                                 \
  } while (0)
#undef IPU_ERROR
#define IPU_ERROR(...) FAST_LEAVE
#undef RTL_CALL
#define RTL_CALL(statement) \
  { FAST_LEAVE; }
#undef CSR_OP
#define CSR_OP(op, operand, write) FAST_LEAVE
#undef ECALL
#define ECALL() FAST_LEAVE
#undef MRET
#define MRET() FAST_LEAVE
#undef WORKER_RUN
#define WORKER_RUN() FAST_LEAVE
#undef WORKER_JOIN
#define WORKER_JOIN() FAST_LEAVE
#undef WORKER_EXIT
#define WORKER_EXIT() FAST_LEAVE
#undef IPU_SYNC
#define IPU_SYNC() FAST_LEAVE
#undef IPU_XEND
#define IPU_XEND() FAST_LEAVE
#undef IPU_SEND
#define IPU_SEND() FAST_LEAVE
#undef IPU_RECVSRC
#define IPU_RECVSRC() FAST_LEAVE
#undef IPU_RECV
#define IPU_RECV() FAST_LEAVE
#undef IPU_SMWRITE
#define IPU_SMWRITE() FAST_LEAVE
#undef IPU_SMREAD
#define IPU_SMREAD() FAST_LEAVE
#undef IPU_WAITC
#define IPU_WAITC() FAST_LEAVE

// Leaving the loop: the supervisor's has one context; a barrel copy's names its slot first.
#define FAST_LEAVE goto leave

// The names the bodies use besides the context, in locals the compiler can keep in registers.
#define FAST_LOOP_NAMES                                                                  \
  uint8_t* const mem = sram_;                                                            \
  const uint32_t base = base_, size = size_, tohost = tohost_;                           \
  Decoded* const decoded = decoded_.data();                                              \
  const Decoded* const end = decoded + size / 4; /* one past SRAM: fetching it faults */ \
  const uint8_t* const pages = decoded_pages_.data();

// Retires the supervisor's instruction just run and jumps to its next, counting the issue
// slots beyond one of multi-slot instructions (ipu.ampw) on the side.
#define SUPERVISOR_RETIRE(issue) \
  dp = npc;                      \
  if constexpr ((issue) != 1) {  \
    extra_slots += (issue)-1;    \
    multi_slot_at = left;        \
    multi_slots = (issue);       \
  }                              \
  if (--left == 0) goto leave;   \
  goto* kBodies[static_cast<size_t>(dp->op)];

uint64_t Core::run_fast_supervisor(uint64_t now, uint64_t limit) {
  FAST_LOOP_NAMES
  const uint64_t stride = workers_;
  // Instructions left of the budget, with the issue slots beyond one of multi-slot
  // instructions counted on the side.
  uint64_t left = limit;
  uint64_t extra_slots = 0, multi_slot_at = 0, multi_slots = 1;
  Context& c = contexts_[0];
  const Decoded* dp = nullptr;
  const Decoded* npc = nullptr;
  static const void* const kBodies[] = {
      &&body_kUndecoded,
      &&body_kIllegal,
#define INSN(id, ...) &&body_##id,
#define XINSN(id, ...) &&body_##id,
#include "rv32imf.def"
#include "xipu.def"
#undef XINSN
#undef INSN
  };
  static_assert(std::size(kBodies) == static_cast<size_t>(Op::kCount));

  // A pc outside SRAM or misaligned is the general loop's to fault on.
  if ((c.pc & 3) || c.pc - base > size - 4 || left == 0) return 0;
  dp = decoded + ((c.pc - base) >> 2);
  goto* kBodies[static_cast<size_t>(dp->op)];

body_kUndecoded:
  if (dp == end) goto leave;  // fell through the end of SRAM
  predecode(static_cast<uint32_t>(dp - decoded) * 4);
  goto* kBodies[static_cast<size_t>(dp->op)];
body_kIllegal:
  goto leave;
#define INSN(id, mnemonic, match, mask, imm, operands, issue, ...) \
  body_##id : {                                                    \
    [[maybe_unused]] const Decoded& d = *dp;                       \
    npc = dp + 1;                                                  \
    __VA_ARGS__                                                    \
  }                                                                \
  SUPERVISOR_RETIRE(issue)
#define XINSN(id, mnemonic, match, mask, imm, operands, issue, c_return, c_name, c_params, \
              summary, ...)                                                                \
  INSN(id, mnemonic, match, mask, imm, operands, issue, __VA_ARGS__)
#include "rv32imf.def"
#include "xipu.def"
#undef XINSN
#undef INSN

leave:
  const uint64_t ran = limit - left;
  c.pc = base + static_cast<uint32_t>(dp - decoded) * 4;
  if (ran == 0) return 0;
  c.instret += ran;
  c.issues += ran;
  c.next_issue = now + stride * (ran + extra_slots);
  c.issue_cycle = c.next_issue - stride * (left + 1 == multi_slot_at ? multi_slots : 1);
  return ran;
}

#undef SUPERVISOR_RETIRE
#undef FAST_LEAVE

// The barrel's bodies come in one copy per worker slot, each with its slot's context at a fixed
// place and its own indirect jumps. When the workers run the same code a few instructions apart
// (one codelet on six workers, the common case), each jump's target then follows from where its
// own slot and the next are in that code, a pattern the host's predictor learns; through one
// shared copy, every jump sees the six streams' successors interleaved. On 2026-11-25's host
// the copies took six workers from 0.68x to about 0.9x the supervisor's rate
// (docs/simulating.md), at the cost of seven times the barrel's code. A tile with more workers
// than copies runs one more copy, kAnySlot, that steps a context pointer from slot to slot.
//
// Clang gives each computed goto every label of its function as a successor, and the fuzzing
// build's edge coverage then grows with the square of the labels: seven copies had not compiled
// after 20 minutes (the shared copy alone: 55 s). So a clang build with AddressSanitizer
// (scripts/fuzz.sh) runs the shared copy for every slot. GCC's builds, sanitized or not, run the
// slot copies; -DIPU_BARREL_SLOT_COPIES=0 builds the shared one
// (tile_interpreter_shared_barrel_test).
#if defined(__clang__) && defined(__has_feature)
#if __has_feature(address_sanitizer)
#define IPU_BARREL_SLOT_COPIES 0
#endif
#endif
#ifndef IPU_BARREL_SLOT_COPIES
#define IPU_BARREL_SLOT_COPIES 1
#endif
constexpr unsigned kAnySlot = kBarrelSlots;
constexpr bool kSlotCopies = IPU_BARREL_SLOT_COPIES;
#if IPU_BARREL_SLOT_COPIES
#define BARREL_COPY(slot) slot
#else
#define BARREL_COPY(slot) 6  // kAnySlot: every slot's row names the shared copy
#endif

#define FAST_LEAVE                                     \
  do {                                                 \
    if constexpr (kSlot != kAnySlot) cp = &ctx[kSlot]; \
    goto leave;                                        \
  } while (0)

// Retires slot S's instruction and jumps to the next slot's next instruction; after the last
// worker's turn counts a round and checks the limit.
#define BARREL_RETIRE(S)                                                  \
  if constexpr ((S) == kAnySlot) {                                        \
    cp->fast_entry = npc;                                                 \
    if (++cp == after_last_worker) {                                      \
      cp = ctx;                                                           \
      if (--left == 0) {                                                  \
        dp = cp->fast_entry;                                              \
        goto leave;                                                       \
      }                                                                   \
    }                                                                     \
    dp = cp->fast_entry;                                                  \
    goto* kBodies[kAnySlot][static_cast<size_t>(dp->op)];                 \
  } else {                                                                \
    ctx[S].fast_entry = npc;                                              \
    if ((S) + 1 == kBarrelSlots || (S) + 1 == workers) {                  \
      dp = ctx[0].fast_entry;                                             \
      if (--left == 0) {                                                  \
        cp = &ctx[0];                                                     \
        goto leave;                                                       \
      }                                                                   \
      goto* kBodies[0][static_cast<size_t>(dp->op)];                      \
    }                                                                     \
    dp = ctx[((S) + 1) % kBarrelSlots].fast_entry;                        \
    goto* kBodies[((S) + 1) % kBarrelSlots][static_cast<size_t>(dp->op)]; \
  }

#define BARREL_BODY(id, issue, S, ...)                              \
  body_##id##_##S : {                                               \
    constexpr unsigned kSlot = S;                                   \
    if constexpr ((issue) != 1) FAST_LEAVE;                         \
    [[maybe_unused]] Context& c = kSlot == kAnySlot ? *cp : ctx[S]; \
    [[maybe_unused]] const Decoded& d = *dp;                        \
    npc = dp + 1;                                                   \
    __VA_ARGS__                                                     \
    BARREL_RETIRE(S)                                                \
  }
#if IPU_BARREL_SLOT_COPIES
#define BARREL_COPIES(id, issue, ...)    \
  BARREL_BODY(id, issue, 0, __VA_ARGS__) \
  BARREL_BODY(id, issue, 1, __VA_ARGS__) \
  BARREL_BODY(id, issue, 2, __VA_ARGS__) \
  BARREL_BODY(id, issue, 3, __VA_ARGS__) \
  BARREL_BODY(id, issue, 4, __VA_ARGS__) \
  BARREL_BODY(id, issue, 5, __VA_ARGS__) \
  BARREL_BODY(id, issue, 6, __VA_ARGS__)
#else
#define BARREL_COPIES(id, issue, ...) BARREL_BODY(id, issue, 6, __VA_ARGS__)
#endif
#define BARREL_SPECIAL(S)                                         \
  body_kUndecoded_##S : {                                         \
    constexpr unsigned kSlot = S;                                 \
    if (dp == end) FAST_LEAVE; /* fell through the end of SRAM */ \
    predecode(static_cast<uint32_t>(dp - decoded) * 4);           \
    goto* kBodies[S][static_cast<size_t>(dp->op)];                \
  }                                                               \
  body_kIllegal_##S : {                                           \
    constexpr unsigned kSlot = S;                                 \
    FAST_LEAVE;                                                   \
  }

uint64_t Core::run_fast_barrel(uint64_t now, uint64_t limit) {
  static_assert(kBarrelSlots == 6 && kAnySlot == 6, "BARREL_COPIES expands copies 0-6");
  FAST_LOOP_NAMES
  const unsigned workers = workers_;
  const uint64_t stride = workers_;
  // Each worker's next instruction is in its fast_entry; `left` counts down whole rounds that
  // end by `limit` (first_round is the cycle of the first round's slot 0). The general loop runs
  // a last part-round before `limit`.
  Context* const ctx = &contexts_[1];
  const uint64_t first_round = now - now % workers;
  const uint64_t rounds = first_round + workers <= limit ? (limit - first_round) / workers : 0;
  uint64_t left = rounds;
  Context* const after_last_worker = ctx + workers;
  // The any-slot copy's context; the others' once the loop has left (the slot whose entry dp
  // is).
  Context* cp = nullptr;
  const Decoded* dp = nullptr;
  const Decoded* npc = nullptr;
  static const void* const kBodies[kBarrelSlots + 1][static_cast<size_t>(Op::kCount)] = {
#define BARREL_ROW BARREL_COPY(0)
#include "fast_barrel_row.inc"
#undef BARREL_ROW
#define BARREL_ROW BARREL_COPY(1)
#include "fast_barrel_row.inc"
#undef BARREL_ROW
#define BARREL_ROW BARREL_COPY(2)
#include "fast_barrel_row.inc"
#undef BARREL_ROW
#define BARREL_ROW BARREL_COPY(3)
#include "fast_barrel_row.inc"
#undef BARREL_ROW
#define BARREL_ROW BARREL_COPY(4)
#include "fast_barrel_row.inc"
#undef BARREL_ROW
#define BARREL_ROW BARREL_COPY(5)
#include "fast_barrel_row.inc"
#undef BARREL_ROW
#define BARREL_ROW BARREL_COPY(6)
#include "fast_barrel_row.inc"
#undef BARREL_ROW
  };

  // A pc outside SRAM or misaligned is the general loop's to fault on.
  for (unsigned i = 0; i < workers; ++i) {
    const uint32_t pc = ctx[i].pc;
    if ((pc & 3) || pc - base > size - 4) return now;
    ctx[i].fast_entry = decoded + ((pc - base) >> 2);
  }
  if (rounds == 0) return now;
  {
    const unsigned first_slot = static_cast<unsigned>(now % workers);
    cp = &ctx[first_slot];
    dp = cp->fast_entry;
    const unsigned copy = kSlotCopies && workers <= kBarrelSlots ? first_slot : kAnySlot;
    goto* kBodies[copy][static_cast<size_t>(dp->op)];
  }

#if IPU_BARREL_SLOT_COPIES
  BARREL_SPECIAL(0)
  BARREL_SPECIAL(1)
  BARREL_SPECIAL(2)
  BARREL_SPECIAL(3)
  BARREL_SPECIAL(4)
  BARREL_SPECIAL(5)
#endif
  BARREL_SPECIAL(6)
#define INSN(id, mnemonic, match, mask, imm, operands, issue, ...) \
  BARREL_COPIES(id, issue, __VA_ARGS__)
#define XINSN(id, mnemonic, match, mask, imm, operands, issue, c_return, c_name, c_params, \
              summary, ...)                                                                \
  BARREL_COPIES(id, issue, __VA_ARGS__)
#include "rv32imf.def"
#include "xipu.def"
#undef XINSN
#undef INSN

leave:
  // Each worker issued once in every cycle of its slot in [start, now).
  cp->fast_entry = dp;
  const uint64_t start = now;
  now = first_round + (rounds - left) * workers + static_cast<uint64_t>(cp - ctx);
  for (unsigned w = 0; w < workers; ++w) {
    Context& c = ctx[w];
    c.pc = base + static_cast<uint32_t>(c.fast_entry - decoded) * 4;
    const uint64_t first = start + (w + stride - start % stride) % stride;
    if (first >= now) continue;
    const uint64_t count = (now - 1 - first) / stride + 1;
    c.instret += count;
    c.issues += count;
    c.issue_cycle = first + (count - 1) * stride;
    c.next_issue = c.issue_cycle + stride;
  }
  return now;
}

#undef FAST_LOOP_NAMES
#undef BARREL_SPECIAL
#undef BARREL_COPIES
#undef BARREL_COPY
#undef BARREL_BODY
#undef BARREL_RETIRE
#undef FAST_LEAVE

template void Core::execute<true>(Context&, uint64_t);
template void Core::execute<false>(Context&, uint64_t);

}  // namespace ipu::hw
