// What every block of a machine shares beside its own configuration: how many chips, how many
// tiles each, and the tile clock that times them all. Blocks are built from their own
// configuration and this, never from the whole chip's or machine's configuration.
#pragma once

#include <fmt/format.h>

#include <string>

namespace ipu::hw {

struct MachineShape {
  unsigned chips = 1;
  unsigned tiles_per_chip = 1472;
  double clock_hz = 1.325e9;
  unsigned tiles() const { return chips * tiles_per_chip; }
  unsigned chip_of(unsigned machine_tile) const { return machine_tile / tiles_per_chip; }
};

// "tile 5" on one chip, "chip 1 tile 5" on a machine of several (`machine_tile` is
// chip * tiles per chip + tile, the numbering the exchange and sync use).
inline std::string tile_name(unsigned machine_tile, unsigned tiles_per_chip, unsigned chips) {
  if (chips <= 1) return fmt::format("tile {}", machine_tile);
  return fmt::format("chip {} tile {}", machine_tile / tiles_per_chip,
                     machine_tile % tiles_per_chip);
}
inline std::string tile_name(unsigned machine_tile, const MachineShape& shape) {
  return tile_name(machine_tile, shape.tiles_per_chip, shape.chips);
}

}  // namespace ipu::hw
