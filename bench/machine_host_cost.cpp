// Host cost of simulating a POD16: the compute-and-exchange superstep loop on all 23,552 tiles of
// 16 chips (six workers computing on every tile, then a ring exchange through every tile of
// every chip after external syncs, crossing IPU-Links between chips;
// bench/firmware/superstep_loop.c with MACHINE_RING). Prints host seconds per superstep,
// aggregate simulated MIPS and peak resident memory (target: a POD16 fits in 16 GiB).
#define BENCH_RUNS \
  { "pod16", "bow-pod16" }
#include "bench/chip_bench.h"

int bench_body(const std::string& preset) {
  std::unique_ptr<ipu::hw::Platform> platform;
  std::ostringstream console;
  const auto r = ipu::bench::run_image(preset, SUPERSTEP_POD16, 1472, platform, console);
  const ipu::bench::HostCost cost = ipu::bench::host_cost(r);
  fmt::print(
      "machine_host_cost {} ({} chips, {} tiles active): {} instructions, {} supersteps in {:.2f} "
      "s host = {:.1f} MIPS, {:.3f} s per superstep, {} bytes on IPU-Links, peak RSS {:.0f} MiB "
      "(target <= 16384 MiB) {}\n",
      preset, r.chips, r.tiles, r.instructions, r.supersteps, r.host_seconds, cost.mips,
      cost.seconds_per_superstep, r.ipulink_bytes, cost.peak_rss_mib,
      ipu::bench::verdict(cost.peak_rss_mib <= 16384));
  return 0;
}
