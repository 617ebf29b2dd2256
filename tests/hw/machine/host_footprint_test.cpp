// The host memory a run needs, estimated before it runs (hw/machine/host_footprint.h), against
// figures worked out by hand from the tiles' SRAM, predecode caches and images.
#include "hw/machine/host_footprint.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "iss/isa.h"

namespace ipu::hw {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

// Two tiles, each 4 KiB of image of which 1 KiB is code.
LoadedProgram two_tiles() {
  LoadedProgram p;
  for (unsigned t : {0u, 5u}) {
    LoadedProgram::Segment s;
    s.address = 0x4c000;
    s.bytes.assign(2048, 1);  // the rest zeros, not stored
    s.size = 4096;
    s.code_bytes = 1024;
    p.tiles[t].push_back(s);
  }
  return p;
}

TEST(HostFootprint, FromTheTilesSramPredecodeCachesAndImages) {
  MachineConfig m = machine_preset("mk2");
  const HostFootprint e = estimate_host_footprint(m, two_tiles(), 2);
  static_assert(sizeof(iss::Decoded) == 16);
  const uint64_t sram = 624 * 1024, predecoded = 1024 / 4 * 16;
  EXPECT_EQ(e.tiles, 2u);
  EXPECT_EQ(e.least, 2 * (kTileStateBytes + 4096 + predecoded));
  EXPECT_EQ(e.most, 2 * (kTileStateBytes + sram + predecoded));
  EXPECT_EQ(e.reserved, 2 * (sram + (sram / 4 + 1) * 16));
  // A rank simulating one of the two tiles.
  EXPECT_EQ(estimate_host_footprint(m, two_tiles(), 1).least, e.least / 2);
}

TEST(HostFootprint, RefusedWhenItCannotFitWarnedWhenItMayNot) {
  HostFootprint e;
  e.tiles = 47104;
  e.least = 5ull << 30;  // 5 GiB
  e.most = 31ull << 30;  // 31 GiB
  e.reserved = 146ull << 30;
  HostCapacity plenty{64ull << 30, std::nullopt, 1ull << 30};
  EXPECT_FALSE(check_host_footprint(e, plenty, "pod64").has_value());
  HostCapacity host{24ull << 30, std::nullopt, 1ull << 30};
  const auto warning = check_host_footprint(e, host, "pod64 (64 chips x 1472 tiles)");
  ASSERT_TRUE(warning.has_value());
  EXPECT_EQ(*warning,
            "47104 active tiles of pod64 (64 chips x 1472 tiles) may need up to 31.0 GiB of host "
            "memory if the program touches all of their SRAM (at least 5.0 GiB); this host has "
            "24.0 GiB available, and the kernel ends a process that runs out");
  HostCapacity small{4ull << 30, std::nullopt, 1ull << 30};
  EXPECT_THAT([&] { check_host_footprint(e, small, "pod64"); },
              ThrowsMessage<std::runtime_error>(
                  HasSubstr("need at least 5.0 GiB of host memory (each tile's state, image and "
                            "predecoded code), more than this host has available (4.0 GiB)")));
  HostCapacity limited{64ull << 30, 100ull << 30, 1ull << 30};
  EXPECT_THAT([&] { check_host_footprint(e, limited, "pod64"); },
              ThrowsMessage<std::runtime_error>(HasSubstr(
                  "reserve 146.0 GiB of address space for their SRAM and predecode caches")));
}

}  // namespace
}  // namespace ipu::hw
