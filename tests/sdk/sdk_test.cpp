// The SDK end to end on small tile counts: graph, compiler (firmware built by the cross compiler,
// memory allocation, exchange schedule), image and runtime, against host references; and every
// bad-input case named by the issue. One device runs per process (SystemC elaborates once), so
// ctest runs each test in its own process.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <sstream>
#include <thread>
#include <tuple>
#include <vector>

#include "debug/remote_connection.h"
#include "examples/matmul_app.h"
#include "hw/machine/machine.h"
#include "sdk/compiler/compiler.h"
#include "sdk/compiler/exchange_schedule.h"
#include "sdk/graph/codelet_library.h"
#include "sdk/runtime/device.h"
#include "tests/support/gdb_client.h"
#include "tests/support/sdk_graph.h"

namespace ipu::test {
namespace {

using namespace ipu::sdk;
using ::testing::HasSubstr;

const std::string kElementwise = std::string(IPU_CODELET_DIR) + "/elementwise.c";

void declare_library(Graph& g) {
  g.add_codelet("add_f32", kElementwise,
                {{"a", FieldKind::kInput, DType::kF32},
                 {"b", FieldKind::kInput, DType::kF32},
                 {"out", FieldKind::kOutput, DType::kF32},
                 {"n", FieldKind::kScalar, DType::kU32}});
  g.add_codelet("sum_f32", kElementwise,
                {{"a", FieldKind::kInput, DType::kF32},
                 {"out", FieldKind::kOutput, DType::kF32},
                 {"n", FieldKind::kScalar, DType::kU32}});
}

TEST(Sdk, ElementwiseAddOverFourTilesWithHostStreams) {
  Graph g(Target::preset("mk2", 4));
  declare_library(g);
  constexpr size_t n = 1000;
  const Tensor a = g.add_variable(DType::kF32, {n}, "a"), b = g.add_variable(DType::kF32, {n}, "b");
  const Tensor out = g.add_variable(DType::kF32, {n}, "out");
  for (Tensor t : {a, b, out}) g.map_evenly(t, 0, 4);
  g.add_host_stream("a_in", DType::kF32, n, StreamDirection::kHostToDevice);
  g.add_host_stream("b_in", DType::kF32, n, StreamDirection::kHostToDevice);
  g.add_host_stream("out_back", DType::kF32, n, StreamDirection::kDeviceToHost);
  const ComputeSet cs = g.add_compute_set("add");
  add_vertices(g, cs, a, b, out);
  const Executable exe = compile(g, Sequence({HostWrite("a_in", a), HostWrite("b_in", b),
                                              Execute(cs), HostRead(out, "out_back")}));

  std::vector<float> ha(n), hb(n), hout(n, -1.0f);
  for (size_t i = 0; i < n; ++i) {
    ha[i] = 0.5f * static_cast<float>(i);
    hb[i] = 1000.0f - static_cast<float>(i);
  }
  Device device(exe);
  device.connect_stream("a_in", ha.data(), n * 4);
  device.connect_stream("b_in", hb.data(), n * 4);
  device.connect_stream("out_back", hout.data(), n * 4);
  const DeviceReport& r = device.run();
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(hout[i], ha[i] + hb[i]) << i;
  EXPECT_EQ(r.host_to_device_bytes, 2 * n * 4);
  EXPECT_EQ(r.device_to_host_bytes, n * 4);
  EXPECT_EQ(r.run.tiles, 4u);
  // Every stream moves through the PCIe DMA engine as 4 DMAs of 1000 bytes, queued at once: their
  // 1 us latencies overlap, and their data follow one another at 32 GB/s (31.25 ns each). Each
  // host sync delays its release by ceil((1000 + 4 x 31.25) ns x 1.325 GHz) = 1491 cycles. The
  // dispatch that starts the program writes its index to the 4 tiles, 4 DMAs of 4 bytes:
  // ceil((1000 + 4 x 0.125) ns x 1.325 GHz) = 1326 cycles.
  EXPECT_EQ(r.host_transfer_cycles, 3u * 1491 + 1326);
  EXPECT_GT(r.load_seconds, 0.0);  // the image went over PCIe too, before the tiles started
  EXPECT_GT(r.image_bytes, 4u * 1000);
}

// The image stores a tile's bytes, not its zeros: a constant whose middle is 16 KB of zeros
// takes two data segments on its tile, which store its ends and leave the zeros to the SRAM
// (zero at load) while their extents still cover the whole constant (the memory report's and
// the statistics' view); the constant reads back whole, zeros included.
TEST(Sdk, TheImageStoresATilesBytesAndNotItsZeros) {
  Graph g(Target::preset("mk2", 1));
  std::vector<float> values(4100, 0.0f);
  for (size_t i = 0; i < 10; ++i) values[i] = values[4090 + i] = static_cast<float>(i + 1);
  const Tensor c = g.add_constant(DType::kF32, {values.size()}, values.data(), "c");
  g.set_tile_mapping(c, {{0, values.size(), 0}});
  const Executable exe = compile(g, Sync());
  size_t segments = 0, stored = 0, extent = 0;
  for (const ElfSegment& s : exe.image.segments)
    if (!s.executable && s.vaddr >= exe.command_address - 28) {  // the tile's data
      ++segments, stored += s.data.size(), extent += s.mem_size;
      EXPECT_LE(s.data.size(), s.mem_size);
    }
  EXPECT_EQ(segments, 2u);
  // The header (40 bytes) and the constant's 16,400 bytes, of which 4090 - 10 floats are zeros.
  EXPECT_GE(extent, 40u + 4 * values.size());
  EXPECT_LE(stored, extent - 4 * (4080 - 1024));
  Device device(exe);
  device.run();
  std::vector<float> back(values.size(), -1.0f);
  device.read_tensor("c", back.data(), back.size() * 4);
  EXPECT_EQ(back, values);
  EXPECT_LT(device.run().image_bytes, 4 * values.size());  // the zeros did not go over PCIe
}

// A tile keeps each distinct destination list once: three phases' sends from tile 0 to tile 1
// share one list (a count and a tile, 8 bytes), a send to tile 2 adds its own; the data arrive
// all the same. Its action table: four actions of 16 bytes, each phase's end word, and the
// three words the runtime's loads read past the last.
TEST(Sdk, ATileKeepsEachDestinationListOnce) {
  Graph g(Target::preset("mk2", 4));
  std::vector<float> values(6);
  std::iota(values.begin(), values.end(), 1.0f);
  const Tensor x = g.add_constant(DType::kF32, {6}, values.data(), "x");
  g.set_tile_mapping(x, 0);
  std::vector<Program> copies;
  std::vector<Tensor> to;
  for (unsigned i = 0; i < 4; ++i) {
    to.push_back(g.add_variable(DType::kF32, {i == 3 ? 6u : 2u}, fmt::format("to{}", i)));
    g.set_tile_mapping(to.back(), i == 3 ? 2 : 1);
    copies.push_back(i == 3 ? Copy(x, to.back())
                            : Copy({{g.region(x, 2 * i, 2 * i + 2), g.region(to.back())}}));
  }
  const Executable exe = compile(g, Sequence(copies));
  EXPECT_EQ(exe.most_exchange_table_bytes, 4u * sizeof(ipu_action) + 4u * 4u + 12u + 2u * 8u);
  Device device(exe);
  device.run();
  for (unsigned i = 0; i < 4; ++i) {
    std::vector<float> got(i == 3 ? 6 : 2);
    device.read_tensor(fmt::format("to{}", i), got.data(), 4 * got.size());
    EXPECT_EQ(got, i == 3 ? values
                          : std::vector<float>(values.begin() + 2 * i, values.begin() + 2 * i + 2));
  }
}

TEST(Sdk, CrossTileReductionThroughCompiledExchange) {
  // Each of 8 tiles sums its piece; the partials are copied to tile 0 (compiled exchange) and
  // summed there. Values are small integers, so every f32 sum is exact.
  Graph g(Target::preset("mk2", 8));
  declare_library(g);
  constexpr size_t n = 8 * 64;
  std::vector<float> values(n);
  for (size_t i = 0; i < n; ++i) values[i] = static_cast<float>(i % 17);
  const Tensor x = g.add_constant(DType::kF32, {n}, values.data(), "x");
  g.map_evenly(x, 0, 8);
  const Tensor partial = g.add_variable(DType::kF32, {8}, "partial");
  std::vector<Interval> one_per_tile;
  for (unsigned t = 0; t < 8; ++t) one_per_tile.push_back({t, t + 1u, t});
  g.set_tile_mapping(partial, one_per_tile);
  const Tensor gathered = g.add_variable(DType::kF32, {8}, "gathered");
  g.set_tile_mapping(gathered, 0);
  const Tensor total = g.add_variable(DType::kF32, {1}, "total");
  g.set_tile_mapping(total, 0);
  const ComputeSet local = g.add_compute_set("local"), final_sum = g.add_compute_set("final");
  for (unsigned t = 0; t < 8; ++t)
    g.add_vertex(local, "sum_f32", t,
                 {{"a", g.region(x, 64 * t, 64 * (t + 1))},
                  {"out", g.region(partial, t, t + 1)},
                  {"n", 64u}});
  g.add_vertex(final_sum, "sum_f32", 0,
               {{"a", g.region(gathered)}, {"out", g.region(total)}, {"n", 8u}});
  const Executable exe =
      compile(g, Sequence({Execute(local), Copy(partial, gathered), Execute(final_sum)}));

  Device device(exe);
  const DeviceReport& r = device.run();
  float result = 0;
  device.read_tensor("total", &result, 4);
  EXPECT_EQ(result, std::accumulate(values.begin(), values.end(), 0.0f));
  EXPECT_EQ(r.run.exchange_words, 8u);  // one word from each tile, tile 0's own included
  EXPECT_EQ(r.run.supersteps, 2u);      // the dispatch's host sync, then the exchange's
}

// An exchange action takes 16 bytes of its tile's memory: its wait word (the wait before its key
// instruction, the kind in its sign and top bits), the word-aligned tile address, the word
// count with a streaming-memory address's high bits above it, and the partner. What those
// fields cannot hold is refused, never truncated, and so is an action sooner after the
// previous one than the runtime can issue it, or so long after it that its wait would not fit.
TEST(SdkCompiler, AnExchangeActionIsSixteenBytesWithItsKindInItsWaitWord) {
  static_assert(sizeof(ipu_action) == 16);
  const auto words = [](const ipu_action& a) {
    return std::vector<uint32_t>{a.wait, a.address, a.words, a.with};
  };
  using V = std::vector<uint32_t>;
  // Waits by hand (ipu_program.h): a receive's key comes 42 + 6 after the previous key and its
  // wait, a send's 60, a streaming transfer's 108; a phase's first from its base. A send's wait
  // word is ~wait, a write's ~(wait | 1 << 28), a read's ~(wait | 2 << 28).
  EXPECT_EQ(words(encode_action({120, IPU_ACTION_RECEIVE, 1471, 64, 0x4c100, 0, 0}, 0)),
            (V{120 - 48, 0x4c100, 64, 1471}));
  EXPECT_EQ(words(encode_action({240, IPU_ACTION_SEND, 0, 3, 0xe0000, 0xd7000, 0}, 120)),
            (V{~(240u - 120 - 60), 0xe0000, 3, 0xd7000}));
  EXPECT_EQ(words(encode_action({360, IPU_ACTION_SM_WRITE, 0, 5, 0x4c200, 0, 0xabc12345678}, 240)),
            (V{~((360u - 240 - 108) | 1u << 28), 0x4c200, 5u | 0xabcu << 20, 0x12345678}));
  EXPECT_EQ(words(encode_action({480, IPU_ACTION_SM_READ, 0, (1u << 20) - 1, 0x4c300, 0, 8}, 360)),
            (V{~((480u - 360 - 108) | 2u << 28), 0x4c300, (1u << 20) - 1, 8}));
  // The runtime tells them apart by one comparison each: a receive's word is not negative, a
  // send's at least IPU_ACTION_SEND_LEAST, and the others and the phase's end word below it.
  EXPECT_GE(static_cast<int32_t>(~uint32_t{IPU_ACTION_WAIT_MASK}), IPU_ACTION_SEND_LEAST);
  EXPECT_LT(static_cast<int32_t>(~(0u | 1u << 28)), IPU_ACTION_SEND_LEAST);
  EXPECT_LT(static_cast<int32_t>(IPU_ACTION_END), IPU_ACTION_SEND_LEAST);
  const auto refused = [](const ExchangeAction& a, int64_t previous, const char* what) {
    EXPECT_THAT([&] { encode_action(a, previous); },
                ::testing::ThrowsMessage<CompileError>(HasSubstr(what)));
  };
  refused({200, IPU_ACTION_RECEIVE, 1, 4, 0x4c102, 0, 0}, 0, "4 words at tile address 0x4c102");
  refused({200, IPU_ACTION_SEND, 0, 1u << 20, 0x4c100, 0, 0}, 0, "1048576 words");
  refused({200, IPU_ACTION_SM_READ, 0, 4, 0x4c100, 0, uint64_t{1} << 44}, 0,
          "streaming memory address 0x100000000000");
  // One a cycle too soon for the runtime: a send 65 cycles after the previous key.
  refused({165, IPU_ACTION_SEND, 0, 4, 0x4c100, 0x4c200, 0}, 100,
          "exchange send at offset 165 only 65 cycles after the previous action's at 100: the "
          "runtime needs 66");
  EXPECT_NO_THROW(encode_action({166, IPU_ACTION_SEND, 0, 4, 0x4c100, 0x4c200, 0}, 100));
  // A wait of 2^28 cycles or more has no room in the word.
  const uint32_t far = 48 + (1u << 28);
  refused({far, IPU_ACTION_RECEIVE, 1, 4, 0x4c100, 0, 0}, 0, "waits under 2^28 cycles");
  EXPECT_NO_THROW(encode_action({far - 1, IPU_ACTION_RECEIVE, 1, 4, 0x4c100, 0, 0}, 0));
}

TEST(Sdk, BroadcastIsOneMulticastSendAndRepeatLoops) {
  // A vector on tile 0 broadcast to tiles 1..3, then accumulated 5 times on each tile.
  Graph g(Target::preset("mk2", 4));
  declare_library(g);
  g.add_codelet("scale_add_f32", kElementwise,
                {{"a", FieldKind::kInput, DType::kF32},
                 {"out", FieldKind::kInOut, DType::kF32},
                 {"n", FieldKind::kScalar, DType::kU32},
                 {"k", FieldKind::kScalar, DType::kU32}});
  std::vector<float> v(32);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  const Tensor source = g.add_constant(DType::kF32, {32}, v.data(), "source");
  g.set_tile_mapping(source, 0);
  const Tensor copies = g.add_variable(DType::kF32, {3, 32}, "copies");
  const Tensor acc = g.add_variable(DType::kF32, {3, 32}, "acc");
  for (Tensor t : {copies, acc}) g.set_tile_mapping(t, {{0, 32, 1}, {32, 64, 2}, {64, 96, 3}});
  const ComputeSet cs = g.add_compute_set("accumulate");
  const float two = 2.0f;
  uint32_t k;
  std::memcpy(&k, &two, 4);
  for (unsigned t = 1; t <= 3; ++t)
    g.add_vertex(cs, "scale_add_f32", t,
                 {{"a", g.region(copies, 32 * (t - 1), 32 * t)},
                  {"out", g.region(acc, 32 * (t - 1), 32 * t)},
                  {"n", 32u},
                  {"k", k}});
  const Executable exe = compile(g, Sequence({Broadcast(source, copies), Repeat(5, Execute(cs))}));
  EXPECT_EQ(exe.exchange_sends, 1u);         // one send from tile 0 ...
  EXPECT_EQ(exe.exchange_destinations, 3u);  // ... that tiles 1, 2 and 3 all receive
  DeviceOptions options;
  options.profile = true;
  Device device(exe, options);
  const DeviceReport& r = device.run();
  EXPECT_EQ(r.run.exchange_words, 96u);  // 32 words delivered to each of three tiles
  std::vector<float> result(96);
  device.read_tensor("acc", result.data(), result.size() * 4);
  for (size_t i = 0; i < 96; ++i) EXPECT_EQ(result[i], 10.0f * v[i % 32]) << i;  // 5 x 2 x v
  // Flops: a multiply and an add an element, 32 elements, 3 tiles, 5 times; nothing else in
  // the program computes in floating point.
  EXPECT_EQ(r.run.flops, 2u * 32 * 3 * 5);
  uint64_t chip_flops = 0;
  for (const hw::ChipActions& a : r.run.chip_actions) chip_flops += a.flops;
  EXPECT_EQ(chip_flops, r.run.flops);
  const Profile p = device.profile();
  ASSERT_EQ(p.codelets.size(), 1u);
  EXPECT_EQ(p.codelets[0].runs.flops, 2u * 32 * 3 * 5);
  ASSERT_EQ(p.compute_sets.size(), 1u);
  EXPECT_EQ(p.compute_sets[0].runs.flops, 2u * 32 * 3 * 5);
  for (const VertexProfile& vp : p.vertices) EXPECT_EQ(vp.runs.flops, 2u * 32 * 5);
}

TEST(Sdk, MatmulOnTheAmpMatchesTheHostReferenceBitForBit) {
  const auto r = ipu::examples::run_matmul(hw::machine_preset("mk2"), 16, 96, 64, 7);
  EXPECT_EQ(r.mismatches, 0u);
  EXPECT_EQ(r.c.size(), 256u * 96);
  EXPECT_EQ(r.report.run.tiles, 16u);
  EXPECT_EQ(r.executable.exchange_sends, 1u);          // B: one multicast from tile 0 ...
  EXPECT_EQ(r.executable.exchange_destinations, 16u);  // ... to all 16 tiles, tile 0 included
  EXPECT_GT(r.compute_cycles, 0u);
}

// Constants a = 0, 1, ..., n - 1 and b = 0.25 on tile 0 (each a + b exact in f32), and a's values.
std::tuple<Tensor, Tensor, std::vector<float>> add_inputs(Graph& g, size_t n) {
  std::vector<float> av(n), bv(n, 0.25f);
  for (size_t i = 0; i < n; ++i) av[i] = static_cast<float>(i);
  const Tensor a = g.add_constant(DType::kF32, {n}, av.data(), "a");
  const Tensor b = g.add_constant(DType::kF32, {n}, bv.data(), "b");
  return {a, b, av};
}

TEST(Sdk, SixWorkerVertexSplitsItsWorkOverTheWorkers) {
  Graph g(Target::preset("mk2", 1));
  add_codelet_library(g);
  constexpr size_t n = 600;
  const auto [a, b, av] = add_inputs(g, n);
  const Tensor out = g.add_variable(DType::kF32, {n}, "out");
  for (Tensor t : {a, b, out}) g.set_tile_mapping(t, 0);
  const ComputeSet cs = g.add_compute_set("add");
  g.add_vertex(cs, "add_f32_workers", 0,
               {{"a", g.region(a)}, {"b", g.region(b)}, {"out", g.region(out)}, {"n", 600u}}, 6);
  Device device(compile(g, Execute(cs)));
  device.run();
  std::vector<float> result(n);
  device.read_tensor("out", result.data(), n * 4);
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(result[i], av[i] + 0.25f) << i;
  for (unsigned w = 1; w <= 6; ++w)
    EXPECT_EQ(device.machine().chip(0).tile(0).core().context(w).runs, 1u) << "worker " << w;
}

// A copy of f16 pieces that start inside a word is refused, not moved shifted.
TEST(Sdk, CopyOfHalfWordPiecesStartingInsideAWordIsRefused) {
  Graph g(Target::preset("mk2", 4));
  const Tensor x = g.add_variable(DType::kF16, {6}, "x"), y = g.add_variable(DType::kF16, {6}, "y");
  g.set_tile_mapping(x, 0);
  g.set_tile_mapping(y, {{0, 2, 1}, {2, 6, 2}});
  try {
    compile(g, Copy({{g.region(x, 1, 3), g.region(y, 0, 2)}}));
    ADD_FAILURE() << "compiled";
  } catch (const CompileError& e) {
    EXPECT_STREQ(e.what(),
                 "a copy from 'x' element 1 (tile 0) to 'y' element 0 (tile 1) starts inside a "
                 "32-bit word on the source tile: the exchange moves whole words, so each piece "
                 "of a f16 copy must start at a multiple of 2 elements from the start of its "
                 "tile's interval on both sides");
  }
}

// A one-worker vertex, then two six-worker vertices, in one compute set on one tile: each
// six-worker vertex's copies must take six different contexts to cover its six shares, though
// ipu.run starts a copy on the lowest idle context (the runtime joins before each).
TEST(Sdk, SixWorkerVerticesAfterOthersStillCoverEveryShare) {
  Graph g(Target::preset("mk2", 1));
  add_codelet_library(g);
  constexpr size_t n = 600;
  const auto [a, b, av] = add_inputs(g, n);
  const Tensor out1 = g.add_variable(DType::kF32, {n}, "out1"),
               out2 = g.add_variable(DType::kF32, {n}, "out2"),
               out3 = g.add_variable(DType::kF32, {n}, "out3");
  for (Tensor t : {a, b, out1, out2, out3}) g.set_tile_mapping(t, 0);
  const ComputeSet cs = g.add_compute_set("add");
  g.add_vertex(cs, "add_f32", 0,
               {{"a", g.region(a)}, {"b", g.region(b)}, {"out", g.region(out1)}, {"n", 600u}});
  for (Tensor out : {out2, out3})
    g.add_vertex(cs, "add_f32_workers", 0,
                 {{"a", g.region(a)}, {"b", g.region(b)}, {"out", g.region(out)}, {"n", 600u}}, 6);
  Device device(compile(g, Execute(cs)));
  device.run();
  for (const char* name : {"out1", "out2", "out3"}) {
    std::vector<float> result(n);
    device.read_tensor(name, result.data(), n * 4);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(result[i], av[i] + 0.25f) << name << " " << i;
  }
}

// The profile against the barrel's issue model (docs/tile.md): a worker issues once every six
// cycles, so a run of n integer instructions lasts 6(n - 1) + 1 cycles, and runs of one vertex
// sum to 6 x instructions - 5 x runs. Compute set "sums" runs count_up(n = 10 (t + 1)) once on
// each of four tiles; "bumps" runs add_one on tiles 0 and 1, two vertices each, three times.
TEST(Sdk, ProfileAttributesEveryWorkerCycleToItsVertexCodeletAndComputeSet) {
  const std::string file = std::string(IPU_TEST_SOURCE_DIR) + "/firmware/profile_codelets.c";
  Graph g(Target::preset("mk2", 4));
  g.add_codelet("count_up", file,
                {{"out", FieldKind::kOutput, DType::kU32}, {"n", FieldKind::kScalar, DType::kU32}});
  g.add_codelet("add_one", file, {{"out", FieldKind::kInOut, DType::kU32}});
  const Tensor sums = g.add_variable(DType::kU32, {4}, "sums");
  g.map_evenly(sums, 0, 4);
  const Tensor counters = g.add_variable(DType::kU32, {4}, "counters");
  g.set_tile_mapping(counters, {{0, 2, 0}, {2, 4, 1}});
  const ComputeSet sum_cs = g.add_compute_set("sums");
  for (unsigned t = 0; t < 4; ++t)
    g.add_vertex(sum_cs, "count_up", t, {{"out", g.region(sums, t, t + 1)}, {"n", 10 * (t + 1)}});
  const ComputeSet bump_cs = g.add_compute_set("bumps");
  for (unsigned i = 0; i < 4; ++i)
    g.add_vertex(bump_cs, "add_one", i / 2, {{"out", g.region(counters, i, i + 1)}});
  const Executable exe = compile(g, Sequence({Execute(sum_cs), Repeat(3, Execute(bump_cs))}));
  DeviceOptions options;
  options.profile = true;
  Device device(exe, options);
  const DeviceReport& report = device.run();
  std::vector<uint32_t> results(4);
  device.read_tensor("sums", results.data(), 16);
  EXPECT_THAT(results, ::testing::ElementsAre(55u, 210u, 465u, 820u));
  device.read_tensor("counters", results.data(), 16);
  EXPECT_THAT(results, ::testing::ElementsAre(3u, 3u, 3u, 3u));

  const Profile p = device.profile();
  ASSERT_EQ(p.compute_sets.size(), 2u);
  ASSERT_EQ(p.codelets.size(), 2u);
  ASSERT_EQ(p.vertices.size(), 8u);
  EXPECT_EQ(p.other_runs.runs, 0u);
  // Every vertex run's cycles follow from its instructions.
  uint64_t vertex_cycles = 0;
  std::map<unsigned, uint64_t> count_up_instructions;  // by tile
  for (const VertexProfile& v : p.vertices) {
    EXPECT_EQ(v.runs.cycles, 6 * v.runs.instructions - 5 * v.runs.runs)
        << v.codelet << " tile " << v.tile;
    EXPECT_EQ(v.runs.runs, v.codelet == "count_up" ? 1u : 3u) << v.codelet << " tile " << v.tile;
    if (v.codelet == "count_up") count_up_instructions[v.tile] = v.runs.instructions;
    vertex_cycles += v.runs.cycles;
  }
  // count_up's instructions grow by the same amount for each 10 more steps of its loop.
  ASSERT_EQ(count_up_instructions.size(), 4u);
  const uint64_t per_ten = count_up_instructions[1] - count_up_instructions[0];
  EXPECT_GE(per_ten, 20u);  // at least an add and a branch a step
  EXPECT_EQ(count_up_instructions[2] - count_up_instructions[1], per_ten);
  EXPECT_EQ(count_up_instructions[3] - count_up_instructions[2], per_ten);
  // The vertices' cycles are the workers' active cycles, counted by the contexts themselves.
  uint64_t worker_cycles = 0;
  for (const hw::TileCounts& t : report.run.per_tile)
    for (size_t c = 1; c < t.contexts.size(); ++c) worker_cycles += t.contexts[c].active_cycles;
  EXPECT_EQ(vertex_cycles, worker_cycles);

  const auto find_set = [&](const std::string& name) {
    return *std::find_if(p.compute_sets.begin(), p.compute_sets.end(),
                         [&](const ComputeSetProfile& c) { return c.name == name; });
  };
  const ComputeSetProfile sums_set = find_set("sums"), bumps_set = find_set("bumps");
  EXPECT_EQ(sums_set.executions, 1u);
  EXPECT_EQ(sums_set.busiest_tile, 3u);                          // n = 40
  EXPECT_EQ(sums_set.cycles, 6 * count_up_instructions[3] - 5);  // one vertex: its run
  EXPECT_EQ(sums_set.tiles, 4u);
  EXPECT_EQ(bumps_set.executions, 3u);
  EXPECT_EQ(bumps_set.vertices, 4u);
  EXPECT_EQ(bumps_set.tiles, 2u);
  EXPECT_EQ(bumps_set.runs.runs, 12u);
  // Two add_one runs on workers 1 and 2, started a supervisor turn apart: each execution lasts
  // from the first's start to the second's end, longer than one run and shorter than two.
  const uint64_t one_run = bumps_set.runs.max_cycles;
  EXPECT_EQ(bumps_set.runs.min_cycles, one_run);
  EXPECT_GT(bumps_set.cycles, 3 * one_run);
  EXPECT_LT(bumps_set.cycles, 3 * 2 * one_run);
  // Codelets sum their vertices.
  for (const CodeletProfile& c : p.codelets) {
    uint64_t cycles = 0;
    for (const VertexProfile& v : p.vertices)
      if (v.codelet == c.codelet) cycles += v.runs.cycles;
    EXPECT_EQ(c.runs.cycles, cycles) << c.codelet;
    EXPECT_EQ(c.tiles, c.codelet == "count_up" ? 4u : 2u);
  }
  // Each tile's compute sets fit in its compute phases: on tiles 2 and 3 count_up alone, on the
  // busiest tile of "bumps" count_up and the three executions of "bumps".
  const auto compute_cycles = [&](unsigned tile) {
    uint64_t compute = 0;
    for (const hw::TileSegment& s : device.machine().tile(tile).timeline())
      if (s.kind == hw::TileSegment::kCompute) compute += s.end - s.begin;
    return compute;
  };
  for (unsigned t : {2u, 3u})
    EXPECT_LT(6 * count_up_instructions[t] - 5, compute_cycles(t)) << "tile " << t;
  const unsigned busy = bumps_set.busiest_tile;
  ASSERT_LT(busy, 2u);
  EXPECT_LT(6 * count_up_instructions[busy] - 5 + bumps_set.cycles, compute_cycles(busy));
  // The tables and the statistics say the same.
  std::ostringstream tables;
  print_profile(tables, p, 1472, 1);
  EXPECT_THAT(tables.str(), HasSubstr("count_up"));
  EXPECT_THAT(tables.str(), HasSubstr("bumps"));
  std::ostringstream stats;
  device.write_stats(stats);
  const auto json = nlohmann::json::parse(stats.str());
  ASSERT_EQ(json.at("codelets").size(), 2u);
  EXPECT_EQ(json.at("vertices").size(), 8u);
  EXPECT_EQ(json.at("compute_sets").size(), 2u);
  uint64_t json_cycles = 0;
  for (const auto& c : json.at("codelets")) json_cycles += c.at("cycles").get<uint64_t>();
  EXPECT_EQ(json_cycles, worker_cycles);
  EXPECT_EQ(json.at("worker_functions").size(), 2u);
}

TEST(Sdk, AllToAllRedistributionAcrossTiles) {
  // 8 tiles: x holds 64 contiguous elements per tile; y interleaves 8-element pieces round-robin
  // over the tiles, so every tile sends a piece to every tile.
  Graph g(Target::preset("mk2", 8));
  constexpr size_t n = 8 * 64;
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i) * 0.5f;
  const Tensor x = g.add_constant(DType::kF32, {n}, v.data(), "x");
  g.map_evenly(x, 0, 8);
  const Tensor y = g.add_variable(DType::kF32, {n}, "y");
  std::vector<Interval> pieces;
  for (size_t i = 0; i < n; i += 8)
    pieces.push_back({i, i + 8, static_cast<unsigned>((i / 8) % 8)});
  g.set_tile_mapping(y, pieces);
  const Executable exe = compile(g, Copy(x, y));
  EXPECT_EQ(exe.exchange_sends, 64u);  // every piece, the 8 that stay on their tile included
  Device device(exe);
  const DeviceReport& r = device.run();
  EXPECT_EQ(r.run.exchange_words, 64u * 8);
  std::vector<float> result(n);
  device.read_tensor("y", result.data(), n * 4);
  EXPECT_EQ(result, v);
}

TEST(Sdk, ViewsShareTheirTensorsMemoryAndMapping) {
  // x [6 x 10] f32 over 4 tiles in pieces that cross rows. top = x's rows 1..3 as [3 x 10],
  // flat = all of x as [60]; c [3 x 10] is on other tiles. The program adds top and c into
  // top (through the view: x changes), then copies flat's first 20 elements to y.
  Graph g(Target::preset("mk2", 8));
  declare_library(g);
  constexpr size_t n = 60;
  const Tensor x = g.add_variable(DType::kF32, {6, 10}, "x");
  g.map_evenly(x, 0, 4);
  const Tensor top = g.slice(x, 10, 40, {3, 10}, "top");
  const Tensor flat = g.reshape(x, {n});
  const Tensor head = g.slice(flat, 0, 20, {20});  // a view of a view: of x itself
  EXPECT_EQ(g.tensor(flat).name, "x.reshaped");
  EXPECT_EQ(g.tensor(head).name, "x.reshaped[0:20]");
  EXPECT_EQ(g.tensor(head).view_of, x.id);
  // top's mapping is x's pieces over elements 10..39, renumbered from 0.
  const std::vector<Interval>& m = g.tensor(top).mapping;
  ASSERT_EQ(m.size(), 3u);  // x: [0,15) [15,30) [30,45) [45,60)
  EXPECT_EQ(std::make_tuple(m[0].begin, m[0].end, m[0].tile), std::make_tuple(0u, 5u, 0u));
  EXPECT_EQ(std::make_tuple(m[1].begin, m[1].end, m[1].tile), std::make_tuple(5u, 20u, 1u));
  EXPECT_EQ(std::make_tuple(m[2].begin, m[2].end, m[2].tile), std::make_tuple(20u, 30u, 2u));
  const Tensor c = g.add_variable(DType::kF32, {3, 10}, "c");
  g.set_tile_mapping(c, g.tensor(top).mapping);
  const Tensor y = g.add_variable(DType::kF32, {20}, "y");
  g.map_evenly(y, 5, 3);
  const ComputeSet cs = g.add_compute_set("add");
  add_vertices(g, cs, top, c, top);
  const Executable exe = compile(g, Sequence({Execute(cs), Copy(head, y)}));
  Device device(exe);
  std::vector<float> xv(n), cv(30);
  for (size_t i = 0; i < n; ++i) xv[i] = static_cast<float>(i);
  for (size_t i = 0; i < 30; ++i) cv[i] = 1000.0f * static_cast<float>(i + 1);
  device.write_tensor("x", xv.data(), n * 4);
  device.write_tensor("c", cv.data(), 30 * 4);
  device.run();
  std::vector<float> want = xv;
  for (size_t i = 0; i < 30; ++i) want[10 + i] += cv[i];
  std::vector<float> got(n), got_top(30), got_y(20);
  device.read_tensor("x", got.data(), n * 4);
  device.read_tensor("top", got_top.data(), 30 * 4);
  device.read_tensor("y", got_y.data(), 20 * 4);
  EXPECT_EQ(got, want);
  EXPECT_EQ(got_top, std::vector<float>(want.begin() + 10, want.begin() + 40));
  EXPECT_EQ(got_y, std::vector<float>(want.begin(), want.begin() + 20));
  // Writing a view writes its tensor.
  const std::vector<float> ones(20, 1.0f);
  device.write_tensor("x.reshaped[0:20]", ones.data(), 20 * 4);
  device.read_tensor("x", got.data(), n * 4);
  EXPECT_EQ(std::vector<float>(got.begin(), got.begin() + 20), ones);
  EXPECT_EQ(got[20], want[20]);
}

// Scratch tensors a and b on tile 0, used one after the other: the compiler gives them the same
// memory, and each still carries its value from its copy in to its copy out. Inside a Repeat
// their spans cover the whole loop, so they get memory of their own.
TEST(Sdk, ScratchTensorsShareMemoryOnlyWhenTheirSpansDoNotMeet) {
  for (const bool repeated : {false, true}) {
    Graph g(Target::preset("mk2", 4));
    constexpr size_t n = 64;
    auto add = [&](const char* name, unsigned tile, bool scratch) {
      const Tensor t = g.add_variable(DType::kF32, {n}, name);
      g.set_tile_mapping(t, tile);
      if (scratch) g.set_scratch(t);
      return t;
    };
    const Tensor x = add("x", 1, false), x2 = add("x2", 1, false);
    const Tensor a = add("a", 0, true), b = add("b", 0, true), kept = add("kept", 0, false);
    const Tensor y = add("y", 2, false), z = add("z", 2, false);
    const Tensor unused = add("unused", 0, true);
    g.set_scratch(g.reshape(b, {8, 8}));  // marking a view marks its tensor
    const Program body = Sequence({Copy(x, a), Copy(a, y), Copy(x2, b), Copy(b, z), Copy(x, kept)});
    const Executable exe = compile(g, repeated ? Repeat(2, body) : body);
    const uint32_t at_a = exe.tensors.at("a").front().address;
    const uint32_t at_b = exe.tensors.at("b").front().address;
    const uint32_t at_kept = exe.tensors.at("kept").front().address;
    if (repeated)
      EXPECT_GE(std::max(at_a, at_b) - std::min(at_a, at_b), n * 4);
    else
      EXPECT_EQ(at_a, at_b);
    EXPECT_GE(std::max(at_a, at_kept) - std::min(at_a, at_kept), n * 4);
    EXPECT_EQ(exe.tensors.count(g.tensor(unused).name), 1u);
    std::vector<float> xv(n), x2v(n), got(n);
    for (size_t i = 0; i < n; ++i) xv[i] = static_cast<float>(i), x2v[i] = -static_cast<float>(i);
    if (repeated) continue;  // one device a process
    Device device(exe);
    device.write_tensor("x", xv.data(), n * 4);
    device.write_tensor("x2", x2v.data(), n * 4);
    device.run();
    device.read_tensor("y", got.data(), n * 4);
    EXPECT_EQ(got, xv);
    device.read_tensor("z", got.data(), n * 4);
    EXPECT_EQ(got, x2v);
    device.read_tensor("kept", got.data(), n * 4);
    EXPECT_EQ(got, xv);
  }
}

// Three scratch tensors on tile 0: x (2,000 bytes) and y (400) filled together, x read out, then
// z (2,400) filled and read out, then y. Placed by first use, x takes 0 and y 2,000, and z
// must go above y: 4,800 bytes. No placement can take less than the 2,800 bytes live at once
// while z is; placed largest first (z at 0, x beside it in time at 0, y above both), it takes
// exactly that, and every value still arrives.
TEST(Sdk, ScratchIsPackedLargestFirstWhenThatTakesLessMemory) {
  Graph g(Target::preset("mk2", 4));
  auto add = [&](const char* name, size_t n, unsigned tile, bool scratch) {
    const Tensor t = g.add_variable(DType::kF32, {n}, name);
    g.set_tile_mapping(t, tile);
    if (scratch) g.set_scratch(t);
    return t;
  };
  const Tensor x = add("x", 500, 0, true), y = add("y", 100, 0, true), z = add("z", 600, 0, true);
  const Tensor x_in = add("x_in", 500, 1, false), y_in = add("y_in", 100, 1, false),
               z_in = add("z_in", 600, 1, false);
  const Tensor x_out = add("x_out", 500, 2, false), y_out = add("y_out", 100, 2, false),
               z_out = add("z_out", 600, 2, false);
  const Executable exe =
      compile(g, Sequence({Copy({{g.region(x_in), g.region(x)}, {g.region(y_in), g.region(y)}}),
                           Copy(x, x_out), Copy(z_in, z), Copy(z, z_out), Copy(y, y_out)}));
  const auto at = [&](const char* name) { return exe.tensors.at(name).front().address; };
  EXPECT_EQ(at("x"), at("z"));
  EXPECT_EQ(at("y"), at("z") + 2400u);
  std::vector<float> xv(500), yv(100), zv(600);
  for (size_t i = 0; i < 600; ++i) {
    if (i < 500) xv[i] = static_cast<float>(i);
    if (i < 100) yv[i] = -static_cast<float>(i);
    zv[i] = 0.5f * static_cast<float>(i);
  }
  Device device(exe);
  device.write_tensor("x_in", xv.data(), 500 * 4);
  device.write_tensor("y_in", yv.data(), 100 * 4);
  device.write_tensor("z_in", zv.data(), 600 * 4);
  device.run();
  for (const auto& [name, want] :
       {std::pair{"x_out", &xv}, std::pair{"y_out", &yv}, std::pair{"z_out", &zv}}) {
    std::vector<float> got(want->size());
    device.read_tensor(name, got.data(), got.size() * 4);
    EXPECT_EQ(got, *want) << name;
  }
}

// A function doubling `in` into `out` through a scratch copy on another tile: the body's
// exchanges and compute set, called or written out in place.
struct Doubler {
  Tensor in, out, work;
  Program body;
};
Doubler add_doubler(Graph& g, const char* name, unsigned tile) {
  Doubler d;
  const auto add = [&](const std::string& what, unsigned t) {
    const Tensor x = g.add_variable(DType::kF32, {64}, fmt::format("{}.{}", name, what));
    g.set_tile_mapping(x, t);
    return x;
  };
  d.in = add("in", 0), d.out = add("out", 0), d.work = add("work", tile);
  const Tensor doubled = add("doubled", tile);
  g.set_scratch(d.work);
  g.set_scratch(doubled);
  const ComputeSet cs = g.add_compute_set(fmt::format("{}.double", name));
  g.add_vertex(
      cs, "add_f32", tile,
      {{"a", g.region(d.work)}, {"b", g.region(d.work)}, {"out", g.region(doubled)}, {"n", 64u}});
  d.body = Sequence({Copy(d.in, d.work), Execute(cs), Copy(doubled, d.out)});
  return d;
}

TEST(Sdk, AFunctionIsCompiledOnceAndRunAtEveryCall) {
  // x -> y = 2x, then y -> z = 4x, then three more doublings in a Repeat: 32x. The same program
  // with the body written out at each use must give the same values and supersteps, with five
  // times the body's exchange sends where the functions' program has them once.
  std::vector<float> x(64);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) - 20.0f;
  const auto build = [&](bool calls) {
    Graph g(Target::preset("mk2", 4));
    declare_library(g);
    const Doubler d = add_doubler(g, "doubler", 2);
    const Tensor xt = g.add_constant(DType::kF32, {64}, x.data(), "x");
    g.set_tile_mapping(xt, 1);
    const auto y = g.add_variable(DType::kF32, {64}, "y"),
               z = g.add_variable(DType::kF32, {64}, "z");
    g.set_tile_mapping(y, 3);
    g.set_tile_mapping(z, 3);
    const Program run = calls ? Call(g.add_function(d.body, "double")) : d.body;
    return std::make_pair(
        compile(g, Sequence({Copy(xt, d.in), run, Copy(d.out, y), Copy(d.out, d.in), run,
                             Copy(d.out, z), Repeat(3, Sequence({Copy(d.out, d.in), run}))})),
        d);
  };
  const auto [inline_exe, d1] = build(false);
  const auto [exe, d2] = build(true);
  // The body has two exchange phases; written out it is lowered three times (the Repeat's once).
  EXPECT_EQ(inline_exe.exchange_sends - exe.exchange_sends, 2u * 2u);
  EXPECT_EQ(exe.supersteps, inline_exe.supersteps);
  const nlohmann::json manifest = nlohmann::json::parse(exe.manifest);
  size_t calls = 0, returns = 0;
  for (const auto& step : manifest.at("steps")) {
    calls += step.at("step") == "call";
    returns += step.at("step") == "return";
  }
  EXPECT_EQ(calls, 3u);  // three Calls in the program (one inside the Repeat)
  EXPECT_EQ(returns, 1u);
  Device device(exe);
  const DeviceReport& r = device.run();
  EXPECT_EQ(r.run.supersteps, 1u + 5u * 2u + 7u);  // dispatch; 5 bodies of 2 phases; 7 copies
  std::vector<float> y(64), z(64), out(64);
  device.read_tensor("y", y.data(), 256);
  device.read_tensor("z", z.data(), 256);
  device.read_tensor("doubler.out", out.data(), 256);
  for (size_t i = 0; i < 64; ++i) {
    EXPECT_EQ(y[i], 2 * x[i]) << i;
    EXPECT_EQ(z[i], 4 * x[i]) << i;
    EXPECT_EQ(out[i], 32 * x[i]) << i;
  }
}

TEST(Sdk, AFunctionsOwnScratchLivesOnlyWhileItsBodyRuns) {
  // Two functions' own scratch tensors share memory with each other's; a scratch tensor the
  // program keeps across their calls shares with neither.
  Graph g(Target::preset("mk2", 4));
  declare_library(g);
  const Doubler a = add_doubler(g, "a", 2), b = add_doubler(g, "b", 2);
  const Tensor kept = g.add_variable(DType::kF32, {64}, "kept"),
               x = g.add_variable(DType::kF32, {64}, "x");
  g.set_tile_mapping(kept, 2);
  g.set_tile_mapping(x, 1);
  g.set_scratch(kept);
  const Function fa = g.add_function(a.body, "a"), fb = g.add_function(b.body, "b");
  const Executable exe =
      compile(g, Sequence({Copy(x, kept), Copy(x, a.in), Call(fa), Copy(a.out, b.in), Call(fb),
                           Copy(kept, a.in), Call(fa)}));
  const auto at = [&](const char* name) { return exe.tensors.at(name).front().address; };
  EXPECT_EQ(at("a.work"), at("b.work"));
  EXPECT_EQ(at("a.doubled"), at("b.doubled"));
  for (const char* own : {"a.work", "a.doubled"})
    EXPECT_GE(std::max(at(own), at("kept")) - std::min(at(own), at("kept")), 256u) << own;
  EXPECT_NE(at("a.work"), at("a.doubled"));
}

TEST(SdkErrors, AFunctionThatCallsOrStreamsIsRefusedByName) {
  Graph g(Target::preset("mk2", 2));
  declare_library(g);
  const Doubler d = add_doubler(g, "d", 1);
  const Function inner = g.add_function(d.body, "inner");
  const Function outer = g.add_function(Sequence({Call(inner)}), "outer");
  EXPECT_THAT([&] { compile(g, Call(outer)); },
              ::testing::ThrowsMessage<GraphError>(
                  HasSubstr("function 'outer' calls function 'inner': a function's body may not "
                            "call a function")));
  g.add_host_stream("in", DType::kF32, 64, StreamDirection::kHostToDevice);
  const Function streams = g.add_function(Sequence({HostWrite("in", d.in)}), "streams");
  EXPECT_THAT([&] { compile(g, Call(streams)); },
              ::testing::ThrowsMessage<GraphError>(HasSubstr("function 'streams' moves host "
                                                             "stream 'in'")));
  EXPECT_THAT([&] { compile(g, Call(Function{7})); },
              ::testing::ThrowsMessage<GraphError>(
                  HasSubstr("Call of function id 7: the graph has 3 functions")));
  EXPECT_THAT(
      [&] { g.add_function(d.body, "inner"); },
      ::testing::ThrowsMessage<GraphError>(HasSubstr("a function named 'inner' already exists")));
}

TEST(SdkErrors, ViewsThatCannotBeMadeAreRefusedByName) {
  Graph g(Target::preset("mk2", 4));
  const Tensor h = g.add_variable(DType::kF16, {4, 6}, "h");
  const Tensor unmapped = g.add_variable(DType::kF32, {8}, "unmapped");
  auto refused = [](auto&& make, const std::string& what) {
    try {
      make();
      ADD_FAILURE() << "no error; expected: " << what;
    } catch (const GraphError& e) {
      EXPECT_THAT(e.what(), HasSubstr(what));
    }
  };
  refused([&] { g.slice(unmapped, 0, 4, {4}); }, "tensor 'unmapped' is not mapped yet");
  g.map_evenly(h, 0, 4);
  refused([&] { g.slice(h, 3, 9, {6}, "odd"); },
          "view 'odd' of 'h' starts at element 3, not on a 32-bit boundary");
  refused(
      [&] {
        g.slice(h, 4, 10, {2, 2}, "small");
      },
      "view 'small': shape {2, 2} does not hold its 6 elements");
  refused([&] { g.slice(h, 20, 30, {10}, "past"); },
          "view 'past': elements [20, 30) are not inside the 24 of 'h'");
  const Tensor v = g.reshape(h, {24}, "flat");
  refused([&] { g.set_tile_mapping(v, 0); }, "tensor 'flat' is a view of 'h'");
  refused([&] { g.map_evenly(h, 0, 2); }, "tensor 'h' has a view, 'flat'");
  refused([&] { g.reshape(h, {24}, "flat"); }, "a tensor named 'flat' exists already");
}

// A control program the runtime cannot follow (here a damaged image: one tile's program header
// lost its magic word) stops that tile with status 71 and a line that says what it found, on
// which tile and at which step, never a silent exit.
TEST(SdkErrors, ADamagedControlProgramStopsItsTileNamingWhatItFound) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "exceptions after SystemC simulation confuse AddressSanitizer's stack shadow";
#endif
  Graph g(Target::preset("mk2", 2));
  const Tensor x = g.add_variable(DType::kF32, {4}, "x");
  g.set_tile_mapping(x, {{0, 2, 0}, {2, 4, 1}});
  Executable exe = compile(g, Sync());
  // The header (ipu_tile_program) starts at the heap; its command word is 28 bytes in.
  const uint32_t header = exe.command_address - 28;
  unsigned patched = 0;
  for (ElfSegment& segment : exe.image.segments)
    if (patched == 0 && !segment.executable && segment.vaddr <= header &&
        header + 4 <= segment.vaddr + segment.data.size()) {
      const uint32_t damaged = 0x12345678;
      std::memcpy(&segment.data[header - segment.vaddr], &damaged, 4);
      ++patched;
    }
  ASSERT_EQ(patched, 1u);
  Device device(exe);
  try {
    device.run();
    FAIL() << "the damaged program ran";
  } catch (const DeviceError& e) {
    EXPECT_THAT(e.what(), HasSubstr("exited with status 71"));
    EXPECT_THAT(e.what(), ::testing::ContainsRegex(
                              "bad control program on tile [01]: magic 305419896 at step 0"));
  }
}

TEST(Sdk, TrapOnATileSurfacesAsAnExceptionWithItsReport) {
  Graph g(Target::preset("mk2", 2));
  g.add_codelet("read_null", std::string(IPU_CODELET_DIR) + "/faulty.c", {});
  const Tensor a = g.add_variable(DType::kF32, {4}, "a");
  g.set_tile_mapping(a, {{0, 2, 0}, {2, 4, 1}});
  const ComputeSet cs = g.add_compute_set("cs");
  g.add_vertex(cs, "read_null", 1, {});
#if defined(__SANITIZE_ADDRESS__)
  // SystemC switches coroutine stacks without telling ASan, so an exception unwinding after
  // sc_start() leaves stale stack shadow and ASan reports false stack errors (ASan warns
  // "ignoring requested __asan_handle_no_return"). The Release run of this test checks it.
  GTEST_SKIP() << "exceptions after SystemC simulation confuse AddressSanitizer's stack shadow";
#endif
  Device device(compile(g, Execute(cs)));
  try {
    device.run();
    FAIL() << "the trap did not surface";
  } catch (const DeviceError& e) {
    EXPECT_THAT(e.what(), HasSubstr("tile 1 context 1 (worker): load access fault at pc 0x"));
    // The codelet that faulted, and its line: codelets are compiled with -g, and the
    // executable keeps the firmware's DWARF (.ipu.debug).
    EXPECT_THAT(e.what(), HasSubstr(" in read_null at faulty.c:8 (cycle"));
    EXPECT_THAT(e.what(), HasSubstr("address 0x00000000 is outside SRAM"));
  }
}

// DeviceOptions::gdb_port: a GDB client stops an SDK program at its codelet on tile 1, sees the
// fault there with its signal, and is told the program ended by it; the Device throws as
// without a debugger.
TEST(Sdk, GdbStopsAtACodeletAndAtItsFault) {
  Graph g(Target::preset("mk2", 2));
  g.add_codelet("read_null", std::string(IPU_CODELET_DIR) + "/faulty.c", {});
  const ComputeSet cs = g.add_compute_set("cs");
  g.add_vertex(cs, "read_null", 1, {});
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "exceptions after SystemC simulation confuse AddressSanitizer's stack shadow";
#endif
  const Executable exe = compile(g, Execute(cs));
  const uint32_t codelet = exe.image.symbols.at("read_null");
  DeviceOptions options;
  options.gdb_port = 0;
  Device device(exe, options);
  ASSERT_NE(device.gdb_port(), 0u);
  std::thread gdb([&] {
    GdbClient c(static_cast<uint16_t>(device.gdb_port()));
    // The program has one tile, tile 1 (where the vertex is): its supervisor is thread 1.
    EXPECT_EQ(c.ask("?"), "T05thread:1;");
    EXPECT_EQ(c.ask("qfThreadInfo"), "m1,2,3,4,5,6,7");  // supervisor + 6 workers
    EXPECT_EQ(c.ask("qThreadExtraInfo,2"), debug::to_hex("tile 1 worker 1, idle"));
    EXPECT_EQ(c.ask(fmt::format("Z0,{:x},4", codelet)), "OK");
    EXPECT_EQ(c.ask("c"), "T05swbreak:;thread:2;");  // the first worker runs the vertex
    EXPECT_EQ(c.ask("Hg2"), "OK");
    EXPECT_EQ(c.reg(32), codelet);
    EXPECT_EQ(c.ask(fmt::format("z0,{:x},4", codelet)), "OK");
    EXPECT_EQ(c.ask("c"), "T0bthread:2;");  // SIGSEGV in the codelet
    EXPECT_EQ(c.ask("c"), "X0b");           // the run ended by the fault
  });
  EXPECT_THROW(device.run(), DeviceError);
  gdb.join();
}

// Collectives across the tiles of a chip: 8 rows of 64 on 8 tiles. The all-reduce leaves in
// every row the sum of rows 0..7 added in that order; the reduce-scatter (max) leaves chunk c
// of the element-wise maximum in out's row c; the mean is the sum times 1/8.
TEST(Sdk, CollectivesAcrossTilesReduceEveryRowInOrder) {
  Graph g(Target::preset("mk2", 8));
  constexpr size_t rows = 8, n = 64, m = n / rows;
  const Tensor sum = g.add_variable(DType::kF32, {rows, n}, "sum");
  const Tensor mean = g.add_variable(DType::kF32, {rows, n}, "mean");
  const Tensor wrap = g.add_variable(DType::kI32, {rows, n}, "wrap");
  const Tensor out = g.add_variable(DType::kF32, {rows, m}, "out");
  for (Tensor t : {sum, mean, wrap}) g.map_evenly(t, 0, rows, n);
  g.map_evenly(out, 0, rows, m);
  const Executable exe =
      compile(g, Sequence({ReduceScatterAcrossTiles(sum, out, CollectiveOp::kMax),
                           AllReduceAcrossTiles(sum, CollectiveOp::kSum),
                           AllReduceAcrossTiles(mean, CollectiveOp::kMean),
                           AllReduceAcrossTiles(wrap, CollectiveOp::kSum)}));
  EXPECT_EQ(exe.supersteps, 1u + 2 + 2 + 2);  // a reduce-scatter is one phase, an all-reduce two
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-100.0f, 100.0f);
  std::vector<float> data(rows * n);
  for (float& v : data) v = dist(rng);
  std::vector<int32_t> ints(rows * n);
  for (size_t i = 0; i < ints.size(); ++i) ints[i] = static_cast<int32_t>(0x7ffff000u + i * 4099u);
  Device device(exe);
  device.write_tensor("sum", data.data(), data.size() * 4);
  device.write_tensor("mean", data.data(), data.size() * 4);
  device.write_tensor("wrap", ints.data(), ints.size() * 4);
  device.run();
  std::vector<float> sums(rows * n), means(rows * n), maxima(rows * m);
  std::vector<int32_t> wraps(rows * n);
  device.read_tensor("sum", sums.data(), sums.size() * 4);
  device.read_tensor("mean", means.data(), means.size() * 4);
  device.read_tensor("out", maxima.data(), maxima.size() * 4);
  device.read_tensor("wrap", wraps.data(), wraps.size() * 4);
  for (size_t i = 0; i < n; ++i) {
    float s = data[i], mx = data[i];
    uint32_t w = static_cast<uint32_t>(ints[i]);
    for (size_t r = 1; r < rows; ++r) {
      s = s + data[r * n + i];
      mx = std::max(mx, data[r * n + i]);
      w += static_cast<uint32_t>(ints[r * n + i]);
    }
    for (size_t r = 0; r < rows; ++r) {
      ASSERT_EQ(sums[r * n + i], s) << "row " << r << " element " << i;
      ASSERT_EQ(means[r * n + i], s * (1.0f / 8.0f)) << "row " << r << " element " << i;
      ASSERT_EQ(wraps[r * n + i], static_cast<int32_t>(w)) << "row " << r << " element " << i;
    }
    EXPECT_EQ(maxima[i], mx) << i;  // chunk i / m lands in out's row i / m
  }
}

TEST(SdkErrors, CollectivesAcrossTilesNeedRowsAndChunksOnOneTile) {
  Graph g(Target::preset("mk2", 4));
  const Tensor flat = g.add_variable(DType::kF32, {64}, "flat");
  const Tensor odd = g.add_variable(DType::kF32, {4, 6}, "odd");
  const Tensor split = g.add_variable(DType::kF32, {4, 8}, "split");
  g.map_evenly(flat, 0, 4);
  g.map_evenly(odd, 0, 4, 6);
  g.set_tile_mapping(split, {{0, 1, 0}, {1, 32, 1}});  // row 0's chunk 0 spans tiles 0 and 1
  EXPECT_THAT([&] { compile(g, AllReduceAcrossTiles(flat, CollectiveOp::kSum)); },
              ::testing::ThrowsMessage<GraphError>(
                  HasSubstr("AllReduceAcrossTiles of 'flat': the tensor must have shape {G, n}")));
  EXPECT_THAT([&] { compile(g, AllReduceAcrossTiles(odd, CollectiveOp::kSum)); },
              ::testing::ThrowsMessage<GraphError>(HasSubstr("with n a multiple of G")));
  EXPECT_THAT(
      [&] { compile(g, AllReduceAcrossTiles(split, CollectiveOp::kMax)); },
      ::testing::ThrowsMessage<GraphError>(HasSubstr(
          "AllReduceAcrossTiles of 'split': chunk 0 ends in 'split' elements 0-1, which lie "
          "on more than one tile")));
}

// ---- bad input ----

TEST(SdkErrors, UnmappedTensorInACopy) {
  Graph g(Target::preset("mk2", 2));
  const Tensor a = g.add_variable(DType::kF32, {4}, "a"), b = g.add_variable(DType::kF32, {4}, "b");
  g.set_tile_mapping(a, 0);
  try {
    compile(g, Copy(a, b));
    FAIL();
  } catch (const GraphError& e) {
    EXPECT_THAT(e.what(), HasSubstr("Copy destination tensor 'b' is not mapped to any tile"));
  }
}

TEST(SdkErrors, VertexFieldOnAnotherTile) {
  Graph g(Target::preset("mk2", 2));
  declare_library(g);
  const Tensor a = g.add_variable(DType::kF32, {4}, "a"),
               out = g.add_variable(DType::kF32, {1}, "out");
  g.set_tile_mapping(a, 1);
  g.set_tile_mapping(out, 0);
  const ComputeSet cs = g.add_compute_set("sum");
  EXPECT_THAT(
      [&] {
        g.add_vertex(cs, "sum_f32", 0, {{"a", g.region(a)}, {"out", g.region(out)}, {"n", 4u}});
      },
      ::testing::ThrowsMessage<GraphError>(
          HasSubstr("vertex 0 of compute set 'sum' on tile 0: field 'a' is bound to elements [0, "
                    "4) of tensor 'a', "
                    "which are not all on tile 0 (element 0 is on tile 1)")));
}

// map_evenly over a list of tiles: grains of 2 shared out in the list's order, the first
// tiles one grain more (11 elements, 6 grains on 4 tiles: 2, 2, 1, 1 grains); an empty list and a
// tile the target lacks are refused by name.
// A vertex keeps its bindings in its codelet's field order, whatever order they were given in;
// a copy of a graph shares its vertices until either adds one, and then each has its own.
TEST(Sdk, AGraphsCopyKeepsItsOwnVertices) {
  Graph g(Target::preset("mk2", 2));
  declare_library(g);
  const Tensor a = g.add_variable(DType::kF32, {4}, "a");
  const Tensor out = g.add_variable(DType::kF32, {4}, "out");
  g.set_tile_mapping(a, 1);
  g.set_tile_mapping(out, 1);
  const ComputeSet cs = g.add_compute_set("cs");
  g.add_vertex(cs, "sum_f32", 1, {{"n", 4u}, {"out", g.region(out)}, {"a", g.region(a, 1, 3)}});
  ASSERT_EQ(g.vertices().size(), 1u);
  const std::vector<Binding>& fields = g.vertices()[0].fields;
  ASSERT_EQ(fields.size(), 3u);
  EXPECT_EQ(std::get<Region>(fields[0]).begin, 1u);  // a [1, 3)
  EXPECT_EQ(std::get<Region>(fields[0]).end, 3u);
  EXPECT_EQ(std::get<Region>(fields[1]).tensor.id, out.id);
  EXPECT_EQ(std::get<uint32_t>(fields[2]), 4u);

  Graph copy = g;
  copy.add_vertex(cs, "sum_f32", 1, {{"a", g.region(a)}, {"out", g.region(out)}, {"n", 2u}});
  EXPECT_EQ(g.vertices().size(), 1u);
  EXPECT_EQ(copy.vertices().size(), 2u);
  g.add_vertex(cs, "sum_f32", 1, {{"a", g.region(a)}, {"out", g.region(out)}, {"n", 3u}});
  g.add_vertex(cs, "sum_f32", 1, {{"a", g.region(a)}, {"out", g.region(out)}, {"n", 1u}});
  ASSERT_EQ(g.vertices().size(), 3u);
  ASSERT_EQ(copy.vertices().size(), 2u);
  EXPECT_EQ(std::get<uint32_t>(g.vertices()[1].fields[2]), 3u);
  EXPECT_EQ(std::get<uint32_t>(copy.vertices()[1].fields[2]), 2u);
}

TEST(Sdk, MapEvenlyOverListedTiles) {
  Graph g(Target::preset("mk2", 8));
  const Tensor t = g.add_variable(DType::kF32, {11}, "t");
  g.map_evenly(t, {5, 1, 7, 2}, 2);
  const std::vector<Interval> want = {{0, 4, 5}, {4, 8, 1}, {8, 10, 7}, {10, 11, 2}};
  const std::vector<Interval>& got = g.tensor(t).mapping;
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].begin, want[i].begin) << i;
    EXPECT_EQ(got[i].end, want[i].end) << i;
    EXPECT_EQ(got[i].tile, want[i].tile) << i;
  }
  const Tensor u = g.add_variable(DType::kF32, {4}, "u");
  EXPECT_THAT([&] { g.map_evenly(u, std::vector<unsigned>{}); },
              ::testing::ThrowsMessage<GraphError>(HasSubstr("tensor 'u': no tiles to map it on")));
  EXPECT_THAT(
      [&] {
        g.map_evenly(u, {3, 9});
      },
      ::testing::ThrowsMessage<GraphError>(HasSubstr("tensor 'u': mapped to tile 9")));
}

TEST(SdkErrors, ShapeOrTypeMismatch) {
  Graph g(Target::preset("mk2", 2));
  declare_library(g);
  const Tensor a = g.add_variable(DType::kF32, {4}, "a"), b = g.add_variable(DType::kF32, {5}, "b");
  const Tensor h = g.add_variable(DType::kF16, {4}, "h");
  for (Tensor t : {a, b, h}) g.set_tile_mapping(t, 0);
  EXPECT_THAT(
      [&] { compile(g, Copy(a, b)); },
      ::testing::ThrowsMessage<GraphError>(HasSubstr("Copy from 'a' (4 x f32) to 'b' (5 x f32)")));
  const ComputeSet cs = g.add_compute_set("sum");
  EXPECT_THAT(
      [&] {
        g.add_vertex(cs, "sum_f32", 0, {{"a", g.region(h)}, {"out", g.region(a, 0, 1)}, {"n", 4u}});
      },
      ::testing::ThrowsMessage<GraphError>(HasSubstr("field 'a' wants f32 but tensor 'h' is f16")));
}

TEST(SdkErrors, UnknownCodeletOrField) {
  Graph g(Target::preset("mk2", 1));
  declare_library(g);
  const Tensor a = g.add_variable(DType::kF32, {4}, "a");
  g.set_tile_mapping(a, 0);
  const ComputeSet cs = g.add_compute_set("cs");
  EXPECT_THAT([&] { g.add_vertex(cs, "mul_f32", 0, {}); },
              ::testing::ThrowsMessage<GraphError>(HasSubstr("unknown codelet 'mul_f32'")));
  EXPECT_THAT(
      [&] {
        g.add_vertex(cs, "sum_f32", 0, {{"a", g.region(a)}, {"result", g.region(a)}, {"n", 4u}});
      },
      ::testing::ThrowsMessage<GraphError>(HasSubstr("codelet 'sum_f32' has no field 'result'")));
}

// A codelet whose file has no function of its name: refused at compile time (it used to link
// as an undefined symbol at address 0, and every worker faulted there). The compile's scratch
// directory goes away, whether it succeeds or fails.
TEST(SdkErrors, ACodeletWithNoFunctionOfItsNameIsRefused) {
  char tmpl[] = "/tmp/ipu-sdk-test-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  setenv("TMPDIR", tmpl, 1);
  Graph g(Target::preset("mk2", 1));
  declare_library(g);
  g.add_codelet("mul_f32", kElementwise, {{"n", FieldKind::kScalar, DType::kU32}});
  const Tensor a = g.add_variable(DType::kF32, {4}, "a");
  g.set_tile_mapping(a, 0);
  const ComputeSet cs = g.add_compute_set("cs");
  g.add_vertex(cs, "mul_f32", 0, {{"n", 4u}});
  EXPECT_THAT([&] { compile(g, Execute(cs)); },
              ::testing::ThrowsMessage<CompileError>(HasSubstr(
                  "codelet 'mul_f32': " + kElementwise + " defines no function named 'mul_f32'")));
  Graph fine(Target::preset("mk2", 1));
  const Tensor b = fine.add_variable(DType::kF32, {4}, "b");
  fine.set_tile_mapping(b, 0);
  compile(fine, Sync());
  EXPECT_TRUE(std::filesystem::is_empty(tmpl)) << "a compile left its build directory in " << tmpl;
  std::filesystem::remove_all(tmpl);
  unsetenv("TMPDIR");
}

TEST(SdkErrors, ATargetWithNoExchangeBandwidthIsRefused) {
  Target t = Target::preset("mk2", 4);
  t.machine.chip.exchange.words_per_cycle = 0;
  EXPECT_THAT([&] { Graph g(t); },
              ::testing::ThrowsMessage<GraphError>(HasSubstr("exchange.words-per-cycle")));
}

TEST(SdkErrors, ASecondDeviceInTheProcessIsRefused) {
  Graph g(Target::preset("mk2", 1));
  const Tensor a = g.add_variable(DType::kF32, {4}, "a");
  g.set_tile_mapping(a, 0);
  const Executable exe = compile(g, Sync());
  Device first(exe);
  EXPECT_THAT([&] { Device second(exe); },
              ::testing::ThrowsMessage<DeviceError>(HasSubstr("a second Device in this process")));
  first.run();  // the first still works
}

TEST(SdkErrors, AGdbPortThatIsNoTcpPortIsRefused) {
  Graph g(Target::preset("mk2", 1));
  const Tensor a = g.add_variable(DType::kF32, {4}, "a");
  g.set_tile_mapping(a, 0);
  DeviceOptions options;
  options.gdb_port = 70000;
  const Executable exe = compile(g, Sync());
  EXPECT_THAT([&] { Device device(exe, options); },
              ::testing::ThrowsMessage<DeviceError>(
                  HasSubstr("DeviceOptions: --gdb must be 0 to 65535, not 70000")));
  Device device(exe);  // refused before it took the process's one simulation
  device.run();
}

// A codelet that never returns stops at the device's cycle limit, on by default as on ipu-sim.
TEST(SdkErrors, AHungCodeletStopsAtTheCycleLimit) {
  EXPECT_EQ(DeviceOptions{}.max_cycles, 2'000'000'000u);
  Graph g(Target::preset("mk2", 1));
  g.add_codelet("spin_forever", std::string(IPU_CODELET_DIR) + "/faulty.c", {});
  const Tensor a = g.add_variable(DType::kF32, {4}, "a");
  g.set_tile_mapping(a, 0);
  const ComputeSet cs = g.add_compute_set("cs");
  g.add_vertex(cs, "spin_forever", 0, {});
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "exceptions after SystemC simulation confuse AddressSanitizer's stack shadow";
#endif
  DeviceOptions options;
  options.max_cycles = 200'000;
  Device device(compile(g, Execute(cs)), options);
  EXPECT_THAT([&] { device.run(); }, ::testing::ThrowsMessage<DeviceError>(
                                         HasSubstr("did not finish within 200000 cycles")));
}

// Issue 39: a codelet's name went unquoted into a shell command line. Names that are not C
// identifiers are refused by name (control bytes escaped), and no shell runs the compiler: a
// codelet file whose path is full of shell syntax compiles, and the syntax runs nothing.
TEST(SdkErrors, ACodeletNameThatIsNoCIdentifierIsRefusedByName) {
  Graph g(Target::preset("mk2", 1));
  for (const std::string name : {"x;touch /tmp/pwned", "9lives", "", "a-b", "caf\xc3\xa9"})
    EXPECT_THAT([&] { g.add_codelet(name, kElementwise, {}); },
                ::testing::ThrowsMessage<GraphError>(HasSubstr("is not a C identifier")))
        << name;
  EXPECT_THAT([&] { g.add_codelet("red\x1b[31m", kElementwise, {}); },
              ::testing::ThrowsMessage<GraphError>(
                  HasSubstr("codelet name 'red\\x1b[31m' is not a C identifier")));
  EXPECT_THAT([&] { g.add_codelet(std::string(256, 'a'), kElementwise, {}); },
              ::testing::ThrowsMessage<GraphError>(HasSubstr("at most 255")));
  g.add_codelet("_ok_Name9", kElementwise, {});  // a C identifier is taken
}

// Issue 39: a shape whose product overflows was taken as 2 elements, and stream names that no
// command line can carry (NAME=FILE) were taken; both are refused by name.
TEST(SdkErrors, ShapesThatOverflowOrCannotFitAndUncarriableNamesAreRefused) {
  Graph g(Target::preset("mk2", 1));
  EXPECT_THAT(
      [&] {
        g.add_variable(DType::kF32, {(size_t{1} << 63) + 1, 2}, "huge");
      },
      ::testing::ThrowsMessage<GraphError>(
          HasSubstr("tensor 'huge' of shape {9223372036854775809, 2}: more than 2^64 elements")));
  EXPECT_THAT(
      [&] {
        g.add_variable(DType::kF32, {1, 160 * 1024}, "big");
      },
      ::testing::ThrowsMessage<GraphError>(
          HasSubstr("163840 elements of f32 do not fit the replica's 638976 bytes")));
  g.add_variable(DType::kF32, {1, 156 * 1024}, "fits");  // exactly the tile's 624 KiB
  for (const std::string name : {"y=in", "", "bell\a"})
    EXPECT_THAT(
        [&] { g.add_host_stream(name, DType::kF32, 4, StreamDirection::kHostToDevice); },
        ::testing::ThrowsMessage<GraphError>(HasSubstr("cannot be given on a command line")))
        << name;
  EXPECT_THAT([&] { g.add_variable(DType::kF32, {4}, "w=1"); },
              ::testing::ThrowsMessage<GraphError>(HasSubstr("tensor name 'w=1' cannot be given")));
  EXPECT_THAT(
      [&] { g.add_host_stream("s", DType::kF32, size_t{1} << 40, StreamDirection::kHostToDevice); },
      ::testing::ThrowsMessage<GraphError>(HasSubstr("more than the replica's 638976 bytes")));
}

// A machine whose tiles have more SRAM (tile.sram-bytes, what an architect may ask of a larger
// chip; up to the 1 MiB the images' addresses allow) takes what the Mk2's 624 KiB cannot: the
// firmware is linked for the target's window, so a 600,000-byte tensor on one tile is placed,
// written, copied from its last words and read back; the Mk2 refuses it, and a tile of 256 KiB
// refuses a tensor that the Mk2 holds.
TEST(Sdk, ATileWithMoreSramHoldsWhatTheMk2sCannot) {
  const auto graph = [](uint32_t sram_bytes, size_t elements) {
    hw::MachineConfig m = hw::machine_preset("mk2");
    m.chip.tile.sram_bytes = sram_bytes;
    auto g = std::make_unique<Graph>(Target::of(m, 2));
    const Tensor big = g->add_variable(DType::kF32, {elements}, "big");
    const Tensor last = g->add_variable(DType::kF32, {4}, "last");
    g->set_tile_mapping(big, 1);
    g->set_tile_mapping(last, 0);
    return std::make_tuple(std::move(g), big, last);
  };
  constexpr size_t kElements = 158000;  // 632,000 bytes
  uint32_t mk2_free = 0;                // above the firmware, on the Mk2's tile
  {
    auto [g, big, last] = graph(624 * 1024, 4);
    mk2_free = compile(*g, Copy({{g->region(big), g->region(last)}})).fullest_tile.free;
  }
  ASSERT_LT(mk2_free, kElements * 4);
  // The refusals first: an exception after a SystemC simulation confuses AddressSanitizer.
  {
    auto [g, big, last] = graph(624 * 1024, kElements);
    EXPECT_THAT(
        [&] {
          compile(*g, Copy({{g->region(big, 0, 4), g->region(last)}}));
        },
        ::testing::ThrowsMessage<CompileError>(HasSubstr("tile 1 needs")));
  }
  {
    auto [g, big, last] = graph(256 * 1024, 75000);  // 300,000 bytes: the Mk2 holds them
    EXPECT_THAT(
        [&] {
          compile(*g, Copy({{g->region(big, 0, 4), g->region(last)}}));
        },
        ::testing::ThrowsMessage<CompileError>(HasSubstr("tile 1 needs")));
  }
  auto [g, big, last] = graph(720 * 1024, kElements);  // up to 1 MiB, from 0x4c000
  const Executable exe =
      compile(*g, Copy({{g->region(big, kElements - 4, kElements), g->region(last)}}));
  EXPECT_GT(exe.fullest_tile.used, 632000u);
  EXPECT_EQ(exe.fullest_tile.free, mk2_free + 96 * 1024);  // the window's 96 KiB more
  std::vector<float> values(kElements);
  for (size_t i = 0; i < kElements; ++i) values[i] = static_cast<float>(i);
  Device device(exe);
  device.write_tensor("big", values.data(), values.size() * 4);
  device.run();
  std::vector<float> out(4), back(kElements);
  device.read_tensor("last", out.data(), out.size() * 4);
  device.read_tensor("big", back.data(), back.size() * 4);
  EXPECT_EQ(out, std::vector<float>(values.end() - 4, values.end()));
  EXPECT_EQ(back, values);
}

TEST(Sdk, TheCrossCompilerRunsWithoutAShell) {
  char tmpl[] = "/tmp/ipu-sdk-shell-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = std::string(tmpl) + "/a b;touch pwned$(touch pwned2)'\"";
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(kElementwise, dir + "/elementwise.c");
  const std::string cwd = std::filesystem::current_path();
  std::filesystem::current_path(tmpl);
  Graph g(Target::preset("mk2", 1));
  g.add_codelet("sum_f32", dir + "/elementwise.c",
                {{"a", FieldKind::kInput, DType::kF32},
                 {"out", FieldKind::kOutput, DType::kF32},
                 {"n", FieldKind::kScalar, DType::kU32}});
  const Tensor a = g.add_variable(DType::kF32, {4}, "a");
  const Tensor out = g.add_variable(DType::kF32, {1}, "out");
  g.set_tile_mapping(a, 0);
  g.set_tile_mapping(out, 0);
  const ComputeSet cs = g.add_compute_set("cs");
  g.add_vertex(cs, "sum_f32", 0, {{"a", g.region(a)}, {"out", g.region(out)}, {"n", 4u}});
  EXPECT_NO_THROW(compile(g, Execute(cs)));
  std::filesystem::current_path(cwd);
  EXPECT_FALSE(std::filesystem::exists(std::string(tmpl) + "/pwned"));
  EXPECT_FALSE(std::filesystem::exists(std::string(tmpl) + "/pwned2"));
  std::filesystem::remove_all(tmpl);
}

TEST(SdkErrors, CodeletThatDoesNotCompileReportsFileAndLine) {
  Graph g(Target::preset("mk2", 1));
  g.add_codelet("broken", std::string(IPU_TEST_SOURCE_DIR) + "/firmware/bad_codelet.c", {});
  const Tensor a = g.add_variable(DType::kF32, {4}, "a");
  g.set_tile_mapping(a, 0);
  const ComputeSet cs = g.add_compute_set("cs");
  g.add_vertex(cs, "broken", 0, {});
  EXPECT_THAT([&] { compile(g, Execute(cs)); },
              ::testing::ThrowsMessage<CompileError>(::testing::AllOf(
                  HasSubstr("codelets failed to compile"), HasSubstr("bad_codelet.c:3:"),
                  HasSubstr("undefined_variable"))));
}

// Of the tiles over, the fullest is named with what it holds (its exchange actions by the phases
// that hold the most), and the others counted by chip, with each chip's fullest.
TEST(SdkErrors, TileMemoryOverflowNamesTileAndTensors) {
  Graph g(Target::preset("mk2", 3));
  const Tensor big = g.add_variable(DType::kF32, {100000}, "big");       // 400,000 bytes
  const Tensor bigger = g.add_variable(DType::kF32, {60000}, "bigger");  // 240,000 bytes
  const Tensor over = g.add_variable(DType::kF32, {157000}, "over");     // 628,000 bytes
  g.set_tile_mapping(big, 1);
  g.set_tile_mapping(bigger, 1);
  g.set_tile_mapping(over, 2);
  // Its exchange actions, by the phases that hold them: an action (16 bytes) a copy and the
  // phase's end word (4).
  const Tensor a = g.add_variable(DType::kF32, {4}, "a"), b = g.add_variable(DType::kF32, {4}, "b");
  g.set_tile_mapping(a, 0);
  g.set_tile_mapping(b, 1);
  // Its vertex states, summed by codelet on one line: add_f32's fields are three pointers and
  // a count (16 bytes), sum_f32's two pointers and a count (12).
  add_codelet_library(g);
  const Tensor x = g.add_variable(DType::kF32, {4}, "x"), y = g.add_variable(DType::kF32, {4}, "y");
  g.set_tile_mapping(x, 1);
  g.set_tile_mapping(y, 1);
  const ComputeSet cs = g.add_compute_set("states");
  for (int i = 0; i < 3; ++i)
    g.add_vertex(cs, "add_f32", 1,
                 {{"a", g.region(x)}, {"b", g.region(x)}, {"out", g.region(y)}, {"n", 4u}});
  for (int i = 0; i < 2; ++i)
    g.add_vertex(cs, "sum_f32", 1, {{"a", g.region(x)}, {"out", g.region(y, 0, 1)}, {"n", 4u}});
  EXPECT_THAT(
      [&] {
        compile(g, Sequence({Copy(a, b), Copy(b, a), Copy(a, b), Execute(cs)}));
      },
      ::testing::ThrowsMessage<CompileError>(::testing::AllOf(
          HasSubstr("its exchange actions' largest phases:\n    40 bytes: Copy 'a' -> "
                    "'b'\n    20 bytes: Copy 'b' -> 'a'"),
          HasSubstr("\n  72 bytes: vertex states, 5 (add_f32 3 x 16, sum_f32 2 x 12)\n"),
          ::testing::Not(HasSubstr("vertex state (")), HasSubstr("tile 1 needs"),
          HasSubstr("400000 bytes: tensor 'big' [0, 100000)"),
          HasSubstr("240000 bytes: tensor 'bigger' [0, 60000)"),
          HasSubstr("the fullest of the 2 tiles of 3 that do not fit (chip 0: 2, the "
                    "fullest tile 1 with "),
          ::testing::Not(HasSubstr("tensor 'over'")))));
}

// On a machine, each chip over is named with its fullest tile, and that tile's contents in
// brief (tensors, scratch, tables by kind, largest first) when it is not the fullest of all;
// a tensor's neighbouring pieces on the fullest tile are one line.
TEST(SdkErrors, EachChipOverNamesItsFullestTileInBrief) {
  Graph g(Target::preset("m2000", 2));                                  // 4 chips of 2 tiles
  const Tensor big = g.add_variable(DType::kF32, {170000}, "big");      // 680,000 bytes
  const Tensor other = g.add_variable(DType::kF32, {157000}, "other");  // 628,000 bytes
  const Tensor small = g.add_variable(DType::kF32, {8}, "small");
  g.set_tile_mapping(big, 1);
  g.set_tile_mapping(other, 2);  // chip 1's first tile
  std::vector<Interval> pieces;
  for (size_t i = 0; i < 8; ++i) pieces.push_back({i, i + 1, i < 6 ? 1u : 3u});
  g.set_tile_mapping(small, pieces);
  EXPECT_THAT([&] { compile(g, Sequence({})); },
              ::testing::ThrowsMessage<CompileError>(::testing::AllOf(
                  HasSubstr("tile 1 (chip 0 tile 1) needs"),
                  HasSubstr("chip 0: 1, the fullest tile 1 (chip 0 tile 1) with "),
                  HasSubstr("chip 1: 1, the fullest tile 2 (chip 1 tile 0) with 628080 bytes "
                            "(tensors 628000, "),
                  ::testing::Not(HasSubstr("exchange actions 0")),
                  HasSubstr("\n  24 bytes: tensor 'small' [0, 6)\n"))));
}

// Functions' scratch that does not fit: the report names the function whose body needs the
// most and what is live together in it then.
TEST(SdkErrors, FunctionScratchOverflowNamesTheFunctionAndWhatIsLive) {
  Graph g(Target::preset("mk2", 2));
  const auto scratch = [&](const char* name, size_t elements) {
    const Tensor t = g.add_variable(DType::kF32, {elements}, name);
    g.set_tile_mapping(t, 1);
    g.set_scratch(t);
    return t;
  };
  const Tensor a = scratch("a", 80000), b = scratch("b", 80000);  // 320,000 bytes each
  const Tensor c = scratch("c", 1000), d = scratch("d", 1000);
  const Function wide = g.add_function(Copy(a, b), "wide");
  const Function narrow = g.add_function(Copy(c, d), "narrow");
  EXPECT_THAT(
      [&] {
        compile(g, Sequence({Call(wide), Call(narrow)}));
      },
      ::testing::ThrowsMessage<CompileError>(::testing::AllOf(
          HasSubstr("tile 1 needs"),
          HasSubstr("functions' scratch tensors: 2 functions' own, one body's at a time "
                    "(the largest: 'wide', 640000 bytes live together at most (2 pieces; "
                    "the largest: b 320000, a 320000))"))));
}

TEST(SdkErrors, StreamNeverConnectedOrOfTheWrongSize) {
  Graph g(Target::preset("mk2", 1));
  const Tensor a = g.add_variable(DType::kF32, {8}, "a");
  g.set_tile_mapping(a, 0);
  g.add_host_stream("in", DType::kF32, 8, StreamDirection::kHostToDevice);
  const Executable exe = compile(g, HostWrite("in", a));
  Device device(exe);
  std::vector<float> wrong(7);
  EXPECT_THAT([&] { device.connect_stream("in", wrong.data(), wrong.size() * 4); },
              ::testing::ThrowsMessage<DeviceError>(
                  HasSubstr("stream 'in': buffer of 28 bytes, the stream carries 32")));
  EXPECT_THAT([&] { device.run(); },
              ::testing::ThrowsMessage<DeviceError>(
                  HasSubstr("stream 'in' is used by the program but was never connected")));
}

}  // namespace
}  // namespace ipu::test
