// Packed BERT pre-training as a library (the bert program and the tests share it;
// docs/bert.md). Each replica (one chip, or a pipeline over several: BertConfig::layers_per_chip)
// runs `accumulate` micro-batches of packed rows a step (the data pipeline's, streamed in from
// the host) and sums their gradients in f32; the sums are added up over the replicas, and the
// parameters are updated with LAMB: f32 master weights and moments, the products' f16 weights
// rounded from their masters with the hardware's stochastic rounding, new random bits each step.
// With replicas on a machine, each replica updates a shard of every parameter, its state kept in
// streaming memory (BertConfig::shard_optimizer). The host runs the same operations
// (bert_reference, ops::reference::adam, the stochastic cast) and every loss and the final weights
// must agree bit for bit.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "examples/bert/model.h"
#include "examples/bert/step_time.h"
#include "sdk/runtime/device.h"

namespace ipu::examples::bert {

struct BertConfig {
  hw::MachineConfig machine = hw::machine_preset("mk2");
  unsigned tiles = 0;  // of the chip (0: all)
  BertShape shape = BertShape::tiny();
  // The layers on each chip of the machine, the pipeline's stages (empty: one chip, the
  // machine's first).
  std::vector<size_t> layers_per_chip;
  unsigned accumulate = 2;  // micro-batches a step
  unsigned steps = 6;
  bool packing = true;  // false: one sequence a row, padded
  // Rows in the dataset, read again epoch after epoch (0: new rows for every micro-batch).
  unsigned dataset_rows = 0;
  std::string histogram = IPU_BERT_DATA_DIR "/wikipedia_512.csv";
  uint32_t seed = 2026;
  float learning_rate = 0.05f;
  // The share of a tile's memory each product's plan may take for its operands' blocks and
  // partials (poplar's availableMemoryProportion): less leaves room for the weights, sums and
  // activations a large model keeps on the same tiles, at the cost of more serial steps.
  // One share for every chip, or one a chip of a replica (the first chip's also for the
  // embeddings and the heads), as Graphcore's BERT sets one an IPU.
  std::vector<double> available_memory_proportion = {0.6};
  double heads_memory_proportion = 0;  // the heads' products' share (0: the first chip's)
  // With replicas on a machine: each parameter whose size allows it has its LAMB state (the f32
  // master and both moments) sharded over the replicas in the gateway's streaming memory, its
  // gradient sums reduce-scattered and its new weights all-gathered. false: every replica keeps
  // and updates all of it (the sums all-reduced).
  bool shard_optimizer = true;
  // The f16 weights' gradient sums in f16 (Graphcore's BERT: LAMB's accum_type float16), each
  // micro-batch's gradient added with stochastic rounding: half the bytes a sum takes on every
  // tile. false: f32 sums.
  bool f16_gradient_sums = false;
  // After the training steps, run each part of a step alone (a stage's forward and backward
  // passes, the heads, each slot's copies, the host I/O) and compose the pipeline's time from
  // them (step_time.h); the update's time is its own run's.
  bool measure_parts = false;
  // Only the parts, nothing trained (the losses and weights unchecked): those named in `parts`
  // (empty: every one; BertResult::part_cycles lists the names) compiled and run once each.
  // bench/bert_throughput runs them in groups, each group's executable alone.
  bool parts_only = false;
  std::vector<std::string> parts;
  // Per stage (empty: none): layers its chip holds beyond those it runs. bench/bert_throughput
  // runs one layer a stage for stages of more; each held layer is a copy of the stage's first
  // layer's tensors that outlive a pass (weights, gradient sums, the update's shards and
  // activations kept between passes), mapped as the layer's, so tile memory is checked for the
  // whole stage. Their programs are not built: their exchange tables and vertex states are not
  // counted, nor the scratch a stage's recomputation keeps for each of its layers at once.
  std::vector<size_t> held_layers;
  bool compile_only = false;  // stop after compiling: the tile memory figures, nothing run
  // A file of matmul plan choices (ops::load_plan_choices), read before the graph is built and
  // written with this run's once it is: bench/bert_throughput's children plan BERT's products
  // once between them. Empty: none.
  std::string plan_choices;
  sdk::DeviceOptions device;
};

struct BertStep {
  double mlm_loss = 0, nsp_loss = 0;                    // means over the step's used slots
  double expected_mlm_loss = 0, expected_nsp_loss = 0;  // the host's
  // Simulated cycles: the step's; its programs' (the micro-batches through the pipeline, the
  // gradient sums' AllReduce, LAMB); of them, the host syncs that move stream data.
  uint64_t cycles = 0, pipeline_cycles = 0, allreduce_cycles = 0, update_cycles = 0;
  uint64_t host_io_cycles = 0;
  uint64_t ipulink_bytes = 0;           // the pipeline's, between the stages (every replica's)
  uint64_t update_ipulink_bytes = 0;    // the AllReduce's and LAMB's (the step's scalars)
  uint64_t update_streaming_bytes = 0;  // LAMB's sharded state, read and written
  // Of the update's cycles, its phases with streaming memory (LAMB's state in and out) and its
  // other phases between chips (the new weights' all-gathers, LAMB's norms over the replicas):
  // hw::RunReport's streaming_phase_cycles and cross_chip_phase_cycles.
  uint64_t update_streaming_cycles = 0, update_cross_chip_cycles = 0;
  uint64_t sequences = 0, real_tokens = 0;
  // The step's energy (docs/energy.md): its three programs', everything the machine drew, and of
  // it the chips'.
  double joules = 0, chip_joules = 0;
  uint64_t flops = 0;  // executed by the tiles in its three programs (RunReport::flops)
};

struct BertResult {
  BertShape shape;
  unsigned tiles = 0;              // of the replica
  unsigned stages = 1, slots = 0;  // pipeline stages (chips); slots a step
  unsigned replicas = 1;           // data-parallel, each with its own micro-batches
  double clock_hz = 0;
  uint64_t parameters = 0;
  uint64_t sharded_parameters = 0;   // of them, those whose LAMB state is sharded
  double flops_per_micro_batch = 0;  // the products' (forward and backward)
  std::vector<double> stage_flops;   // of them, each stage's (stage 0's with the embeddings')
  size_t operations = 0;             // a micro-batch's steps (ops::LayerStep)
  double packing_efficiency = 0;     // real tokens over row tokens of the rows used
  std::vector<BertStep> steps;
  bool identical = false;  // every slot's losses and the final weights equal the host's
  double host_seconds = 0, compile_seconds = 0;
  std::string memory_report;
  std::optional<uint64_t> memory_hash;  // after the last run (DeviceOptions::memory_hash)
  sdk::Profile profile;                 // of every run (DeviceOptions::profile)
  unsigned fullest_tile = 0;            // the tile whose data take the most of its memory
  uint32_t fullest_tile_bytes = 0, tile_free_bytes = 0;
  // BertConfig::measure_parts: each part's cycles, the pipeline composed from them (its measured
  // time is each step's pipeline_cycles).
  std::optional<PipelineParts> parts;               // when every part was measured
  std::map<std::string, uint64_t> part_cycles;      // each measured part's, by name
  std::map<std::string, double> part_host_seconds;  // the host time each one's run took
  // Of each part's cycles, those in phases that streamed and in other phases between chips
  // (BertStep::update_streaming_cycles).
  std::map<std::string, uint64_t> part_streaming_cycles, part_cross_chip_cycles;
  PipelineTime composed;
};

BertResult run_bert(const BertConfig& config);

// A pipeline's split as the command lines give it, "3,7,7,7": counts of layers from 1 to 48,
// split at commas (empty: none). Throws std::invalid_argument naming the bad count and where.
std::vector<size_t> parse_layers_per_chip(const std::string& text);
// "0.6" or "0.2,0.3,0.3,0.3": --available-memory-proportion's shares; throws
// std::invalid_argument naming the item that is not a share in (0, 1].
std::vector<double> parse_memory_proportions(const std::string& text);
// "f32" or "f16": --gradient-sums's type, true for f16; throws std::invalid_argument naming
// anything else.
bool parse_gradient_sums(const std::string& text);

}  // namespace ipu::examples::bert
