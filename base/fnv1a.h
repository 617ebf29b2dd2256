// FNV-1a, 64-bit (Fowler, Noll and Vo's hash): its value is fixed by its definition, so the same
// bytes hash alike in every process, build and rank (the platform's memory hash, the planner's
// keys of operand layouts). Not for untrusted input that an attacker could collide.
#pragma once

#include <cstdint>
#include <type_traits>

namespace ipu::base {

struct Fnv1a {
  static constexpr uint64_t kBasis = 0xcbf29ce484222325u, kPrime = 0x100000001b3u;
  uint64_t value = kBasis;

  void add_byte(uint8_t byte) { value = (value ^ byte) * kPrime; }
  // An unsigned integer's bytes, least significant first.
  template <typename T>
  void add(T x) {
    static_assert(std::is_unsigned_v<T>, "Fnv1a::add takes unsigned integers");
    for (unsigned b = 0; b < sizeof(T); ++b) add_byte(static_cast<uint8_t>(x >> (8 * b)));
  }
};

}  // namespace ipu::base
