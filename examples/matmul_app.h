// The matmul example as a library, so that the example program and the tests share it:
// C (M x N) = A (M x K) . B (K x N), f16 inputs, f32 results, spread over `tiles` tiles.
// Tile t computes rows 16t .. 16t+15; B is streamed from the host to tile 0 and broadcast to
// every tile (one multicast send); each tile runs six AMP vertices over its columns.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sdk/runtime/device.h"

namespace ipu::examples {

struct MatmulResult {
  unsigned tiles = 0;
  size_t m = 0, n = 0, k = 0;
  sdk::DeviceReport report;
  sdk::Executable executable;
  std::vector<float> c;         // M x N, row-major
  std::vector<float> expected;  // the host reference, same order of operations
  size_t mismatches = 0;
  uint64_t compute_cycles = 0;  // the matmul superstep: the slowest tile's compute
  // The host streams' data as the device saw it: a_in and b_in in, c_out out.
  std::vector<uint16_t> a_in, b_in;
  std::vector<float> c_out;
};

// Builds, compiles and runs the matmul on a one-chip `machine` using its first `tiles` tiles.
MatmulResult run_matmul(const hw::MachineConfig& machine, unsigned tiles, size_t n, size_t k,
                        uint32_t seed, const sdk::DeviceOptions& device = {});

}  // namespace ipu::examples
