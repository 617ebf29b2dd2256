// ipu-sim info: what an image holds, and the command that runs it.
#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <map>

#include "base/printable.h"
#include "sdk/image/program.h"
#include "sim/commands.h"
#include "sim/sdk_image.h"

namespace ipu::sim {

int print_info(const sdk::ElfImage& image, const hw::MachineConfig& config) {
  hw::MachineConfig fits = config;  // list every chip the image names, whatever the preset
  for (const auto& s : image.segments) fits.chips = std::max(fits.chips, s.chip + 1);
  while ((fits.chips & (fits.chips - 1)) != 0) ++fits.chips;
  const hw::LoadedProgram program = [&] {
    sdk::ElfImage bare = image;  // the manifest is printed below, not checked
    bare.sections.erase(".ipu.manifest");
    return sdk::load_program(bare, fits);
  }();
  const unsigned per_chip = config.chip.tiles;
  std::map<unsigned, std::pair<unsigned, uint64_t>> chips;  // chip -> tiles, bytes
  uint64_t total = 0, largest = 0;
  unsigned largest_tile = 0;
  for (const auto& [tile, segments] : program.tiles) {
    uint64_t bytes = 0;
    for (const auto& s : segments) bytes += s.size;
    total += bytes;
    auto& chip = chips[tile / per_chip];
    ++chip.first;
    chip.second += bytes;
    if (bytes > largest) largest = bytes, largest_tile = tile;
  }
  fmt::print("image                {}\n", printable(image.path));
  fmt::print("entry                0x{:08x}\n", image.entry);
  fmt::print("chips used           {}\n", chips.size());
  for (const auto& [chip, use] : chips)
    fmt::print("  chip {:<4}          {} tiles, {} bytes\n", chip, use.first, use.second);
  fmt::print("tiles used           {} (first {}, last {})\n", program.tiles.size(),
             hw::tile_name(program.tiles.begin()->first, per_chip, fits.chips),
             hw::tile_name(program.tiles.rbegin()->first, per_chip, fits.chips));
  fmt::print("memory               {} bytes in all; largest {} with {} bytes of {} ({:.1f}%)\n",
             total, hw::tile_name(largest_tile, per_chip, fits.chips), largest,
             config.chip.tile.sram_bytes,
             100.0 * static_cast<double>(largest) / config.chip.tile.sram_bytes);
  print_run_hint(image, std::cout);
  const auto manifest = image.sections.find(".ipu.manifest");
  if (manifest != image.sections.end()) {
    // The JSON as its lines (each one's control bytes escaped, as any text from an image), not
    // one line of "\n" escapes.
    const std::string_view text(reinterpret_cast<const char*>(manifest->second.data()),
                                manifest->second.size());
    const char* label = "manifest             ";
    for (size_t at = 0; at < text.size();) {
      const size_t end = std::min(text.find('\n', at), text.size());
      fmt::print("{}{}\n", label, printable(text.substr(at, end - at)));
      label = "                     ";
      at = end + 1;
    }
  } else
    fmt::print("manifest             none (not built by the SDK compiler)\n");
  return 0;
}

}  // namespace ipu::sim
