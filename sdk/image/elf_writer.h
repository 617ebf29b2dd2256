// Writes firmware images: ELF32 little-endian RISC-V executables with one PT_LOAD segment per
// tile region and a symbol table, readable by readelf and objdump.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "elf_reader.h"

namespace ipu::sdk {

// Multi-tile images carry the tile number above bit 20 of each segment's physical address
// (tile SRAM lies below 1 MiB); the virtual address is the address inside the tile.
inline constexpr unsigned kTileAddressBits = 20;
constexpr uint32_t tile_physical_address(unsigned tile, uint32_t address) {
  return (tile << kTileAddressBits) | address;
}
constexpr unsigned tile_of(uint32_t physical) { return physical >> kTileAddressBits; }
constexpr uint32_t address_in_tile(uint32_t physical) {
  return physical & ((1u << kTileAddressBits) - 1);
}

// Throws ImageError when the file cannot be written.
void write_elf(const std::string& path, const ElfImage& image);

// An SPMD image (`ipu-image replicate`): the one-tile program `source` on each of `tiles` of
// chips 0 .. chips - 1, with its symbols and its DWARF (each tile's addresses are the program's
// own, so GDB and fault reports read its lines). Named `path`. Throws ImageError for a source
// segment that is already for another tile or chip.
ElfImage replicate(const ElfImage& source, const std::vector<unsigned>& tiles, unsigned chips,
                   const std::string& path);

// A segment as loaded into one tile.
struct TileSegment {
  uint32_t address = 0;        // inside the tile
  std::vector<uint8_t> bytes;  // memory image (zeros past the file data)
};

// Splits an image into per-tile segments by the tile number in each physical address; throws
// ImageError naming the segment, its file offset and the tile when a segment falls outside
// the tile's SRAM window [base, base + bytes) or names a tile >= tiles.
std::map<unsigned, std::vector<TileSegment>> split_by_tile(const ElfImage& image, uint32_t base,
                                                           uint32_t bytes, unsigned tiles);

}  // namespace ipu::sdk
