// AMP throughput on one tile: six workers stream a matmul through the AMP (bench/firmware/
// amp_kernel.c). Prints achieved flop/cycle against the tile's peak (128 f16, 32 f32: 64 and 16
// MAC/cycle), and the full-chip TFLOP/s that implies at the Mk2 and Bow clocks.
// Target: at least 85% of peak in steady state.
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <regex>
#include <sstream>
#include <string>

#include "bench/bench_help.h"
#include "bench/run_image.h"
#include "hw/ipu/chip_config.h"

int main(int argc, char** argv) {
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
  if (ipu::bench::print_help(
          argc, argv, "",
          "AMP throughput on one tile (six workers), in flop/cycle beside the tile's peak."))
    return 0;
  return sc_core::sc_elab_and_sim(argc, argv);
}

int sc_main(int, char**) {
  // Chip figures from the presets (hw/ipu/chip_config).
  const double kTilesPerChip = ipu::hw::chip_preset("mk2").tiles;
  const double kMk2Hz = ipu::hw::chip_preset("mk2").tile.clock_hz,
               kBowHz = ipu::hw::chip_preset("bow").tile.clock_hz;
  constexpr double kTarget = 0.85;
  std::unique_ptr<ipu::hw::Platform> platform;
  std::ostringstream console;
  const ipu::hw::RunReport r =
      ipu::bench::run_image("mk2", AMP_KERNEL_ELF, 1, platform, console, /*threads=*/1);
  const std::string out = console.str();
  const std::regex line(R"((f16|f32) macs=(\d+) cycles=(\d+) steady=(\d+))");
  int failures = 0;
  for (auto it = std::sregex_iterator(out.begin(), out.end(), line); it != std::sregex_iterator();
       ++it) {
    const std::string type = (*it)[1];
    const double macs = std::stod((*it)[2]), cycles = std::stod((*it)[3]),
                 steady = std::stod((*it)[4]);
    const double peak = type == "f16" ? 128 : 32;  // flop/cycle/tile
    const double whole = 2 * macs / cycles;
    const double achieved = 2 * macs / steady;
    const double fraction = achieved / peak;
    fmt::print(
        "amp_peak {}: {:.0f} MAC, steady state {:.0f} cycles = {:.1f} flop/cycle of {:.0f} peak "
        "({:.1f}%, target >= {:.0f}%) {}\n",
        type, macs, steady, achieved, peak, 100 * fraction, 100 * kTarget,
        fraction >= kTarget ? "MET" : "NOT MET");
    fmt::print(
        "amp_peak {}: whole run with start-up and weight loads {:.0f} cycles = {:.1f} flop/cycle "
        "({:.1f}%)\n",
        type, cycles, whole, 100 * whole / peak);
    fmt::print(
        "amp_peak {}: full chip (1472 tiles) Mk2 {:.1f} TFLOP/s (peak {:.1f}), Bow {:.1f} TFLOP/s "
        "(peak {:.1f})\n",
        type, achieved * kTilesPerChip * kMk2Hz / 1e12, peak * kTilesPerChip * kMk2Hz / 1e12,
        achieved * kTilesPerChip * kBowHz / 1e12, peak * kTilesPerChip * kBowHz / 1e12);
    failures += fraction < kTarget;
  }
  fmt::print("amp_peak: host {:.3f} s for {} instructions\n", r.host_seconds, r.instructions);
  return 0;
}
