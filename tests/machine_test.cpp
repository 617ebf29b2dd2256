// The machine: IPU-Link topology and routes, a link's rate, external sync cost, and inter-chip
// exchange timed to the cycle against the hand derivations in tests/firmware/machine_timing.S,
// with each schedule error across chips, a cross-chip deadlock and a ring around a POD16.
// SystemC elaborates one design per process, so ctest runs each test in its own process.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include "hw/ipulink/link_fabric.h"
#include "hw/machine/platform.h"
#include "sdk/image/elf_writer.h"
#include "sdk/image/program.h"
#include "tests/support/image_run.h"

namespace ipu::test {
namespace {

using hw::ChipOutcome;
using ::testing::HasSubstr;

hw::IpuLinkConfig links(bool torus = false) {
  hw::IpuLinkConfig c;
  c.torus = torus;
  return c;
}

TEST(Topology, RoutesCrossTheRungFirstThenFollowTheColumn) {
  hw::LinkFabric pod16("pod16", 16, links(), 1.325e9);
  EXPECT_EQ(pod16.describe_route(0, 1), "0 -> 1");
  EXPECT_EQ(pod16.describe_route(0, 5), "0 -> 1 -> 3 -> 5");
  EXPECT_EQ(pod16.describe_route(6, 2), "6 -> 4 -> 2");
  EXPECT_EQ(pod16.describe_route(15, 0), "15 -> 14 -> 12 -> 10 -> 8 -> 6 -> 4 -> 2 -> 0");
  EXPECT_TRUE(pod16.route(3, 3).empty());
  // Ladder ends have no down (chips 0, 1) or up (14, 15) links: 6 + 2; the rest 6 + 2 + 2.
  EXPECT_EQ(pod16.links_of(0), 8u);
  EXPECT_EQ(pod16.links_of(7), 10u);
  EXPECT_EQ(pod16.links_of(15), 8u);
  // 8 rungs x 6 + 7 column steps x 2 columns x 2 links.
  EXPECT_EQ(pod16.links().size(), 8u * 6 + 7 * 2 * 2);
}

TEST(Topology, ATorusClosesTheColumnsAndTakesTheShortWayRound) {
  hw::LinkFabric pod64("pod64", 64, links(true), 1.325e9);
  EXPECT_EQ(pod64.describe_route(62, 0), "62 -> 0");  // the wrap-around column link
  EXPECT_EQ(pod64.describe_route(63, 0), "63 -> 62 -> 0");
  EXPECT_EQ(pod64.describe_route(0, 40),
            "0 -> 62 -> 60 -> 58 -> 56 -> 54 -> 52 -> 50 -> 48 -> "
            "46 -> 44 -> 42 -> 40");  // 12 down, not 20 up
  for (unsigned c = 0; c < 64; ++c) EXPECT_EQ(pod64.links_of(c), 10u) << c;
  EXPECT_EQ(pod64.links().size(), 32u * 6 + 64 * 2);  // every chip has 2 links up
}

// The route as a pure function (the SDK compiler schedules by it, the exchange routes by it).
TEST(Topology, LadderRouteNamesEachHopsKind) {
  using Hop = hw::LadderHop;
  const auto route = hw::ladder_route(16, false, 0, 5);
  ASSERT_EQ(route.size(), 3u);
  EXPECT_EQ(route[0].kind, Hop::kRung);
  EXPECT_EQ(route[1].kind, Hop::kUp);
  EXPECT_EQ(route[2].to, 5u);
  EXPECT_EQ(hw::ladder_route(16, false, 6, 2)[0].kind, Hop::kDown);
  // A 4-chip torus: up and down are the same length, so up wins, and the two ways between
  // chips 0 and 2 use the two directions of their links, never one direction twice.
  EXPECT_EQ(hw::ladder_route(4, true, 0, 2)[0].kind, Hop::kUp);
  EXPECT_EQ(hw::ladder_route(4, true, 2, 0)[0].kind, Hop::kUp);
  hw::LinkFabric torus4("torus4", 4, links(true), 1.325e9);
  const auto there = torus4.route(0, 2), back = torus4.route(2, 0);
  ASSERT_EQ(there.size(), 1u);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_FALSE(there[0].bundle == back[0].bundle && there[0].direction == back[0].direction);
  EXPECT_TRUE(hw::ladder_route(1, false, 0, 0).empty());
}

TEST(Topology, AChipWithMoreLinksThanPortsIsRefused) {
  hw::IpuLinkConfig c;
  c.rung_links = 8;
  try {
    hw::ipulinks_per_chip(16, c);
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    // The ladder's ends have no down (or up) links: chip 0 has 8 + 2 = 10, chip 2 the first 12.
    EXPECT_THAT(e.what(), HasSubstr("chip 2 would have 12 IPU-Links (rung 8 + up 2 + down 2)"));
  }
  EXPECT_THROW(hw::ipulinks_per_chip(6, links()), std::invalid_argument);  // not a power of two
  hw::MachineConfig m = hw::machine_preset("pod16");
  m.ipulink.rung_links = 7;
  try {
    hw::validate(m);
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("chip 2 would have 11 IPU-Links (rung 7 + up 2 + down 2) but "
                                    "a chip has 10 ports"));
  }
}

TEST(IpuLink, CarriesItsRateAndRefusesTheWordBeyondIt) {
  // 16 GB/s at 1.325 GHz: 12.08 bytes, 3.02 words per cycle. Three words a cycle fit for ever;
  // with four, the first cycle's last word starts (15.9 of 16.0 bytes-worth ahead of it) and
  // runs over into the next cycle, whose fourth word finds 21.1 ahead of it: refused, index 7.
  hw::IpuLink link("link", links(), 1.325e9, {0, 0}, {1, 0});
  std::vector<hw::IpuLink::Crossing> three, four;
  for (uint64_t c = 100; c < 1100; ++c)
    for (int w = 0; w < 3; ++w) three.push_back({c, 4});
  EXPECT_EQ(link.admit(0, three), SIZE_MAX);
  EXPECT_EQ(link.counters(0).bytes, 12000u);
  EXPECT_NEAR(link.counters(0).busy_cycles, 12000 / (16e9 / 1.325e9), 1e-6);
  for (uint64_t c = 100; c < 110; ++c)
    for (int w = 0; w < 4; ++w) four.push_back({c, 4});
  EXPECT_EQ(link.admit(1, four), 7u);
  EXPECT_EQ(link.counters(1).words, 7u);
  EXPECT_EQ(link.hop_cycles(), 133u);  // ceil((100 ns + 0.25 ns) x 1.325 GHz)
}

TEST(Sync, ExternalCostFollowsGraphcoresModel) {
  hw::SyncConfig s;  // 15 ns per hop; hops = 1 + (chips / 2) / 2, there and back
  EXPECT_EQ(hw::external_sync_cycles(s, 1.325e9, 4), 80u);    // 2 hops: 60 ns = 79.5 cycles
  EXPECT_EQ(hw::external_sync_cycles(s, 1.325e9, 16), 199u);  // 5 hops: 150 ns = 198.75
  EXPECT_EQ(hw::external_sync_cycles(s, 1.325e9, 64), 676u);  // 17 hops: 510 ns = 675.75
  EXPECT_EQ(hw::external_sync_cycles(s, 1.85e9, 16), 278u);   // 150 ns = 277.5
}

// The names the statistics and the report give each kind of sync, from the group encoding in
// hw/sync/sync_network.h.
TEST(Sync, KindNamesEveryGroup) {
  using hw::SyncNetwork;
  EXPECT_EQ(SyncNetwork::kind(0), "internal");
  EXPECT_EQ(SyncNetwork::kind(2), "GSP group 2");
  EXPECT_EQ(SyncNetwork::kind(0x40000000u), "external");
  EXPECT_EQ(SyncNetwork::kind(0x40000001u), "GS1");
  EXPECT_EQ(SyncNetwork::kind(0x40000002u), "GS2");
  EXPECT_EQ(SyncNetwork::kind(0x80000003u), "host transfer 3");
  EXPECT_EQ(SyncNetwork::kind(0xffffffffu), "host dispatch");
}

TEST(Sync, ChipGroupsAreCheckedAndParsed) {
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

TEST(InterChip, ARungSendIsTimedToTheCycle) {
  MachineRun run("machine_rung", "m2000");
  ASSERT_EQ(run.report.outcome.result, ChipOutcome::Result::kExited) << run.report.outcome.message;
  EXPECT_EQ(run.report.outcome.exit_status, 10);  // chip 1's sum 1 + 2 + 3 + 4
  const auto& barriers = run.machine().sync_network().barriers();
  ASSERT_EQ(barriers.size(), 1u);
  EXPECT_EQ(barriers[0].arrivals, (std::vector<uint64_t>(4, 96)));
  EXPECT_EQ(barriers[0].release, 326u);  // 96 + 150 + 80
  EXPECT_EQ(barriers[0].chip, -1);
  const auto& exchanges = run.machine().exchange().records();
  ASSERT_EQ(exchanges.size(), 1u);
  EXPECT_EQ(exchanges[0].words, 4u);
  EXPECT_EQ(exchanges[0].chip_words, 4u);
  EXPECT_EQ(exchanges[0].last_arrival, 326u + 193);  // R + 28 + 16 + 133 + 16
  // The words crossed rung link 0 (tile 0 mod 6 links), chip 0 -> chip 1, and nothing else.
  uint64_t bytes = 0;
  for (const auto& link : run.machine().links().links())
    bytes += link->counters(0).bytes + link->counters(1).bytes;
  EXPECT_EQ(bytes, 16u);
  const hw::IpuLink& rung0 = *run.machine().links().bundles()[0].links[0];
  EXPECT_EQ(rung0.counters(0).bytes, 16u);
  EXPECT_EQ(run.report.ipulink_bytes, 16u);
}

TEST(InterChip, ASendAcrossTwoRungsCrossesThreeLinks) {
  MachineRun run("machine_two_rungs", "pod16");  // chip 0 -> 1 -> 3 -> 5
  ASSERT_EQ(run.report.outcome.result, ChipOutcome::Result::kExited) << run.report.outcome.message;
  EXPECT_EQ(run.report.outcome.exit_status, 10);
  const auto& barriers = run.machine().sync_network().barriers();
  ASSERT_EQ(barriers.size(), 1u);
  EXPECT_EQ(barriers[0].release, 445u);  // 96 + 150 + 199
  const auto& exchanges = run.machine().exchange().records();
  ASSERT_EQ(exchanges.size(), 1u);
  EXPECT_EQ(exchanges[0].last_arrival, 445u + 28 + 32 + 3 * 133);
  EXPECT_EQ(run.report.ipulink_bytes, 3u * 16);  // 16 bytes on each of three links
}

TEST(InterChipErrors, ReceiverNotListening) {
  MachineRun run("machine_no_listen", "m2000");
  ASSERT_EQ(run.report.outcome.result, ChipOutcome::Result::kFault);
  EXPECT_THAT(run.report.outcome.message, HasSubstr("word 0 of the send from chip 0 tile 0 (0x"));
  EXPECT_THAT(run.report.outcome.message,
              HasSubstr("arrives at chip 1 tile 0 at cycle 516 while chip 1 tile 0 listens to "
                        "no tile"));  // 326 + 25 + 32 + 133
}

TEST(InterChipErrors, MissingSender) {
  MachineRun run("machine_no_send", "m2000");
  ASSERT_EQ(run.report.outcome.result, ChipOutcome::Result::kFault);
  EXPECT_THAT(run.report.outcome.message, HasSubstr("chip 1 tile 0: receive buffer at 0x"));
  EXPECT_THAT(run.report.outcome.message,
              HasSubstr("expected 4 words but got 0 before the end of the tile's exchange phase "
                        "at cycle 1368"));  // R + 1042
}

TEST(InterChipErrors, ASendAfterAnInternalSyncCannotLeaveTheChip) {
  MachineRun run("machine_internal_sync", "m2000");
  ASSERT_EQ(run.report.outcome.result, ChipOutcome::Result::kFault);
  EXPECT_THAT(run.report.outcome.message, HasSubstr("chip 0 tile 0 sends 4 words from 0x"));
  EXPECT_THAT(run.report.outcome.message,
              HasSubstr("to chip 1 tile 0, which is not in this exchange phase (sync group 0 of "
                        "chip 0 released at cycle 246); words reach another chip only after an "
                        "external sync"));  // 96 + 150
}

TEST(InterChipErrors, ASendToAChipThatDoesNotExist) {
  MachineRun run("machine_no_chip", "m2000");
  ASSERT_EQ(run.report.outcome.result, ChipOutcome::Result::kFault);
  EXPECT_THAT(run.report.outcome.message,
              HasSubstr("chip 0 tile 0 context 0 (supervisor): destination chip 7 tile 0 "
                        "(0x40070000; the machine has 4 chips of 1472 tiles) does not exist"));
}

TEST(InterChipErrors, FourSendersOverOneLinkOverSubscribeIt) {
  // Tiles 0, 6, 12 and 18 all take rung link 0 (tile mod 6): 4 words a cycle on a link that
  // carries 3.02. Their first words enter at R + 25 + 16 = 367 and fit (the fourth runs over);
  // in 368 the fourth word, tile 18's word 1, finds more than a cycle's worth ahead of it.
  MachineRun run("machine_one_link", "m2000");
  ASSERT_EQ(run.report.outcome.result, ChipOutcome::Result::kFault);
  EXPECT_THAT(run.report.outcome.message,
              HasSubstr("IPU-Link chip 0 port 0 -> chip 1 port 0 is over-subscribed at cycle 368: "
                        "word 1 of the send from chip 0 tile 18"));
  EXPECT_THAT(run.report.outcome.message, HasSubstr("to chip 1 tile 18"));
}

TEST(InterChip, TheSameTrafficSpreadOverFourLinksFits) {
  MachineRun run("machine_spread_links", "m2000");
  ASSERT_EQ(run.report.outcome.result, ChipOutcome::Result::kExited) << run.report.outcome.message;
  EXPECT_EQ(run.report.outcome.exit_status, 10);
  const auto& rung = run.machine().links().bundles()[0];
  for (unsigned l = 0; l < 4; ++l) EXPECT_EQ(rung.links[l]->counters(0).bytes, 16u) << l;
}

TEST(InterChip, ADeadlockNamesTheMissingChipAndTile) {
  MachineRun run("machine_deadlock", "m2000");
  ASSERT_EQ(run.report.outcome.result, ChipOutcome::Result::kDeadlock);
  EXPECT_THAT(
      run.report.outcome.message,
      HasSubstr("external sync (every chip): tiles chip 0 tile 0 (cycle 108), chip 1 tile 0 "
                "(cycle 108), chip 3 tile 0 (cycle 108) arrived; 1 missing:"));  // 96 + li, beq
  EXPECT_THAT(run.report.outcome.message, HasSubstr("chip 2 tile 0 exited with status 0"));
}

TEST(Images, TheManifestIsJsonCheckedAgainstTheMachineAndCoveredByTheChecksum) {
  const std::string path = std::string(IPU_TEST_FIRMWARE_DIR) + "/machine_rung.elf";
  sdk::ElfImage image = sdk::read_elf(path);
  const hw::MachineConfig m2000 = hw::machine_preset("m2000");
  auto manifest = [&image](const std::string& text) {
    image.sections[".ipu.manifest"].assign(text.begin(), text.end());
  };
  auto refusal = [&] {
    try {
      sdk::load_program(image, m2000);
    } catch (const sdk::ImageError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  manifest(R"({"target": {"tiles": 1472, "clock_hz": 1325000000, "chips": 4}})");
  EXPECT_EQ(refusal(), "");
  manifest(R"({"target": {"tiles": 1472, "clock_hz": 1325000000, "chips": 16}})");
  EXPECT_THAT(refusal(), HasSubstr("built for 16 chips of 1472 tiles at 1325000000 Hz, but the "
                                   "configuration is 4 chips"));
  // 30,000 digits (a regex once recursed per character here and crashed): too large a number.
  manifest(R"({"target": {"tiles": )" + std::string(30000, '9') + R"(, "clock_hz": 1}})");
  EXPECT_THAT(refusal(), HasSubstr("the .ipu.manifest section is not valid JSON"));
  manifest(R"({"target": {"tiles": 1472.5, "clock_hz": 1325000000}})");
  EXPECT_THAT(refusal(), HasSubstr("the .ipu.manifest section is corrupt: 'target' needs whole"));
  manifest(R"({"target": {"tiles": 1472, "clock_hz": 1325.0.000}})");
  EXPECT_THAT(refusal(), HasSubstr("the .ipu.manifest section is not valid JSON"));

  // Written with a manifest, then the manifest edited in the file: the checksum refuses it.
  manifest(R"({"target": {"tiles": 1472, "clock_hz": 1325000000, "chips": 4}})");
  const std::string out = ::testing::TempDir() + "manifest_checksum.elf";
  sdk::write_elf(out, image);
  EXPECT_NO_THROW(sdk::read_elf(out));
  std::string bytes;
  {
    std::ifstream in(out, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  const size_t at = bytes.find("\"tiles\": 1472");
  ASSERT_NE(at, std::string::npos);
  bytes[at + 12] = '3';  // 1472 -> 1473
  std::ofstream(out, std::ios::binary) << bytes;
  EXPECT_THAT([&] { sdk::read_elf(out); }, ::testing::ThrowsMessage<sdk::ImageError>(HasSubstr(
                                               "the image is corrupt: its checksum is 0x")));
}

TEST(InterChip, ARingAroundAPod16CarriesEveryToken) {
  MachineRun run("chip_ring_pod16", "pod16");
  ASSERT_EQ(run.report.outcome.result, ChipOutcome::Result::kExited) << run.report.outcome.message;
  EXPECT_EQ(run.report.outcome.exit_status, 136);  // 1 + 2 + ... + 16
  for (unsigned c = 0; c < 16; ++c)
    EXPECT_EQ(run.machine().tile(c * 1472).outcome().exit_status, 136) << "chip " << c;
  // Per superstep, chip c sends one word to c + 1: 8 rung hops (even c), 7 x 2 hops (odd c but
  // 15: rung, then a column step), and 15 -> 0: rung + 7 column steps = 8. 30 hops x 4 bytes,
  // 16 supersteps, plus the final external sync's empty exchange.
  EXPECT_EQ(run.report.ipulink_bytes, 16u * 30 * 4);
  EXPECT_EQ(run.report.inter_chip_words, 16u * 16);
  EXPECT_EQ(run.report.supersteps, 16u);
}

}  // namespace
}  // namespace ipu::test
