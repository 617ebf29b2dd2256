// The tile's hardware PRNG: Graphcore's published xoroshiro128aox (two 64-bit state words).
// Each context keeps its own state (CSRs ipu_prng0..3), so workers draw independent streams.
#pragma once

#include <cstdint>

namespace ipu::iss {

struct Xoroshiro128aox {
  uint64_t s0 = 0, s1 = 0;

  static constexpr uint64_t rotl(uint64_t x, unsigned k) { return (x << k) | (x >> (64 - k)); }

  // One step: returns 64 random bits and advances the state.
  uint64_t next() {
    const uint64_t sx = s0 ^ s1;
    const uint64_t sa = s0 & s1;
    const uint64_t out = sx ^ (rotl(sa, 1) | rotl(sa, 2));
    s0 = rotl(s0, 55) ^ sx ^ (sx << 14);
    s1 = rotl(sx, 36);
    return out;
  }

  // The reset state of context `context` on tile `tile`: splitmix64 of both numbers, so that
  // every context of every tile starts on a different, non-zero state.
  static Xoroshiro128aox reset_state(unsigned tile, unsigned context) {
    uint64_t z = (uint64_t{tile} << 8 | context) + 1;
    auto splitmix = [&z] {
      uint64_t x = (z += 0x9e3779b97f4a7c15u);
      x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
      x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
      return x ^ (x >> 31);
    };
    Xoroshiro128aox g;
    g.s0 = splitmix();
    g.s1 = splitmix();
    return g;
  }
};

}  // namespace ipu::iss
