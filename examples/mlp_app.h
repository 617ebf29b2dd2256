// The MLP training example as a library (the example program and the tests share it): a
// two-layer perceptron trained by SGD, data-parallel over `tiles` tiles. Each step:
//   1. every tile computes the gradient over its 64 samples (forward and backward);
//   2. the gradients (and losses) are gathered on tile 0 by compiled exchange and summed;
//   3. the sum is broadcast back to every tile (one multicast send);
//   4. every tile updates its copy of the weights; tile 0 records the step's loss.
// The same steps run on the host, from the same C codelets compiled for the host.
#pragma once

#include <string>
#include <vector>

#include "sdk/runtime/device.h"

namespace ipu::examples {

struct MlpResult {
  unsigned tiles = 0, steps = 0, samples = 0;
  std::vector<float> losses, expected_losses;    // sum of squared errors, per step
  std::vector<float> weights, expected_weights;  // tile 0's weights after training
  bool identical = false;                        // device == host, bit for bit
  sdk::DeviceReport report;
};

MlpResult run_mlp(const hw::MachineConfig& machine, unsigned tiles, unsigned steps, uint32_t seed,
                  const sdk::DeviceOptions& device = {});

}  // namespace ipu::examples
