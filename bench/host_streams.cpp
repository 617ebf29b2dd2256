// Host streams on an IPU-Machine (issue 11): a HostWrite and a HostRead of SIZE bytes per
// replica on an M2000 of 4 one-chip replicas, the tensor spread over all 1472 tiles of each
// chip. The host moves every replica's stream over the gateway's two 100 GbE RoCE ports
// (25 GB/s together) into streaming memory during the host sync, then the tiles read their
// pieces over their chips' links (the board's two DIMMs: 38.4 GB/s); a read goes the other way.
// Prints each leg's rate against its link's, and the same stream over PCIe for comparison.
// `host_streams [SIZE]` (bytes, suffix K or M; default 16M).
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <systemc>
#include <vector>

#include "bench/bench_help.h"
#include "bench/parse_size.h"
#include "sdk/compiler/compiler.h"
#include "sdk/runtime/device.h"

namespace {

using namespace ipu::sdk;

int measure(size_t bytes, bool gateway) {
  constexpr unsigned R = 4;
  Graph g(Target::preset("m2000", 0, R));
  const size_t elements = bytes / 4;
  const Tensor x = g.add_variable(DType::kF32, {elements}, "x");
  g.map_evenly(x, 0, g.tiles());
  g.add_host_stream("in", DType::kF32, elements, StreamDirection::kHostToDevice);
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

}  // namespace

int main(int argc, char** argv) {
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
  if (ipu::bench::print_help(argc, argv, "[SIZE]",
                             "Host streams on an M2000 over the gateway's RoCE ports and over PCIe "
                             "(SIZE bytes per replica, 16M by default), beside the links' rates."))
    return 0;
  if (argc == 4 && std::strcmp(argv[1], "--point") == 0)
    return sc_core::sc_elab_and_sim(argc, argv);
  const std::string size = argc >= 2 ? argv[1] : "16M";
  int failures = 0;
  for (const char* link : {"gateway", "pcie"}) {
    // SystemC elaborates one design per process: each measurement runs in a child.
    const pid_t child = fork();
    if (child == 0) {
      execl("/proc/self/exe", argv[0], "--point", size.c_str(), link, static_cast<char*>(nullptr));
      _exit(127);
    }
    int status = 0;
    waitpid(child, &status, 0);
    failures += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  return failures == 0 ? 0 : 1;
}

int sc_main(int, char** argv) {
  return measure(ipu::bench::parse_size(argv[2]), std::strcmp(argv[3], "gateway") == 0);
}
