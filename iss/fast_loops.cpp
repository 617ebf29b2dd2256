// The fast loops: plain instructions between scheduling events, with the context's state in
// host registers. The bodies are the tables' (rv32imf.def, xipu.def) in the vocabulary of
// instruction_bodies.h, with the names below redefined so that anything beyond the context
// leaves the loop for the general loop (general_loop.cpp).
#include "instruction_bodies.h"

namespace ipu::iss {

using namespace bodies;  // NOLINT(google-build-using-namespace): the bodies' vocabulary

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
#undef WORKER_RUN_ALL
#define WORKER_RUN_ALL() FAST_LEAVE
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
    count_retired<Op::id>(c.actions);                              \
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
// (scripts/fuzz.sh) runs the shared copy for every slot, and so does the sanitizer build
// (iss/CMakeLists.txt: the copies were its longest compile, 113 s). The Release build runs the
// slot copies, and the shared one in tile_interpreter_shared_barrel_test.
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
    count_retired<Op::id>(c.actions);                               \
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

}  // namespace ipu::iss
