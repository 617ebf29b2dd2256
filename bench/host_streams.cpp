// Host streams on an IPU-Machine (issue 11): a HostWrite and a HostRead of SIZE bytes per
// replica on an M2000 of 4 one-chip replicas, the tensor spread over all 1472 tiles of each
// chip. The host moves every replica's stream over the gateway's two 100 GbE RoCE ports
// (25 GB/s together) into streaming memory during the host sync, then the tiles read their
// pieces over their chips' links (the board's two DIMMs: 38.4 GB/s); a read goes the other way.
// Prints each leg's rate against its link's, and the same stream over PCIe for comparison.
// Then a loop of such HostWrites in its steady state (what kLoopUses more uses add), with the
// stream's two buffers (the host's RoCE leg of the next use runs while the tiles read this one's,
// issue 35 item 3) and with one (the legs in series). Both legs pass through the DIMMs, 2 x 19.2
// GB/s for writes and reads together, so the loop's bound is the DIMMs' 38.4 GB/s over the two
// passes of each byte, 19.2 GB/s, below either leg alone. `host_streams [SIZE]` (bytes, suffix K or
// M; default 16M).
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <systemc>
#include <vector>

#include "bench/bench_help.h"
#include "bench/parse_size.h"
#include "sdk/compiler/compiler.h"
#include "sdk/runtime/device.h"

namespace {

using namespace ipu::sdk;

constexpr unsigned R = 4, kLoopUses = 4;

// x over every tile of each of R one-chip replicas, and the stream "in" of its size.
struct Streamed {
  Graph g{Target::preset("m2000", 0, R)};
  Tensor x;
  explicit Streamed(size_t bytes) : x(g.add_variable(DType::kF32, {bytes / 4}, "x")) {
    g.map_evenly(x, 0, g.tiles());
    g.add_host_stream("in", DType::kF32, bytes / 4, StreamDirection::kHostToDevice);
  }
};

// The loop's whole rate in GB/s; the children report it to the parent on stdout.
int measure_loop(size_t bytes, bool prefetch) {
  Streamed streamed(bytes);
  Graph& g = streamed.g;
  const Tensor x = streamed.x;
  const size_t elements = bytes / 4;
  CompileOptions options;
  options.host_link = HostLink::kGateway;
  options.prefetch_streams = prefetch;
  const Executable exe = compile(g,
                                 {{"once", HostWrite("in", x)},
                                  {"loop", Repeat(1 + kLoopUses, HostWrite("in", x))},
                                  {"none", Sequence({})}},
                                 options);
  Device device(exe);
  std::vector<float> in(elements * R), back(elements * R);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i % 1000003);
  device.connect_stream("in", in.data(), in.size() * 4);
  // The loop's first use is not prefetched (nothing before it in the run): the steady state is
  // what kLoopUses more uses add to one.
  const uint64_t once = device.run("once").run.cycles;
  const DeviceReport& r = device.run("loop");
  device.read_tensor("x", R - 1, back.data() + elements * (R - 1), bytes);
  if (!std::equal(back.begin() + elements * (R - 1), back.end(), in.begin() + elements * (R - 1))) {
    fmt::print(stderr, "the loop's data did not arrive intact\n");
    return 1;
  }
  const double seconds = static_cast<double>(r.run.cycles - once) / exe.machine.chip.tile.clock_hz;
  fmt::print("{:.3f} {}\n", static_cast<double>(bytes) * R * kLoopUses / seconds / 1e9,
             r.prefetched_bytes);
  return 0;
}

int measure(size_t bytes, bool gateway) {
  Streamed streamed(bytes);
  Graph& g = streamed.g;
  const Tensor x = streamed.x;
  const size_t elements = bytes / 4;
  g.add_host_stream("out", DType::kF32, elements, StreamDirection::kDeviceToHost);
  CompileOptions options;
  options.host_link = gateway ? HostLink::kGateway : HostLink::kPcie;
  const Executable exe =
      compile(g, {{"in", HostWrite("in", x)}, {"out", HostRead(x, "out")}, {"none", Sequence({})}},
              options);
  Device device(exe);
  std::vector<float> in(elements * R), out(elements * R);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i % 1000003);
  device.connect_stream("in", in.data(), in.size() * 4);
  device.connect_stream("out", out.data(), out.size() * 4);
  const double clock = exe.machine.chip.tile.clock_hz;
  const uint64_t dispatch = device.run("none").host_transfer_cycles;
  const auto leg = [&](const char* name) {
    const DeviceReport& r = device.run(name);
    return std::make_pair(r.host_transfer_cycles - dispatch, r.run.cycles);
  };
  const auto [in_host, in_total] = leg("in");
  const auto [out_host, out_total] = leg("out");
  if (in != out) {
    fmt::print(stderr, "the data did not come back intact\n");
    return 1;
  }
  const double total = static_cast<double>(bytes) * R;
  const auto rate = [&](uint64_t cycles) {
    return total / (static_cast<double>(cycles) / clock) / 1e9;
  };
  const char* link = gateway ? "RoCE (2 x 100 GbE)" : "PCIe (4 chips x 32 GB/s)";
  const double target = gateway ? 25.0 : 4 * 32.0;
  fmt::print(
      "{:>7} x 4 replicas over {}: host leg in {:.2f} / out {:.2f} GB/s of {:.0f} ({:.1f}% / "
      "{:.1f}%)",
      bytes >= (1u << 20) ? fmt::format("{} MiB", bytes >> 20) : fmt::format("{} KiB", bytes >> 10),
      link, rate(in_host), rate(out_host), target, 100 * rate(in_host) / target,
      100 * rate(out_host) / target);
  if (gateway)
    fmt::print("; tiles' leg in {:.2f} / out {:.2f} GB/s of 38.4 (2 DIMMs)",
               rate(in_total - in_host - dispatch), rate(out_total - out_host - dispatch));
  fmt::print("; whole transfer in {:.2f} / out {:.2f} GB/s\n", rate(in_total), rate(out_total));
  return 0;
}

// Runs this program's `--point SIZE MODE` in a child (SystemC elaborates one design per
// process); returns its stdout, or nothing if it failed.
std::optional<std::string> child(const char* self, const std::string& size, const char* mode,
                                 bool capture) {
  int pipe_fds[2];
  if (capture && pipe(pipe_fds) != 0) return std::nullopt;
  const pid_t pid = fork();
  if (pid == 0) {
    if (capture) {
      dup2(pipe_fds[1], 1);
      close(pipe_fds[0]);
    }
    execl("/proc/self/exe", self, "--point", size.c_str(), mode, static_cast<char*>(nullptr));
    _exit(127);
  }
  std::string out;
  if (capture) {
    close(pipe_fds[1]);
    char buffer[256];
    for (ssize_t n; (n = read(pipe_fds[0], buffer, sizeof buffer)) > 0;) out.append(buffer, n);
    close(pipe_fds[0]);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0)) return std::nullopt;
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
  if (ipu::bench::print_help(argc, argv, "[SIZE]",
                             "Host streams on an M2000 over the gateway's RoCE ports and over PCIe "
                             "(SIZE bytes per replica, 16M by default), beside the links' rates; "
                             "then a loop of HostWrites with the stream's RoCE leg prefetched "
                             "and in series, beside the DIMMs' bound."))
    return 0;
  if (argc == 4 && std::strcmp(argv[1], "--point") == 0)
    return sc_core::sc_elab_and_sim(argc, argv);
  const std::string size = argc >= 2 ? argv[1] : "16M";
  int failures = 0;
  for (const char* link : {"gateway", "pcie"}) failures += !child(argv[0], size, link, false);
  const auto prefetched = child(argv[0], size, "loop-prefetch", true);
  const auto series = child(argv[0], size, "loop-series", true);
  if (!prefetched || !series) return 1;
  double rate = 0, series_rate = 0;
  unsigned long long sent_ahead = 0, none = 0;
  if (std::sscanf(prefetched->c_str(), "%lf %llu", &rate, &sent_ahead) != 2 ||
      std::sscanf(series->c_str(), "%lf %llu", &series_rate, &none) != 2)
    return 1;
  // Each byte crosses the DIMMs twice: written by the host, read by the tiles.
  constexpr double kDimmBound = 2 * 19.2 / 2;
  fmt::print(
      "{} uses of a HostWrite in a loop: the next use's RoCE leg during this one's tiles' leg "
      "{:.2f} GB/s ({} bytes sent ahead), in series {:.2f} GB/s; bound: the DIMMs' 38.4 GB/s "
      "over two passes, {:.1f} GB/s: {:.1f}% (target >= 90%{})\n",
      kLoopUses, rate, sent_ahead, series_rate, kDimmBound, 100 * rate / kDimmBound,
      rate >= 0.9 * kDimmBound ? ", met" : ", not met");
  return failures == 0 ? 0 : 1;
}

int sc_main(int, char** argv) {
  const size_t bytes = ipu::bench::parse_size(argv[2]);
  const std::string mode = argv[3];
  if (mode == "loop-prefetch" || mode == "loop-series")
    return measure_loop(bytes, mode == "loop-prefetch");
  return measure(bytes, mode == "gateway");
}
