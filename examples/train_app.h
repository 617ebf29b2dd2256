// The training main job as a library (the example program and the tests share it): data-parallel
// training of a two-layer perceptron on a machine, one replica per chip (4 on an M2000), every
// tile of a chip holding k of the hidden units.
//
// One step ("step", run by the host once per step with new data):
//   1. the host streams each replica's batch in; tile 0 broadcasts it to every tile;
//   2. forward: each tile computes its units' activations (f16, stochastic rounding) and their
//      partial outputs, summed over the tiles in two levels (32-tile groups, then tile 0);
//   3. tile 0 computes the loss (streamed to the host) and the output gradient, broadcast back;
//   4. backward: each tile computes its units' weight gradients (f32);
//   5. the gradients are reduce-scattered over the replicas (ring over the IPU-Links): replica
//      r gets shard r of the summed gradient (replicated tensor sharding);
//   6. Adam on the shard: its moments stream in from the replica's streaming memory and back
//      out, the f32 master shard is updated and rounded (stochastically) to f16;
//   7. the f16 shards are all-gathered so every replica has every weight.
// The host runs the same codelets (firmware/codelets/train.c) with the tile's f16 arithmetic and
// PRNG, the same collectives' summation order and the same seeds, and the results must agree
// bit for bit.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sdk/image/elf_reader.h"
#include "sdk/runtime/device.h"

namespace ipu::examples {

struct TrainConfig {
  hw::MachineConfig machine = hw::machine_preset("m2000");
  unsigned tiles = 0;  // per replica (0: every tile of a chip)
  unsigned steps = 8;
  uint32_t seed = 2026;
  sdk::DeviceOptions device;
  // Keep the image and what the host gave and got (TrainResult::saved), for `ipu-sim run` of the
  // image: init, then `step` once a step.
  bool save = false;
};

// A run as `ipu-sim run IMAGE --program init --program step:STEPS` replays it: each stream's
// data for every step, step after step, and the tensors the host wrote before init; each one
// replica after replica.
struct SavedTraining {
  sdk::ElfImage image;
  std::vector<float> x, t, loss;  // the streams
  std::vector<float> master_shard, adam_powers;
  std::vector<uint32_t> seeds;
};

struct TrainStep {
  float loss = 0, expected_loss = 0;  // sum of squared errors over the global batch
  uint64_t cycles = 0;
  double host_seconds = 0;
  uint64_t ipulink_bytes = 0, streaming_bytes = 0;
  double joules = 0, watts_per_chip = 0;  // the step's energy (docs/energy.md)
  double static_joules = 0;               // of it, the blocks' static power over the step
  uint64_t instructions = 0;
  uint64_t flops = 0;  // executed by the tiles (RunReport::flops)
  size_t supersteps = 0;
};

struct TrainResult {
  unsigned replicas = 0, tiles = 0, batch = 0, inputs = 0, hidden = 0, outputs = 0;
  uint64_t parameters = 0;
  double flops_per_step = 0;  // multiply-adds of forward and backward, 2 flops each
  double clock_hz = 0;
  std::vector<TrainStep> steps;
  // A step's parts, each timed as a program of its own (less an empty program's dispatch).
  uint64_t collective_cycles = 0, streaming_cycles = 0, host_io_cycles = 0;
  uint64_t adam_streaming_bytes = 0;  // the streaming part's bytes (Adam's moments)
  unsigned ipulinks = 0;
  double ipulink_bytes_per_second = 0;              // one direction of one link
  std::vector<uint32_t> weights, expected_weights;  // f16 pairs after training
  std::vector<float> master, expected_master;       // replica 0's master shard
  bool identical = false;               // every loss and the final weights equal the host's
  std::optional<uint64_t> memory_hash;  // after the last step (DeviceOptions::memory_hash)
  double load_seconds = 0;
  std::string memory_report;
  sdk::Profile profile;                // of every run (DeviceOptions::profile)
  std::optional<SavedTraining> saved;  // TrainConfig::save
};

TrainResult run_training(const TrainConfig& config);

}  // namespace ipu::examples
