// The chip: compiled exchange timed to the cycle against hand derivations
// (tests/firmware/exchange_timing.S), each exchange schedule error, grouped sync, deadlock
// reports, and multi-tile C programs. SystemC elaborates one design per process, so ctest runs
// each test in its own process (gtest_discover_tests).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "hw/machine/platform.h"
#include "sdk/image/program.h"
#include "tests/support/image_run.h"

namespace ipu::test {
namespace {

using hw::ChipOutcome;
using ::testing::HasSubstr;

// A run on one Mk2 chip of `tiles` tiles, with GSP groups `groups`.
hw::MachineConfig chip_of(unsigned tiles, const std::string& groups) {
  hw::MachineConfig m = hw::machine_preset("mk2");
  m.chip.tiles = tiles;
  m.chip.sync.groups = groups;
  return m;
}

struct ChipRun : ImageRun {
  ChipRun(const std::string& image, unsigned tiles, const std::string& groups = "")
      : ImageRun(image, chip_of(tiles, groups), 50'000'000) {}
  const hw::Ipu& chip() const { return platform->machine().chip(0); }
  uint32_t word(unsigned tile, uint32_t address) const {
    return chip().tile(tile).core().read_word(address);
  }
};

TEST(Exchange, PointToPointCyclesMatchTheHandDerivation) {
  ChipRun run("exchange_p2p", 128);  // tiles 0 and 64: one column apart
  ASSERT_EQ(run.report.outcome.result, ChipOutcome::Result::kExited) << run.report.outcome.message;
  EXPECT_EQ(run.report.outcome.exit_status, 10);  // the receiver's sum 1 + 2 + 3 + 4
  const auto& barriers = run.chip().sync_network().barriers();
  ASSERT_EQ(barriers.size(), 1u);
  EXPECT_EQ(barriers[0].arrivals, (std::vector<uint64_t>{12, 12}));
  EXPECT_EQ(barriers[0].release, 162u);
  const auto& exchanges = run.chip().exchange().records();
  ASSERT_EQ(exchanges.size(), 1u);
  EXPECT_EQ(exchanges[0].words, 4u);
  EXPECT_EQ(exchanges[0].last_arrival, 231u);  // 211 + 3 + 16 + 1 column
  EXPECT_EQ(exchanges[0].end, 322u);           // the sender's ipu.xend
  EXPECT_EQ(run.report.cycles, 349u);
}

TEST(Exchange, MulticastReachesEveryReceiverAtNoExtraCost) {
  ChipRun run("exchange_multicast", 256);  // tile 0 to tiles 64, 128, 192
  ASSERT_EQ(run.report.outcome.result, ChipOutcome::Result::kExited) << run.report.outcome.message;
  EXPECT_EQ(run.report.outcome.exit_status, 10);
  const auto& exchanges = run.chip().exchange().records();
  ASSERT_EQ(exchanges.size(), 1u);
  EXPECT_EQ(exchanges[0].words, 12u);          // four words to each of three receivers
  EXPECT_EQ(exchanges[0].last_arrival, 233u);  // the farthest receiver, three columns away
  EXPECT_EQ(run.report.cycles, 349u);          // the sender takes no longer than point to point
  for (unsigned t : {64u, 128u, 192u}) EXPECT_EQ(run.chip().tile(t).outcome().exit_status, 10) << t;
}

void expect_schedule_error(const char* image, std::vector<std::string> parts) {
  ChipRun run(image, 128);
  ASSERT_EQ(run.report.outcome.result, ChipOutcome::Result::kFault) << run.report.outcome.message;
  for (const std::string& p : parts) EXPECT_THAT(run.report.outcome.message, HasSubstr(p));
}

TEST(ExchangeErrors, ReceiverListensToAnotherTile) {
  expect_schedule_error(
      "exchange_wrong_source",
      {"exchange schedule error: word 0 of the send from tile 0 (0x", "issued at cycle 210)",
       "arrives at tile 64 at cycle 228 while tile 64 listens to tile 5"});
}

TEST(ExchangeErrors, ReceiverListensToNothing) {
  expect_schedule_error("exchange_no_source",
                        {"arrives at tile 64", "while tile 64 listens to no tile"});
}

TEST(ExchangeErrors, ReceiveBufferOverruns) {
  expect_schedule_error("exchange_overrun",
                        {"word 2 of the send from tile 0", "arrives at tile 64 at cycle 230",
                         "(2 words, set at cycle 204) is full (overrun)"});
}

TEST(ExchangeErrors, ReceiveThatGetsTooFewWords) {
  expect_schedule_error("exchange_short",
                        {"tile 64: receive buffer at 0x",
                         "expected 4 words but got 2 before the end of the tile's "
                         "exchange phase at cycle 276"});
}

TEST(ExchangeErrors, WordArrivingAfterTheReceiverLeftItsExchangePhase) {
  expect_schedule_error(
      "exchange_late",
      {"arrives at tile 64 at cycle 228, after tile 64 ended its exchange phase at cycle 210"});
}

TEST(ExchangeErrors, SendOutsideTheExchangePhase) {
  expect_schedule_error("exchange_send_before_sync",
                        {"tile 0 context 0 (supervisor): ipu.send outside the exchange phase",
                         "ipu.send a1,a2", "(cycle 30)"});
}

TEST(Sync, GroupsProgressIndependently) {
  ChipRun run("gsp_groups", 4, "1:0-1;2:2-3");
  ASSERT_EQ(run.report.outcome.result, ChipOutcome::Result::kExited) << run.report.outcome.message;
  uint64_t last_group1 = 0, first_group2 = ~uint64_t{0};
  unsigned group1 = 0, group2 = 0;
  for (const auto& b : run.chip().sync_network().barriers()) {
    if (b.group == 1) {
      ++group1;
      last_group1 = std::max(last_group1, b.release);
      EXPECT_EQ(b.tiles, (std::vector<unsigned>{0, 1}));
    } else {
      ++group2;
      first_group2 = std::min(first_group2, b.release);
      EXPECT_EQ(b.tiles, (std::vector<unsigned>{2, 3}));
    }
  }
  EXPECT_EQ(group1, 10u);
  EXPECT_EQ(group2, 3u);
  // Group 1 finished all ten supersteps before group 2's first barrier: nobody waited for it.
  EXPECT_LT(last_group1, first_group2);
}

TEST(Sync, DeadlockNamesTheMissingTileAndWhereEveryoneIs) {
  ChipRun run("deadlock", 4);
  ASSERT_EQ(run.report.outcome.result, ChipOutcome::Result::kDeadlock)
      << run.report.outcome.message;
  const std::string& m = run.report.outcome.message;
  EXPECT_THAT(m, HasSubstr("deadlock: no tile can make progress"));
  EXPECT_THAT(m, HasSubstr("sync group 0: tiles 0 (cycle "));
  EXPECT_THAT(m, HasSubstr("1 missing:"));
  EXPECT_THAT(m, HasSubstr("tile 1 exited with status 3"));
}

TEST(Sync, DeadlockAcrossGroupsShowsEachWaitingTilesPc) {
  ChipRun run("deadlock_groups", 4, "1:1-2");
  ASSERT_EQ(run.report.outcome.result, ChipOutcome::Result::kDeadlock)
      << run.report.outcome.message;
  const std::string& m = run.report.outcome.message;
  EXPECT_THAT(m, HasSubstr("sync group 0: tiles 0 (cycle"));
  EXPECT_THAT(m, HasSubstr("tile 1 waits in ipu.sync on group 1 since cycle"));
  EXPECT_THAT(m, HasSubstr("sync group 1: tiles 1 (cycle"));
  EXPECT_THAT(m, HasSubstr("tile 2 waits in ipu.sync on group 0"));
  EXPECT_THAT(m, HasSubstr("context 0 (supervisor): pc 0x"));
  EXPECT_THAT(m, HasSubstr("ipu.sync"));
}

TEST(Programs, TokenRingAroundSixtyFourTiles) {
  ChipRun run("token_ring", 64);
  ASSERT_EQ(run.report.outcome.result, ChipOutcome::Result::kExited) << run.report.outcome.message;
  EXPECT_EQ(run.report.outcome.exit_status, 0);
  EXPECT_THAT(run.console.str(), HasSubstr("[t0:c0] token after 64 hops: 1064"));
  EXPECT_EQ(run.report.supersteps, 65u);
  EXPECT_EQ(run.report.exchange_words, 64u);
  // Every superstep costs at least the sync (150 cycles) and the 150-cycle exchange wait, so
  // 64 hops take more than 64 x 300 cycles; each of the 65 syncs releases 150 cycles after its
  // last arrival.
  EXPECT_GT(run.report.cycles, 64u * 300);
  for (const auto& b : run.chip().sync_network().barriers())
    EXPECT_EQ(b.release, *std::max_element(b.arrivals.begin(), b.arrivals.end()) + 150);
}

TEST(Programs, ReductionTreeOverSixtyFourTiles) {
  ChipRun run("reduce_tree", 64);
  ASSERT_EQ(run.report.outcome.result, ChipOutcome::Result::kExited) << run.report.outcome.message;
  // sum over t < 64 of t^2 + 1 = 63 * 64 * 127 / 6 + 64 = 85408.
  EXPECT_THAT(run.console.str(), HasSubstr("[t0:c0] sum 85408"));
  EXPECT_EQ(run.report.supersteps, 7u);       // six rounds and the final sync
  EXPECT_EQ(run.report.exchange_words, 63u);  // every tile but tile 0 sends its partial once
}

}  // namespace
}  // namespace ipu::test
