// Remote buffers: tensors in the IPU-Gateway's streaming memory, each replica with its own,
// copied to and from tile tensors through the gateway; and the mistakes a user can make with
// them. One device per process (SystemC elaborates once).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "sdk/compiler/compiler.h"
#include "sdk/runtime/device.h"

namespace ipu::test {
namespace {

using namespace ipu::sdk;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

std::vector<float> replica_data(unsigned replica, size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * static_cast<float>(replica * 10000 + i);
  return v;
}

// An M2000 of 4 replicas (a chip each, 8 tiles used): "save" writes a to entry 1, "load" reads
// entry 1 into b. Every replica keeps its own entries in the board's one gateway.
TEST(SdkRemote, EntriesRoundTripOnEveryReplica) {
  constexpr size_t n = 1000;
  constexpr unsigned R = 4;
  Graph g(Target::preset("m2000", 8, R));
  const Tensor a = g.add_variable(DType::kF32, {n}, "a"), b = g.add_variable(DType::kF32, {n}, "b");
  g.map_evenly(a, 0, 8, 2);
  // b on other tiles than a's (the data goes through streaming memory), two pieces each.
  std::vector<Interval> pieces;
  for (unsigned k = 0; k < 8; ++k) pieces.push_back({k * n / 8, (k + 1) * n / 8, 4 + k % 4});
  g.set_tile_mapping(b, pieces);
  const RemoteBuffer rb = g.add_remote_buffer("rb", DType::kF32, n, 3);
  const Executable exe =
      compile(g, {{"save", CopyToRemote(a, rb, 1)}, {"load", CopyFromRemote(rb, 1, b)}});
  ASSERT_EQ(exe.replica_memory.size(), R);
  EXPECT_EQ(exe.remote_copies, R * (8 + 8));  // a tile piece each
  for (unsigned r = 1; r < R; ++r) {
    EXPECT_EQ(exe.replica_memory[r].gateway, 0u);
    EXPECT_NE(exe.replica_memory[r].base, exe.replica_memory[r - 1].base);
  }

  Device device(exe);
  for (unsigned r = 0; r < R; ++r) {
    const auto v = replica_data(r, n, 0.5f);
    device.write_tensor("a", r, v.data(), n * 4);
  }
  const DeviceReport& save = device.run("save");
  EXPECT_EQ(save.run.streaming_bytes_written, R * n * 4);
  EXPECT_EQ(save.run.streaming_bytes_read, 0u);
  std::vector<float> entry(n);
  for (unsigned r = 0; r < R; ++r) {
    device.read_remote("rb", r, 1, entry.data(), n * 4);
    EXPECT_EQ(entry, replica_data(r, n, 0.5f)) << "replica " << r;
    device.read_remote("rb", r, 0, entry.data(), n * 4);
    EXPECT_EQ(entry, std::vector<float>(n, 0.0f)) << "entry 0 untouched, replica " << r;
    device.read_remote("rb", r, 2, entry.data(), n * 4);
    EXPECT_EQ(entry, std::vector<float>(n, 0.0f)) << "entry 2 untouched, replica " << r;
  }

  // The host changes replica 2's entry; each replica loads its own.
  const auto changed = replica_data(2, n, -3.0f);
  device.write_remote("rb", 2, 1, changed.data(), n * 4);
  const DeviceReport& load = device.run("load");
  EXPECT_EQ(load.run.streaming_bytes_read, R * n * 4);
  EXPECT_EQ(load.run.streaming_bytes_written, 0u);
  std::vector<float> got(n);
  for (unsigned r = 0; r < R; ++r) {
    device.read_tensor("b", r, got.data(), n * 4);
    EXPECT_EQ(got, r == 2 ? changed : replica_data(r, n, 0.5f)) << "replica " << r;
  }
  // 16 KB from 4 chips over 2 DIMMs (38.4 GB/s at most): at least 104 cycles at 1.325 GHz, and
  // a round trip's latencies on top.
  EXPECT_GT(load.run.cycles, 4u * n * 4 / 29);
}

// A run's time off the chips (hw::RunReport::streaming_phase_cycles, cross_chip_phase_cycles):
// each phase that streams or crosses chips counted from its release to its end, into its own
// sum; a phase within the chips into neither. A phase's span is its own, whatever program it
// runs in: two programs' phases in one program add up to the two counts exactly.
TEST(SdkRemote, PhasesOffTheChipsAreTimedApart) {
  constexpr size_t n = 4000;
  constexpr unsigned R = 4;
  Graph g(Target::preset("m2000", 8, R));
  const Tensor a = g.add_variable(DType::kF32, {n}, "a"), b = g.add_variable(DType::kF32, {n}, "b");
  const Tensor all = g.add_variable(DType::kF32, {R * n}, "all");
  g.map_evenly(a, 0, 8, 2);
  g.map_evenly(b, 0, 8, 2);
  g.map_evenly(all, 0, 8, 2);
  const RemoteBuffer rb = g.add_remote_buffer("rb", DType::kF32, n, 1);
  const Program save = CopyToRemote(a, rb, 0), gather = AllGather(a, all);
  const Executable exe = compile(g, {{"empty", Sequence({})},
                                     {"local", Copy(a, b)},
                                     {"save", save},
                                     {"gather", gather},
                                     {"both", Sequence({save, gather})}});
  Device device(exe);
  device.run("empty");
  const hw::RunReport empty = device.run("empty").run;
  const hw::RunReport local = device.run("local").run;
  const hw::RunReport saved = device.run("save").run;
  const hw::RunReport gathered = device.run("gather").run;
  const hw::RunReport both = device.run("both").run;
  for (const hw::RunReport* r : {&empty, &local}) {
    EXPECT_EQ(r->streaming_phase_cycles, 0u);
    EXPECT_EQ(r->cross_chip_phase_cycles, 0u);
  }
  // Each replica's 16 KB through the board's two DIMMs (38.4 GB/s at most), 64 KB in all: at
  // least 2,209 cycles at 1.325 GHz; within the program's own time.
  EXPECT_EQ(saved.cross_chip_phase_cycles, 0u);
  EXPECT_GE(saved.streaming_phase_cycles, uint64_t{R} * n * 4 * 1325 / 38400);
  EXPECT_LE(saved.streaming_phase_cycles, saved.cycles - empty.cycles);
  // Each replica's 16 KB to the 3 others over the IPU-Links.
  EXPECT_EQ(gathered.streaming_phase_cycles, 0u);
  EXPECT_GT(gathered.cross_chip_phase_cycles, 0u);
  EXPECT_LE(gathered.cross_chip_phase_cycles, gathered.cycles - empty.cycles);
  EXPECT_EQ(both.streaming_phase_cycles, saved.streaming_phase_cycles);
  EXPECT_EQ(both.cross_chip_phase_cycles, gathered.cross_chip_phase_cycles);
  // The statistics count every run's: the save and the gather twice each.
  std::ostringstream stats;
  device.write_stats(stats);
  const auto summary = nlohmann::json::parse(stats.str()).at("summary");
  EXPECT_EQ(summary.at("streaming_phase_cycles").get<uint64_t>(), 2 * saved.streaming_phase_cycles);
  EXPECT_EQ(summary.at("cross_chip_phase_cycles").get<uint64_t>(),
            2 * gathered.cross_chip_phase_cycles);
}

TEST(SdkRemoteErrors, BadBuffersAndCopiesAreRefusedByName) {
  {
    Graph card(Target::preset("mk2", 4));
    EXPECT_THAT(
        [&] { card.add_remote_buffer("m", DType::kF32, 16, 1); },
        ThrowsMessage<GraphError>(HasSubstr(
            "remote buffer 'm': the target (mk2) has no IPU-Gateway, so no streaming memory")));
  }
  Graph g(Target::preset("m2000", 4, 4));
  EXPECT_THAT(
      [&] { g.add_remote_buffer("h", DType::kF16, 3, 1); },
      ThrowsMessage<GraphError>(HasSubstr("remote buffer 'h': an entry of 3 f16 elements "
                                          "is 6 bytes, not a whole number of 32-bit words")));
  EXPECT_THAT([&] { g.add_remote_buffer("z", DType::kF32, 16, 0); },
              ThrowsMessage<GraphError>(HasSubstr("remote buffer 'z' needs at least one entry")));
  const RemoteBuffer m = g.add_remote_buffer("m", DType::kF32, 16, 4);
  EXPECT_THAT([&] { g.add_remote_buffer("m", DType::kF32, 16, 4); },
              ThrowsMessage<GraphError>(HasSubstr("remote buffer 'm' is declared twice")));
  const Tensor t = g.add_variable(DType::kF32, {16}, "t");
  const Tensor small = g.add_variable(DType::kF32, {8}, "small");
  g.map_evenly(t, 0, 4);
  g.set_tile_mapping(small, 0);
  EXPECT_THAT([&] { compile(g, CopyToRemote(t, m, 4)); },
              ThrowsMessage<GraphError>(
                  HasSubstr("CopyToRemote of 't': entry 4 of remote buffer 'm' is out of range (it "
                            "has 4 entries, 0-3)")));
  EXPECT_THAT([&] { compile(g, CopyFromRemote(m, 0, small)); },
              ThrowsMessage<GraphError>(HasSubstr(
                  "CopyFromRemote between 'small' (8 x f32) and remote buffer 'm' (16 x f32)")));
  RemoteBuffer foreign{7};
  EXPECT_THAT([&] { compile(g, CopyToRemote(t, foreign, 0)); },
              ThrowsMessage<GraphError>(HasSubstr("remote buffer id 7 does not belong")));
}

// A POD16 as 2 replicas of 8 chips: a replica's remote buffers live in the gateway of its first
// chip, which its other machine's tiles cannot reach.
TEST(SdkRemoteErrors, ATileOnAnotherGatewayIsRefused) {
  Graph g(Target::preset("pod16", 2, 2));
  const Tensor t = g.add_variable(DType::kF32, {8}, "t");
  g.set_tile_mapping(t, {{0, 4, g.tile(0, 0)}, {4, 8, g.tile(5, 1)}});
  const RemoteBuffer m = g.add_remote_buffer("m", DType::kF32, 8, 1);
  EXPECT_THAT([&] { compile(g, CopyToRemote(t, m, 0)); },
              ThrowsMessage<CompileError>(HasSubstr(
                  "the tile's chip 5 is not on gateway 0, which holds the replica's remote buffer "
                  "'m' (chips 0-3)")));
}

TEST(SdkRemoteErrors, HostAccessChecksNameReplicaEntryAndSize) {
  Graph g(Target::preset("m2000", 1, 2));
  const Tensor t = g.add_variable(DType::kF32, {4}, "t");
  g.set_tile_mapping(t, 0);
  const RemoteBuffer m = g.add_remote_buffer("m", DType::kF32, 4, 2);
  Device device(compile(g, CopyToRemote(t, m, 1)));
  std::vector<float> v(4);
  EXPECT_THAT([&] { device.read_remote("n", 0, 0, v.data(), 16); },
              ThrowsMessage<DeviceError>(HasSubstr("read_remote: no remote buffer named 'n'")));
  EXPECT_THAT(
      [&] { device.read_remote("m", 2, 0, v.data(), 16); },
      ThrowsMessage<DeviceError>(HasSubstr("replica 2, but the executable has 2 replicas")));
  EXPECT_THAT([&] { device.write_remote("m", 0, 2, v.data(), 16); },
              ThrowsMessage<DeviceError>(HasSubstr("entry 2 is out of range (it has 2)")));
  EXPECT_THAT([&] { device.write_remote("m", 0, 0, v.data(), 12); },
              ThrowsMessage<DeviceError>(HasSubstr("12 bytes given, an entry has 16")));
}

}  // namespace
}  // namespace ipu::test
