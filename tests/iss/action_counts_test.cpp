// The action counts the energy model prices (iss/insn_class.h, Core::actions): a program of
// known instructions, counted by hand, gives exactly those counts in both interpreter loops.
#include <gtest/gtest.h>

#include <vector>

#include "tests/support/core_harness.h"
#include "tests/support/rv_asm.h"

namespace ipu::test {
namespace {

using iss::InsnClass;
namespace asm_ = rv;

uint64_t count(const iss::ActionCounts& a, InsnClass cls) {
  return a.instructions[static_cast<size_t>(cls)];
}

// A loop of 10 passes: addi, lw, sw, sb, addi (counter), bne; then the exit ecall sequence.
iss::ActionCounts run_loop(bool fast) {
  CoreHarness h;
  h.core.set_fast_path(fast);
  const uint32_t data = h.base() + 0x1000;
  const std::vector<uint32_t> program = {
      asm_::lui(asm_::s0, data >> 12),          // s0 = data
      asm_::addi(asm_::t0, 0, 10),              // t0 = 10 passes
      asm_::addi(asm_::t1, asm_::t1, 3),        // loop:
      asm_::lw(asm_::t2, asm_::s0, 0),          //   4 bytes read
      asm_::sw(asm_::t2, asm_::s0, 4),          //   4 bytes written
      asm_::S(0x23, 0, asm_::s0, asm_::t1, 8),  //   sb: 1 byte written
      asm_::addi(asm_::t0, asm_::t0, -1),       //
      asm_::B(1, asm_::t0, 0, -20),             //   bne t0, zero, loop
      asm_::addi(asm_::a0, 0, 0),               // exit status 0
      asm_::addi(asm_::a7, 0, 93),              // exit
      asm_::ecall(),
  };
  h.load_words(program);
  EXPECT_EQ(h.run(), iss::StopReason::kExited);
  return h.core.actions();
}

TEST(ActionCounts, AKnownLoopCountsEachClassAndByte) {
  for (const bool fast : {false, true}) {
    const iss::ActionCounts a = run_loop(fast);
    // Integer: lui, addi before the loop; 2 addi a pass; addi, addi after: 2 + 20 + 2.
    EXPECT_EQ(count(a, InsnClass::kInteger), 24u) << "fast " << fast;
    EXPECT_EQ(count(a, InsnClass::kLoad), 10u);
    EXPECT_EQ(count(a, InsnClass::kStore), 20u);
    EXPECT_EQ(count(a, InsnClass::kBranch), 10u);
    EXPECT_EQ(count(a, InsnClass::kControl), 1u);  // the ecall
    EXPECT_EQ(count(a, InsnClass::kFpu), 0u);
    EXPECT_EQ(a.sram_read_bytes, 40u);
    EXPECT_EQ(a.sram_written_bytes, 50u);
  }
}

// A loop of 10 passes of floating-point work: fadd.s (1 flop), fmadd.s (2), ipu.f16v4fma (4
// lanes of 2), ipu.f32v2hsum (acc + 2 lanes: 2), fsgnj.s (a move: none), ipu.f16v4cmplt (a
// compare: none): 13 flops a pass, 130 in all; the integer work counts none.
TEST(ActionCounts, AKnownFloatingPointLoopCountsItsFlops) {
  for (const bool fast : {false, true}) {
    CoreHarness h;
    h.core.set_fast_path(fast);
    const std::vector<uint32_t> program = {
        asm_::addi(asm_::t0, 0, 10),                   // t0 = 10 passes
        asm_::R(0x53, 0, 0x00, 1, 2, 3),               // loop: fadd.s f1, f2, f3
        asm_::R4(0x43, 0, 4, 2, 3, 5),                 //   fmadd.s f4, f2, f3, f5
        asm_::R4(0x5b, 0, 6, 8, 10, 12) | (1u << 25),  //   ipu.f16v4fma f6:7, f8:9, ...
        asm_::R(0x2b, 2, 0x04, 14, 16, 0),             //   ipu.f32v2hsum f14, f16:17
        asm_::R(0x53, 0, 0x10, 18, 2, 2),              //   fsgnj.s f18, f2, f2
        asm_::R(0x2b, 1, 0x06, 20, 8, 10),             //   ipu.f16v4cmplt
        asm_::addi(asm_::t0, asm_::t0, -1),            //
        asm_::B(1, asm_::t0, 0, -28),                  //   bne t0, zero, loop
        asm_::addi(asm_::a0, 0, 0),
        asm_::addi(asm_::a7, 0, 93),
        asm_::ecall(),
    };
    h.load_words(program);
    ASSERT_EQ(h.run(), iss::StopReason::kExited) << "fast " << fast;
    const iss::ActionCounts a = h.core.actions();
    EXPECT_EQ(a.flops, 130u) << "fast " << fast;
    EXPECT_EQ(count(a, InsnClass::kFpu), 30u);
    EXPECT_EQ(count(a, InsnClass::kSimd), 30u);
  }
}

TEST(ActionCounts, EveryMnemonicHasTheClassItsNameSays) {
  EXPECT_EQ(iss::insn_cost("fmadd.s").cls, InsnClass::kFpu);
  EXPECT_EQ(iss::insn_cost("flw").cls, InsnClass::kLoad);
  EXPECT_EQ(iss::insn_cost("flw").read_bytes, 4);
  EXPECT_EQ(iss::insn_cost("fence").cls, InsnClass::kControl);
  EXPECT_EQ(iss::insn_cost("bgeu").cls, InsnClass::kBranch);
  EXPECT_EQ(iss::insn_cost("mulhu").cls, InsnClass::kInteger);
  EXPECT_EQ(iss::insn_cost("ipu.f16v4fma").cls, InsnClass::kSimd);
  EXPECT_EQ(iss::insn_cost("ipu.f32exp").cls, InsnClass::kFpu);  // not control, for all its "ipu."
  EXPECT_EQ(iss::insn_cost("ipu.f32exp").flops, 1);
  EXPECT_EQ(iss::insn_cost("ipu.ld2x64st64").read_bytes, 16);
  EXPECT_EQ(iss::insn_cost("ipu.ld2x64st64").written_bytes, 8);
  EXPECT_EQ(iss::insn_cost("ipu.send").cls, InsnClass::kControl);
  EXPECT_EQ(iss::insn_cost("ipu.amp").cls, InsnClass::kCount);  // counted by its body
  EXPECT_EQ(iss::insn_class_name(InsnClass::kAmpF16), "amp-f16");
  // Flops: a lane's operation one, a fused multiply-add two; moves and compares none.
  EXPECT_EQ(iss::insn_cost("fdiv.s").flops, 1);
  EXPECT_EQ(iss::insn_cost("fnmsub.s").flops, 2);
  EXPECT_EQ(iss::insn_cost("ipu.f32v2mul").flops, 2);
  EXPECT_EQ(iss::insn_cost("ipu.f16v4hsum").flops, 4);
  EXPECT_EQ(iss::insn_cost("fcvt.s.w").flops, 0);
  EXPECT_EQ(iss::insn_cost("fmax.s").flops, 0);
  EXPECT_EQ(iss::insn_cost("ipu.f32v2tof16").flops, 0);
  EXPECT_EQ(iss::insn_cost("mul").flops, 0);
}

// The AMP firmware (tests/firmware/amp_matmul.c): ipu.amp counted by mode and ipu.ampw once a
// phase. By hand: f16, K = 32 is 2 passes of 4 phases over 48 columns: 48 x 4 x 2 = 384 issues;
// f32, K = 16 is 2 passes over 24 columns: 24 x 4 x 2 = 192; each of the 6 workers loads 4 phases
// a pass in each mode: 6 x 4 x 2 x 2 = 96 ipu.ampw.
TEST(ActionCounts, TheAmpCountsItsIssuesByMode) {
  for (const bool fast : {false, true}) {
    CoreHarness h;
    h.core.set_fast_path(fast);
    h.load_elf(std::string(IPU_TEST_FIRMWARE_DIR) + "/amp_matmul.elf");
    ASSERT_EQ(h.run(), iss::StopReason::kExited);
    const iss::ActionCounts a = h.core.actions();
    EXPECT_EQ(count(a, InsnClass::kAmpF16), 384u) << "fast " << fast;
    EXPECT_EQ(count(a, InsnClass::kAmpF32), 192u);
    EXPECT_EQ(count(a, InsnClass::kAmpWeights), 96u);
    // 128 flops an f16 issue (64 MACs), 32 an f32 one (16 MACs).
    EXPECT_EQ(a.flops, 384u * 128 + 192u * 32);
    // Their SRAM bytes at least: 8 B an issue read, 128 B (f16) or 64 B (f32) a phase of
    // weights, and each column's results written once a pass (16 f32 or 8 f32).
    EXPECT_GE(a.sram_read_bytes, (384u + 192u) * 8 + 48u * 128 + 48u * 64);
    EXPECT_GE(a.sram_written_bytes, 48u * 2 * 64 + 24u * 2 * 32);
    uint64_t total = 0;
    for (const uint64_t n : a.instructions) total += n;
    EXPECT_EQ(total, h.core.instructions_retired());  // every instruction in one class
  }
}

}  // namespace
}  // namespace ipu::test
