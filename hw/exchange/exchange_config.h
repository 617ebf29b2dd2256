// Figures of the exchange (hw/exchange/exchange.h): each tile's send and receive rate and the
// layout in columns that sets the latency between two tiles of a chip.
#pragma once

#include "base/parameters.h"

namespace ipu::hw {

struct ExchangeConfig {
  unsigned words_per_cycle = 1;     // 4 B/cycle out and 4 B/cycle in per tile
  unsigned tiles_per_column = 64;   // layout: tile t sits in column t / tiles_per_column
  unsigned base_latency = 16;       // send-to-arrival cycles between tiles of one column
  unsigned latency_per_column = 1;  // extra cycles per column between sender and receiver

  // Send-to-arrival latency between two tiles of one chip (docs/chip.md).
  unsigned latency(unsigned from, unsigned to) const {
    const unsigned a = from / tiles_per_column, b = to / tiles_per_column;
    return base_latency + latency_per_column * (a > b ? a - b : b - a);
  }
};

// The ranges are wide enough for any design study and narrow enough that no computed latency
// or cycle count can wrap: a latency is at most base + per-column x 4096 columns < 2^32.
template <typename C, typename Visitor, base::if_config_t<C, ExchangeConfig> = 0>
void visit_parameters(C& c, Visitor&& v) {
  v(base::Parameter{"exchange.words-per-cycle", "words",
                    "32-bit words a tile sends, and receives, per cycle (1 = 4 B/cycle)", 1, 64},
    c.words_per_cycle);
  v(base::Parameter{"exchange.tiles-per-column", "tiles",
                    "tiles per column of the exchange layout (tile t is in column t / this)", 1,
                    4096},
    c.tiles_per_column);
  v(base::Parameter{"exchange.base-latency", "cycles",
                    "send-to-arrival latency between tiles of the same column", 0, 1e6},
    c.base_latency);
  v(base::Parameter{"exchange.latency-per-column", "cycles",
                    "extra latency per column between sender and receiver", 0, 1e5},
    c.latency_per_column);
}

inline void validate(const ExchangeConfig& c) { base::check_ranges(c); }

}  // namespace ipu::hw
