// BERT's optimizer state and update on the tiles (docs/bert.md): each trained parameter's f32
// gradient sum, master and LAMB moments, sharded over the replicas in streaming memory where its
// size allows (replicated tensor sharding); and the programs that add the sums up over the
// replicas and apply LAMB. run_bert and bench/bert_throughput build theirs with these.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sdk/graph/graph.h"
#include "sdk/ops/elementwise.h"

namespace ipu::examples::bert {

// One trained parameter: the tensor the model reads, its gradient, and what LAMB keeps. An f16
// weight has an f32 master; an f32 weight is its own master. Its gradient sum is f32, or f16
// for an f16 weight when asked (Graphcore's BERT accumulates so): half the bytes on every tile
// the weight is on, each micro-batch's gradient added with stochastic rounding (ops::accumulate).
struct Parameter {
  std::string name;
  unsigned stage = 0;  // whose backward pass makes the gradient (kHeadsStage: the heads')
  sdk::Tensor weight, grad, master, m, v, sum, scaled;
  uint64_t accumulate_seed = 0;        // the sum's stochastic rounding (ops::AccumulateOptions)
  std::optional<sdk::Tensor> rounded;  // f16 weights: the master rounded stochastically
  uint64_t seed = 0;
  float weight_decay = 0;
  bool is_f16 = false;
  bool f16() const { return is_f16; }
  bool f16_sum = false;
  // Sharded over the replicas: replica r updates elements [r n, (r + 1) n) of the tensor, its
  // master and moments kept in streaming memory between steps; `master`, `m` and `v` are then
  // the shard's, loaded for the update.
  bool sharded = false;
  sdk::Tensor grad_shard;
  sdk::RemoteBuffer master_remote, m_remote, v_remote;
};

// The parameter's sum and LAMB state, laid out as its weight; sharded over `replicas` when
// `shard` and its elements divide into whole f16 pairs a replica. `index`: its place in the
// model's list (its stochastic roundings' seeds). `f16_sums`: an f16 weight's sum is f16.
// Without `state`, the sum alone (for parts of a step measured without the update; add_update
// cannot take it).
Parameter add_parameter(sdk::Graph& g, const std::string& name, sdk::Tensor weight,
                        sdk::Tensor grad, unsigned stage, unsigned replicas, bool shard,
                        size_t index, bool f16_sums, bool state = true);
// A micro-batch's gradient added to the parameter's sum (ops::accumulate); `site` 1 for a
// second gradient of the same parameter (the word embedding's tied decoder), whose stochastic
// rounding draws other bits.
void add_to_sum(sdk::Graph& g, sdk::Program& program, const Parameter& p, sdk::Tensor grad,
                unsigned site, const std::string& name);

struct UpdatePrograms {
  sdk::Program reduce;  // the sums over the replicas: AllReduce, or ReduceScatter when sharded
  sdk::Program update;  // each parameter's mean gradient, LAMB, new weights, sums cleared
};

// The update's programs, and each parameter's own (`each`, in the order of `params`), so that
// a part of the model's update can be measured alone.
struct Update {
  UpdatePrograms all;
  std::vector<UpdatePrograms> each;
};

// `corrections`: LAMB's two bias corrections; `step_number`: the stochastic rounding's salt.
Update add_update(sdk::Graph& g, std::vector<Parameter>& params, const sdk::ops::AdamOptions& lamb,
                  float inverse_accumulate, sdk::Tensor corrections, sdk::Tensor step_number);

}  // namespace ipu::examples::bert
