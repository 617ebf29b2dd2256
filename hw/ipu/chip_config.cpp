#include "chip_config.h"

#include <fmt/format.h>

#include <stdexcept>

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

void validate(const ChipConfig& c, unsigned chips) {
  if (!(c.tiles >= 1 && c.tiles <= 4096))
    throw std::invalid_argument(fmt::format("chip.tiles must be 1 to 4096, not {}", c.tiles));
  validate(c.tile);
  validate(c.exchange);
  validate(c.sync, c.shape(chips));
  validate(c.pcie);
}

}  // namespace ipu::hw
