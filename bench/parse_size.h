// A byte count from the command line of a benchmark: a whole number, with K or M for KiB or MiB.
#pragma once

#include <cstddef>
#include <string>

namespace ipu::bench {

inline size_t parse_size(const std::string& s) {
  size_t end = 0;
  const size_t n = std::stoul(s, &end);
  if (end < s.size() && (s[end] == 'K' || s[end] == 'k')) return n << 10;
  if (end < s.size() && (s[end] == 'M' || s[end] == 'm')) return n << 20;
  return n;
}

}  // namespace ipu::bench
