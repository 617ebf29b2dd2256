// Tile simulator speed: runs a compute-bound C kernel (CRC-32 + f32 dot product) on one tile
// through the SystemC platform and prints millions of simulated instructions per host second
// beside the target (150 MIPS on one core of the 2-core reference machine).
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "sim/single_tile.h"

#ifndef MIPS_KERNEL_ELF
#error "MIPS_KERNEL_ELF must name the benchmark kernel"
#endif

int main(int, char**) {
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
  return sc_core::sc_elab_and_sim(0, nullptr);
}

int sc_main(int, char**) {
  constexpr double kTargetMips = 150.0;
  ipu::sim::RunOptions options;
  options.max_cycles = 0;
  std::ostringstream console;
  ipu::sim::SingleTilePlatform platform("platform", options, console, console);
  platform.load(ipu::sdk::read_elf(MIPS_KERNEL_ELF));
  const ipu::sim::RunReport r = platform.run();
  if (r.outcome.reason != ipu::hw::StopReason::kExited || r.outcome.exit_status != 0) {
    fmt::print(stderr, "tile_mips: the kernel failed: {}{}\n", console.str(), r.outcome.message);
    return 1;
  }
  const double mips = static_cast<double>(r.instructions) / r.host_seconds / 1e6;
  fmt::print("tile_mips: kernel {} instructions, {} tile cycles, {:.3f} s host\n", r.instructions,
             r.cycles, r.host_seconds);
  fmt::print("tile_mips: {:.1f} MIPS (target >= {:.0f} MIPS) {}\n", mips, kTargetMips,
             mips >= kTargetMips ? "MET" : "NOT MET");
  return 0;
}
