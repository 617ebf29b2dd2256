#include "chip_config.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <type_traits>

#include "hw/sync/sync_network.h"
#include "hw/tile/core.h"

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
  // Ranges wide enough for any design study and narrow enough that no computed latency or
  // cycle count can wrap: a latency is at most base + per-column x 4096 columns < 2^32.
  auto range = [&fail](const char* name, double value, double low, double high) {
    if (!(value >= low && value <= high))
      fail(fmt::format("{} must be {} to {}, not {}", name, low, high, value));
  };
  range("exchange.words-per-cycle", c.exchange.words_per_cycle, 1, 64);
  range("exchange.tiles-per-column", c.exchange.tiles_per_column, 1, 4096);
  range("exchange.base-latency", c.exchange.base_latency, 0, 1e6);
  range("exchange.latency-per-column", c.exchange.latency_per_column, 0, 1e5);
  range("sync.internal-cycles", c.sync.internal_cycles, 0, 1e9);
  range("tile.clock-hz", c.tile.clock_hz, 1e6, 1e11);
  range("tile.worker-contexts", c.tile.worker_contexts, 1, kMaxWorkerContexts);
  range("pcie.bytes-per-second", c.pcie.bytes_per_second, 1e6, 1e13);
  range("pcie.latency-ns", c.pcie.latency_ns, 0, 1e9);
  parse_sync_groups(c.sync.groups, c.tiles);  // throws naming the bad entry
}

}  // namespace ipu::hw
