// A program as a machine loads it: each active tile's segments, the entry point, and what the
// image says of the tiles' stacks. Plain data: sdk/image makes it from an image file, the
// platform loads it.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

namespace ipu::hw {

// A program as the platform loads it.
struct LoadedProgram {
  struct Segment {
    uint32_t address = 0;        // inside the tile
    std::vector<uint8_t> bytes;  // its leading bytes as loaded
    // The bytes it occupies, from `address`: past `bytes` they are zero, and a fresh tile's
    // SRAM is, so only `bytes` are written (a tile's tensors without initial values load as
    // nothing, not as hundreds of KiB of zeros on every tile of a POD).
    uint32_t size = 0;
    uint32_t code_bytes = 0;  // of its size, the leading bytes that are code (the rest data)
  };
  uint32_t entry = 0;
  uint32_t tohost = 0;                             // address of the `tohost` word (0: none)
  std::map<unsigned, std::vector<Segment>> tiles;  // machine tile -> its segments
  // SRAM each tile's runtime keeps for the contexts' stacks, outside every segment (the tile
  // linker script's reservation; 0 when the image does not say).
  uint32_t stack_bytes = 0;
};

// Where one loaded tile's SRAM goes, for the statistics and the report's memory heatmap.
struct TileMemory {
  unsigned tile = 0;  // machine tile
  uint32_t code = 0, data = 0, stacks = 0, free = 0;
};
// Every loaded tile's, in machine-tile order; they add up to the tile's SRAM.
std::vector<TileMemory> tile_memory(const LoadedProgram& program, uint32_t sram_bytes);

}  // namespace ipu::hw
