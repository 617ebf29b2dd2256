// The tile interpreter's fast loops against its general loop (Core::set_fast_path): every test
// firmware and thousands of random programs, on the supervisor alone and on six workers sharing
// memory, run whole and paused at odd cycle limits, must end in exactly the same state: every
// context's registers, pc, counters and trap CSRs, the console, the SRAM, the cycle count and
// the stop reason or fault report.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <array>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "tests/support/core_harness.h"
#include "tests/support/rv_asm.h"
#include "tests/support/stimulus_budget.h"

namespace ipu::test {
namespace {

using iss::StopReason;

// Everything a program can observe or a report can print, as text (a difference reads well).
std::string snapshot(const CoreHarness& h, StopReason reason) {
  std::string s = fmt::format("stop {} status {} cycles {}\nfault {}\n", static_cast<int>(reason),
                              h.core.exit_status(), h.core.cycles(), h.core.fault().message);
  for (unsigned i = 0; i <= h.core.worker_contexts(); ++i) {
    const iss::Context& c = h.core.context(i);
    s += fmt::format(
        "context {} state {} pc {:08x} instret {} issues {} issue_cycle {} next_issue {} runs {} "
        "active {} mstatus {:x} fflags {:x} frm {} mepc {:08x} mcause {} mtval {:08x} "
        "last_jump {:08x}\n  x",
        i, static_cast<int>(c.state), c.pc, c.instret, c.issues, c.issue_cycle, c.next_issue,
        c.runs, c.active_cycles, c.mstatus, c.fflags, c.frm, c.mepc, c.mcause, c.mtval,
        c.last_jump_from);
    for (unsigned r = 0; r < 32; ++r) s += fmt::format(" {:08x}", c.x[r]);
    s += "\n  f";
    for (unsigned r = 0; r < 32; ++r) s += fmt::format(" {:08x}", c.f[r]);
    // The energy model's counts: every loop counts the same actions.
    s += fmt::format("\n  actions {} sram read {} written {} flops {}\n",
                     fmt::join(c.actions.instructions, " "), c.actions.sram_read_bytes,
                     c.actions.sram_written_bytes, c.actions.flops);
  }
  for (const std::string& line : h.console) s += "console " + line + "\n";
  return s;
}

struct Outcome {
  std::string state;
  std::vector<uint8_t> sram;
};

// Runs a program loaded by `load` to its end (or `limit`), in one call or in slices of `slice`
// cycles, with the fast loops on or off, on a tile with `workers` worker contexts.
Outcome run(const std::function<void(CoreHarness&)>& load, bool fast, uint64_t slice,
            uint64_t limit = 20'000'000, unsigned workers = 6) {
  iss::TileConfig config;
  config.worker_contexts = workers;
  CoreHarness h(config);
  h.core.set_fast_path(fast);
  load(h);
  StopReason reason = StopReason::kCycleLimit;
  if (slice == 0) {
    reason = h.run(limit);
  } else {
    for (uint64_t until = slice; reason == StopReason::kCycleLimit && until <= limit;
         until += slice)
      reason = h.run(until);
  }
  return {snapshot(h, reason), h.sram};
}

void expect_same(const std::function<void(CoreHarness&)>& load, const std::string& what,
                 uint64_t limit = 20'000'000, unsigned workers = 6) {
  const Outcome general = run(load, false, 0, limit, workers);
  for (uint64_t slice : {uint64_t{0}, uint64_t{997}, uint64_t{61}}) {
    const Outcome fast = run(load, true, slice, limit, workers);
    EXPECT_EQ(general.state, fast.state) << what << ", fast loops, slices of " << slice;
    size_t first = 0;
    while (first < general.sram.size() && general.sram[first] == fast.sram[first]) ++first;
    EXPECT_EQ(first, general.sram.size())
        << what << ", slices of " << slice << ": SRAM differs from 0x" << std::hex
        << (iss::TileConfig{}.sram_base + first);
  }
}

TEST(TileInterpreter, FastLoopsMatchTheGeneralLoopOnEveryTestFirmware) {
  for (const char* name : {"hello", "tohost", "trap_handler", "workers", "worker_cycles",
                           "runall_cycles", "null_deref", "simd_intrinsics", "amp_matmul"}) {
    const std::string path = std::string(IPU_TEST_FIRMWARE_DIR) + "/" + name + ".elf";
    expect_same([&path](CoreHarness& h) { h.load_elf(path); }, name);
  }
}

// ---- random programs ----

namespace asm_ = rv;

// Registers the random code leaves alone: s0/a0 point at the data area, s1 at the code, t6
// belongs to the trap handler, t5 counts the body's passes, t4 holds the word the
// self-modifying stores write, a7 the exit call.
constexpr uint32_t kData = asm_::s0, kCode = asm_::s1, kHandlerScratch = 31, kPasses = 30,
                   kPatch = 29, kExitCall = 17;
bool reserved(uint32_t r) {
  return r == kData || r == kCode || r == kHandlerScratch || r == kPasses || r == kPatch ||
         r == kExitCall || r == asm_::a0;
}
// What the self-modifying stores write: addi t1, t1, 1 (a stale predecode shows in t1).
constexpr uint32_t kPatchWord = asm_::addi(asm_::t1, asm_::t1, 1);

class RandomProgram {
 public:
  explicit RandomProgram(uint32_t seed) : rng_(seed) {}

  // Appends `length` random instructions to `code`, run three times over (t5 counts): every
  // branch and jump inside goes forward, so each pass runs to the end, and stores into the
  // code change what the next pass runs.
  void body(std::vector<uint32_t>& code, size_t length, uint32_t data_register) {
    using namespace asm_;
    code.push_back(addi(kPasses, 0, 3));
    code.push_back(lui(kPatch, kPatchWord >> 12));
    code.push_back(addi(kPatch, kPatch, static_cast<int32_t>(kPatchWord & 0xfff)));
    const size_t start = code.size();
    for (size_t i = 0; i < length; ++i)
      code.push_back(instruction(start, start + length, start + i, data_register));
    code.push_back(addi(kPasses, kPasses, -1));
    code.push_back(B(1, kPasses, 0, -static_cast<int32_t>(4 * (code.size() - start))));
  }

  uint32_t below(uint32_t n) { return static_cast<uint32_t>(rng_() % n); }

 private:
  uint32_t reg() {
    for (;;) {
      const uint32_t r = below(32);
      if (!reserved(r)) return r;
    }
  }
  uint32_t any_reg() { return below(32); }
  int32_t imm12() { return static_cast<int32_t>(below(4096)) - 2048; }
  // Mostly aligned offsets inside the 2 KiB data area, sometimes misaligned (a trap the handler
  // skips).
  int32_t data_offset(unsigned bytes) {
    const int32_t off = static_cast<int32_t>(below(2048 / bytes) * bytes);
    return below(20) == 0 ? off + 1 : off;
  }

  uint32_t instruction(size_t start, size_t end, size_t here, uint32_t data) {
    using namespace asm_;
    const uint32_t rd = reg(), r1 = any_reg(), r2 = any_reg();
    const uint32_t fd = below(32), f1 = below(32), f2 = below(32), fa = below(32);
    // Rounding-mode field: mostly dynamic, sometimes static, rarely reserved (illegal).
    const uint32_t rm = below(10) < 6 ? 7 : below(8);
    const size_t forward = end - here;  // words to the end of the body, >= 1
    switch (below(24)) {
      case 0:
      case 1:
      case 2: {  // register-register ALU and M
        static constexpr uint32_t kF3F7[][2] = {{0, 0}, {0, 32}, {1, 0}, {2, 0}, {3, 0}, {4, 0},
                                                {5, 0}, {5, 32}, {6, 0}, {7, 0}, {0, 1}, {1, 1},
                                                {2, 1}, {3, 1},  {4, 1}, {5, 1}, {6, 1}, {7, 1}};
        const auto& op = kF3F7[below(std::size(kF3F7))];
        return R(0x33, op[0], op[1], rd, r1, r2);
      }
      case 3:
      case 4:
      case 5: {  // register-immediate ALU
        const uint32_t f3 = below(8);
        if (f3 == 1) return R(0x13, 1, 0, rd, r1, below(32));
        if (f3 == 5) return R(0x13, 5, below(2) * 32, rd, r1, below(32));
        return I(0x13, f3, rd, r1, imm12());
      }
      case 6: return U(0x37, rd, below(1u << 20));
      case 7: return U(0x17, rd, below(1u << 20));
      case 8:
      case 9: {  // loads
        static constexpr uint32_t kLoad[][2] = {{0, 1}, {1, 2}, {2, 4}, {4, 1}, {5, 2}};
        const auto& l = kLoad[below(5)];
        return I(0x03, l[0], rd, data, data_offset(l[1]));
      }
      case 10:
      case 11: {  // stores
        const uint32_t f3 = below(3);
        return S(0x23, f3, data, r2, data_offset(1u << f3));
      }
      case 12: {  // a store of kPatchWord anywhere into the body (self-modifying code)
        const size_t target = start + below(static_cast<uint32_t>(end - start));
        return sw(kPatch, kCode, static_cast<int32_t>(4 * target));
      }
      case 13:
      case 14: {  // forward branches
        const uint32_t f3 = std::array<uint32_t, 6>{0, 1, 4, 5, 6, 7}[below(6)];
        return B(f3, r1, r2, static_cast<int32_t>(4 * (1 + below(std::min<size_t>(forward, 64)))));
      }
      case 15:
        return J(below(3) == 0 ? 0 : rd,
                 static_cast<int32_t>(4 * (1 + below(std::min<size_t>(forward, 64)))));
      case 16: {  // CSR reads of the counters and fcsr (effects outside the fast loop)
        static constexpr uint32_t kCsr[] = {0xb00, 0xb02, 0xc00, 0xc02, 0x003, 0xf14, 0x001};
        return csrrs(rd, kCsr[below(std::size(kCsr))], 0);
      }
      case 17: {  // FP loads and stores
        if (below(2)) return I(0x07, 2, fd, data, data_offset(4));
        return S(0x27, 2, data, f2, data_offset(4));
      }
      case 18:
      case 19: {  // FP arithmetic
        static constexpr uint32_t kF7[] = {0x00, 0x04, 0x08, 0x0c, 0x14, 0x10};
        const uint32_t f7 = kF7[below(std::size(kF7))];
        if (f7 == 0x14) return R(0x53, below(2), f7, fd, f1, f2);  // fmin/fmax
        if (f7 == 0x10) return R(0x53, below(3), f7, fd, f1, f2);  // sign injection
        return R(0x53, rm, f7, fd, f1, f2);
      }
      case 20: return R4(0x43 + 4 * below(4), rm, fd, f1, f2, fa);
      case 21: {  // conversions and moves
        switch (below(4)) {
          case 0: return R(0x53, rm, 0x60, rd, f1, below(2));   // fcvt.w[u].s
          case 1: return R(0x53, rm, 0x68, fd, r1, below(2));   // fcvt.s.w[u]
          case 2: return R(0x53, 0, 0x70, rd, f1, 0);           // fmv.x.w
          default: return R(0x53, below(3), 0x50, rd, f1, f2);  // compares
        }
      }
      case 22: return below(4) == 0 ? ebreak() : 0x0000000f;  // ebreak (skipped) or fence
      default: return below(40) == 0 ? 0xffffffffu : nop();   // an illegal word (skipped)
    }
  }

  std::mt19937 rng_;
};

// Supervisor program: trap handler, set-up, a random body, exit with a0 = 0. With `workers`
// (> 0), the body runs on that many workers at once (over one shared data area) and the
// supervisor joins them.
std::vector<uint32_t> random_program(uint32_t seed, unsigned workers, size_t length) {
  using namespace asm_;
  RandomProgram p(seed);
  const uint32_t base = iss::TileConfig{}.sram_base;
  const uint32_t data = base + 0x8000;
  std::vector<uint32_t> code;
  // 0: jump over the handler. 1-5: handler: skip the trapping instruction.
  code.push_back(J(0, 6 * 4));
  code.push_back(csrrs(kHandlerScratch, 0x341, 0));  // csrr t6, mepc
  code.push_back(addi(kHandlerScratch, kHandlerScratch, 4));
  code.push_back(csrrw(0, 0x341, kHandlerScratch));  // csrw mepc, t6
  code.push_back(addi(kHandlerScratch, 0, 0));
  code.push_back(mret());
  // 6: mtvec = handler; s0 = data; s1 = code (base); t6 = the self-modifying word.
  code.push_back(lui(kCode, base >> 12));
  code.push_back(addi(t0, kCode, 4));
  code.push_back(csrrw(0, 0x305, t0));  // csrw mtvec, t0
  code.push_back(lui(kData, data >> 12));
  code.push_back(addi(a0, kData, 0));
  code.push_back(addi(kHandlerScratch, 0, 0));
  // Random starting registers.
  for (uint32_t r = 1; r < 32; ++r)
    if (!reserved(r)) code.push_back(addi(r, 0, static_cast<int32_t>(p.below(4096)) - 2048));
  for (uint32_t r = 0; r < 32; r += 3) code.push_back(R(0x53, 7, 0x68, r, 1 + r % 7, 0));
  if (workers > 0) {
    // ipu.wentry = the worker body; an ipu.run per worker with a0 = data, or one ipu.runall
    // (every worker context: the core has `workers` of them), half the programs each; join; exit.
    const bool all_at_once = p.below(2) == 1;
    const size_t entry_at = code.size() + 6 + (all_at_once ? 1 : workers);
    code.push_back(lui(t0, (base + 4 * entry_at) >> 12));
    code.push_back(addi(t0, t0, static_cast<int32_t>((base + 4 * entry_at) & 0xfff)));
    code.push_back(csrrw(0, 0x7c1, t0));
    if (all_at_once)
      code.push_back(ipu_runall(0, kData));
    else
      for (unsigned w = 0; w < workers; ++w) code.push_back(ipu_run(0, 0, kData));
    code.push_back(ipu_join());
    code.push_back(addi(a7, 0, 93));
    code.push_back(ecall());
    // Worker body: s1 = code, t6 = the self-modifying word, a0 = data (from ipu.run).
    code.push_back(lui(kCode, base >> 12));
    code.push_back(addi(kHandlerScratch, 0, 0));
    p.body(code, length, a0);
    code.push_back(ipu_wexit());
  } else {
    p.body(code, length, kData);
    code.push_back(addi(a0, 0, 0));
    code.push_back(addi(a7, 0, 93));
    code.push_back(ecall());
  }
  return code;
}

void expect_random_programs_same(unsigned workers, uint32_t programs, size_t length) {
  for (uint32_t seed = 1; seed <= programs; ++seed) {
    const std::vector<uint32_t> code = random_program(seed, workers, length);
    expect_same([&code](CoreHarness& h) { h.load_words(code); },
                workers > 0 ? fmt::format("{}-worker program, seed {}", workers, seed)
                            : fmt::format("supervisor program, seed {}", seed),
                200'000, workers > 0 ? workers : 6);
    if (::testing::Test::HasFailure()) return;
  }
}

TEST(TileInterpreter, FastLoopsMatchTheGeneralLoopOnRandomSupervisorPrograms) {
  expect_random_programs_same(0, static_cast<unsigned>(test::stimulus_budget(300)), 400);
}

TEST(TileInterpreter, FastLoopsMatchTheGeneralLoopOnRandomWorkerPrograms) {
  expect_random_programs_same(6, static_cast<unsigned>(test::stimulus_budget(150)), 300);
}

// The fast barrel has a copy of its bodies per slot for up to six workers: fewer wrap early,
// more run in the general loop alone.
TEST(TileInterpreter, FastLoopsMatchTheGeneralLoopWithOtherWorkerCounts) {
  for (unsigned workers : {1u, 4u, 5u, 8u}) expect_random_programs_same(workers, 20, 300);
}

// Hand-made cases at the edges of the fast loops.
TEST(TileInterpreter, FallingOffTheEndOfSramAndJumpingOutOfItFaultTheSameWay) {
  using namespace asm_;
  const iss::TileConfig config;
  const uint32_t last = config.sram_base + config.sram_bytes - 8;
  // Two nops in the last two words of SRAM: the fetch after them faults.
  expect_same(
      [last](CoreHarness& h) {
        h.write_word(last, nop());
        h.write_word(last + 4, nop());
        h.write_word(h.base(), lui(t0, last >> 12));
        h.write_word(h.base() + 4, addi(t0, t0, static_cast<int32_t>(last & 0xfff)));
        h.write_word(h.base() + 8, jalr(0, t0, 0));
        h.core.reset(h.base());
      },
      "fall through the end of SRAM");
  // A branch whose target lies below SRAM, and a jalr to address 0.
  expect_same(
      [](CoreHarness& h) {
        h.load_words({nop(), B(0, 0, 0, -4096)});
      },
      "branch below SRAM");
  expect_same(
      [](CoreHarness& h) {
        h.load_words({nop(), addi(t0, 0, 0), jalr(ra, t0, 0)});
      },
      "jalr to 0");
}

}  // namespace
}  // namespace ipu::test
