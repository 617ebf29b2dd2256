// The IPU-Links as a block: the ladder's topology and routes (hw/ipulink/ladder.h), a link's
// rate and the word beyond it, and the link fabric a machine builds from its configuration.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <vector>

#include "hw/ipulink/link_fabric.h"

namespace ipu::test {
namespace {

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
  hw::IpuLinkConfig seven = links();  // a POD16's 16 chips, 7 rung links
  seven.rung_links = 7;
  try {
    hw::validate(seven, 16);
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

TEST(LinkFabric, AnM2000HasTwoRungsOfSixLinksAndTwoColumnBundlesEachWay) {
  // 4 chips: rungs 0-1 and 2-3 (6 links each); columns 0-2 and 1-3 (2 links each).
  hw::LinkFabric fabric("links", 4, links(), 1.325e9);
  EXPECT_EQ(fabric.links().size(), 2u * 6u + 2u * 2u);
  EXPECT_EQ(fabric.route(0, 3).size(), 2u);  // the rung to 1, then up to 3
  EXPECT_EQ(fabric.hop_cycles(), 133u);
}

TEST(IpuLinkConfig, RangesAreValidatedNamingTheParameter) {
  hw::IpuLinkConfig c = links();
  c.bytes_per_second = 100;
  try {
    hw::validate(c, 4);
    FAIL() << "accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "ipulink.bytes-per-second must be 1000000 to 10000000000000, not 100");
  }
  EXPECT_DOUBLE_EQ(links().bytes_per_cycle(1.6e9), 10.0);
}

}  // namespace
}  // namespace ipu::test
