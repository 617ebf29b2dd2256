// The SDK across chips: graphs on machine targets (tensors on any chip, copies over IPU-Links
// after external syncs, scheduled within the links' rate), replicated graphs (per-replica
// streams and tensors, CrossReplicaCopy) and the collectives (all-reduce, reduce-scatter,
// all-gather on rings of 2, 4 and 16 replicas) against host references; and the bad-input
// cases. One device runs per process (SystemC elaborates once): ctest runs each test alone.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <map>
#include <numeric>
#include <random>
#include <systemc>
#include <tuple>
#include <vector>

#include "hw/machine/machine.h"
#include "iss/fpu.h"
#include "sdk/compiler/compiler.h"
#include "sdk/graph/codelet_library.h"
#include "sdk/runtime/control_walk.h"
#include "sdk/runtime/device.h"
#include "sdk/runtime/host_driver.h"
#include "tests/support/sdk_graph.h"

namespace ipu::test {
namespace {

using namespace ipu::sdk;
using ::testing::HasSubstr;

// Spreads `t` evenly over the first `tiles` tiles of each chip in `chips` of a replica.
void map_over_chips(Graph& g, Tensor t, std::vector<unsigned> chips, unsigned tiles) {
  const TensorInfo& info = g.tensor(t);
  std::vector<Interval> mapping;
  const size_t pieces = chips.size() * tiles;
  size_t k = 0;
  for (unsigned c : chips)
    for (unsigned tile = 0; tile < tiles; ++tile, ++k)
      mapping.push_back(
          {info.elements * k / pieces, info.elements * (k + 1) / pieces, g.tile(c, tile)});
  g.set_tile_mapping(t, mapping);
}

std::vector<float> iota_floats(size_t n, float first) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), first);
  return v;
}

TEST(SdkMachine, CopyAndBroadcastCrossChipsAfterAnExternalSync) {
  Graph g(Target::preset("m2000", 4));
  EXPECT_EQ(g.tiles(), 16u);
  const Tensor x = g.add_variable(DType::kF32, {96}, "x");
  const Tensor y = g.add_variable(DType::kF32, {96}, "y");
  const Tensor b = g.add_variable(DType::kF32, {8}, "b");
  const Tensor w = g.add_variable(DType::kF32, {8 * 8}, "w");
  map_over_chips(g, x, {0}, 4);           // chip 0
  map_over_chips(g, y, {3, 1}, 3);        // chips 3 and 1, other pieces
  g.set_tile_mapping(b, g.tile(2, 1));    // one tile of chip 2
  map_over_chips(g, w, {0, 1, 2, 3}, 2);  // every chip
  const Executable exe = compile(g, Sequence({Copy(x, y), Broadcast(b, w)}));
  EXPECT_EQ(exe.external_exchanges, 2u);
  EXPECT_GT(exe.inter_chip_sends, 0u);
  EXPECT_EQ(manifest_steps(exe, "exchange_external").size(), 2u);
  EXPECT_EQ(nlohmann::json::parse(exe.manifest)["target"]["chips"], 4);

  Device device(exe);
  const std::vector<float> xs = iota_floats(96, 1.0f), bs = iota_floats(8, -3.5f);
  device.write_tensor("x", xs.data(), xs.size() * 4);
  device.write_tensor("b", bs.data(), bs.size() * 4);
  const DeviceReport& report = device.run();
  std::vector<float> ys(96), ws(64);
  device.read_tensor("y", ys.data(), ys.size() * 4);
  device.read_tensor("w", ws.data(), ws.size() * 4);
  EXPECT_EQ(ys, xs);
  for (size_t i = 0; i < ws.size(); ++i) EXPECT_EQ(ws[i], bs[i % 8]) << i;
  EXPECT_EQ(report.run.chips, 4u);
  // y lies on chips 3 and 1 only, so all 96 words of the copy cross chips; of the broadcast's
  // 8 chunks, the 6 not on chip 2 (one on chip 2 tile 0, one on tile 1 which is b's own).
  EXPECT_EQ(report.run.inter_chip_words, 96u + 6u * 8u);
}

// A chip steps over an exchange phase inside chips in which none of its tiles sends or
// receives and none ran a vertex since the chip's last sync: its program has no such phase, as
// each IPU's own has not in Poplar. Two chips' copies in one program run at once; a chip's
// internal barriers are those its walk of the control steps finds (ControlWalk, as the
// profile's labels follow it), each with every active tile of the chip.
TEST(SdkMachine, AChipStepsOverThePhasesItHasNoPartIn) {
  Graph g(Target::preset("m2000", 4));
  std::vector<Tensor> x, y;
  for (unsigned chip : {0u, 1u}) {
    x.push_back(g.add_variable(DType::kF32, {64}, fmt::format("x{}", chip)));
    y.push_back(g.add_variable(DType::kF32, {64}, fmt::format("y{}", chip)));
    g.set_tile_mapping(x.back(), {{0, 32, g.tile(chip, 0)}, {32, 64, g.tile(chip, 1)}});
    g.set_tile_mapping(y.back(), {{0, 32, g.tile(chip, 2)}, {32, 64, g.tile(chip, 3)}});
  }
  // Eight phases on the chip: x to y and back, four times.
  const auto copies = [&](unsigned chip) {
    Program p = Sequence({});
    for (int k = 0; k < 4; ++k) {
      p.body.push_back(Copy(x[chip], y[chip]));
      p.body.push_back(Copy(y[chip], x[chip]));
    }
    return p;
  };
  Program both = copies(0);
  for (const Program& step : copies(1).body) both.body.push_back(step);
  const std::vector<NamedProgram> programs = {
      {"empty", Sequence({})}, {"chip0", copies(0)}, {"chip1", copies(1)}, {"both", both}};
  const Executable exe = compile(g, programs);
  Device device(exe);
  for (unsigned chip : {0u, 1u}) {
    const std::vector<float> xs = iota_floats(64, 10.0f * static_cast<float>(chip));
    device.write_tensor(fmt::format("x{}", chip), xs.data(), xs.size() * 4);
  }
  device.run("empty");
  std::map<std::string, hw::RunReport> runs;
  for (const char* name : {"empty", "chip0", "chip1", "both"}) runs[name] = device.run(name).run;
  for (unsigned chip : {0u, 1u}) {
    std::vector<float> ys(64);
    device.read_tensor(fmt::format("y{}", chip), ys.data(), ys.size() * 4);
    EXPECT_EQ(ys, iota_floats(64, 10.0f * static_cast<float>(chip))) << "chip " << chip;
  }
  // Each program's internal barriers on each chip, as the walk finds them (the dispatch that
  // starts the next run is the host's, not the chip's).
  const auto walked = [&](unsigned program, unsigned chip) {
    const std::vector<unsigned> order{program, program};
    ControlWalk walk(exe, order, chip);
    walk.next();  // the dispatch that starts it
    uint64_t n = 0;
    for (auto sync = walk.next(); sync && sync->program == program && sync->group == 0;
         sync = walk.next())
      ++n;
    return n;
  };
  for (unsigned program = 1; program < programs.size(); ++program) {
    const hw::RunReport& r = runs[programs[program].name];
    for (unsigned chip : {0u, 1u}) {
      const uint64_t expected =
          programs[program].name == "both" || programs[program].name == fmt::format("chip{}", chip)
              ? 8
              : 0;
      EXPECT_EQ(walked(program, chip), expected) << programs[program].name << " chip " << chip;
      EXPECT_EQ(r.chip_actions.at(chip).sync_arrivals, 4 * expected)
          << programs[program].name << " chip " << chip;
    }
  }
  // At once: "both" takes the longer chip's time and chip 1's steps over chip 0's eight phases,
  // not the two programs' sum.
  const uint64_t dispatch = runs["empty"].cycles;
  const uint64_t one = runs["chip0"].cycles - dispatch, other = runs["chip1"].cycles - dispatch;
  EXPECT_EQ(one, other);
  EXPECT_LT(runs["both"].cycles - dispatch, one + other / 4);
}

// The same streams over PCIe when asked: each chip's endpoint, nothing in streaming memory.
TEST(SdkMachine, HostStreamsCanTakePcieOnAMachine) {
  Graph g(Target::preset("m2000", 2, 2));
  const Tensor a = g.add_variable(DType::kF32, {16}, "a");
  g.map_evenly(a, 0, 2);
  g.add_host_stream("in", DType::kF32, 16, StreamDirection::kHostToDevice);
  CompileOptions options;
  options.host_link = HostLink::kPcie;
  const Executable exe = compile(g, HostWrite("in", a), options);
  EXPECT_TRUE(exe.remote_buffers.empty());
  Device device(exe);
  std::vector<float> in(32);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i) - 3.5f;
  device.connect_stream("in", in.data(), in.size() * 4);
  const DeviceReport& report = device.run();
  EXPECT_EQ(report.run.streaming_bytes_read, 0u);
  std::vector<float> got(16);
  device.read_tensor("a", 1, got.data(), 16 * 4);
  EXPECT_EQ(got, std::vector<float>(in.begin() + 16, in.end()));
}

// x, streamed in over the gateway as "in", and the compute set y += x, both tensors over the
// first 4 tiles.
std::pair<Tensor, ComputeSet> streamed_sum(Graph& g, size_t elements) {
  add_codelet_library(g);
  const Tensor x = g.add_variable(DType::kF32, {elements}, "x"),
               y = g.add_variable(DType::kF32, {elements}, "y");
  g.map_evenly(x, 0, 4);
  g.map_evenly(y, 0, 4);
  g.add_host_stream("in", DType::kF32, elements, StreamDirection::kHostToDevice);
  const ComputeSet cs = g.add_compute_set("accumulate");
  add_vertices(g, cs, x, y, y);
  return {x, cs};
}

// A stream to the device over the gateway has two buffers in streaming memory, which its uses
// take in turn, counted from the load and across runs, by the tiles and the host alike (issue
// 35, item 3). Spoiling the buffer the next use does not take changes nothing.
TEST(SdkMachine, AStreamsUsesTakeItsTwoBuffersInTurn) {
  Graph g(Target::preset("m2000", 4, 2));  // 4 tiles a chip, 2 replicas of 2 chips
  const auto [x, cs] = streamed_sum(g, 64);
  const Executable exe = compile(g, Sequence({HostWrite("in", x), Execute(cs)}));
  ASSERT_EQ(exe.remote_buffers.at("in.host_stream").info.entries, 2u);
  Device device(exe);
  std::vector<float> in(2 * 64);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i) + 0.25f;
  device.connect_stream("in", in.data(), in.size() * 4);
  const std::vector<float> spoilt(64, 999.0f);
  std::vector<float> got(64);
  for (unsigned use = 0; use < 3; ++use) {
    const unsigned next = (use + 1) % 2;  // the buffer this use does not take
    for (unsigned r = 0; r < 2; ++r)
      device.write_remote("in.host_stream", r, next, spoilt.data(), 256);
    device.run();
    for (unsigned r = 0; r < 2; ++r) {
      device.read_tensor("y", r, got.data(), 256);
      for (size_t i = 0; i < 64; ++i)
        ASSERT_EQ(got[i], static_cast<float>(use + 1) * in[r * 64 + i])
            << use << " " << r << " " << i;
      device.read_remote("in.host_stream", r, use % 2, got.data(), 256);
      EXPECT_EQ(got, std::vector<float>(in.begin() + r * 64, in.begin() + (r + 1) * 64)) << use;
    }
  }
}

// The host's RoCE leg of a stream's next use runs while the tiles compute (prefetch): in a
// loop whose compute outlasts the leg, only the first use waits for it. Without the second
// buffer every use waits for its whole leg, each as long as the first (the DIMMs idle at each).
// One device per process, so each case is a test of its own.
struct PrefetchLoop {
  uint64_t dispatch = 0, once = 0, loop = 0, loop_cycles = 0, prefetched = 0;
  float y0 = 0;
};
PrefetchLoop run_prefetch_loop(bool prefetch) {
  Graph g(Target::preset("m2000", 4));  // 4 tiles a chip; x and y on chip 0
  const auto [x, cs] = streamed_sum(g, 1024);
  const Program use = Sequence({HostWrite("in", x), Repeat(2, Execute(cs))});
  CompileOptions options;
  options.prefetch_streams = prefetch;
  const Executable exe =
      compile(g, {{"none", Sequence({})}, {"once", use}, {"loop", Repeat(3, use)}}, options);
  Device device(exe);
  std::vector<float> in(1024, 0.5f);
  device.connect_stream("in", in.data(), in.size() * 4);
  PrefetchLoop r;
  r.dispatch = device.run("none").host_transfer_cycles;
  r.once = device.run("once").host_transfer_cycles;
  const DeviceReport& loop = device.run("loop");
  r.loop = loop.host_transfer_cycles;
  r.loop_cycles = loop.run.cycles;
  r.prefetched = loop.prefetched_bytes;
  std::vector<float> ys(1024);
  device.read_tensor("y", ys.data(), ys.size() * 4);
  r.y0 = ys[1023];
  return r;
}

TEST(SdkMachine, APrefetchedStreamsRoceLegHidesBehindCompute) {
  const PrefetchLoop r = run_prefetch_loop(true);
  const uint64_t leg = r.once - r.dispatch;
  EXPECT_GT(r.loop_cycles - r.loop, 3 * 2 * leg);  // each use's compute outlasts its leg
  EXPECT_EQ(r.loop, r.once);  // the dispatch and the first use's leg; nothing more
  EXPECT_EQ(r.prefetched, 2u * 4096);
  EXPECT_EQ(r.y0, 0.5f * 2 * 4);
}

TEST(SdkMachine, WithoutPrefetchEachUseWaitsForItsWholeRoceLeg) {
  const PrefetchLoop r = run_prefetch_loop(false);
  EXPECT_EQ(r.loop, r.dispatch + 3 * (r.once - r.dispatch));
  EXPECT_EQ(r.prefetched, 0u);
  EXPECT_EQ(r.y0, 0.5f * 2 * 4);
}

TEST(SdkMachineErrors, HostStreamsOverAGatewayTheTargetLacksOrInHalfWords) {
  CompileOptions options;
  options.host_link = HostLink::kGateway;
  Graph card(Target::preset("mk2", 1));
  const Tensor a = card.add_variable(DType::kF32, {4}, "a");
  card.set_tile_mapping(a, 0);
  card.add_host_stream("in", DType::kF32, 4, StreamDirection::kHostToDevice);
  EXPECT_THAT([&] { compile(card, HostWrite("in", a), options); },
              ::testing::ThrowsMessage<CompileError>(
                  HasSubstr("host streams over the gateway: the target (mk2) has no IPU-Gateway")));
  Graph g(Target::preset("m2000", 1, 4));
  const Tensor h = g.add_variable(DType::kF16, {3}, "h");
  g.set_tile_mapping(h, 0);
  g.add_host_stream("halves", DType::kF16, 3, StreamDirection::kHostToDevice);
  EXPECT_THAT([&] { compile(g, HostWrite("halves", h)); },
              ::testing::ThrowsMessage<CompileError>(HasSubstr(
                  "stream 'halves': 3 f16 elements are 6 bytes; over the gateway a stream moves "
                  "whole 32-bit words")));
}

// Several region copies in one phase: chip 0 -> chip 1 and chip 2 -> chip 3 at once, a pair
// reversing halves, and one pair inside chip 1: one external exchange for all of them.
TEST(SdkMachine, SeveralRegionCopiesShareOneExchangePhase) {
  Graph g(Target::preset("m2000", 4));
  const Tensor a = g.add_variable(DType::kF32, {64}, "a"),
               b = g.add_variable(DType::kF32, {64}, "b");
  const Tensor c = g.add_variable(DType::kF32, {32}, "c"),
               d = g.add_variable(DType::kF32, {32}, "d");
  map_over_chips(g, a, {0}, 2);
  map_over_chips(g, b, {1}, 4);
  map_over_chips(g, c, {2}, 1);
  map_over_chips(g, d, {3, 1}, 2);
  const Executable exe = compile(g, Copy({{g.region(a, 0, 32), g.region(b, 32, 64)},
                                          {g.region(a, 32, 64), g.region(b, 0, 32)},
                                          {g.region(c), g.region(d)}}));
  EXPECT_EQ(exe.external_exchanges, 1u);
  EXPECT_EQ(exe.supersteps, 1u);
  Device device(exe);
  const std::vector<float> as = iota_floats(64, 1.0f), cs = iota_floats(32, 100.0f);
  device.write_tensor("a", as.data(), 64 * 4);
  device.write_tensor("c", cs.data(), 32 * 4);
  device.run();
  std::vector<float> bs(64), ds(32);
  device.read_tensor("b", bs.data(), 64 * 4);
  device.read_tensor("d", ds.data(), 32 * 4);
  for (size_t i = 0; i < 64; ++i) EXPECT_EQ(bs[i], as[(i + 32) % 64]) << i;
  EXPECT_EQ(ds, cs);
}

// A schedule whose margins are too thin (here no action slack: a tile listens to its next
// sender, 6 cycles before that receive's offset, while its previous sender's last words are
// still arriving) never moves words silently: the exchange stops the run and names the word,
// its sender, the tile and the cycle.
TEST(SdkMachineErrors, MarginsTooThinForTheExchangeAreItsClearError) {
#if defined(__SANITIZE_ADDRESS__)
  // SystemC switches coroutine stacks without telling ASan, so an exception after sc_start()
  // leaves stale stack shadow and ASan reports false stack errors; the Release run checks this.
  GTEST_SKIP() << "exceptions after SystemC simulation confuse AddressSanitizer's stack shadow";
#endif
  Graph g(Target::preset("mk2", 4));
  const Tensor x = g.add_variable(DType::kF32, {64}, "x");
  const Tensor z = g.add_variable(DType::kF32, {64}, "z");
  const Tensor y = g.add_variable(DType::kF32, {128}, "y");
  g.set_tile_mapping(x, 0);
  g.set_tile_mapping(z, 2);
  g.set_tile_mapping(y, 1);  // tile 1 receives 64 words from tile 0, then 64 from tile 2
  const Program copy =
      Copy({{g.region(x), g.region(y, 0, 64)}, {g.region(z), g.region(y, 64, 128)}});
  CompileOptions options;
  options.action_slack = 0;
  Device device(compile(g, copy, options));
  EXPECT_THAT([&] { device.run(); },
              ::testing::ThrowsMessage<DeviceError>(::testing::ContainsRegex(
                  "exchange schedule error: word [0-9]+ of the send from tile 0 .* arrives at "
                  "tile 1 at cycle [0-9]+ while tile 1 listens to tile 2")));
}

TEST(SdkMachineErrors, ARegionCopyPairOfAnotherSizeIsNamed) {
  Graph g(Target::preset("m2000", 4));
  const Tensor a = g.add_variable(DType::kF32, {64}, "a"),
               b = g.add_variable(DType::kF32, {64}, "b");
  map_over_chips(g, a, {0}, 2);
  map_over_chips(g, b, {1}, 2);
  EXPECT_THAT(
      [&] {
        compile(g, Copy({{g.region(a, 0, 8), g.region(b, 0, 8)},
                         {g.region(a, 8, 16), g.region(b, 8, 24)}}));
      },
      ::testing::ThrowsMessage<GraphError>(HasSubstr(
          "Copy pair 1 from 'a' [8, 16) (f32) to 'b' [8, 24) (f32): sizes or types differ")));
}

// 16 tiles of chip 0 send 1024 words each to chip 2, up a column of two links. Each link carries
// three tiles' sends at once at 16 GB/s on a 1.325 GHz chip (12.08 bytes a cycle), so the
// schedule needs at least ceil(16 / 6) = 3 rounds of 1024 cycles, and the run must not
// over-subscribe any link (the exchange checks every word).
TEST(SdkMachine, TheScheduleKeepsEachLinkWithinItsRate) {
  Graph g(Target::preset("m2000", 16));
  const Tensor x = g.add_variable(DType::kF32, {16 * 1024}, "x");
  const Tensor y = g.add_variable(DType::kF32, {16 * 1024}, "y");
  map_over_chips(g, x, {0}, 16);
  map_over_chips(g, y, {2}, 16);
  const Executable exe = compile(g, Copy(x, y));
  const auto exchanges = manifest_steps(exe, "exchange_external");
  ASSERT_EQ(exchanges.size(), 1u);
  const unsigned end = exchanges[0]["end_cycles"];
  EXPECT_GE(end, 3u * 1024u);
  EXPECT_LT(end, 4u * 1024u + 2000u);  // and no more than the rounds plus margins

  Device device(exe);
  std::vector<float> xs(16 * 1024);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<float>(i) * 0.5f;
  device.write_tensor("x", xs.data(), xs.size() * 4);
  const DeviceReport& report = device.run();
  std::vector<float> ys(xs.size());
  device.read_tensor("y", ys.data(), ys.size() * 4);
  EXPECT_EQ(ys, xs);
  EXPECT_EQ(report.run.ipulink_bytes, 16u * 1024u * 4u);  // one hop up the column
}

// Four tiles of chip 0 whose words all take link 0 of the rung (tiles 0, 6, 12 and 18 of a
// bundle of 6) send 32 words each to chip 1. A Mk2 link direction carries three tiles' sends at
// once, so the fourth waits for a lane. By hand (the runtime's gaps: a phase's first receive 54
// cycles after its base and its first send 66, ipu_program.h; receive setup 1, action slack
// 6, link slack 0; first word on the link 1 + 16 cycles after the send; latency 2 x 16 + 133 =
// 165): every receiver listens at 54, so the senders could start at once, and their first slot
// is 66. The first three send at 66; their lanes are free at 66 + 17 + 32 = 115, so the fourth
// sends at 115 - 17 = 98. Its last word arrives by 98 + 1 + 165 + 32 = 296; the phase ends an
// action slack later, at 302 (its last action's code has run by 98 + 66). On the machine the
// link carries words from the first send's first to the fourth's last, 98 + 31 - 66 = 63
// cycles without a gap: every send reaches the link exactly at its offset.
TEST(SdkMachine, AFourthSendOnALinkWaitsForALane) {
  Graph g(Target::preset("m2000", 24));
  const Tensor x = g.add_variable(DType::kF32, {4 * 32}, "x");
  const Tensor y = g.add_variable(DType::kF32, {4 * 32}, "y");
  std::vector<Interval> from, to;
  for (unsigned k = 0; k < 4; ++k) {
    from.push_back({32 * k, 32 * (k + 1), g.tile(0, 6 * k)});
    to.push_back({32 * k, 32 * (k + 1), g.tile(1, 6 * k)});
  }
  g.set_tile_mapping(x, from);
  g.set_tile_mapping(y, to);
  const Executable exe = compile(g, Copy(x, y));
  const auto exchanges = manifest_steps(exe, "exchange_external");
  ASSERT_EQ(exchanges.size(), 1u);
  EXPECT_EQ(exchanges[0]["end_cycles"], 302u);

  Device device(exe);
  const std::vector<float> xs = iota_floats(4 * 32, 1.0f);
  device.write_tensor("x", xs.data(), xs.size() * 4);
  device.run();
  std::vector<float> ys(xs.size());
  device.read_tensor("y", ys.data(), ys.size() * 4);
  EXPECT_EQ(ys, xs);
  const auto& bundle = device.machine().links().bundles().at(0);  // the rung of chips 0 and 1
  ASSERT_EQ(bundle.kind, ipu::hw::LinkFabric::Bundle::kRung);
  ASSERT_EQ(bundle.a, 0u);
  const auto& used = bundle.links[0]->counters(0);
  EXPECT_EQ(used.words, 4u * 32u);
  EXPECT_EQ(used.last_cycle - used.first_cycle, 63u);
  for (size_t l = 1; l < bundle.links.size(); ++l)
    EXPECT_EQ(bundle.links[l]->counters(0).words, 0u) << "link " << l;
}

// Sync scopes are the program's to choose: internal (each chip apart), external (every chip),
// or a grouped sync over this chip's part of sync.gs1 (here the two rungs of an M2000).
TEST(SdkMachine, SyncScopesReachTheSyncNetwork) {
  Target target = Target::preset("m2000", 1);
  target.machine.chip.sync.gs1 = "0-1;2-3";
  Graph g(target);
  const Tensor x = g.add_variable(DType::kF32, {4}, "x");
  map_over_chips(g, x, {0, 1, 2, 3}, 1);
  const Executable exe = compile(
      g, Sequence({Sync(SyncScope::kGs1), Sync(SyncScope::kExternal), Sync(SyncScope::kInternal)}));
  EXPECT_EQ(manifest_steps(exe, "sync").at(0)["scope"], "gs1");
  Device device(exe);
  device.run();
  std::map<uint32_t, std::vector<size_t>> members;  // group -> tiles of each barrier
  for (const auto& b : device.machine().sync_network().barriers())
    members[b.group].push_back(b.tiles.size());
  EXPECT_EQ(members[0x40000001u], (std::vector<size_t>{2, 2}));  // GS1: one barrier per rung
  EXPECT_EQ(members[0x40000000u], (std::vector<size_t>{4}));     // external: every chip's tile
  EXPECT_EQ(members[0u], (std::vector<size_t>{1, 1, 1, 1}));     // internal: each chip apart
}

// Four replicas of one chip run the same program, each on its own stream data.
TEST(SdkMachine, ReplicasRunTheProgramOnTheirOwnStreams) {
  Graph g(Target::preset("m2000", 4, 4));
  EXPECT_EQ(g.tiles(), 4u);
  add_codelet_library(g);
  const Tensor a = g.add_variable(DType::kF32, {40}, "a"),
               b = g.add_variable(DType::kF32, {40}, "b");
  const Tensor out = g.add_variable(DType::kF32, {40}, "out");
  for (Tensor t : {a, b, out}) g.map_evenly(t, 0, 4);
  g.add_host_stream("a_in", DType::kF32, 40, StreamDirection::kHostToDevice);
  g.add_host_stream("out_back", DType::kF32, 40, StreamDirection::kDeviceToHost);
  const ComputeSet cs = g.add_compute_set("add");
  add_vertices(g, cs, a, b, out);
  const Executable exe =
      compile(g, Sequence({HostWrite("a_in", a), Execute(cs), HostRead(out, "out_back")}));
  EXPECT_EQ(exe.replicas, 4u);
  EXPECT_EQ(exe.external_exchanges, 0u);

  Device device(exe);
  std::vector<float> as(4 * 40), outs(4 * 40, -1.0f);
  for (size_t i = 0; i < as.size(); ++i) as[i] = static_cast<float>(i);
  device.connect_stream("a_in", as.data(), as.size() * 4);
  device.connect_stream("out_back", outs.data(), outs.size() * 4);
  for (unsigned r = 0; r < 4; ++r) {
    const std::vector<float> bs(40, 1000.0f * static_cast<float>(r + 1));
    device.write_tensor("b", r, bs.data(), bs.size() * 4);
  }
  const DeviceReport& report = device.run();
  for (unsigned r = 0; r < 4; ++r)
    for (size_t i = 0; i < 40; ++i)
      EXPECT_EQ(outs[r * 40 + i], as[r * 40 + i] + 1000.0f * static_cast<float>(r + 1))
          << "replica " << r << " element " << i;
  // On an M2000 the streams go through the gateway: the host writes each replica's 160 bytes
  // into streaming memory over RoCE, and the tiles read them from there (and the reverse).
  EXPECT_EQ(report.run.streaming_bytes_read, 4u * 160);
  EXPECT_EQ(report.run.streaming_bytes_written, 4u * 160);
  EXPECT_EQ(report.host_to_device_bytes, 4u * 160);
  EXPECT_EQ(report.device_to_host_bytes, 4u * 160);
}

TEST(SdkMachine, CrossReplicaCopyFollowsThePermutation) {
  Graph g(Target::preset("m2000", 2, 4));
  const Tensor x = g.add_variable(DType::kI32, {10}, "x"),
               y = g.add_variable(DType::kI32, {10}, "y");
  g.map_evenly(x, 0, 2);
  g.set_tile_mapping(y, 1);
  const std::vector<unsigned> to = {2, 0, 3, 1};
  const Executable exe = compile(g, CrossReplicaCopy(x, y, to));
  EXPECT_EQ(exe.external_exchanges, 1u);
  Device device(exe);
  for (unsigned r = 0; r < 4; ++r) {
    std::vector<int32_t> xs(10);
    std::iota(xs.begin(), xs.end(), static_cast<int32_t>(100 * r));
    device.write_tensor("x", r, xs.data(), 40);
  }
  device.run();
  for (unsigned r = 0; r < 4; ++r) {
    std::vector<int32_t> ys(10);
    device.read_tensor("y", to[r], ys.data(), 40);
    for (int i = 0; i < 10; ++i) EXPECT_EQ(ys[i], static_cast<int32_t>(100 * r) + i) << r;
  }
}

// Replica r's data: element i is a whole number (so any order of summation is exact).
float whole(unsigned r, size_t i) { return static_cast<float>((i * 7 + r * 13) % 101) - 50.0f; }

struct AllReduceCase {
  const char* preset;
  unsigned replicas;
  CollectiveAlgorithm algorithm;
};

void PrintTo(const AllReduceCase& c, std::ostream* out) {
  *out << c.preset << " x" << c.replicas
       << (c.algorithm == CollectiveAlgorithm::kRing ? " ring" : " bidirectional ring");
}

class AllReduceOnRing : public ::testing::TestWithParam<AllReduceCase> {};

TEST_P(AllReduceOnRing, SumsEveryReplicasDataOnEveryReplica) {
  const AllReduceCase c = GetParam();
  Graph g(Target::preset(c.preset, 4, c.replicas));
  constexpr size_t n = 203;  // not a multiple of the replicas: uneven chunks
  const Tensor x = g.add_variable(DType::kF32, {n}, "x");
  g.map_evenly(x, 0, 4);
  const Executable exe = compile(g, AllReduce(x, CollectiveOp::kSum, {c.algorithm}));
  // A ring's R - 1 steps each way; direct: one; halving-doubling: log2 R each way.
  const unsigned steps = c.algorithm == CollectiveAlgorithm::kDirect ? 1
                         : c.algorithm == CollectiveAlgorithm::kHalvingDoubling
                             ? 2 * static_cast<unsigned>(std::log2(c.replicas))
                             : 2 * (c.replicas - 1);
  EXPECT_EQ(exe.supersteps, steps);
  EXPECT_EQ(exe.external_exchanges, steps);
  Device device(exe);
  for (unsigned r = 0; r < c.replicas; ++r) {
    std::vector<float> xs(n);
    for (size_t i = 0; i < n; ++i) xs[i] = whole(r, i);
    device.write_tensor("x", r, xs.data(), n * 4);
  }
  device.run();
  for (unsigned r = 0; r < c.replicas; ++r) {
    std::vector<float> xs(n);
    device.read_tensor("x", r, xs.data(), n * 4);
    for (size_t i = 0; i < n; ++i) {
      float sum = 0;
      for (unsigned q = 0; q < c.replicas; ++q) sum += whole(q, i);
      ASSERT_EQ(xs[i], sum) << "replica " << r << " element " << i;
    }
  }
}

TEST_P(AllReduceOnRing, EqualsTheHostReferenceBitForBit) {
  // Values of mixed magnitudes, whose f32 sums depend on their order: the host reference must
  // add them as the rings do.
  const AllReduceCase c = GetParam();
  const Target target = Target::preset(c.preset, 4, c.replicas);
  Graph g(target);
  constexpr size_t n = 203;
  const Tensor x = g.add_variable(DType::kF32, {n}, "x");
  g.map_evenly(x, 0, 4);
  const Executable exe = compile(g, AllReduce(x, CollectiveOp::kSum, {c.algorithm}));
  Device device(exe);
  std::mt19937 rng(c.replicas);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  std::vector<std::vector<float>> data(c.replicas, std::vector<float>(n));
  for (unsigned r = 0; r < c.replicas; ++r) {
    for (size_t i = 0; i < n; ++i) data[r][i] = unit(rng) * std::ldexp(1.0f, (i + r) % 24);
    device.write_tensor("x", r, data[r].data(), n * 4);
  }
  device.run();
  const std::vector<float> want =
      all_reduce_sum_reference(target, data, g.tensor(x).mapping, {c.algorithm});
  size_t order_matters = 0;
  for (size_t i = 0; i < n; ++i) {
    float in_replica_order = 0;
    for (unsigned q = 0; q < c.replicas; ++q) in_replica_order += data[q][i];
    order_matters += in_replica_order != want[i];
  }
  if (c.replicas > 2) {
    EXPECT_GT(order_matters, 0u) << "the data do not tell orders apart";
  }
  for (unsigned r = 0; r < c.replicas; ++r) {
    std::vector<float> got(n);
    device.read_tensor("x", r, got.data(), n * 4);
    ASSERT_EQ(std::memcmp(got.data(), want.data(), n * 4), 0) << "replica " << r;
  }
}

TEST(SdkMachineErrors, TheAllReduceReferenceRefusesDataOfAnotherShape) {
  const Target target = Target::preset("m2000", 4, 4);
  EXPECT_THAT(
      [&] {
        all_reduce_sum_reference(target, {{1.0f}, {2.0f}}, {});
      },
      ::testing::ThrowsMessage<std::invalid_argument>(
          HasSubstr("2 replicas' data for a target of 4 replicas")));
  EXPECT_THAT(
      [&] {
        all_reduce_sum_reference(target, {{1.0f}, {2.0f}, {3.0f, 4.0f}, {5.0f}}, {});
      },
      ::testing::ThrowsMessage<std::invalid_argument>(
          HasSubstr("replica 2 has 2 elements, replica 0 1")));
}

INSTANTIATE_TEST_SUITE_P(
    Replicas, AllReduceOnRing,
    ::testing::Values(AllReduceCase{"m2000", 2, CollectiveAlgorithm::kRing},
                      AllReduceCase{"m2000", 4, CollectiveAlgorithm::kRing},
                      AllReduceCase{"m2000", 4, CollectiveAlgorithm::kBidirectionalRing},
                      AllReduceCase{"pod16", 16, CollectiveAlgorithm::kBidirectionalRing},
                      AllReduceCase{"m2000", 2, CollectiveAlgorithm::kDirect},
                      AllReduceCase{"m2000", 4, CollectiveAlgorithm::kHalvingDoubling},
                      AllReduceCase{"pod16", 16, CollectiveAlgorithm::kHalvingDoubling}),
    [](const auto& param_info) {
      std::string name = collective_algorithm_name(param_info.param.algorithm);
      name.erase(
          std::remove_if(name.begin(), name.end(),
                         [](char ch) { return !std::isalnum(static_cast<unsigned char>(ch)); }),
          name.end());
      return std::to_string(param_info.param.replicas) + name;
    });

// One tile per chip, 8 elements, 4 replicas on the ring 0, 2, 3, 1: every step sends 2 words
// from each chip to the next one IPU-Link hop away (latency 2 x 16 + 133 = 165 cycles on Mk2).
// The schedule, by hand (the runtime's gaps, ipu_program.h: a phase's first receive 54 cycles
// after its base, its first send 66, a send 66 after the action before it, a receive 54;
// receive setup 1, action slack 6): the first transfer's sender sends at 66 and its receiver
// listens at 54; the others send at 54 + 66 = 120, after their own receive at 54 (the last
// one's receiver, chip 0, receives at 66 + 54 = 120, after its send at 66); their last words
// arrive at 120 + 1 + 165 + 1 = 287, and the phase ends an action slack after the receiver is
// free (a cycle after the last word), at 294. All six steps (3 reduce-scatter, 3 all-gather)
// are the same.
TEST(SdkMachine, ARingStepIsTimedToTheCycle) {
  Graph g(Target::preset("m2000", 1, 4));
  const Tensor x = g.add_variable(DType::kF32, {8}, "x");
  g.set_tile_mapping(x, 0);
  const Executable exe = compile(g, AllReduce(x, CollectiveOp::kSum, {CollectiveAlgorithm::kRing}));
  const auto steps = manifest_steps(exe, "exchange_external");
  for (size_t i = 0; i < steps.size(); ++i) EXPECT_EQ(steps[i]["end_cycles"], 294u) << "step " << i;
  EXPECT_EQ(steps.size(), 6u);

  Device device(exe);
  for (unsigned r = 0; r < 4; ++r) {
    const std::vector<float> xs = iota_floats(8, static_cast<float>(10 * r));
    device.write_tensor("x", r, xs.data(), 32);
  }
  device.run();
  // On the machine: each step's last word arrives exactly 287 cycles after the phase's base, as
  // the runtime issues every action's key at its offset from it. The base is the supervisor's
  // first issue after the sync, 6 cycles after the release that the exchange records.
  std::vector<uint64_t> last;
  for (const auto& e : device.machine().exchange().records())
    if (e.chip_words > 0) last.push_back(e.last_arrival - e.release);
  ASSERT_EQ(last.size(), 6u);
  for (uint64_t l : last) EXPECT_EQ(l, 6u + 287u);
  std::vector<float> xs(8);
  device.read_tensor("x", 3, xs.data(), 32);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(xs[i], 4.0f * i + 60.0f) << i;
}

// On a unidirectional ring the order of the additions is fixed: chunk k (owned by replica k)
// starts at the ring position after k's and ends with k's own data. The ring over one-chip
// replicas of an M2000 is 0, 2, 3, 1 (up one column of the ladder, down the other).
TEST(SdkMachine, AllReduceSumsInTheRingsOrderBitForBit) {
  Graph g(Target::preset("m2000", 4, 4));
  constexpr size_t n = 64;
  const Tensor x = g.add_variable(DType::kF32, {n}, "x");
  g.map_evenly(x, 0, 4);
  const Executable exe =
      compile(g, AllReduce(x, CollectiveOp::kMean, {CollectiveAlgorithm::kRing}));
  Device device(exe);
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<std::vector<float>> data(4, std::vector<float>(n));
  for (unsigned r = 0; r < 4; ++r) {
    for (float& v : data[r]) v = dist(rng);
    device.write_tensor("x", r, data[r].data(), n * 4);
  }
  device.run();
  const unsigned order[] = {0, 2, 3, 1}, position[] = {0, 3, 1, 2};  // position[replica]
  for (size_t i = 0; i < n; ++i) {
    const unsigned chunk = static_cast<unsigned>(i * 4 / n), p = position[chunk];
    float sum = data[order[(p + 1) % 4]][i];
    for (unsigned k = 2; k <= 4; ++k) sum = sum + data[order[(p + k) % 4]][i];
    const float mean = sum * (1.0f / 4.0f);
    for (unsigned r = 0; r < 4; ++r) {
      float got = 0;
      std::vector<float> xs(n);
      device.read_tensor("x", r, xs.data(), n * 4);
      got = xs[i];
      uint32_t a = 0, b = 0;
      std::memcpy(&a, &got, 4);
      std::memcpy(&b, &mean, 4);
      ASSERT_EQ(a, b) << "replica " << r << " element " << i;
    }
  }
}

// kAuto (the default): a ReduceScatter or AllGather takes the one-way ring on two replicas and
// where a replica's chunk is under 16 KiB, the bidirectional ring otherwise; an AllReduce
// takes the direct step on two replicas and halving-doubling on a power of two of one-chip
// replicas up to 1 MiB, then the rings. A choice given is kept.
TEST(SdkMachine, TheDefaultAlgorithmIsChosenBySize) {
  const auto pick = [](unsigned replicas, size_t bytes) {
    return collective_algorithm({}, replicas, bytes);
  };
  EXPECT_EQ(pick(2, size_t{64} << 20), CollectiveAlgorithm::kRing);
  EXPECT_EQ(pick(4, 64 * 1024), CollectiveAlgorithm::kBidirectionalRing);
  EXPECT_EQ(pick(4, 64 * 1024 - 4), CollectiveAlgorithm::kRing);
  EXPECT_EQ(pick(16, 256 * 1024), CollectiveAlgorithm::kBidirectionalRing);
  EXPECT_EQ(pick(16, 256 * 1024 - 64), CollectiveAlgorithm::kRing);
  EXPECT_EQ(collective_algorithm({CollectiveAlgorithm::kBidirectionalRing}, 2, 4),
            CollectiveAlgorithm::kBidirectionalRing);
  EXPECT_EQ(collective_algorithm({CollectiveAlgorithm::kRing}, 16, size_t{64} << 20),
            CollectiveAlgorithm::kRing);
  const auto all = [](unsigned replicas, unsigned replica_chips, size_t bytes) {
    return all_reduce_algorithm({}, replicas, replica_chips, bytes);
  };
  EXPECT_EQ(all(2, 1, size_t{1} << 20), CollectiveAlgorithm::kDirect);
  EXPECT_EQ(all(2, 2, 64 * 1024), CollectiveAlgorithm::kDirect);
  EXPECT_EQ(all(2, 1, (size_t{1} << 20) + 4), CollectiveAlgorithm::kRing);
  EXPECT_EQ(all(4, 1, size_t{1} << 20), CollectiveAlgorithm::kHalvingDoubling);
  EXPECT_EQ(all(16, 1, 4096), CollectiveAlgorithm::kHalvingDoubling);
  EXPECT_EQ(all(4, 1, (size_t{1} << 20) + 16), CollectiveAlgorithm::kBidirectionalRing);
  // Replicas of several chips: the ring (4 replicas of 4 chips, 16 KiB chunks: both ways).
  EXPECT_EQ(all(4, 4, 64 * 1024), CollectiveAlgorithm::kBidirectionalRing);
  EXPECT_EQ(all_reduce_algorithm({CollectiveAlgorithm::kRing}, 16, 1, 4096),
            CollectiveAlgorithm::kRing);

  // On the device: a small default AllReduce over 4 replicas adds in halving-doubling's order,
  // worked out by hand: the four 16-element chunk positions hold chunks 0, 2, 1, 3 (the chunk
  // number's two bits reversed), and chunk c's sum is (x_c + x_c^1) + (x_c^2 + x_c^3). Data
  // whose sums depend on their order tell it from both rings.
  Graph g(Target::preset("m2000", 4, 4));
  constexpr size_t n = 64;
  const Tensor x = g.add_variable(DType::kF32, {n}, "x");
  g.map_evenly(x, 0, 4);
  Device device(compile(g, AllReduce(x, CollectiveOp::kSum)));
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<std::vector<float>> data(4, std::vector<float>(n));
  for (unsigned r = 0; r < 4; ++r) {
    for (float& v : data[r]) v = dist(rng) * static_cast<float>(1 << (3 * r));
    device.write_tensor("x", r, data[r].data(), n * 4);
  }
  device.run();
  const unsigned chunk_at[] = {0, 2, 1, 3};
  std::vector<float> by_hand(n);
  for (size_t i = 0; i < n; ++i) {
    const unsigned c = chunk_at[i / 16];
    by_hand[i] = (data[c][i] + data[c ^ 1][i]) + (data[c ^ 2][i] + data[c ^ 3][i]);
  }
  const auto& mapping = g.tensor(x).mapping;
  const auto ring =
      all_reduce_sum_reference(g.target(), data, mapping, {CollectiveAlgorithm::kRing});
  const auto both = all_reduce_sum_reference(g.target(), data, mapping,
                                             {CollectiveAlgorithm::kBidirectionalRing});
  ASSERT_NE(by_hand, ring);
  ASSERT_NE(by_hand, both);
  EXPECT_EQ(all_reduce_sum_reference(g.target(), data, mapping), by_hand);
  // An empty mapping stands for a ReduceScatter's chunks: the ring's order.
  EXPECT_EQ(all_reduce_sum_reference(g.target(), data, {}), ring);
  for (unsigned r = 0; r < 4; ++r) {
    std::vector<float> got(n);
    device.read_tensor("x", r, got.data(), n * 4);
    EXPECT_EQ(got, by_hand) << "replica " << r;
  }
}

// Direct and halving-doubling with the mean, the max, f16 and large pieces (each chunk a share
// of every piece): f32 sums equal the reference bit for bit, the mean is the sum times 1/R
// exactly (R a power of two), f16 sums of small integers (exact in any order) and maxima equal
// the elementwise ones; and both algorithms leave the data as the ring does on every replica.
static void reduce_every_kind_of_tensor(unsigned replicas, CollectiveAlgorithm algorithm) {
  namespace fpu = ipu::iss::fpu;
  {
    const Target target = Target::preset("m2000", 4, replicas);
    Graph g(target);
    constexpr size_t n = 1030;  // over 4 tiles: pieces of 64 words and more, chunks uneven
    const Tensor sum = g.add_variable(DType::kF32, {n}, "sum");
    const Tensor mean = g.add_variable(DType::kF32, {n}, "mean");
    const Tensor max = g.add_variable(DType::kF32, {n}, "max");
    const Tensor sum16 = g.add_variable(DType::kF16, {n}, "sum16");
    for (const Tensor t : {sum, mean, max, sum16}) g.map_evenly(t, 0, 4, 2);
    const CollectiveOptions o{algorithm};
    Device device(compile(
        g, Sequence({AllReduce(sum, CollectiveOp::kSum, o), AllReduce(mean, CollectiveOp::kMean, o),
                     AllReduce(max, CollectiveOp::kMax, o),
                     AllReduce(sum16, CollectiveOp::kSum, o)})));
    std::mt19937 rng(replicas);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::uniform_int_distribution<int> small(-64, 64);
    std::vector<std::vector<float>> f32(replicas, std::vector<float>(n));
    std::vector<std::vector<uint16_t>> h(replicas, std::vector<uint16_t>(n));
    std::vector<float> maxima(n, -1e30f), sums16(n, 0.0f);
    uint32_t flags = 0;
    for (unsigned r = 0; r < replicas; ++r) {
      for (size_t i = 0; i < n; ++i) {
        f32[r][i] = dist(rng) * static_cast<float>(1 << (5 * r));
        maxima[i] = std::max(maxima[i], f32[r][i]);
        const float whole = static_cast<float>(small(rng));
        h[r][i] = static_cast<uint16_t>(fpu::f32_to_f16(fpu::bits_of(whole), fpu::kRne, flags, 0));
        sums16[i] += whole;
      }
      for (const char* name : {"sum", "mean", "max"})
        device.write_tensor(name, r, f32[r].data(), n * 4);
      device.write_tensor("sum16", r, h[r].data(), n * 2);
    }
    device.run();
    const std::vector<float> want = all_reduce_sum_reference(target, f32, g.tensor(sum).mapping, o);
    if (replicas > 2) {
      EXPECT_NE(want, all_reduce_sum_reference(target, f32, g.tensor(sum).mapping,
                                               {CollectiveAlgorithm::kRing}))
          << "orders alike";
    }
    for (unsigned r = 0; r < replicas; ++r) {
      SCOPED_TRACE(r);
      std::vector<float> got(n), got_mean(n), got_max(n);
      std::vector<uint16_t> got16(n);
      device.read_tensor("sum", r, got.data(), n * 4);
      device.read_tensor("mean", r, got_mean.data(), n * 4);
      device.read_tensor("max", r, got_max.data(), n * 4);
      device.read_tensor("sum16", r, got16.data(), n * 2);
      EXPECT_EQ(got, want);
      for (size_t i = 0; i < n; ++i) {
        ASSERT_EQ(got_mean[i], want[i] / static_cast<float>(replicas)) << i;
        const uint32_t wide = fpu::f16_to_f32(got16[i], flags);
        float back = 0;
        std::memcpy(&back, &wide, 4);
        ASSERT_EQ(back, sums16[i]) << i;
      }
      EXPECT_EQ(got_max, maxima);
    }
  }
}

TEST(SdkMachine, DirectReducesEveryKindOfTensor) {
  reduce_every_kind_of_tensor(2, CollectiveAlgorithm::kDirect);
}

TEST(SdkMachine, HalvingDoublingReducesEveryKindOfTensor) {
  reduce_every_kind_of_tensor(4, CollectiveAlgorithm::kHalvingDoubling);
}

// Direct takes two replicas and halving-doubling serves AllReduce alone: refused, named.
TEST(SdkMachineErrors, AnAlgorithmOutsideItsCollectiveIsRefused) {
  Graph g(Target::preset("m2000", 4, 4));
  const Tensor x = g.add_variable(DType::kF32, {64}, "x");
  const Tensor part = g.add_variable(DType::kF32, {16}, "part");
  const Tensor all = g.add_variable(DType::kF32, {256}, "all");
  g.map_evenly(x, 0, 4);
  g.set_tile_mapping(part, 0);
  g.map_evenly(all, 0, 4);
  EXPECT_THAT([&] { compile(g, AllReduce(x, CollectiveOp::kSum, {CollectiveAlgorithm::kDirect})); },
              ::testing::ThrowsMessage<GraphError>(
                  HasSubstr("AllReduce of 'x': the direct algorithm takes 2 replicas, not 4")));
  EXPECT_THAT(
      [&] {
        compile(
            g, ReduceScatter(x, part, CollectiveOp::kSum, {CollectiveAlgorithm::kHalvingDoubling}));
      },
      ::testing::ThrowsMessage<GraphError>(HasSubstr(
          "ReduceScatter of 'x': the halving-doubling algorithm serves AllReduce alone")));
  EXPECT_THAT([&] { compile(g, AllGather(part, all, {CollectiveAlgorithm::kDirect})); },
              ::testing::ThrowsMessage<GraphError>(
                  HasSubstr("AllGather of 'part': the direct algorithm serves AllReduce alone")));
}

// Tile pieces of 64 words or more make each ring chunk a share of every piece: each
// reduce-scatter step then adds on every tile of every chip (16 tiles) where contiguous chunks
// of small pieces add on one tile a chip (4). The sums follow the chunks' order, which the
// reference takes from the mapping (it differs from the contiguous order on these data); the mean
// is the sum times 1/4, exactly.
TEST(SdkMachine, LargePiecesMakeEveryTileReduceAShareOfEachRingStep) {
  const Target target = Target::preset("m2000", 4, 4);
  Graph g(target);
  // name, elements (over 4 tiles), mean
  const std::vector<std::tuple<std::string, size_t, bool>> cases = {
      {"large", 400, false}, {"large_mean", 400, true}, {"small", 200, false}};
  Program program = Sequence({});
  std::map<std::string, Tensor> tensors;
  for (const auto& [name, n, mean] : cases) {
    const Tensor t = tensors[name] = g.add_variable(DType::kF32, {n}, name);
    g.map_evenly(t, 0, 4);
    program.body.push_back(AllReduce(t, mean ? CollectiveOp::kMean : CollectiveOp::kSum,
                                     {CollectiveAlgorithm::kRing}));
  }
  DeviceOptions options;
  options.profile = true;
  Device device(compile(g, program), options);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::map<std::string, std::vector<std::vector<float>>> data;
  for (const auto& [name, n, mean] : cases) {
    data[name].assign(4, std::vector<float>(n));
    for (unsigned r = 0; r < 4; ++r) {
      for (float& v : data[name][r]) v = dist(rng) * static_cast<float>(1 << (5 * r));
      device.write_tensor(name, r, data[name][r].data(), n * 4);
    }
  }
  device.run();
  std::map<std::string, std::vector<unsigned>> tiles;  // each reduce-scatter step's tiles
  for (const ComputeSetProfile& cs : device.profile().compute_sets)
    for (const auto& [name, n, mean] : cases)
      if (cs.name.rfind("reduce-scatter " + name + " step", 0) == 0)
        tiles[name].push_back(cs.tiles);
  for (const auto& [name, n, mean] : cases) {
    SCOPED_TRACE(name);
    const bool large = n / 4 >= 64;  // words a piece
    ASSERT_EQ(tiles[name].size(), 3u);
    for (const unsigned count : tiles[name]) EXPECT_EQ(count, large ? 16u : 4u);
    const std::vector<Interval>& mapping = g.tensor(tensors.at(name)).mapping;
    const CollectiveOptions ring{CollectiveAlgorithm::kRing};
    std::vector<float> want = all_reduce_sum_reference(target, data[name], mapping, ring);
    if (large)
      EXPECT_NE(want, all_reduce_sum_reference(target, data[name], {}, ring)) << "orders alike";
    else
      EXPECT_EQ(want, all_reduce_sum_reference(target, data[name], {}, ring));
    if (mean)
      for (float& v : want) v *= 0.25f;
    for (unsigned r = 0; r < 4; ++r) {
      std::vector<float> got(n);
      device.read_tensor(name, r, got.data(), n * 4);
      EXPECT_EQ(got, want) << "replica " << r;
    }
  }
}

// The shares of large pieces, with the bidirectional ring's halves of each share and with f16
// pairs: an f32 sum over the bidirectional ring equals the reference bit for bit; f16 sums of
// small integers (exact in any order) and f16 maxima equal the elementwise sum and maximum.
TEST(SdkMachine, SharesOfLargePiecesHoldForTheBidirectionalRingAndF16) {
  namespace fpu = ipu::iss::fpu;
  const Target target = Target::preset("m2000", 4, 4);
  Graph g(target);
  constexpr size_t n = 1024;  // over 4 tiles: 256 f32 or 128 f16 pairs a piece
  const Tensor both = g.add_variable(DType::kF32, {n}, "both");
  const Tensor sum16 = g.add_variable(DType::kF16, {n}, "sum16");
  const Tensor max16 = g.add_variable(DType::kF16, {n}, "max16");
  for (const Tensor t : {both, sum16, max16}) g.map_evenly(t, 0, 4, 2);
  const CollectiveOptions bidirectional{CollectiveAlgorithm::kBidirectionalRing};
  Device device(compile(g, Sequence({AllReduce(both, CollectiveOp::kSum, bidirectional),
                                     AllReduce(sum16, CollectiveOp::kSum, bidirectional),
                                     AllReduce(max16, CollectiveOp::kMax)})));
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::uniform_int_distribution<int> small(-64, 64);
  std::vector<std::vector<float>> f32(4, std::vector<float>(n));
  std::vector<std::vector<uint16_t>> a(4, std::vector<uint16_t>(n)), b(4, std::vector<uint16_t>(n));
  std::vector<float> sums(n, 0.0f), maxima(n, -65504.0f);
  uint32_t flags = 0;
  for (unsigned r = 0; r < 4; ++r) {
    for (size_t i = 0; i < n; ++i) {
      f32[r][i] = dist(rng) * static_cast<float>(1 << (5 * r));
      const float whole = static_cast<float>(small(rng)), any = dist(rng) * 100.0f;
      uint32_t bits = 0;
      std::memcpy(&bits, &whole, 4);
      a[r][i] = static_cast<uint16_t>(fpu::f32_to_f16(bits, fpu::kRne, flags, 0));
      std::memcpy(&bits, &any, 4);
      b[r][i] = static_cast<uint16_t>(fpu::f32_to_f16(bits, fpu::kRne, flags, 0));
      sums[i] += whole;
      uint32_t wide = fpu::f16_to_f32(b[r][i], flags);
      float back = 0;
      std::memcpy(&back, &wide, 4);
      maxima[i] = std::max(maxima[i], back);
    }
    device.write_tensor("both", r, f32[r].data(), n * 4);
    device.write_tensor("sum16", r, a[r].data(), n * 2);
    device.write_tensor("max16", r, b[r].data(), n * 2);
  }
  device.run();
  const std::vector<float> want =
      all_reduce_sum_reference(target, f32, g.tensor(both).mapping, bidirectional);
  EXPECT_NE(want, all_reduce_sum_reference(target, f32, {}, bidirectional)) << "orders alike";
  const auto widened = [](const std::vector<uint16_t>& h) {
    std::vector<float> out(h.size());
    for (size_t i = 0; i < h.size(); ++i) {
      uint32_t ignored = 0;
      const uint32_t wide = fpu::f16_to_f32(h[i], ignored);
      std::memcpy(&out[i], &wide, 4);
    }
    return out;
  };
  for (unsigned r = 0; r < 4; ++r) {
    SCOPED_TRACE(r);
    std::vector<float> got(n);
    std::vector<uint16_t> got_sum(n), got_max(n);
    device.read_tensor("both", r, got.data(), n * 4);
    device.read_tensor("sum16", r, got_sum.data(), n * 2);
    device.read_tensor("max16", r, got_max.data(), n * 2);
    EXPECT_EQ(got, want);
    EXPECT_EQ(widened(got_sum), sums);
    EXPECT_EQ(widened(got_max), maxima);
  }
}

// f16 tensors: the sums in the ring's order with the hardware's f16 addition (round to nearest
// even), the mean scaled by f16 1/4, the max; an odd f16 size is refused. The expectation uses
// the tile model's f16 operations (iss/fpu.h, whose conversion the RTL co-simulation checks).
TEST(SdkMachine, F16CollectivesFollowTheRingInF16Arithmetic) {
  namespace fpu = ipu::iss::fpu;
  Graph g(Target::preset("m2000", 4, 4));
  constexpr size_t n = 200;  // 25 f16 pairs per replica's chunk
  const Tensor sum = g.add_variable(DType::kF16, {n}, "sum"),
               mean = g.add_variable(DType::kF16, {n}, "mean");
  const Tensor max = g.add_variable(DType::kF16, {n}, "max"),
               part = g.add_variable(DType::kF16, {n / 4}, "part");
  const Tensor whole = g.add_variable(DType::kF16, {n}, "whole");
  for (Tensor t : {sum, mean, max, whole}) g.map_evenly(t, 0, 4, 2);
  g.map_evenly(part, 0, 2, 2);
  const CollectiveOptions ring{CollectiveAlgorithm::kRing};
  const Executable exe = compile(
      g, Sequence({AllReduce(sum, CollectiveOp::kSum, ring),
                   AllReduce(mean, CollectiveOp::kMean, {CollectiveAlgorithm::kBidirectionalRing}),
                   AllReduce(max, CollectiveOp::kMax), ReduceScatter(sum, part, CollectiveOp::kMax),
                   AllGather(part, whole)}));
  Device device(exe);
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> dist(-8.0f, 8.0f);
  std::vector<std::vector<uint16_t>> data(4, std::vector<uint16_t>(n));
  uint32_t flags = 0;
  for (unsigned r = 0; r < 4; ++r) {
    for (uint16_t& h : data[r])
      h = static_cast<uint16_t>(fpu::f32_to_f16(fpu::bits_of(dist(rng)), fpu::kRne, flags, 0));
    for (const char* name : {"sum", "mean", "max"})
      device.write_tensor(name, r, data[r].data(), n * 2);
  }
  device.run();
  const unsigned order[] = {0, 2, 3, 1}, position[] = {0, 3, 1, 2};  // position[replica]
  const uint32_t quarter = fpu::f32_to_f16(fpu::bits_of(0.25f), fpu::kRne, flags, 0);
  std::vector<uint16_t> sums(n), means(n), maxima(n);
  for (size_t i = 0; i < n; ++i) {
    const unsigned p = position[i * 4 / n];
    uint32_t s = data[order[(p + 1) % 4]][i];
    for (unsigned k = 2; k <= 4; ++k)
      s = fpu::add16(s, data[order[(p + k) % 4]][i], fpu::kRne, flags, 0);
    sums[i] = static_cast<uint16_t>(s);
    uint32_t m = data[0][i];
    for (unsigned r = 1; r < 4; ++r) m = fpu::max16(m, data[r][i], flags);
    maxima[i] = static_cast<uint16_t>(m);
  }
  std::vector<uint16_t> got(n);
  for (unsigned r = 0; r < 4; ++r) {
    device.read_tensor("sum", r, got.data(), n * 2);
    EXPECT_EQ(got, sums) << "replica " << r;
    device.read_tensor("max", r, got.data(), n * 2);
    EXPECT_EQ(got, maxima) << "replica " << r;
    device.read_tensor("whole", r, got.data(), n * 2);
    EXPECT_EQ(got, sums) << "replica " << r << ": the max over replicas of equal sums, gathered";
  }
  // The bidirectional mean: each half of a chunk summed its own way round, then times 1/4.
  for (size_t i = 0; i < n; ++i) {
    const unsigned chunk = static_cast<unsigned>(i * 4 / n), p = position[chunk];
    const bool second_half =
        i % (n / 4) >= 24;  // a chunk of 50 splits into 24 and 26 (whole pairs)
    const auto at = [&](unsigned k) {
      return data[order[second_half ? (p + 4 - k) % 4 : (p + k) % 4]][i];
    };
    uint32_t s = at(1);
    for (unsigned k = 2; k <= 4; ++k) s = fpu::add16(s, at(k), fpu::kRne, flags, 0);
    means[i] = static_cast<uint16_t>(fpu::mul16(s, quarter, fpu::kRne, flags, 0));
  }
  for (unsigned r = 0; r < 4; ++r) {
    device.read_tensor("mean", r, got.data(), n * 2);
    EXPECT_EQ(got, means) << "replica " << r;
  }
}

TEST(SdkMachineErrors, AnOddF16CollectiveIsRefused) {
  Graph g(Target::preset("m2000", 1, 4));
  const Tensor x = g.add_variable(DType::kF16, {7}, "x");
  g.set_tile_mapping(x, 0);
  EXPECT_THAT([&] { compile(g, AllReduce(x, CollectiveOp::kSum)); },
              ::testing::ThrowsMessage<GraphError>(HasSubstr(
                  "AllReduce of 'x' (7 x f16): collectives move whole 32-bit words; give it an "
                  "even number of elements")));
}

TEST(SdkMachine, MaxAndWrappingIntegerSumsOverFourReplicas) {
  Graph g(Target::preset("m2000", 2, 4));
  constexpr size_t n = 37;
  const Tensor s = g.add_variable(DType::kI32, {n}, "s"), m = g.add_variable(DType::kI32, {n}, "m");
  g.map_evenly(s, 0, 2);
  g.map_evenly(m, 0, 2);
  const Executable exe =
      compile(g, Sequence({AllReduce(s, CollectiveOp::kSum), AllReduce(m, CollectiveOp::kMax)}));
  Device device(exe);
  auto value = [](unsigned r, size_t i) {
    return static_cast<int32_t>(0x7fffff00u - static_cast<uint32_t>(i * 977 + r * 31337));
  };
  for (unsigned r = 0; r < 4; ++r) {
    std::vector<int32_t> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = value(r, i) * (r % 2 == 0 ? 1 : -1);
    device.write_tensor("s", r, v.data(), n * 4);
    device.write_tensor("m", r, v.data(), n * 4);
  }
  device.run();
  for (unsigned r = 0; r < 4; ++r) {
    std::vector<int32_t> sums(n), maxes(n);
    device.read_tensor("s", r, sums.data(), n * 4);
    device.read_tensor("m", r, maxes.data(), n * 4);
    for (size_t i = 0; i < n; ++i) {
      uint32_t sum = 0;
      int32_t max = INT32_MIN;
      for (unsigned q = 0; q < 4; ++q) {
        const int32_t v = value(q, i) * (q % 2 == 0 ? 1 : -1);
        sum += static_cast<uint32_t>(v);
        max = std::max(max, v);
      }
      EXPECT_EQ(sums[i], static_cast<int32_t>(sum)) << r << " " << i;
      EXPECT_EQ(maxes[i], max) << r << " " << i;
    }
  }
}

TEST(SdkMachine, ReduceScatterAndAllGatherOverFourReplicas) {
  Graph g(Target::preset("m2000", 4, 4));
  constexpr size_t n = 4 * 30;
  const Tensor data = g.add_variable(DType::kF32, {n}, "data");
  const Tensor part = g.add_variable(DType::kF32, {n / 4}, "part");
  const Tensor all = g.add_variable(DType::kF32, {n}, "all");
  g.map_evenly(data, 0, 4);
  g.map_evenly(part, 1, 2);  // mapped unlike data's chunks
  g.map_evenly(all, 0, 3);
  const Executable exe =
      compile(g, Sequence({ReduceScatter(data, part, CollectiveOp::kSum), AllGather(part, all)}));
  Device device(exe);
  for (unsigned r = 0; r < 4; ++r) {
    std::vector<float> xs(n);
    for (size_t i = 0; i < n; ++i) xs[i] = whole(r, i);
    device.write_tensor("data", r, xs.data(), n * 4);
  }
  device.run();
  for (unsigned r = 0; r < 4; ++r) {
    std::vector<float> parts(n / 4), alls(n), datas(n);
    device.read_tensor("part", r, parts.data(), n);
    device.read_tensor("all", r, alls.data(), n * 4);
    device.read_tensor("data", r, datas.data(), n * 4);
    for (size_t i = 0; i < n; ++i) {
      float sum = 0;
      for (unsigned q = 0; q < 4; ++q) sum += whole(q, i);
      if (i / (n / 4) == r) {
        EXPECT_EQ(parts[i % (n / 4)], sum) << r << " " << i;
      }
      EXPECT_EQ(alls[i], sum) << r << " " << i;
      EXPECT_EQ(datas[i], whole(r, i)) << "ReduceScatter left data as it was";
    }
  }
}

// The same graph and program compile to the same image, byte for byte: the schedule and the
// ring depend on nothing but them (no host addresses, no unordered containers).
TEST(SdkMachine, CompilingTwiceGivesTheSameImage) {
  auto build = [] {
    Graph g(Target::preset("pod16", 3, 16));
    const Tensor x = g.add_variable(DType::kF32, {300}, "x");
    const Tensor y = g.add_variable(DType::kF32, {300}, "y");
    g.map_evenly(x, 0, 3);
    g.map_evenly(y, 1, 2);
    std::vector<unsigned> shift(16);
    for (unsigned r = 0; r < 16; ++r) shift[r] = (r + 5) % 16;
    return compile(g, Sequence({AllReduce(x, CollectiveOp::kMean), CrossReplicaCopy(x, y, shift)}));
  };
  const Executable a = build(), b = build();
  EXPECT_EQ(a.manifest, b.manifest);
  ASSERT_EQ(a.image.segments.size(), b.image.segments.size());
  for (size_t i = 0; i < a.image.segments.size(); ++i) {
    EXPECT_EQ(a.image.segments[i].chip, b.image.segments[i].chip) << i;
    EXPECT_EQ(a.image.segments[i].paddr, b.image.segments[i].paddr) << i;
    EXPECT_EQ(a.image.segments[i].data, b.image.segments[i].data) << i;
  }
  EXPECT_EQ(a.image.segments.back().chip, 15u);
}

// ---- bad input: each a clear error naming what is wrong, before anything runs ----

// The host driver queues pieces on every chip's endpoint at once; a piece the endpoint refuses
// (a tile with no program) fails the whole transfer with the endpoint's reason, after the other
// pieces have completed, rather than waiting for ever.
TEST(SdkMachineErrors, AHostTransferToATileWithoutAProgramFailsCleanly) {
  sc_core::sc_set_time_resolution(1, sc_core::SC_FS);
  hw::MachineConfig config = hw::machine_preset("m2000");
  config.chip.tiles = 2;
  hw::Machine machine("machine", config, {0, 1, 2});  // chip 1 tile 1 (machine tile 3) idle
  HostDriver driver("host", machine);
  std::vector<uint8_t> data(4096, 0x42), back(4096, 0);
  bool good = false, bad = true;
  sc_core::sc_spawn([&] {
    good = driver.dma(true, {{data.data(), 4096, 0, 0x50000}, {data.data(), 4096, 2, 0x50000}});
    bad = driver.dma(true, {{data.data(), 4096, 1, 0x50000},
                            {data.data(), 4096, 3, 0x50000},
                            {data.data(), 4096, 2, 0x60000}});
  });
  sc_core::sc_start();
  EXPECT_TRUE(good);
  EXPECT_FALSE(bad);
  EXPECT_THAT(driver.error(),
              HasSubstr("chip 1: DMA channel 0: tile 1 has no program loaded on this chip"));
  machine.tile(2).read(0x60000, back.data(), back.size());
  EXPECT_EQ(back, data);  // chip 1's other piece still arrived
}

TEST(SdkMachineErrors, ATensorOnAChipTheTargetLacks) {
  Graph g(Target::preset("m2000", 4, 2));  // 2 chips per replica
  EXPECT_THAT([&] { g.tile(2, 0); },
              ::testing::ThrowsMessage<GraphError>(HasSubstr("chip 2 tile 0: a replica of this "
                                                             "target has 2 chips of 4 tiles")));
  const Tensor x = g.add_variable(DType::kF32, {8}, "x");
  EXPECT_THAT([&] { g.set_tile_mapping(x, 9); },
              ::testing::ThrowsMessage<GraphError>(
                  HasSubstr("tensor 'x': mapped to tile 9 (chip 2 tile 1), but a replica of the "
                            "target has 8 tiles (2 chips of 4)")));
  EXPECT_THAT([] { Graph bad(Target::preset("m2000", 4, 3)); },
              ::testing::ThrowsMessage<GraphError>(HasSubstr("cannot be split into 3 replicas")));
  EXPECT_THAT([] { Target::preset("m3000"); },
              ::testing::ThrowsMessage<GraphError>(HasSubstr("m3000")));
}

TEST(SdkMachineErrors, CollectivesOfMismatchedTensorsAreRefused) {
  Graph g(Target::preset("m2000", 2, 4));
  const Tensor data = g.add_variable(DType::kF32, {40}, "data");
  const Tensor out = g.add_variable(DType::kF32, {12}, "out");
  const Tensor bytes = g.add_variable(DType::kU8, {40}, "bytes");
  for (Tensor t : {data, out, bytes}) g.map_evenly(t, 0, 2, 4);
  EXPECT_THAT([&] { compile(g, ReduceScatter(data, out, CollectiveOp::kSum)); },
              ::testing::ThrowsMessage<GraphError>(
                  HasSubstr("ReduceScatter from 'data' (40 x f32) to 'out' (12 x f32): the "
                            "source must have 4 times the destination's elements")));
  EXPECT_THAT([&] { compile(g, AllGather(out, data)); },
              ::testing::ThrowsMessage<GraphError>(HasSubstr("AllGather from 'out'")));
  EXPECT_THAT([&] { compile(g, AllReduce(bytes, CollectiveOp::kSum)); },
              ::testing::ThrowsMessage<GraphError>(
                  HasSubstr("AllReduce of 'bytes' (u8): collectives reduce f32, f16 or i32")));
  const Tensor byte_chunks = g.add_variable(DType::kU8, {160}, "byte_chunks");
  g.map_evenly(byte_chunks, 0, 2, 4);
  EXPECT_THAT(
      [&] { compile(g, AllGather(bytes, byte_chunks)); },
      ::testing::ThrowsMessage<GraphError>(HasSubstr(
          "AllGather of 'bytes' (u8): gathers move 32-bit elements (f32, i32, u32) or f16")));
  EXPECT_THAT(
      [&] {
        compile(g, CrossReplicaCopy(data, data, {1, 1, 2, 3}));
      },
      ::testing::ThrowsMessage<GraphError>(HasSubstr("replica 1 sends to replica 1, twice")));
  EXPECT_THAT(
      [&] {
        compile(g, CrossReplicaCopy(data, data, {1, 0}));
      },
      ::testing::ThrowsMessage<GraphError>(HasSubstr("has 2 entries for 4 replicas")));
}

// IPU-Links slower than a tile's send port cannot carry a compiled exchange: the compiler names
// the transfer that would cross one, and compiles a program that keeps to one chip as before.
TEST(SdkMachineErrors, LinksSlowerThanATileRefuseOnlyTheCopiesThatCrossThem) {
  Target target = Target::preset("m2000", 2);
  target.machine.ipulink.bytes_per_second = 2e9;  // 1.51 bytes a Mk2 cycle, under one word
  Graph g(target);
  const Tensor x = g.add_variable(DType::kF32, {8}, "x"), y = g.add_variable(DType::kF32, {8}, "y");
  g.set_tile_mapping(x, g.tile(0, 1));
  g.set_tile_mapping(y, g.tile(1, 0));
  EXPECT_THAT([&] { compile(g, Copy(x, y)); },
              ::testing::ThrowsMessage<CompileError>(HasSubstr(
                  "chip 0 tile 1 sends 8 words to chip 1 tile 0: an IPU-Link carries 1.51 bytes "
                  "per cycle, less than a tile sends (1 words a cycle)")));
  // A multicast to its own chip and across: the error names the receiver across the link.
  const Tensor both = g.add_variable(DType::kF32, {16}, "both");
  g.set_tile_mapping(both, {{0, 8, g.tile(0, 0)}, {8, 16, g.tile(1, 1)}});
  EXPECT_THAT([&] { compile(g, Broadcast(x, both)); },
              ::testing::ThrowsMessage<CompileError>(
                  HasSubstr("chip 0 tile 1 sends 8 words to chip 1 tile 1: an IPU-Link")));
  g.set_tile_mapping(y, g.tile(0, 0));
  EXPECT_NO_THROW(compile(g, Copy(x, y)));
}

TEST(SdkMachineErrors, PerReplicaHostDataOfTheWrongSizeOrReplica) {
  Graph g(Target::preset("m2000", 2, 4));
  const Tensor x = g.add_variable(DType::kF32, {8}, "x");
  g.map_evenly(x, 0, 2);
  g.add_host_stream("in", DType::kF32, 8, StreamDirection::kHostToDevice);
  const Executable exe = compile(g, HostWrite("in", x));
  Device device(exe);
  std::vector<float> buffer(4 * 8);
  EXPECT_THAT([&] { device.connect_stream("in", buffer.data(), 8 * 4); },
              ::testing::ThrowsMessage<DeviceError>(HasSubstr(
                  "buffer of 32 bytes, the stream carries 128 (4 replicas of 32 bytes)")));
  EXPECT_THAT(
      [&] { device.connect_stream("in", 4, buffer.data(), 32); },
      ::testing::ThrowsMessage<DeviceError>(HasSubstr("replica 4, but the executable has 4")));
  EXPECT_THAT([&] { device.write_tensor("x", 7, buffer.data(), 32); },
              ::testing::ThrowsMessage<DeviceError>(HasSubstr("write_tensor 'x': replica 7")));
  device.connect_stream("in", 0, buffer.data(), 32);
  EXPECT_THAT([&] { device.run(); },
              ::testing::ThrowsMessage<DeviceError>(HasSubstr("never connected for replica 1")));
}

}  // namespace
}  // namespace ipu::test
