// Host cost of simulating a POD16: the compute-and-exchange superstep loop on all 23,552 tiles of
// 16 chips (six workers computing on every tile, then a ring exchange through every tile of
// every chip after external syncs, crossing IPU-Links between chips;
// bench/firmware/superstep_loop.c with MACHINE_RING), with the tiles' compute on 1 and 2 host
// threads (and all the host's cores on a wider host). Prints host seconds per superstep,
// aggregate simulated MIPS, the speed-up on 2 threads (target >= 1.8) and peak resident memory
// (target: a POD16 fits in 16 GiB). The pod64 run programs every tile of a POD64 (94,208): its
// image, the one-tile loop replicated in memory (sdk::replicate), has more segments than a plain
// ELF program header table holds, as ipu-image writes it with extended numbering (PN_XNUM).
#define BENCH_RUNS \
  { "pod16", "bow-pod16", "pod64" }
#include "bench/chip_bench.h"
#include "sdk/image/elf_writer.h"

int bench_body(const std::string& preset) {
  ipu::bench::compare_thread_counts(
      "machine_host_cost " + preset,
      [&](unsigned threads) {
        std::unique_ptr<ipu::hw::Platform> platform;
        std::ostringstream console;
        const ipu::hw::MachineConfig machine = ipu::hw::machine_preset(preset);
        const auto r =
            preset == "pod64"
                ? ipu::bench::run_image(
                      preset,
                      [&] {
                        std::vector<unsigned> tiles(machine.chip.tiles);
                        for (unsigned t = 0; t < tiles.size(); ++t) tiles[t] = t;
                        return ipu::sdk::replicate(ipu::sdk::read_elf(SUPERSTEP_FW), tiles,
                                                   machine.chips, "superstep_loop_pod64");
                      }(),
                      machine.chip.tiles, platform, console, threads)
                : ipu::bench::run_image(preset, SUPERSTEP_POD16, 1472, platform, console, threads);
        const ipu::bench::HostCost cost = ipu::bench::host_cost(r);
        const ipu::hw::ComputePool& pool = platform->machine().compute_pool();
        fmt::print(
            "machine_host_cost {} ({} chips, {} tiles active, {} thread{}): {} instructions, {} "
            "supersteps in {:.2f} s host = {:.1f} MIPS, {:.3f} s per superstep, compute bursts "
            "{:.0f}% of host time, {} bytes on IPU-Links, peak RSS {:.0f} MiB (target <= 16384 "
            "MiB) "
            "{}\n",
            preset, r.chips, r.tiles, threads, threads == 1 ? "" : "s", r.instructions,
            r.supersteps, r.host_seconds, cost.mips, cost.seconds_per_superstep,
            100 * pool.burst_seconds() / r.host_seconds, r.ipulink_bytes, cost.peak_rss_mib,
            ipu::bench::verdict(cost.peak_rss_mib <= 16384));
        return cost.mips;
      },
      /*rounds=*/2);
  return 0;
}
