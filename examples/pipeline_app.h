// The pipelined example as a library (the example program and the tests share it): a stack of
// dense layers trained with the model split into one stage per chip of a machine (4 on an
// M2000), GPipe's schedule: each step runs the micro-batches forward through the stages, a
// stage working on micro-batch m while the next works on m - 1, activations passed to the next
// chip over the IPU-Links; then backward in reverse, each stage's input gradient summed from
// its successor's tiles over the links; then SGD on every stage. Each layer's rows are spread
// over its chip's tiles. With recomputation a stage keeps only its inputs and computes its
// pre-activations again in the backward pass. The host runs the same codelets
// (firmware/codelets/pipeline.c) in the same order, and the results must agree bit for bit.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sdk/runtime/device.h"

namespace ipu::examples {

struct PipelineConfig {
  hw::MachineConfig machine = hw::machine_preset("m2000");
  unsigned tiles = 16;         // per chip (stage)
  unsigned width = 64;         // every layer is width x width
  unsigned micro_batches = 4;  // per step
  unsigned micro_batch = 8;    // samples
  unsigned steps = 6;
  bool recompute = false;
  uint32_t seed = 2026;
  sdk::DeviceOptions device;
};

struct PipelineResult {
  unsigned stages = 0;
  std::vector<float> losses, expected_losses;  // per step
  std::vector<uint64_t> cycles;                // per step
  uint64_t ipulink_bytes = 0;                  // one step's
  size_t supersteps = 0;                       // one step's
  uint64_t stored_activation_bytes = 0;        // per tile, kept from forward to backward
  double host_seconds = 0;
  double clock_hz = 0;
  bool identical = false;               // every loss and the trained weights equal the host's
  sdk::Profile profile;                 // of every run (DeviceOptions::profile)
  std::optional<uint64_t> memory_hash;  // after the last step (DeviceOptions::memory_hash)
};

PipelineResult run_pipeline(const PipelineConfig& config);

}  // namespace ipu::examples
