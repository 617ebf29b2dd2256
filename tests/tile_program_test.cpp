// C and assembly programs built with the RISC-V cross compiler during the build, run on the
// tile core: console output, exit status, trap handlers, workers, and hand-derived cycle counts.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/support/core_harness.h"

namespace ipu::test {
namespace {

using hw::StopReason;
using ::testing::ElementsAre;

std::string firmware(const char* name) {
  return std::string(IPU_TEST_FIRMWARE_DIR) + "/" + name + ".elf";
}

TEST(TileProgram, ConsoleLinesArePrefixedByContextAndExitStatusIsReturned) {
  CoreHarness h;
  h.load_elf(firmware("hello"));
  ASSERT_EQ(h.run(), StopReason::kExited) << h.core.fault().message;
  EXPECT_EQ(h.core.exit_status(), 42);
  EXPECT_THAT(h.console, ElementsAre("c0: hello, tile", "c0: pi is about 3.1416",
                                     "c0: partial line without newline...finished",
                                     "c1: worker 1 says hi", "c0: no newline at the end"));
}

TEST(TileProgram, TohostStoreEndsTheRun) {
  CoreHarness h;
  h.load_elf(firmware("tohost"));
  ASSERT_EQ(h.run(), StopReason::kExited) << h.core.fault().message;
  EXPECT_EQ(h.core.exit_status(), 7);
}

TEST(TileProgram, FirmwareTrapHandlerGetsEveryTrap) {
  CoreHarness h;
  h.load_elf(firmware("trap_handler"));
  ASSERT_EQ(h.run(), StopReason::kExited) << h.core.fault().message;
  EXPECT_EQ(h.core.exit_status(), 0) << ::testing::PrintToString(h.console);
  EXPECT_EQ(h.console.back(), "c0: 5 traps handled");
}

TEST(TileProgram, TwelveJobsOnSixWorkers) {
  CoreHarness h;
  h.load_elf(firmware("workers"));
  ASSERT_EQ(h.run(), StopReason::kExited) << h.core.fault().message;
  EXPECT_EQ(h.core.exit_status(), 0) << ::testing::PrintToString(h.console);
  uint64_t runs = 0;
  for (unsigned w = 1; w <= 6; ++w) {
    EXPECT_GE(h.core.context(w).runs, 1u) << "worker " << w;
    runs += h.core.context(w).runs;
  }
  EXPECT_EQ(runs, 12u);
}

TEST(TileProgram, WorkerStartAndJoinCyclesMatchTheHandDerivation) {
  // See tests/firmware/worker_cycles.S for the derivation (N = 10).
  CoreHarness h;
  h.load_elf(firmware("worker_cycles"));
  ASSERT_EQ(h.run(), StopReason::kExited) << h.core.fault().message;
  EXPECT_EQ(h.core.exit_status(), 186);  // mcycle read after the join
  EXPECT_EQ(h.core.cycles(), 199u);
  const hw::Context& supervisor = h.core.context(0);
  EXPECT_EQ(supervisor.instret, 12u);  // auipc addi 6xrun join csrr li ecall
  EXPECT_EQ(supervisor.issues, 17u);   // plus five stalled join retries
  for (unsigned w = 1; w <= 6; ++w) {
    const hw::Context& c = h.core.context(w);
    EXPECT_EQ(c.instret, 22u) << "worker " << w;                // L = 2N + 2
    EXPECT_EQ(c.active_cycles, 6u * 21 + 1) << "worker " << w;  // first issue to wexit
    EXPECT_EQ(c.started_at, 18u + 7 * (w - 1)) << "worker " << w;
  }
}

TEST(TileProgram, SameImageSameCyclesEveryRun) {
  uint64_t cycles[2];
  std::vector<std::string> output[2];
  for (int i = 0; i < 2; ++i) {
    CoreHarness h;
    h.load_elf(firmware("workers"));
    ASSERT_EQ(h.run(), StopReason::kExited);
    cycles[i] = h.core.cycles();
    output[i] = h.console;
  }
  EXPECT_EQ(cycles[0], cycles[1]);
  EXPECT_EQ(output[0], output[1]);
}

TEST(TileProgram, RunCanBePausedAndResumedWithoutChangingTheResult) {
  CoreHarness whole, pieces;
  whole.load_elf(firmware("workers"));
  pieces.load_elf(firmware("workers"));
  ASSERT_EQ(whole.run(), StopReason::kExited);
  uint64_t until = 0;
  StopReason r = StopReason::kCycleLimit;
  while (r == StopReason::kCycleLimit) r = pieces.run(until += 997);
  ASSERT_EQ(r, StopReason::kExited);
  EXPECT_EQ(pieces.core.cycles(), whole.core.cycles());
  EXPECT_EQ(pieces.core.instructions_retired(), whole.core.instructions_retired());
  EXPECT_EQ(pieces.console, whole.console);
}

}  // namespace
}  // namespace ipu::test
