// Runs an image on a chip of a preset: the chip benchmarks' programs, and one tile's kernels
// (tile_mips, amp_peak: a machine of one tile, as ipu-sim run-elf runs a bare ELF).
#pragma once

#include <fmt/format.h>

#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>

#include "hw/machine/platform.h"
#include "sdk/image/program.h"

namespace ipu::bench {

// Runs an image on a chip of `preset` with the given tile count; fails loudly if it does not
// exit with status 0.
// `threads`: host threads for the tiles' compute (0: the host's cores).
inline hw::RunReport run_image(const std::string& preset, const sdk::ElfImage& image,
                               unsigned tiles, std::unique_ptr<hw::Platform>& platform,
                               std::ostringstream& console, unsigned threads = 0) {
  hw::PlatformOptions options;
  options.machine = hw::machine_preset(preset);
  options.machine.chip.tiles = tiles;
  options.max_cycles = 0;
  options.threads = threads;
  sc_core::sc_set_time_resolution(1, sc_core::SC_FS);
  platform = std::make_unique<hw::Platform>(options, sdk::load_program(image, options.machine),
                                            console, console);
  hw::RunReport r = platform->run();
  if (r.outcome.result != hw::ChipOutcome::Result::kExited || r.outcome.exit_status != 0) {
    fmt::print(stderr, "{}: the program failed: {}\n{}\n", image.path, r.outcome.message,
               console.str());
    std::exit(1);
  }
  return r;
}
// The same, the image read from its file.
inline hw::RunReport run_image(const std::string& preset, const std::string& image, unsigned tiles,
                               std::unique_ptr<hw::Platform>& platform, std::ostringstream& console,
                               unsigned threads = 0) {
  return run_image(preset, sdk::read_elf(image), tiles, platform, console, threads);
}

}  // namespace ipu::bench
