// f32 test values and their bit-for-bit comparison, shared by the operator library's tests.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace ipu::test {

// n values drawn uniformly from [lo, hi), the same for the same seed.
inline std::vector<float> random_f32(size_t n, uint32_t seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> value(lo, hi);
  std::vector<float> out(n);
  for (float& x : out) x = value(rng);
  return out;
}

// How many leading positions (up to the shorter's length) hold equal bits.
inline size_t count_equal(const std::vector<float>& a, const std::vector<float>& b) {
  size_t equal = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) equal += std::memcmp(&a[i], &b[i], 4) == 0;
  return equal;
}

// As count_equal, but a NaN equals any NaN: inf x 0 gives RISC-V's canonical NaN on the tiles
// and x86's default NaN, whose sign differs, on the host.
inline size_t count_equal_or_both_nan(const std::vector<float>& a, const std::vector<float>& b) {
  size_t equal = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i)
    equal += std::memcmp(&a[i], &b[i], 4) == 0 || (std::isnan(a[i]) && std::isnan(b[i]));
  return equal;
}

}  // namespace ipu::test
