#include "loaded_program.h"

#include <algorithm>

namespace ipu::hw {

std::vector<TileMemory> tile_memory(const LoadedProgram& program, uint32_t sram_bytes) {
  std::vector<TileMemory> all;
  all.reserve(program.tiles.size());
  for (const auto& [tile, segments] : program.tiles) {
    TileMemory m;
    m.tile = tile;
    for (const LoadedProgram::Segment& s : segments) {
      m.code += s.code_bytes;
      m.data += s.size - s.code_bytes;
    }
    // The loader keeps segments inside SRAM and apart, so code + data <= sram_bytes.
    m.stacks = std::min(program.stack_bytes, sram_bytes - m.code - m.data);
    m.free = sram_bytes - m.code - m.data - m.stacks;
    all.push_back(m);
  }
  return all;
}

}  // namespace ipu::hw
