#include "examples/bert/optimizer.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

namespace ipu::examples::bert {

using sdk::DType;
using sdk::Graph;
using sdk::Program;
using sdk::Tensor;
namespace ops = sdk::ops;

Parameter add_parameter(Graph& g, const std::string& name, Tensor weight, Tensor grad,
                        unsigned stage, unsigned replicas, bool shard, size_t index, bool f16_sums,
                        bool state) {
  const unsigned R = replicas;
  Parameter p;
  p.name = name;
  p.stage = stage;
  p.weight = weight;
  p.grad = grad;
  const sdk::TensorInfo wi = g.tensor(weight);
  const auto like = [&](const char* what) {
    const Tensor t = g.add_variable(DType::kF32, wi.shape, fmt::format("{}.{}", name, what));
    g.set_tile_mapping(t, wi.mapping);
    return t;
  };
  p.is_f16 = wi.type == DType::kF16;
  p.f16_sum = p.is_f16 && f16_sums;
  const DType sum_type = p.f16_sum ? DType::kF16 : DType::kF32;
  p.sum = g.add_variable(sum_type, wi.shape, name + ".sum");
  g.set_tile_mapping(p.sum, wi.mapping);
  p.seed = 0x5eed0000u + index;
  p.accumulate_seed = 0xacc00000u + index;
  p.weight_decay = wi.shape.size() == 2 ? 0.01f : 0.0f;  // not biases and norms
  if (!state) return p;
  // A shard is whole words of the weight (f16 pairs), the same size on every replica.
  p.sharded = shard && R > 1 && wi.elements % (2 * R) == 0;
  if (p.sharded) {
    const size_t n = wi.elements / R;
    std::vector<unsigned> owners;  // the weight's tiles, in order
    for (const sdk::Interval& i : wi.mapping)
      if (std::find(owners.begin(), owners.end(), i.tile) == owners.end()) owners.push_back(i.tile);
    // Whole f16 pairs a tile, so that an f16 weight's rounded shard is whole words.
    const auto shard_of = [&](const char* what, bool scratch, DType type = DType::kF32) {
      const Tensor t = g.add_variable(type, {n}, fmt::format("{}.{}", name, what));
      g.map_evenly(t, owners, 2);
      if (scratch) g.set_scratch(t);
      return t;
    };
    p.grad_shard = shard_of("grad_shard", false, sum_type);
    p.master = shard_of("master_shard", true);
    p.m = shard_of("m_shard", true);
    p.v = shard_of("v_shard", true);
    p.master_remote = g.add_remote_buffer(name + ".master", DType::kF32, n, 1);
    p.m_remote = g.add_remote_buffer(name + ".m", DType::kF32, n, 1);
    p.v_remote = g.add_remote_buffer(name + ".v", DType::kF32, n, 1);
  } else {
    p.master = p.is_f16 ? like("master") : weight;
    p.m = like("m");
    p.v = like("v");
  }
  return p;
}

void add_to_sum(Graph& g, Program& program, const Parameter& p, Tensor grad, unsigned site,
                const std::string& name) {
  ops::AccumulateOptions o;
  o.stochastic = true;
  o.seed = p.accumulate_seed + (uint64_t{site} << 32);
  ops::accumulate(g, program, p.sum, grad, name, o);
}

namespace {

// One parameter's part of the update, appended to `out`'s programs. A sharded parameter's sums
// are reduce-scattered: each replica gets its shard's sums, updates its shard of the master
// (streamed in and out of streaming memory with the moments), and the new weights are gathered
// back from every replica's shard. Any other's are all-reduced and every replica updates all of
// it.
void add_update(Graph& g, Parameter& p, const ops::AdamOptions& lamb, float inverse_accumulate,
                Tensor corrections, Tensor step_number, UpdatePrograms& out) {
  Program& update = out.update;
  out.reduce.body.push_back(p.sharded
                                ? sdk::ReduceScatter(p.sum, p.grad_shard, sdk::CollectiveOp::kSum)
                                : sdk::AllReduce(p.sum, sdk::CollectiveOp::kSum));
  if (p.sharded)
    for (const auto& [buffer, t] : {std::pair{p.master_remote, p.master},
                                    std::pair{p.m_remote, p.m}, std::pair{p.v_remote, p.v}})
      update.body.push_back(sdk::CopyFromRemote(buffer, 0, t));
  // An f16 sum is reduced in f16 (half the bytes over the links) and widened, exactly, for LAMB.
  Tensor reduced = p.sharded ? p.grad_shard : p.sum;
  if (p.f16_sum) {
    reduced = ops::cast(g, update, reduced, DType::kF32, p.name + ".widened");
    g.set_scratch(reduced);
  }
  p.scaled =
      ops::unary(g, update, ops::UnaryOp::kScale, reduced, p.name + ".mean", inverse_accumulate);
  g.set_scratch(p.scaled);  // LAMB's alone: BERT-Large's word embedding's took 21 KB a tile
  ops::AdamOptions o = lamb;
  o.weight_decay = p.weight_decay;
  o.norms_across_replicas = p.sharded;
  ops::adam(g, update, p.master, p.scaled, p.m, p.v, corrections, o, p.name + ".lamb");
  if (p.sharded)
    for (const auto& [t, buffer] : {std::pair{p.master, p.master_remote},
                                    std::pair{p.m, p.m_remote}, std::pair{p.v, p.v_remote}})
      update.body.push_back(sdk::CopyToRemote(t, buffer, 0));
  if (p.f16()) {
    ops::CastOptions sr;
    sr.stochastic = true;
    sr.seed = p.seed;
    sr.step = step_number;
    p.rounded = ops::cast(g, update, p.master, DType::kF16, p.name + ".rounded", sr);
    g.set_scratch(*p.rounded);
    if (p.sharded)
      update.body.push_back(sdk::AllGather(*p.rounded, p.weight));
    else
      update.body.push_back(sdk::Copy(*p.rounded, p.weight));
  } else if (p.sharded) {
    update.body.push_back(sdk::AllGather(p.master, p.weight));
  }
  // In place: a cleared copy of BERT-Large's word embedding's sum took 85 KB of every tile.
  ops::zero(g, update, p.sum, p.name + ".cleared");
}

}  // namespace

Update add_update(Graph& g, std::vector<Parameter>& params, const ops::AdamOptions& lamb,
                  float inverse_accumulate, Tensor corrections, Tensor step_number) {
  Update all;
  const auto empty = [] {
    UpdatePrograms u;
    u.reduce = u.update = sdk::Sequence({});
    return u;
  };
  all.all = empty();
  for (Parameter& p : params) {
    UpdatePrograms u = empty();
    add_update(g, p, lamb, inverse_accumulate, corrections, step_number, u);
    const auto append = [](Program& to, const Program& from) {
      to.body.insert(to.body.end(), from.body.begin(), from.body.end());
    };
    append(all.all.reduce, u.reduce);
    append(all.all.update, u.update);
    all.each.push_back(std::move(u));
  }
  return all;
}

}  // namespace ipu::examples::bert
