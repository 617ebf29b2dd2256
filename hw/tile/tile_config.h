// Figures of one tile. Each is a named, typed, defaulted parameter with its unit and meaning,
// listed once in visit_parameters() so that ipu-sim's --help and --config-dump come from here.
#pragma once

#include <cstdint>

namespace ipu::hw {

struct TileConfig {
  uint32_t sram_base = 0x4c000;      // first address of tile SRAM, as on the Mk2
  uint32_t sram_bytes = 624 * 1024;  // 624 KiB per tile (897 MiB per 1472-tile chip)
  unsigned worker_contexts = 6;      // worker contexts = round-robin issue slots
  double clock_hz = 1.325e9;         // Mk2 GC200 tile clock (Bow: 1.85e9)
};

// Calls v(name, member, unit, meaning) for every parameter.
template <typename Config, typename Visitor>
void visit_parameters(Config& c, Visitor&& v) {
  v("tile.sram-base", c.sram_base, "address", "first address of the tile's SRAM window");
  v("tile.sram-bytes", c.sram_bytes, "bytes", "SRAM per tile (624 KiB on Mk2 and Bow)");
  v("tile.worker-contexts", c.worker_contexts, "contexts",
    "worker contexts, one per round-robin issue slot (6 on Mk2 and Bow)");
  v("tile.clock-hz", c.clock_hz, "Hz", "tile clock (Mk2 1.325e9, Bow 1.85e9)");
}

}  // namespace ipu::hw
