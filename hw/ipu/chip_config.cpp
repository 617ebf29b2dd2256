#include "chip_config.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <type_traits>

#include "hw/sync/sync_network.h"

namespace ipu::hw {

ChipConfig chip_preset(const std::string& name) {
  ChipConfig c;
  c.preset = name;
  if (name == "mk2") {
    c.tile.clock_hz = 1.325e9;
  } else if (name == "bow") {
    c.tile.clock_hz = 1.85e9;
  } else {
    throw std::invalid_argument(fmt::format("unknown preset '{}' (known: mk2, bow)", name));
  }
  return c;
}

std::string tile_name(unsigned machine_tile, unsigned tiles_per_chip, unsigned chips) {
  if (chips <= 1) return fmt::format("tile {}", machine_tile);
  return fmt::format("chip {} tile {}", machine_tile / tiles_per_chip,
                     machine_tile % tiles_per_chip);
}

void validate(const ChipConfig& c) {
  auto fail = [](const std::string& what) { throw std::invalid_argument(what); };
  if (c.tiles < 1 || c.tiles > 4096)
    fail(fmt::format("chip.tiles must be 1..4096, not {}", c.tiles));
  if (c.tile.sram_base + uint64_t{c.tile.sram_bytes} > (1u << 20))
    fail(
        "tile SRAM must end below 1 MiB: images carry the tile number above bit 20 of each "
        "address");
  if (c.exchange.words_per_cycle < 1) fail("exchange.words-per-cycle must be at least 1");
  if (c.exchange.tiles_per_column < 1) fail("exchange.tiles-per-column must be at least 1");
  if (!(c.tile.clock_hz > 0)) fail("tile.clock-hz must be positive");
  parse_sync_groups(c.sync.groups, c.tiles);  // throws naming the bad entry
}

}  // namespace ipu::hw
