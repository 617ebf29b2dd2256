// Host cost of simulating a full chip: a compute-and-exchange superstep loop on all 1472 tiles
// (six workers computing, then a ring exchange; bench/firmware/superstep_loop.c), and the same
// loop on 16 tiles, each with the tiles' compute on 1 and 2 host threads (and all the host's
// cores on a wider host). Prints aggregate simulated MIPS (target >= 100 on one host core), the
// speed-up on 2 threads (target >= 1.8), the share of host time the tiles' compute bursts took
// on one thread (what threads can divide), host seconds per superstep and peak resident memory
// (target <= 1.2 GiB for the full chip).
#include "bench/chip_bench.h"

int bench_body(const std::string& preset) {
  for (unsigned tiles : {1472u, 16u}) {
    ipu::bench::compare_thread_counts(
        fmt::format("chip_host_cost {} ({} tiles active)", preset, tiles),
        [&](unsigned threads) {
          std::unique_ptr<ipu::hw::Platform> platform;
          std::ostringstream console;
          const auto r =
              ipu::bench::run_image(preset, tiles == 16 ? SUPERSTEP_IMAGE_16 : SUPERSTEP_IMAGE,
                                    1472, platform, console, threads);
          const ipu::bench::HostCost cost = ipu::bench::host_cost(r);
          const ipu::hw::ComputePool& pool = platform->machine().compute_pool();
          fmt::print(
              "chip_host_cost {} ({} tiles active, {} thread{}): {} instructions, {} supersteps "
              "in {:.2f} s host = {:.1f} MIPS{}, {:.3f} s per superstep, compute bursts {:.0f}% "
              "of host time ({} batches), peak RSS {:.0f} MiB{}\n",
              preset, r.tiles, threads, threads == 1 ? "" : "s", r.instructions, r.supersteps,
              r.host_seconds, cost.mips,
              threads == 1
                  ? fmt::format(" (target >= 100) {}", ipu::bench::verdict(cost.mips >= 100))
                  : "",
              cost.seconds_per_superstep, 100 * pool.burst_seconds() / r.host_seconds,
              pool.batches(), cost.peak_rss_mib,
              tiles == 1472 ? fmt::format(" (target <= 1229 MiB) {}",
                                          ipu::bench::verdict(cost.peak_rss_mib <= 1229))
                            : "");
          return cost.mips;
        },
        /*rounds=*/3, /*judged=*/tiles == 1472);
  }
  return 0;
}
