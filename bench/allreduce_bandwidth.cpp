// All-reduce bandwidth across replicas of one chip (issue 11): an f32 tensor spread over all
// 1472 tiles of each chip is summed over 2, 4 and 16 chips with the SDK's AllReduce, on the
// unidirectional and the bidirectional ring, for sizes from 4 KiB to 64 MiB. Prints the
// simulated time from the sync before the collective to its end, the algorithm bandwidth
// (bytes / time), and the ring model's time beside it:
//   2 (N - 1) / N x bytes / ring bandwidth + 2 (N - 1) x (external sync + link latency)
// where the ring bandwidth is the slowest IPU-Link bundle the ring crosses (links x 16 GB/s),
// twice that for the bidirectional ring, which sends half the data each way. Each point runs
// the one-way ring, the bidirectional ring and the algorithm the SDK chooses by size ("auto":
// direct on 2 chips and halving-doubling on 4 and 16 at small sizes), held to the one-way ring's
// model (the target) and shown against the bidirectional ring's too. `allreduce_bandwidth` runs the
// default set; `allreduce_bandwidth N SIZE [ALGORITHM]` one point (SIZE in bytes, suffix K or M for
// KiB / MiB; ALGORITHM ring, bidirectional, direct, halving-doubling or auto, else all three).
// ALLREDUCE_PHASES=1 also prints every sync's last arrival and release, the reduction's compute
// sets and every exchange phase's duration and last arrival, to see where a point's time goes.
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <iostream>
#include <string>
#include <systemc>
#include <vector>

#include "bench/bench_help.h"
#include "bench/parse_size.h"
#include "hw/ipulink/ipulink.h"
#include "hw/machine/machine.h"
#include "hw/sync/sync_network.h"
#include "sdk/compiler/compiler.h"
#include "sdk/runtime/device.h"

namespace {

using namespace ipu::sdk;

int measure(unsigned chips, size_t bytes, CollectiveAlgorithm algorithm) {
  // kAuto: the algorithm the SDK picks for this size, named after "auto".
  const std::string name =
      algorithm == CollectiveAlgorithm::kAuto
          ? fmt::format("auto: {}",
                        collective_algorithm_name(all_reduce_algorithm({}, chips, 1, bytes)))
          : std::string(algorithm == CollectiveAlgorithm::kBidirectionalRing
                            ? "bidirectional"
                            : collective_algorithm_name(algorithm));
  const char* preset = chips == 16 ? "pod16" : "m2000";
  Target target = Target::preset(preset);
  target.machine.chips = chips;  // 2 chips: one rung of an M2000
  target.replicas = chips;
  Graph g(target);
  const size_t elements = bytes / 4;
  const Tensor x = g.add_variable(DType::kF32, {elements}, "x");
  g.map_evenly(x, 0, g.tiles());
  const auto t0 = std::chrono::steady_clock::now();
  // The collective's time runs from the release of the sync before it to the last tile's
  // arrival at the sync after it: the program's end (its last step, the host's sync) is not
  // the collective's.
  const Executable exe = compile(
      g, Sequence({Sync(SyncScope::kExternal), AllReduce(x, CollectiveOp::kSum, {algorithm}),
                   Sync(SyncScope::kExternal)}));
  const auto t1 = std::chrono::steady_clock::now();
  DeviceOptions options;
  options.profile = std::getenv("ALLREDUCE_PHASES") != nullptr;
  Device device(exe, options);
  std::vector<float> data(elements);
  for (unsigned r = 0; r < chips; ++r) {
    for (size_t i = 0; i < elements; ++i) data[i] = static_cast<float>((i + r) % 64);
    device.write_tensor("x", r, data.data(), bytes);
  }
  device.run();
  const auto t2 = std::chrono::steady_clock::now();
  // Check the result on the last replica (every element a sum of small whole numbers: exact).
  device.read_tensor("x", chips - 1, data.data(), bytes);
  for (size_t i = 0; i < elements; ++i) {
    float sum = 0;
    for (unsigned r = 0; r < chips; ++r) sum += static_cast<float>((i + r) % 64);
    if (data[i] != sum) {
      fmt::print(stderr, "element {}: {} != {}\n", i, data[i], sum);
      return 1;
    }
  }
  const auto& machine = device.machine();
  const auto& m = machine.config();
  if (std::getenv("ALLREDUCE_PHASES")) {
    for (const auto& b : machine.sync_network().barriers())
      fmt::print("sync: phase {} group {:#x} last arrival {} release {}\n", b.phase, b.group,
                 *std::max_element(b.arrivals.begin(), b.arrivals.end()), b.release);
    print_profile(std::cout, device.profile(), m.chip.tiles, chips, 8);
  }
  if (std::getenv("ALLREDUCE_PHASES"))
    for (const auto& e : machine.exchange().records())
      fmt::print("phase {}: release {} end {} ({} cycles) last arrival +{} words {}\n", e.phase,
                 e.release, e.end, e.end - e.release,
                 e.last_arrival ? e.last_arrival - e.release : 0, e.words);
  // From the release of the program's external sync (the run's first barrier is the dispatch).
  const auto& barriers = machine.sync_network().barriers();
  const auto external = std::find_if(barriers.begin(), barriers.end(), [](const auto& b) {
    return b.group == ipu::hw::SyncNetwork::kExternal;
  });
  const auto after = std::find_if(barriers.rbegin(), barriers.rend(), [](const auto& b) {
    return b.group == ipu::hw::SyncNetwork::kExternal;
  });
  const uint64_t start = external->release;
  const uint64_t cycles = *std::max_element(after->arrivals.begin(), after->arrivals.end()) - start;
  const double clock = m.chip.tile.clock_hz;
  // The ring's slowest hop: over one-chip replicas the ring crosses rungs (6 links) and, with
  // more than 2 chips, columns (2 links).
  const unsigned links = chips > 2 ? m.ipulink.column_links : m.ipulink.rung_links;
  const double sync_cycles = static_cast<double>(
      m.chip.sync.internal_cycles + ipu::hw::external_sync_cycles(m.chip.sync, clock, chips));
  const double latency_cycles = 2.0 * m.chip.exchange.base_latency +
                                static_cast<double>(ipu::hw::ipulink_hop_cycles(m.ipulink, clock));
  const double n = chips;
  // The ring model at `ways` (1, or 2 for the bidirectional ring: on 2 chips both rings cross
  // the same rung the same ways, so the second adds nothing).
  const auto model_of = [&](double ways) {
    const double ring_bytes_per_second =
        links * m.ipulink.bytes_per_second * (chips > 2 ? ways : 1.0);
    return 2.0 * (n - 1) / n * static_cast<double>(bytes) / ring_bytes_per_second * clock +
           2.0 * (n - 1) * (sync_cycles + latency_cycles);
  };
  // The one-way ring's model is the target (issue 35); the bidirectional ring is held to its
  // own, and any other algorithm is shown against both.
  const double model = model_of(algorithm == CollectiveAlgorithm::kBidirectionalRing ? 2.0 : 1.0);
  const std::string also =
      algorithm == CollectiveAlgorithm::kRing ||
              algorithm == CollectiveAlgorithm::kBidirectionalRing
          ? std::string()
          : fmt::format(" (bidirectional's {:.2f})", static_cast<double>(cycles) / model_of(2.0));
  const double seconds = static_cast<double>(cycles) / clock;
  fmt::print(
      "allreduce {:2} chips {:>24} {:>8}: {:9} cycles {:9.1f} us {:7.2f} GB/s | model {:9.0f} "
      "cycles {:7.2f} GB/s | time / model {:.2f}{} | host: compile {:.1f} s, run {:.1f} s\n",
      chips, name,
      bytes >= (1u << 20) ? fmt::format("{} MiB", bytes >> 20) : fmt::format("{} KiB", bytes >> 10),
      cycles, seconds * 1e6, static_cast<double>(bytes) / seconds / 1e9, model,
      static_cast<double>(bytes) / (model / clock) / 1e9, static_cast<double>(cycles) / model, also,
      std::chrono::duration<double>(t1 - t0).count(),
      std::chrono::duration<double>(t2 - t1).count());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
  if (ipu::bench::print_help(
          argc, argv, "[CHIPS SIZE [ALGORITHM]]",
          "All-reduce bandwidth of the SDK's AllReduce over 2, 4 and 16 chips and sizes from 4 KiB "
          "to 64 MiB (or one point), beside the ring model."))
    return 0;
  if (argc == 5 && std::strcmp(argv[1], "--point") == 0)
    return sc_core::sc_elab_and_sim(argc, argv);
  struct Point {
    unsigned chips;
    std::string size;
  };
  std::vector<Point> points;
  std::vector<const char*> algorithms = {"ring", "bidirectional", "auto"};
  if (argc == 3 || argc == 4) {
    points.push_back({static_cast<unsigned>(std::stoul(argv[1])), argv[2]});
    if (argc == 4) algorithms = {argv[3]};
  } else {
    for (unsigned chips : {2u, 4u, 16u})
      for (const char* size : {"4K", "64K", "256K", "4M", "64M"}) points.push_back({chips, size});
  }
  int failures = 0;
  for (const Point& p : points)
    for (const char* algorithm : algorithms) {
      // SystemC elaborates one design per process: each point runs in a child.
      const pid_t child = fork();
      if (child == 0) {
        const std::string chips = std::to_string(p.chips);
        execl("/proc/self/exe", argv[0], "--point", chips.c_str(), p.size.c_str(), algorithm,
              static_cast<char*>(nullptr));
        _exit(127);
      }
      int status = 0;
      waitpid(child, &status, 0);
      failures += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
  return failures == 0 ? 0 : 1;
}

int sc_main(int, char** argv) {
  const std::string algorithm = argv[4];
  return measure(static_cast<unsigned>(std::stoul(argv[2])), ipu::bench::parse_size(argv[3]),
                 algorithm == "ring"               ? CollectiveAlgorithm::kRing
                 : algorithm == "bidirectional"    ? CollectiveAlgorithm::kBidirectionalRing
                 : algorithm == "direct"           ? CollectiveAlgorithm::kDirect
                 : algorithm == "halving-doubling" ? CollectiveAlgorithm::kHalvingDoubling
                                                   : CollectiveAlgorithm::kAuto);
}
