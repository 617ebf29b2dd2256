// The SDK's engine: an executable of several named programs, loaded once and run many times in
// one process with new host data each time, as a host training loop does; and what goes wrong
// (an unknown program, a buffer of the wrong size on a later run, a fault in a later run). One
// device per process (SystemC elaborates once), so ctest runs each test in its own process.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>
#include <vector>

#include "hw/machine/platform.h"
#include "sdk/compiler/compiler.h"
#include "sdk/graph/codelet_library.h"
#include "sdk/image/program.h"
#include "sdk/runtime/device.h"
#include "tests/support/sdk_graph.h"

namespace ipu::test {
namespace {

using namespace ipu::sdk;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

// acc lives on the device across runs: "reset" loads it from the host, "step" adds a new
// host batch x to it (acc = acc + x) and sends acc back, "peek" only sends it back.
struct Accumulator {
  static constexpr size_t n = 256;
  Graph g{Target::preset("mk2", 4)};
  Executable exe;
  Accumulator() {
    add_codelet_library(g);
    const Tensor acc = g.add_variable(DType::kF32, {n}, "acc");
    const Tensor x = g.add_variable(DType::kF32, {n}, "x");
    const Tensor sum = g.add_variable(DType::kF32, {n}, "sum");
    for (Tensor t : {acc, x, sum}) g.map_evenly(t, 0, 4);
    g.add_host_stream("acc_in", DType::kF32, n, StreamDirection::kHostToDevice);
    g.add_host_stream("x_in", DType::kF32, n, StreamDirection::kHostToDevice);
    g.add_host_stream("acc_out", DType::kF32, n, StreamDirection::kDeviceToHost);
    const ComputeSet add = g.add_compute_set("add");
    add_vertices(g, add, acc, x, sum);
    exe = compile(g, {{"reset", HostWrite("acc_in", acc)},
                      {"step", Sequence({HostWrite("x_in", x), Execute(add), Copy(sum, acc),
                                         HostRead(acc, "acc_out")})},
                      {"peek", HostRead(acc, "acc_out")}});
  }
};

TEST(SdkEngine, NamedProgramsRunManyTimesWithNewHostData) {
  Accumulator a;
  ASSERT_EQ(a.exe.programs.size(), 3u);
  EXPECT_EQ(a.exe.programs[1].name, "step");
  EXPECT_EQ(a.exe.programs[1].host_transfers.size(), 2u);
  DeviceOptions options;
  options.keep_records = false;
  Device device(a.exe, options);
  std::vector<float> acc_in(a.n), x(a.n), acc_out(a.n, -1.0f);
  for (size_t i = 0; i < a.n; ++i) acc_in[i] = static_cast<float>(i);
  device.connect_stream("acc_in", acc_in.data(), a.n * 4);
  device.connect_stream("x_in", x.data(), a.n * 4);
  device.connect_stream("acc_out", acc_out.data(), a.n * 4);
  device.run("reset");

  std::vector<float> expected = acc_in;
  std::vector<uint64_t> step_cycles;
  std::vector<std::vector<hw::TileCounts>> step_contexts;
  for (int step = 0; step < 5; ++step) {
    for (size_t i = 0; i < a.n; ++i) x[i] = 0.5f * static_cast<float>(step + 1) - 0.01f * i;
    for (size_t i = 0; i < a.n; ++i) expected[i] += x[i];
    const DeviceReport& r = device.run("step");
    EXPECT_EQ(r.program, "step");
    EXPECT_EQ(acc_out, expected) << "step " << step;
    EXPECT_EQ(r.host_to_device_bytes, a.n * 4);  // this run's alone
    EXPECT_EQ(r.device_to_host_bytes, a.n * 4);
    EXPECT_EQ(r.run.supersteps, 4u);  // dispatch, x in, the copy's exchange, acc out
    step_cycles.push_back(r.run.cycles);
    // The per-context counts are this run's alone too (issue 39, item 14: they were every run's
    // so far): the same each step, the supervisor's active cycles the run's.
    step_contexts.push_back(r.run.per_tile);
    for (const hw::TileCounts& t : r.run.per_tile) {
      EXPECT_EQ(t.contexts[0].runs, 1u) << "tile " << t.tile;
      EXPECT_EQ(t.contexts[0].active_cycles, r.run.cycles) << "tile " << t.tile;
    }
  }
  for (size_t i = 2; i < step_contexts.size(); ++i)
    for (size_t t = 0; t < step_contexts[i].size(); ++t)
      for (size_t c = 0; c < step_contexts[i][t].contexts.size(); ++c) {
        const hw::ContextCounts &now = step_contexts[i][t].contexts[c],
                                &first = step_contexts[1][t].contexts[c];
        EXPECT_EQ(now.instructions, first.instructions) << "step " << i << " context " << c;
        EXPECT_EQ(now.runs, first.runs) << "step " << i << " context " << c;
        EXPECT_EQ(now.issue_slots, first.issue_slots) << "step " << i << " context " << c;
      }
  // Every step does the same work from the same state: the same cycles each time. The first
  // follows 'reset' rather than 'step', whose tiles reach the dispatch sync at other cycles.
  for (size_t i = 1; i < step_cycles.size(); ++i) EXPECT_EQ(step_cycles[i], step_cycles.back());
  EXPECT_LE(step_cycles.front() - step_cycles.back(), 1u);

  // A new buffer between runs; and the state stayed on the device.
  std::vector<float> other(a.n, -1.0f);
  device.connect_stream("acc_out", other.data(), a.n * 4);
  const DeviceReport& peek = device.run("peek");
  EXPECT_EQ(other, expected);
  EXPECT_EQ(peek.host_to_device_bytes, 0u);
  EXPECT_EQ(device.runs(), 7u);
  // Without keep_records (and no statistics, trace, report or profile) the device keeps no
  // per-superstep records, so running again and again does not grow it (issue 39, item 20: 9.5
  // KB a run); the counts above came from the totals kept instead.
  EXPECT_TRUE(device.machine().sync_network().barriers().empty());
  EXPECT_TRUE(device.machine().exchange().records().empty());
  for (unsigned t : device.machine().active_tiles())
    EXPECT_TRUE(device.machine().tile(t).timeline().empty()) << "tile " << t;
  EXPECT_EQ(device.machine().sync_network().barrier_count(), 2 + 5 * 4 + 2u)
      << "reset's dispatch and acc in, each step's four, and peek's dispatch and acc out";
  std::vector<float> acc(a.n);
  device.read_tensor("acc", acc.data(), a.n * 4);
  EXPECT_EQ(acc, expected);
}

// With no host to answer the dispatch (ipu-sim run of a saved image), the tiles run the program
// their image names, program 0, once, and exit.
TEST(SdkEngine, WithoutAHostTheFirstProgramRunsOnce) {
  Graph g(Target::preset("mk2", 2));
  const Tensor x = g.add_constant(DType::kF32, {4}, std::vector<float>{1, 2, 3, 4}.data(), "x");
  const Tensor y = g.add_variable(DType::kF32, {4}, "y");
  g.set_tile_mapping(x, 0);
  g.set_tile_mapping(y, 1);
  const Executable exe = compile(g, {{"copy", Copy(x, y)}, {"other", Sync()}});
  hw::PlatformOptions options;
  options.machine = exe.machine;
  std::ostringstream console, trace;
  hw::Platform platform(options, load_program(exe.image, exe.machine), console, trace);
  const hw::RunReport report = platform.run();
  EXPECT_EQ(report.outcome.result, hw::ChipOutcome::Result::kExited);
  EXPECT_EQ(report.outcome.exit_status, 0);
  EXPECT_EQ(report.supersteps, 3u);  // dispatch, the copy's exchange, the dispatch that exits
  std::vector<float> got(4);
  for (const Placement& p : exe.tensors.at("y"))
    platform.machine().tile(p.tile).read(p.address, reinterpret_cast<uint8_t*>(got.data()), 16);
  EXPECT_EQ(got, (std::vector<float>{1, 2, 3, 4}));
}

TEST(SdkEngine, ProgramsNeedUniqueNames) {
  Graph g(Target::preset("mk2", 1));
  const Tensor t = g.add_variable(DType::kF32, {4}, "t");
  g.set_tile_mapping(t, 0);
  EXPECT_THAT(
      [&] {
        compile(g, {{"a", Sync()}, {"a", Sync()}});
      },
      ThrowsMessage<CompileError>(HasSubstr("two programs are named 'a'")));
  EXPECT_THAT(
      [&] {
        compile(g, {{"", Sync()}});
      },
      ThrowsMessage<CompileError>(HasSubstr("a program needs a name")));
  EXPECT_THAT([&] { compile(g, std::vector<NamedProgram>{}); },
              ThrowsMessage<CompileError>(HasSubstr("at least one program")));
}

// A name the executable lacks runs nothing and leaves the device as it was; so does a stream
// buffer of the wrong size offered before a later run.
TEST(SdkEngineErrors, UnknownProgramOrWrongBufferOnALaterRunChangesNothing) {
  Accumulator a;
#if defined(__SANITIZE_ADDRESS__)
  // SystemC switches coroutine stacks without telling ASan, so an exception after sc_start()
  // leaves stale stack shadow and ASan reports false stack errors; the Release run checks this.
  // UnknownProgramBeforeAnyRun covers the same errors under the sanitizers.
  GTEST_SKIP() << "exceptions after SystemC simulation confuse AddressSanitizer's stack shadow";
#endif
  Device device(a.exe);
  std::vector<float> acc_in(a.n, 2.0f), x(a.n, 1.0f), acc_out(a.n);
  device.connect_stream("acc_in", acc_in.data(), a.n * 4);
  device.connect_stream("x_in", x.data(), a.n * 4);
  device.connect_stream("acc_out", acc_out.data(), a.n * 4);
  device.run("reset");
  device.run("step");
  EXPECT_EQ(acc_out, std::vector<float>(a.n, 3.0f));

  EXPECT_THAT([&] { device.run("train"); },
              ThrowsMessage<DeviceError>(HasSubstr(
                  "run('train'): the executable has no program of that name (it has 'reset', "
                  "'step', 'peek')")));
  EXPECT_THAT([&] { device.run(); },
              ThrowsMessage<DeviceError>(HasSubstr("the executable has 3 programs")));
  std::vector<float> short_buffer(a.n - 1);
  EXPECT_THAT([&] { device.connect_stream("x_in", short_buffer.data(), short_buffer.size() * 4); },
              ThrowsMessage<DeviceError>(
                  HasSubstr("stream 'x_in': buffer of 1020 bytes, the stream carries 1024")));
  EXPECT_EQ(device.runs(), 2u);

  // The old buffer stays connected, and the device carries on where it was.
  device.run("step");
  EXPECT_EQ(acc_out, std::vector<float>(a.n, 4.0f));
}

TEST(SdkEngineErrors, UnknownProgramBeforeAnyRun) {
  Accumulator a;
  Device device(a.exe);
  EXPECT_THAT([&] { device.run("train"); },
              ThrowsMessage<DeviceError>(HasSubstr("run('train'): the executable has no program")));
  EXPECT_THAT([&] { device.run(); },
              ThrowsMessage<DeviceError>(HasSubstr("the executable has 3 programs")));
  EXPECT_THAT([&] { device.run("step"); },
              ThrowsMessage<DeviceError>(
                  HasSubstr("stream 'x_in' is used by the program but was never connected")));
  EXPECT_EQ(device.runs(), 0u);
}

// A fault in a later run surfaces with its report; the device then refuses to run, naming why.
TEST(SdkEngineErrors, AFaultInALaterRunStopsTheDeviceForGood) {
  Graph g(Target::preset("mk2", 2));
  add_codelet_library(g);
  g.add_codelet("read_null", std::string(IPU_CODELET_DIR) + "/faulty.c", {});
  const Tensor t = g.add_variable(DType::kF32, {4}, "t");
  g.map_evenly(t, 0, 2);
  const ComputeSet bad = g.add_compute_set("bad");
  g.add_vertex(bad, "read_null", 1, {});
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "exceptions after SystemC simulation confuse AddressSanitizer's stack shadow";
#endif
  Device device(compile(g, {{"fine", Sync()}, {"faulty", Execute(bad)}}));
  device.run("fine");
  device.run("fine");
  EXPECT_THAT(
      [&] { device.run("faulty"); },
      ThrowsMessage<DeviceError>(HasSubstr("tile 1 context 1 (worker): load access fault")));
  EXPECT_THAT([&] { device.run("fine"); },
              ThrowsMessage<DeviceError>(HasSubstr(
                  "run('fine'): the device stopped in an earlier run and runs nothing more")));
}

}  // namespace
}  // namespace ipu::test
