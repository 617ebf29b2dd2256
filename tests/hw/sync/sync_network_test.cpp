// The sync network as a block: tiles' ports bound to its SyncIf, arrivals driven from a SystemC
// thread at chosen cycles, and each release checked against the cycle derived by hand from
// sync.internal-cycles and Graphcore's external model (hw/sync/sync_config.h). Also its
// configuration's parsing and the names of its groups. ctest runs each test in its own process
// (SystemC elaborates one design per process).
#include "hw/sync/sync_network.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <systemc>
#include <utility>
#include <vector>

namespace ipu::test {
namespace {

using ::testing::HasSubstr;

// A bank of tiles' sync ports: its thread makes each arrival in order, then lets the releases'
// delta cycle pass and records each outcome (tile -> release).
struct SyncDriver : sc_core::sc_module {
  struct Arrival {
    unsigned tile, group;
    uint64_t cycle;
  };
  sc_core::sc_port<hw::SyncIf> sync{"sync"};
  std::vector<Arrival> arrivals;
  std::vector<std::pair<unsigned, hw::SyncRelease>> released;

  explicit SyncDriver(const sc_core::sc_module_name& name, std::vector<Arrival> a)
      : sc_module(name), arrivals(std::move(a)) {
    SC_THREAD(run);
  }
  SC_HAS_PROCESS(SyncDriver);

  void run() {
    std::vector<std::pair<unsigned, hw::SyncArrival>> waiting;
    for (const Arrival& a : arrivals) {
      const hw::SyncArrival outcome = sync->arrive(a.tile, a.group, a.cycle);
      if (outcome.released == nullptr)
        released.emplace_back(a.tile, outcome.now);
      else
        waiting.emplace_back(a.tile, outcome);
    }
    // Releases are notified for the next delta cycle, with their outcome already in *later
    // (phases are numbered from 1: phase 0 is a barrier not yet released).
    wait(sc_core::SC_ZERO_TIME);
    for (auto& [tile, outcome] : waiting)
      if (outcome.later->phase != 0) released.emplace_back(tile, *outcome.later);
  }
  const hw::SyncRelease& of(unsigned tile) const {
    for (const auto& [t, r] : released)
      if (t == tile) return r;
    throw std::logic_error("tile " + std::to_string(tile) + " was not released");
  }
};

hw::MachineShape shape(unsigned chips, unsigned tiles_per_chip, double clock_hz = 1.325e9) {
  return {chips, tiles_per_chip, clock_hz};
}

TEST(SyncNetwork, AnInternalBarrierReleasesEveryMemberAtTheLastArrivalPlusItsLatency) {
  hw::SyncConfig config;  // internal-cycles 150
  hw::SyncNetwork network("sync", config, shape(1, 4), {0, 1, 2, 3});
  SyncDriver tiles("tiles", {{0, 0, 10}, {1, 0, 40}, {3, 0, 25}, {2, 0, 33}});
  tiles.sync.bind(network);
  sc_core::sc_start();
  ASSERT_EQ(tiles.released.size(), 4u);
  for (unsigned t = 0; t < 4; ++t) {
    EXPECT_EQ(tiles.of(t).cycle, 40u + 150u) << "tile " << t;  // the last arrival: tile 1 at 40
    EXPECT_EQ(tiles.of(t).phase, tiles.of(0).phase);
    EXPECT_EQ(tiles.of(t).error, "");
  }
  ASSERT_EQ(network.barriers().size(), 1u);
  EXPECT_EQ(network.barriers()[0].release, 190u);
  EXPECT_EQ(network.barriers()[0].arrivals, (std::vector<uint64_t>{10, 40, 33, 25}));
}

TEST(SyncNetwork, TheLatencyIsTheConfiguredOne) {
  hw::SyncConfig config;
  config.internal_cycles = 7;
  hw::SyncNetwork network("sync", config, shape(1, 2), {0, 1});
  SyncDriver tiles("tiles", {{0, 0, 100}, {1, 0, 90}});
  tiles.sync.bind(network);
  sc_core::sc_start();
  EXPECT_EQ(tiles.of(0).cycle, 107u);
  EXPECT_EQ(tiles.of(1).cycle, 107u);
}

TEST(SyncNetwork, GspGroupsReleaseOnTheirOwn) {
  hw::SyncConfig config;
  config.groups = "1:0-1;2:2-3";
  hw::SyncNetwork network("sync", config, shape(1, 4), {0, 1, 2, 3});
  SyncDriver tiles("tiles", {{0, 1, 5}, {2, 2, 500}, {1, 1, 20}, {3, 2, 300}});
  tiles.sync.bind(network);
  sc_core::sc_start();
  EXPECT_EQ(tiles.of(0).cycle, 170u);  // group 1: last arrival 20 + 150
  EXPECT_EQ(tiles.of(1).cycle, 170u);
  EXPECT_EQ(tiles.of(2).cycle, 650u);  // group 2: last arrival 500 + 150
  EXPECT_EQ(tiles.of(3).cycle, 650u);
  EXPECT_NE(tiles.of(0).phase, tiles.of(2).phase);
  EXPECT_EQ(network.barriers().size(), 2u);
}

TEST(SyncNetwork, AnExternalSyncAddsGraphcoresHopCostAfterTheInternalOne) {
  // 4 chips of 2 tiles: hops = 1 + (4 / 2) / 2 = 2; 2 x 2 x 15 ns at 1.325 GHz = 79.5, so 80.
  hw::SyncNetwork network("sync", {}, shape(4, 2), {0, 1, 2, 3, 4, 5, 6, 7});
  std::vector<SyncDriver::Arrival> arrivals;
  for (unsigned t = 0; t < 8; ++t) arrivals.push_back({t, hw::sync_group::kExternal, 100 + t});
  SyncDriver tiles("tiles", arrivals);
  tiles.sync.bind(network);
  sc_core::sc_start();
  for (unsigned t = 0; t < 8; ++t) EXPECT_EQ(tiles.of(t).cycle, 107u + 150u + 80u) << t;
  EXPECT_EQ(network.barriers()[0].chip, -1);
}

TEST(SyncNetwork, GsPartsSyncApart) {
  // sync.gs1 = "0-1;2-3": chips 0-1 and 2-3 sync on their own, each of 2 chips:
  // hops = 1 + (2 / 2) / 2 = 1, 2 x 15 ns = 30 ns = 39.75, so 40 cycles.
  hw::SyncConfig config;
  config.gs1 = "0-1;2-3";
  hw::SyncNetwork network("sync", config, shape(4, 1), {0, 1, 2, 3});
  const uint32_t gs1 = hw::sync_group::kGs1;
  SyncDriver tiles("tiles", {{0, gs1, 10}, {1, gs1, 30}, {2, gs1, 1000}, {3, gs1, 1}});
  tiles.sync.bind(network);
  sc_core::sc_start();
  EXPECT_EQ(tiles.of(0).cycle, 30u + 150u + 40u);
  EXPECT_EQ(tiles.of(1).cycle, 30u + 150u + 40u);
  EXPECT_EQ(tiles.of(2).cycle, 1000u + 150u + 40u);
  EXPECT_EQ(tiles.of(3).cycle, 1000u + 150u + 40u);
}

TEST(SyncNetwork, AGroupSyncsDeclaredNowhereIsRefusedNamingIt) {
  hw::SyncNetwork network("sync", {}, shape(1, 2), {0, 1});
  SyncDriver tiles("tiles", {{0, 5, 10}});
  tiles.sync.bind(network);
  sc_core::sc_start();
  EXPECT_THAT(tiles.of(0).error,
              HasSubstr("ipu.sync on group 5, which sync.groups does not declare"));
}

TEST(SyncNetwork, AMissingMemberIsListedAsPending) {
  hw::SyncNetwork network("sync", {}, shape(1, 3), {0, 1, 2});
  SyncDriver tiles("tiles", {{0, 0, 10}, {2, 0, 12}});
  tiles.sync.bind(network);
  sc_core::sc_start();
  EXPECT_TRUE(tiles.released.empty());
  const auto pending = network.pending();
  ASSERT_EQ(pending.size(), 1u);
  EXPECT_EQ(pending[0].missing, (std::vector<unsigned>{1}));
  EXPECT_EQ(pending[0].arrived.size(), 2u);
}

TEST(SyncConfig, ExternalCostFollowsGraphcoresModel) {
  hw::SyncConfig s;  // 15 ns per hop; hops = 1 + (chips / 2) / 2, there and back
  EXPECT_EQ(hw::external_sync_cycles(s, 1.325e9, 4), 80u);    // 2 hops: 60 ns = 79.5 cycles
  EXPECT_EQ(hw::external_sync_cycles(s, 1.325e9, 16), 199u);  // 5 hops: 150 ns = 198.75
  EXPECT_EQ(hw::external_sync_cycles(s, 1.325e9, 64), 676u);  // 17 hops: 510 ns = 675.75
  EXPECT_EQ(hw::external_sync_cycles(s, 1.85e9, 16), 278u);   // 150 ns = 277.5
}

// The names the statistics and the report give each kind of sync (hw::sync_group).
TEST(SyncConfig, KindNamesEveryGroup) {
  using hw::SyncNetwork;
  EXPECT_EQ(SyncNetwork::kind(0), "internal");
  EXPECT_EQ(SyncNetwork::kind(2), "GSP group 2");
  EXPECT_EQ(SyncNetwork::kind(0x40000000u), "external");
  EXPECT_EQ(SyncNetwork::kind(0x40000001u), "GS1");
  EXPECT_EQ(SyncNetwork::kind(0x40000002u), "GS2");
  EXPECT_EQ(SyncNetwork::kind(0x80000003u), "host transfer 3");
  EXPECT_EQ(SyncNetwork::kind(0xffffffffu), "host dispatch");
}

TEST(SyncConfig, ChipGroupsAreCheckedAndParsed) {
  EXPECT_EQ(hw::parse_chip_groups("sync.gs1", "", 4),
            (std::vector<std::vector<unsigned>>{{0, 1, 2, 3}}));
  EXPECT_EQ(hw::parse_chip_groups("sync.gs2", "0-1;2,3", 4),
            (std::vector<std::vector<unsigned>>{{0, 1}, {2, 3}}));
  EXPECT_THROW(hw::parse_chip_groups("sync.gs2", "0-1;1-2", 4), std::invalid_argument);
  EXPECT_THROW(hw::parse_chip_groups("sync.gs2", "0-4", 4), std::invalid_argument);
  EXPECT_THROW(hw::parse_sync_groups("1:0-1,0-1;2:2-3", 4), std::invalid_argument);
  EXPECT_THROW(hw::parse_sync_groups("1:", 4), std::invalid_argument);
  EXPECT_THROW(hw::parse_sync_groups(";;;", 4), std::invalid_argument);
}

TEST(SyncConfig, RangesAndGroupsAreValidatedNamingTheParameter) {
  hw::SyncConfig c;
  c.internal_cycles = 2'000'000'000;
  try {
    hw::validate(c, shape(1, 4));
    FAIL() << "accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "sync.internal-cycles must be 0 to 1000000000, not 2000000000");
  }
  hw::SyncConfig groups;
  groups.groups = "1:0-4";  // a 4-tile chip has tiles 0-3
  EXPECT_THROW(hw::validate(groups, shape(1, 4)), std::invalid_argument);
  hw::SyncConfig gs;
  gs.gs2 = "0-1";  // fine on 2 chips, not on 1
  EXPECT_NO_THROW(hw::validate(gs, shape(2, 4)));
  EXPECT_THROW(hw::validate(gs, shape(1, 4)), std::invalid_argument);
}

}  // namespace
}  // namespace ipu::test
