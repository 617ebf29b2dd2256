// The tile datapaths that also exist in Verilog (rtl/, docs/rtl.md). The core computes with its
// C++ models unless a block is installed here (ipu-sim --rtl): then each use goes to the
// verilated RTL through its TLM wrapper (tlm/), which gives the same bits in the same cycles.
#pragma once

#include <array>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "prng.h"

namespace ipu::iss {

// A datapath that departed from its C++ model (the RTL wrappers raise it). The core turns it
// into a report naming tile, context, pc and cycle, and stops the tile.
class DatapathMismatch : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// xoroshiro128aox (prng.h): one 64-bit output, advancing `state`.
class PrngDatapath {
 public:
  virtual ~PrngDatapath() = default;
  virtual uint64_t next(Xoroshiro128aox& state) = 0;
};

// fpu::f32_to_f16 with its rounding modes, stochastic rounding included.
class F32ToF16Datapath {
 public:
  virtual ~F32ToF16Datapath() = default;
  virtual uint32_t convert(uint32_t a, unsigned rm, uint32_t& flags, uint32_t random) = 0;
};

// One AMP lane's work for one issue (amp.h): acc = fma(w[j], x[j], acc) for j < terms, on f16
// operands (`half`, in bits 15:0) or f32.
struct AmpLaneRow {
  bool half = true;
  unsigned terms = 0;
  std::array<uint32_t, 4> w{}, x{};
  uint32_t acc = 0;  // in: the accumulator; out: the result
};
class AmpDatapath {
 public:
  virtual ~AmpDatapath() = default;
  virtual void run(std::vector<AmpLaneRow>& rows) = 0;
};

struct TileDatapaths {
  PrngDatapath* prng = nullptr;
  F32ToF16Datapath* f32_to_f16 = nullptr;
  AmpDatapath* amp = nullptr;
};

}  // namespace ipu::iss
