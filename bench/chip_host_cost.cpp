// Host cost of simulating a full chip: a compute-and-exchange superstep loop on all 1472 tiles
// (six workers computing, then a ring exchange; bench/firmware/superstep_loop.c), and the same
// loop on 16 tiles. Prints aggregate simulated MIPS (target >= 100 on one host core), host
// seconds per superstep and peak resident memory (target <= 1.2 GiB for the full chip).
#include "bench/chip_bench.h"

int bench_body(const std::string& preset) {
  for (unsigned tiles : {1472u, 16u}) {
    const pid_t child = fork();  // each size in a process of its own: its own peak RSS
    if (child != 0) {
      int status = 0;
      waitpid(child, &status, 0);
      if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0)) return 1;
      continue;
    }
    std::unique_ptr<ipu::hw::Platform> platform;
    std::ostringstream console;
    const auto r = ipu::bench::run_image(preset, tiles == 16 ? SUPERSTEP_IMAGE_16 : SUPERSTEP_IMAGE,
                                         1472, platform, console);
    const ipu::bench::HostCost cost = ipu::bench::host_cost(r);
    fmt::print(
        "chip_host_cost {} ({} tiles active): {} instructions, {} supersteps in {:.2f} s host = "
        "{:.1f} MIPS "
        "(target >= 100) {}, {:.3f} s per superstep, peak RSS {:.0f} MiB{}\n",
        preset, r.tiles, r.instructions, r.supersteps, r.host_seconds, cost.mips,
        ipu::bench::verdict(cost.mips >= 100), cost.seconds_per_superstep, cost.peak_rss_mib,
        tiles == 1472 ? fmt::format(" (target <= 1229 MiB) {}",
                                    ipu::bench::verdict(cost.peak_rss_mib <= 1229))
                      : "");
    std::exit(0);
  }
  return 0;
}
