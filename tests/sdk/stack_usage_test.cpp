// The compiler sizes a tile's stacks from its firmware's code: the analysis against frames
// written out by hand (tests/firmware/stack_frames.S), then codelets compiled and run on the
// stacks it gives them.
#include "sdk/compiler/stack_usage.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "hw/machine/machine.h"
#include "sdk/compiler/compiler.h"
#include "sdk/runtime/device.h"

namespace {

using namespace ipu::sdk;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

const StackUsage& frames() {
  static const ElfImage image = read_elf(std::string(IPU_TEST_FIRMWARE_DIR) + "/stack_frames.elf");
  static const StackUsage usage(image);
  return usage;
}

StackDepth depth(const std::string& name) { return frames().deepest({name}); }

TEST(StackUsage, AFunctionTakesItsFrameAndItsDeepestCallees) {
  EXPECT_EQ(depth("leaf").bytes, 32u);
  const StackDepth top = depth("top");  // 16 + mid (48 + leaf 32), deeper than 16 + leaf
  ASSERT_TRUE(top.known) << top.unknown_why;
  EXPECT_EQ(top.bytes, 96u);
  EXPECT_THAT(top.chain, ElementsAre("top", "mid", "leaf"));
  // _start loads sp itself: its own frame is nothing, its callees' are the supervisor's.
  EXPECT_EQ(depth("_start").bytes, 96u);
}

TEST(StackUsage, AFrameOver2KiBIsTakenThroughAConstantInARegister) {
  EXPECT_EQ(depth("big_frame").bytes, 4096u - 80u + 32u);
}

TEST(StackUsage, ATailCallIsCountedOnTheCallersFrame) {
  EXPECT_EQ(depth("tail_caller").bytes, 16u + 80u);
}

TEST(StackUsage, ASaveRestorePrologueIsPartOfItsCallersFrame) {
  const StackDepth d = depth("saver");  // __riscv_save_4 leaves 32, then 16, then leaf's 32
  ASSERT_TRUE(d.known) << d.unknown_why;
  EXPECT_EQ(d.bytes, 32u + 16u + 32u);
  EXPECT_THAT(d.chain, ElementsAre("saver", "leaf"));
}

TEST(StackUsage, ACallThroughAPointerReachesWhatTheImageHoldsTheAddressOf) {
  const StackDepth d = depth("through_pointer");
  ASSERT_TRUE(d.known) << d.unknown_why;
  EXPECT_EQ(d.bytes, 16u + 64u);
  EXPECT_THAT(d.chain, ElementsAre("through_pointer", "pointed_to"));
}

TEST(StackUsage, TheDeepestOfSeveralEntries) {
  const StackDepth d = frames().deepest({"leaf", "saver", "top", "through_pointer"});
  EXPECT_EQ(d.bytes, 96u);
  EXPECT_EQ(d.chain.front(), "top");
}

TEST(StackUsage, RecursionAndAllocaHaveNoBound) {
  const StackDepth recursive = depth("recursive");
  EXPECT_FALSE(recursive.known);
  EXPECT_THAT(recursive.unknown_why, HasSubstr("calls itself"));
  const StackDepth dynamic = depth("calls_dynamic");  // through its callee
  EXPECT_FALSE(dynamic.known);
  EXPECT_THAT(dynamic.unknown_why, HasSubstr("dynamic moves sp by a register"));
  const StackDepth none = frames().deepest({"leaf", "no_such_function"});
  EXPECT_FALSE(none.known);
  EXPECT_THAT(none.unknown_why, HasSubstr("no function is named no_such_function"));
}

// A graph on one tile whose vertices sum a = 1..n with `run` (stack_codelets.c), on a Mk2
// whose tiles have `sram_bytes` (0: the Mk2's 624 KiB).
Executable sum_graph(const std::vector<std::string>& codelets, const std::string& run, uint32_t n,
                     uint32_t sram_bytes = 0) {
  ipu::hw::MachineConfig machine = ipu::hw::machine_preset("mk2");
  if (sram_bytes != 0) machine.chip.tile.sram_bytes = sram_bytes;
  Graph g(Target::of(machine, 1));
  for (const std::string& name : codelets)
    g.add_codelet(name, std::string(IPU_TEST_SOURCE_DIR) + "/firmware/stack_codelets.c",
                  {{"a", FieldKind::kInput, DType::kF32},
                   {"out", FieldKind::kOutput, DType::kF32},
                   {"n", FieldKind::kScalar, DType::kU32}});
  std::vector<float> values(n);
  std::iota(values.begin(), values.end(), 1.0f);
  const Tensor a = g.add_constant(DType::kF32, {n}, values.data(), "a");
  const Tensor out = g.add_variable(DType::kF32, {6}, "out");
  g.set_tile_mapping(a, 0);
  g.set_tile_mapping(out, 0);
  const ComputeSet cs = g.add_compute_set("sum");
  for (unsigned w = 0; w < 6; ++w)  // every worker at once, each on its own stack
    g.add_vertex(cs, run, 0, {{"a", g.region(a)}, {"out", g.region(out, w, w + 1)}, {"n", n}});
  return compile(g, Execute(cs));
}

void expect_sums(const Executable& exe, uint32_t n) {
  Device device(exe);
  device.run();
  std::vector<float> out(6);
  device.read_tensor("out", out.data(), 4 * out.size());
  for (float sum : out) EXPECT_EQ(sum, static_cast<float>(n * (n + 1) / 2));
}

TEST(StackUsage, ACodeletRunsOnTheStackItsCodeNeeds) {
  const Executable exe = sum_graph({"deep_frame"}, "deep_frame", 900);
  EXPECT_TRUE(exe.stacks.why.empty()) << exe.stacks.why;
  EXPECT_EQ(exe.stacks.worker_chain.front(), "deep_frame");
  EXPECT_GE(exe.stacks.worker_bytes, 4000u);  // its array
  EXPECT_LT(exe.stacks.worker_bytes, 4200u);
  EXPECT_EQ(exe.stacks.worker_bytes % 16, 0u);
  EXPECT_LT(exe.stacks.supervisor_bytes, 2048u);
  EXPECT_EQ(exe.stacks.supervisor_chain.front(), "_start");
  EXPECT_THAT(exe.memory_report, HasSubstr(fmt::format("6 workers {} bytes each (deep_frame",
                                                       exe.stacks.worker_bytes)));
  expect_sums(exe, 900);
}

TEST(StackUsage, ACodeletWhoseFrameIsNotStaticKeepsTheDefaultStacks) {
  const Executable exe = sum_graph({"deep_frame", "vla_frame"}, "vla_frame", 1500);
  EXPECT_EQ(exe.stacks.worker_bytes, 8u * 1024);
  EXPECT_THAT(exe.stacks.why, HasSubstr("workers: vla_frame moves sp by a register"));
  EXPECT_THAT(exe.memory_report, HasSubstr("the linker script's size kept for the workers"));
  EXPECT_LT(exe.stacks.supervisor_bytes, 2048u);  // the supervisor's still sized
  expect_sums(exe, 1500);
}

// The stacks are sized before the tile's memory is: a window without room for the linker
// script's 64 KiB of stacks holds a program whose code needs less, and one whose workers need
// the default is refused saying what the firmware and its stacks take.
TEST(StackUsage, ASmallTileHoldsTheStacksItsCodeNeeds) {
  constexpr uint32_t kSram = 48 * 1024;
  // The refusal first: an exception after a SystemC simulation confuses AddressSanitizer.
  EXPECT_THAT(
      [&] {
        sum_graph({"deep_frame", "vla_frame"}, "vla_frame", 100, kSram);
      },
      ::testing::ThrowsMessage<CompileError>(::testing::AllOf(
          HasSubstr("of its 49152 bytes of SRAM and leave"),
          HasSubstr("6 workers 8192 bytes each; the linker script's size kept for the "
                    "workers: vla_frame moves sp by a register"))));
  const Executable exe = sum_graph({"deep_frame"}, "deep_frame", 900, kSram);
  EXPECT_LT(exe.stacks.supervisor_bytes + 6 * exe.stacks.worker_bytes, 32u * 1024);
  expect_sums(exe, 900);
}

}  // namespace
