// Programs that go wrong: each stops the run with a report naming tile, context, pc, the
// disassembled instruction, the cycle and the faulting address.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/support/core_harness.h"

namespace ipu::test {
namespace {

using iss::StopReason;
using iss::TrapCause;
using ::testing::HasSubstr;

struct BadProgram : ::testing::Test {
  CoreHarness h;
  sdk::ElfImage image = sdk::read_elf(std::string(IPU_TEST_FIRMWARE_DIR) + "/bad_programs.elf");

  uint32_t symbol(const char* name) { return image.symbols.at(name); }

  StopReason run_from(const char* entry, uint64_t max_cycles = 1'000'000) {
    h.load_elf(image.path);
    h.core.reset(symbol(entry));
    return h.run(max_cycles);
  }
  const iss::FaultReport& fault() { return h.core.fault(); }
};

TEST_F(BadProgram, IllegalInstruction) {
  ASSERT_EQ(run_from("illegal_instruction"), StopReason::kFault);
  EXPECT_EQ(fault().cause, TrapCause::kIllegalInstruction);
  EXPECT_EQ(fault().pc, symbol("illegal_instruction") + 4);
  EXPECT_EQ(fault().tval, 0xffffffffu);
  EXPECT_EQ(fault().cycle, 6u);  // second instruction of the supervisor
  EXPECT_THAT(fault().message,
              HasSubstr("tile 0 context 0 (supervisor): illegal instruction at pc 0x"));
  EXPECT_THAT(fault().message, HasSubstr(".word 0xffffffff"));
  EXPECT_THAT(fault().message, HasSubstr("(cycle 6)"));
}

TEST_F(BadProgram, NullLoadNamesAddressAndWindow) {
  ASSERT_EQ(run_from("null_load"), StopReason::kFault);
  EXPECT_EQ(fault().cause, TrapCause::kLoadAccessFault);
  EXPECT_EQ(fault().tval, 0u);
  EXPECT_THAT(fault().message, HasSubstr("load access fault"));
  EXPECT_THAT(fault().message, HasSubstr("lw a1,0(a0)"));
  EXPECT_THAT(fault().message,
              HasSubstr("address 0x00000000 is outside SRAM 0x0004c000-0x000e7fff"));
}

TEST_F(BadProgram, StoreJustPastTheEndOfSram) {
  ASSERT_EQ(run_from("store_outside"), StopReason::kFault);
  EXPECT_EQ(fault().cause, TrapCause::kStoreAccessFault);
  EXPECT_EQ(fault().tval, 0xe8000u);
  EXPECT_THAT(fault().message, HasSubstr("sw a1,0(a0)"));
}

TEST_F(BadProgram, MisalignedLoad) {
  ASSERT_EQ(run_from("misaligned_load"), StopReason::kFault);
  EXPECT_EQ(fault().cause, TrapCause::kLoadMisaligned);
  EXPECT_EQ(fault().tval, 0x4c002u);
  EXPECT_THAT(fault().message, HasSubstr("address 0x0004c002 is misaligned"));
}

TEST_F(BadProgram, JumpOutsideSramNamesTheJump) {
  ASSERT_EQ(run_from("jump_outside"), StopReason::kFault);
  EXPECT_EQ(fault().cause, TrapCause::kInstrAccessFault);
  EXPECT_EQ(fault().pc, 0x10000000u);
  EXPECT_THAT(fault().message, HasSubstr("fetch from 0x10000000, outside SRAM"));
  EXPECT_THAT(fault().message, HasSubstr("last jump from pc 0x"));
  EXPECT_THAT(fault().message, HasSubstr("jalr ra,0(a0)"));
}

TEST_F(BadProgram, MisalignedJumpTrapsAtTheJump) {
  ASSERT_EQ(run_from("misaligned_jump"), StopReason::kFault);
  EXPECT_EQ(fault().cause, TrapCause::kInstrMisaligned);
  EXPECT_EQ(fault().tval, 0x4c002u);
  EXPECT_THAT(fault().message, HasSubstr("jalr ra,0(a0)"));
}

TEST_F(BadProgram, BreakpointWithoutHandler) {
  ASSERT_EQ(run_from("breakpoint"), StopReason::kFault);
  EXPECT_EQ(fault().cause, TrapCause::kBreakpoint);
  EXPECT_THAT(fault().message, HasSubstr("breakpoint at pc"));
}

TEST_F(BadProgram, UnsupportedEcall) {
  ASSERT_EQ(run_from("unknown_ecall"), StopReason::kFault);
  EXPECT_EQ(fault().cause, TrapCause::kEcallFromM);
  EXPECT_THAT(fault().message, HasSubstr("a7 = 64"));
}

TEST_F(BadProgram, SupervisorCannotExitLikeAWorker) {
  ASSERT_EQ(run_from("supervisor_wexit"), StopReason::kFault);
  EXPECT_EQ(fault().cause, TrapCause::kIllegalInstruction);
  EXPECT_THAT(fault().message, HasSubstr("ipu.wexit"));
}

TEST_F(BadProgram, EndlessLoopStopsAtTheCycleLimit) {
  ASSERT_EQ(run_from("endless_loop", 6000), StopReason::kCycleLimit);
  EXPECT_EQ(h.core.cycles(), 6000u);
  EXPECT_EQ(h.core.instructions_retired(), 1000u);  // one issue every 6 cycles
  EXPECT_THAT(h.core.describe_running_contexts(),
              HasSubstr("tile 0 context 0 (supervisor): pc 0x"));
}

TEST_F(BadProgram, WorkerThatNeverEndsIsReportedWithItsPc) {
  ASSERT_EQ(run_from("worker_runs_forever", 100000), StopReason::kCycleLimit);
  const std::string running = h.core.describe_running_contexts();
  EXPECT_THAT(running, HasSubstr("context 0 (supervisor)"));
  EXPECT_THAT(running, HasSubstr("ipu.join"));
  EXPECT_THAT(running, HasSubstr("context 1 (worker)"));
}

TEST_F(BadProgram, FaultOnAWorkerNamesTheWorker) {
  ASSERT_EQ(run_from("worker_starts_worker"), StopReason::kFault);
  EXPECT_EQ(fault().context, 1u);
  EXPECT_EQ(fault().cause, TrapCause::kIllegalInstruction);
  EXPECT_THAT(fault().message, HasSubstr("tile 0 context 1 (worker): illegal instruction"));
  EXPECT_THAT(fault().message, HasSubstr("ipu.run a0,t0,zero"));
}

TEST_F(BadProgram, StartingAllWorkersFromAWorkerIsIllegal) {
  ASSERT_EQ(run_from("worker_starts_all_workers"), StopReason::kFault);
  EXPECT_EQ(fault().context, 1u);
  EXPECT_EQ(fault().cause, TrapCause::kIllegalInstruction);
  EXPECT_THAT(fault().message, HasSubstr("ipu.runall t0,zero"));
}

TEST_F(BadProgram, StartingAllWorkersWaitsForARunningOne) {
  ASSERT_EQ(run_from("runall_waits_for_a_worker", 100000), StopReason::kCycleLimit);
  EXPECT_EQ(h.core.context(1).runs, 1u);  // started once, by ipu.run; runall never went ahead
  for (unsigned w = 2; w <= 6; ++w) EXPECT_EQ(h.core.context(w).runs, 0u) << "worker " << w;
  EXPECT_THAT(h.core.describe_running_contexts(), HasSubstr("ipu.runall"));
}

TEST_F(BadProgram, ExitFromAWorkerEndsTheProgram) {
  ASSERT_EQ(run_from("worker_exits_program"), StopReason::kExited);
  EXPECT_EQ(h.core.exit_status(), 5);
}

}  // namespace
}  // namespace ipu::test
