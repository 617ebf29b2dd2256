// A BERT training step's time composed from its parts (docs/bert.md, "Where a step's time
// goes"). The pipeline's schedule is a list of slots (pipeline_slots, which run_bert follows as
// it writes the step's program): in each, every chip runs its own work (a micro-batch's
// backward pass after its forward recomputed, the next one's forward pass, and on chip 0 the
// heads), and one copy then moves the activations and gradients to the neighbour chips. Given
// each part's simulated time alone, the step's time is the sum over the slots of the busiest
// chip's work and the closing copy, plus the host's inputs and outputs. That splits the time into
// the chips' mean work (compute), the wait for the busiest (bubble: the pipeline's fill and drain
// and its stages' imbalance), the copies and the host I/O; and it gives the step's time for any
// number of micro-batches from the parts measured once (bench/bert_throughput).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ipu::examples::bert {

// What one slot runs; -1: nothing. A pipelined slot runs, on chip k, backward[k] (its forward
// recomputed first) and then forward[k]; chip 0 then runs the heads of micro-batch `heads`. One
// stage (no pipeline) runs a micro-batch's forward, heads and backward in a slot, nothing
// recomputed.
struct PipelineSlot {
  std::vector<int> backward, forward;
  int heads = -1;
};
std::vector<PipelineSlot> pipeline_slots(unsigned stages, unsigned accumulate);

// The copies that end a slot, named by what they carry: "d1" stage 1's input gradient to stage
// 0, "f0" stage 0's output to stage 1, "h" the heads' input gradient to the last stage.
// Empty: none (one stage).
std::string slot_sends(const PipelineSlot& slot);

// Simulated cycles of each part alone: its program's less an empty program's (the dispatch).
struct PipelineParts {
  std::vector<uint64_t> forward;          // a stage's: its inputs restored and its forward pass
  std::vector<uint64_t> backward;         // a stage's: its backward pass and gradients accumulated
  uint64_t heads = 0;                     // their labels copied in, forward, backward, accumulation
  std::map<std::string, uint64_t> sends;  // each slot_sends key's copy
  uint64_t host_io = 0;                   // the step's inputs written, its losses read
};

struct PipelineTime {
  uint64_t cycles = 0;  // the sum of the four below
  uint64_t compute = 0, bubble = 0, sends = 0, host_io = 0;
  unsigned slots = 0;
};

// Throws std::invalid_argument naming a part the schedule needs and `parts` lacks.
PipelineTime compose_pipeline(const PipelineParts& parts, unsigned stages, unsigned accumulate);

}  // namespace ipu::examples::bert
