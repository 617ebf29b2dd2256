// Figures of one tile: each field with its name, unit, meaning and range in visit_parameters(),
// the one list --help, --config-dump, configuration files and the range checks read.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <type_traits>

#include "base/parameters.h"

namespace ipu::iss {

// The most worker contexts a tile can have (the CSR encodings leave room for 15).
inline constexpr unsigned kMaxWorkerContexts = 15;

struct TileConfig {
  uint32_t sram_base = 0x4c000;      // first address of tile SRAM, as on the Mk2
  uint32_t sram_bytes = 624 * 1024;  // 624 KiB per tile (897 MiB per 1472-tile chip)
  unsigned worker_contexts = 6;      // worker contexts = round-robin issue slots
  double clock_hz = 1.325e9;         // Mk2 GC200 tile clock (Bow: 1.85e9)
};

template <typename C, typename Visitor, base::if_config_t<C, TileConfig> = 0>
void visit_parameters(C& c, Visitor&& v) {
  v(base::Parameter{"tile.sram-base", "address", "first address of the tile's SRAM window", 0,
                    1 << 20},
    c.sram_base);
  v(base::Parameter{"tile.sram-bytes", "bytes", "SRAM per tile (624 KiB on Mk2 and Bow)", 4,
                    1 << 20},
    c.sram_bytes);
  v(base::Parameter{"tile.worker-contexts", "contexts",
                    "worker contexts, one per round-robin issue slot (6 on Mk2 and Bow)", 1,
                    kMaxWorkerContexts},
    c.worker_contexts);
  v(base::Parameter{"tile.clock-hz", "Hz", "tile clock (Mk2 1.325e9, Bow 1.85e9)", 1e6, 1e11},
    c.clock_hz);
}

// Throws std::invalid_argument naming the parameter.
inline void validate(const TileConfig& c) {
  base::check_ranges(c);
  if (c.sram_base + uint64_t{c.sram_bytes} > (1u << 20))
    throw std::invalid_argument(
        "tile SRAM must end below 1 MiB: images carry the tile number above bit 20 of each "
        "address");
}

}  // namespace ipu::iss
