// Whole-number option values of the command-line tools (ipu-sim, ipu-image, the examples):
// decimal digits only, so "-3" is refused rather than wrapped into a huge unsigned value.
#pragma once

#include <fmt/format.h>

#include <charconv>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

namespace ipu::sdk {

// The value `text` given to `option` (e.g. "--tiles"), in [min, max]; throws
// std::invalid_argument naming the option and the text otherwise.
inline uint64_t parse_count(const std::string& option, const std::string& text, uint64_t min = 0,
                            uint64_t max = std::numeric_limits<uint64_t>::max()) {
  uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value < min ||
      value > max) {
    if (max == std::numeric_limits<uint64_t>::max())
      throw std::invalid_argument(
          fmt::format("option {}: '{}' is not a whole number of at least {}", option, text, min));
    throw std::invalid_argument(
        fmt::format("option {}: '{}' is not a whole number from {} to {}", option, text, min, max));
  }
  return value;
}

}  // namespace ipu::sdk
