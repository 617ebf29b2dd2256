// Numeric option values of the command-line tools (ipu-sim, ipu-image, the examples): whole
// numbers as decimal digits only, so "-3" is refused rather than wrapped into a huge unsigned
// value; real numbers whole as written (no trailing text), within their range.
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

// The real number `text` given to `option`, in (min, max] (a share: 0 excluded) or [min, max];
// throws std::invalid_argument naming the option, the text and the range otherwise.
inline double parse_real(const std::string& option, const std::string& text, double min, double max,
                         bool min_excluded = false) {
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() ||
      !(min_excluded ? value > min : value >= min) || !(value <= max))
    throw std::invalid_argument(
        min_excluded
            ? fmt::format("option {}: '{}' is not a number above {} and at most {}", option, text,
                          min, max)
            : fmt::format("option {}: '{}' is not a number from {} to {}", option, text, min, max));
  return value;
}

}  // namespace ipu::sdk
