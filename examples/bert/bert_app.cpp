#include "examples/bert/bert_app.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstring>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>

#include "examples/bert/optimizer.h"
#include "examples/bert/step_time.h"
#include "sdk/compiler/compiler.h"

namespace ipu::examples::bert {

using sdk::DType;
using sdk::Graph;
using sdk::Program;
using sdk::Tensor;
namespace ops = sdk::ops;
namespace ref = sdk::ops::reference;

namespace {

struct HostParameter {
  std::vector<float> master, m, v;
  std::vector<std::vector<float>> sums;  // each replica's (an f16 sum's values, widened)
  std::vector<uint16_t> bits;            // f16 weights
};

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Rows enough for `needed`: packed (or padded) from sequences drawn in growing numbers.
Rows rows_for(const LengthHistogram& lengths, size_t needed, const RowOptions& options) {
  uint64_t sequences = needed * (options.max_per_row > 1 ? 2 : 1) + 8;
  for (;;) {
    Rows rows =
        make_rows(synthetic_sequences(lengths, sequences, options.vocab, options.seed), options);
    if (rows.count >= needed) return rows;
    sequences *= 2;
  }
}

// The layers each stage holds beyond those it runs (BertConfig::held_layers): copies of its
// first layer's tensors that are not scratch, named "<tensor>.held<j>", mapped as the layer's.
// Not the layer's input gradient: in a stage of several layers it goes from one layer's
// backward pass to the next one's, and only the stage's first layer's leaves the stage (the
// layer that runs has it).
// The layer's vectors and what follows their layout (sums, shards) go where the stage's j-th
// next layer's would: `pieces` x j tiles further along the chip (EncoderOptions::vector_tile).
void hold_layers(Graph& g, const BertModel& model, const std::vector<size_t>& held, size_t pieces) {
  if (held.empty()) return;
  if (held.size() != model.stages.size())
    throw std::invalid_argument(fmt::format("bert: held layers for {} stages, but the model has {}",
                                            held.size(), model.stages.size()));
  const size_t existing = g.tensors().size();
  for (size_t k = 0; k < held.size(); ++k) {
    if (held[k] == 0) continue;
    if (model.stages[k].layers == 0)
      throw std::invalid_argument(
          fmt::format("bert: stage {} holds {} more layers but runs none to copy", k, held[k]));
    // "layer1." is in "bert.layer1.qkv_t" and "layer1.qkv_t.sum", not in "bert.layer10.qkv_t".
    const std::string layer = fmt::format("layer{}.", model.stages[k].first_layer);
    for (size_t i = 0; i < existing; ++i) {
      const sdk::TensorInfo t = g.tensors()[i];  // a copy: adding tensors moves the list
      if (t.is_view() || t.scratch || t.name.find(layer) == std::string::npos) continue;
      if (i == model.grads.layers.at(model.stages[k].first_layer).dx.id) continue;
      bool vector = false;
      for (const char* v : ops::kEncoderVectors)
        vector |= t.shape.size() == 1 && t.name.find(v) != std::string::npos;
      const unsigned chip_tiles = g.tiles() / static_cast<unsigned>(held.size());
      for (size_t j = 1; j <= held[k]; ++j) {
        std::vector<sdk::Interval> mapping = t.mapping;
        if (vector)
          for (sdk::Interval& piece : mapping)
            piece.tile = piece.tile / chip_tiles * chip_tiles +
                         static_cast<unsigned>((piece.tile % chip_tiles + j * pieces) % chip_tiles);
        g.set_tile_mapping(g.add_variable(t.type, t.shape, fmt::format("{}.held{}", t.name, j)),
                           mapping);
      }
    }
  }
}

}  // namespace

BertResult run_bert(const BertConfig& c) {
  const auto start = std::chrono::steady_clock::now();
  BertResult out;
  // Padded rows hold one sequence each: one next-sentence slot a row.
  BertShape s = c.shape;
  if (!c.packing) s.max_per_row = 1;
  out.shape = s;
  // The replica: one chip a stage; the machine's chips split into replicas of that many.
  const unsigned stages =
      c.layers_per_chip.empty() ? 1u : static_cast<unsigned>(c.layers_per_chip.size());
  if (c.machine.chips % stages != 0)
    throw std::invalid_argument(fmt::format(
        "{} pipeline stages on '{}', which has {} chips: the stages (a chip each) must divide "
        "the chips into whole replicas",
        stages, c.machine.preset, c.machine.chips));
  const unsigned R = c.machine.chips / stages;  // replicas, data-parallel
  // What cannot fit is refused before anything is built: every parameter's f32 master, LAMB's
  // two moments and the gradient sum, and the products' f16 copies, against the replica's memory.
  const uint64_t state_bytes = 16 * s.parameters() + 2 * s.f16_parameters();
  const unsigned tiles = c.tiles ? c.tiles : c.machine.chip.tiles;
  const uint64_t chip_bytes = uint64_t{tiles} * stages * c.machine.chip.tile.sram_bytes;
  if (state_bytes > chip_bytes)
    throw std::invalid_argument(fmt::format(
        "{} parameters need {:.0f} MB with LAMB's state (16 bytes each, 2 more for an f16 "
        "weight), more than the {:.0f} MB of {} chip{} of {} tiles: a model this size needs the "
        "pipeline over more chips",
        s.parameters(), state_bytes / 1e6, chip_bytes / 1e6, stages, stages == 1 ? "" : "s",
        tiles));
  // Bad data options are refused before anything is built; the rows are made up front, so
  // their number is bounded.
  if (c.dataset_rows != 0 && c.dataset_rows % s.rows != 0)
    throw std::invalid_argument(
        fmt::format("a dataset of {} rows is not a whole number of micro-batches of {} rows",
                    c.dataset_rows, s.rows));
  constexpr uint64_t kMaxDatasetRows = 1u << 16;
  const uint64_t wanted =
      c.dataset_rows ? c.dataset_rows : uint64_t{c.steps} * c.accumulate * R * s.rows;
  if (wanted > kMaxDatasetRows)
    throw std::invalid_argument(fmt::format(
        "a dataset of {} rows ({}) is more than the {} this example makes; give --dataset-rows "
        "N to read N rows again epoch after epoch",
        wanted,
        c.dataset_rows ? std::string("--dataset-rows")
                       : fmt::format("{} steps x {} micro-batches x {} replica{} x {} rows",
                                     c.steps, c.accumulate, R, R == 1 ? "" : "s", s.rows),
        kMaxDatasetRows));
  const LengthHistogram lengths = scale_histogram(
      read_histogram(c.histogram), static_cast<unsigned>(std::max<size_t>(s.seq, 1)));
  const sdk::Target target = sdk::Target::of(c.machine, c.tiles, R);
  if (!c.plan_choices.empty()) ops::load_plan_choices(c.plan_choices);
  Graph g(target);
  out.replicas = R;
  out.tiles = g.tiles();
  out.clock_hz = c.machine.chip.tile.clock_hz;
  BertOptions bo;
  bo.layers_per_chip = c.layers_per_chip;
  bo.available_memory_proportion = c.available_memory_proportion;
  bo.heads_memory_proportion = c.heads_memory_proportion;
  BertModel model = build_bert(g, s, bo);
  for (const ops::LayerStep& step : model.steps) out.flops_per_micro_batch += step.flops;
  for (const BertStage& stage : model.stages) {
    double f = 0;
    for (const StepRange r : {stage.forward, stage.backward})
      for (size_t i = r.begin; i < r.end; ++i) f += model.steps[i].flops;
    out.stage_flops.push_back(f);
  }
  out.operations = model.steps.size();

  // The parameters, each with its gradient, its LAMB state and its accumulated sum.
  std::vector<Parameter> params;
  std::vector<size_t> ready;  // per parameter: its gradient is complete after this many steps
  const bool shard = c.shard_optimizer && R > 1 && c.machine.gateway.present;
  // Parts alone without the update's need no optimizer state.
  const auto is_update_part = [](const std::string& name) {
    for (const char* prefix : {"layer.", "rest."})
      if (name.rfind(prefix, 0) == 0) return true;
    return false;
  };
  const bool update_parts = !c.parts_only || c.parts.empty() ||
                            std::any_of(c.parts.begin(), c.parts.end(), is_update_part);
  for (const ParameterRef& r : parameters(model)) {
    params.push_back(add_parameter(g, r.name, r.weight, r.grad, r.stage, R, shard, params.size(),
                                   c.f16_gradient_sums, update_parts));
    ready.push_back(r.ready);
    out.parameters += g.tensor(r.weight).elements;
    if (params.back().sharded) out.sharded_parameters += g.tensor(r.weight).elements;
  }

  // The step's programs. Every micro-batch's inputs stream in at the step's start ([A x n] on
  // chip 0) and its losses out at the end. Each stage's forward and backward passes, the heads'
  // and each group's gradient accumulation are functions, compiled once and called for every
  // micro-batch: a pipeline slot runs, on each chip, one micro-batch's backward pass (after the
  // forward recomputed from the stage's stashed input) and the next one's forward, and ends in
  // one exchange that moves every activation and gradient to its neighbour chip. Each chip syncs
  // on its own inside a slot, so the stages run at once. One stage (one chip) runs each
  // micro-batch's forward, heads and backward in a slot of its own, with no recomputation.
  const BertInputs& in = model.inputs;
  const unsigned A = c.accumulate, S = static_cast<unsigned>(model.stages.size());
  const unsigned chip_tiles = g.tiles() / S;
  // `copies` of a tensor's shape and mapping on `chip`, each copy on the next tiles: the copies
  // of one on a few tiles (a micro-batch's tokens on one) take a tile each, not 192 the same
  // tile; one over every tile keeps its tiles.
  const auto repeated = [&](Tensor like, unsigned copies, unsigned chip, const std::string& name) {
    const sdk::TensorInfo li = g.tensor(like);
    const Tensor t = g.add_variable(li.type, {copies, li.elements}, name);
    std::set<unsigned> spanned;
    for (const sdk::Interval& i : li.mapping) spanned.insert(i.tile % chip_tiles);
    const size_t span = spanned.size();
    std::vector<sdk::Interval> mapping;
    for (unsigned k = 0; k < copies; ++k)
      for (const sdk::Interval& i : li.mapping)
        mapping.push_back({k * li.elements + i.begin, k * li.elements + i.end,
                           chip * chip_tiles + static_cast<unsigned>(
                                                   (i.tile % chip_tiles + k * span) % chip_tiles)});
    g.set_tile_mapping(t, mapping);
    return t;
  };
  const auto entry = [&](Tensor many, unsigned k) {
    const size_t n = g.tensor(many).shape[1];
    return g.region(many, k * n, (k + 1) * n);
  };
  const std::vector<std::pair<const char*, Tensor>> inputs = {{"tokens", in.tokens},
                                                              {"positions", in.positions},
                                                              {"segments", in.segments},
                                                              {"sequence_ids", in.sequence_ids},
                                                              {"mlm_positions", in.mlm_positions},
                                                              {"mlm_labels", in.mlm_labels},
                                                              {"nsp_positions", in.nsp_positions},
                                                              {"nsp_labels", in.nsp_labels}};
  std::map<std::string, Tensor> batch;
  Program step_program = sdk::Sequence({});
  for (const auto& [name, t] : inputs) {
    batch[name] = repeated(t, A, 0, fmt::format("bert.batch.{}", name));
    g.add_host_stream(name, g.tensor(t).type, A * g.tensor(t).elements,
                      sdk::StreamDirection::kHostToDevice);
    step_program.body.push_back(sdk::HostWrite(name, batch[name]));
  }
  const Tensor mlm_losses = repeated(model.mlm_loss, A, 0, "bert.batch.mlm_loss");
  const Tensor nsp_losses = repeated(model.nsp_loss, A, 0, "bert.batch.nsp_loss");
  g.add_host_stream("mlm_loss", DType::kF32, A * s.predictions(),
                    sdk::StreamDirection::kDeviceToHost);
  g.add_host_stream("nsp_loss", DType::kF32, A * s.sentences(),
                    sdk::StreamDirection::kDeviceToHost);
  // Each later stage's masks, and its stash of inputs: a micro-batch's input arrives a slot
  // before its forward pass and is read again 2 (S - stage) slots later, for the backward.
  std::vector<Tensor> masks(S), stash(S);
  std::vector<unsigned> depth(S, 0);
  std::vector<std::pair<sdk::Region, sdk::Region>> to_stages;
  for (unsigned k = 1; k < S; ++k) {
    const BertStage& st = model.stages[k];
    masks[k] = repeated(st.mask, A, k, fmt::format("bert.stage{}.masks", k));
    depth[k] = std::min(A, 2 * (S - k) + 1);
    stash[k] = repeated(st.input, depth[k], k, fmt::format("bert.stage{}.stash", k));
    to_stages.push_back({g.region(batch["sequence_ids"]), g.region(masks[k])});
  }
  if (!to_stages.empty()) step_program.body.push_back(sdk::Copy(to_stages));
  const Program step_start = step_program;  // the host's inputs, the masks sent to the stages

  const auto word_t =
      static_cast<size_t>(std::find_if(params.begin(), params.end(),
                                       [](const Parameter& q) { return q.name == "word_t"; }) -
                          params.begin());
  // A function of the model's steps in `range`. A backward pass's (`group`: a stage or the
  // heads) adds each gradient to its sum as soon as it is complete, a layer's after the layer
  // (the update sets the sums back to 0); the word embedding's sum takes the heads' part with
  // the heads' and the lookup's with stage 0's. The gradients are then scratch, used in the
  // function alone: they share memory with every other function's scratch instead of each
  // holding its own for the whole run (BERT-Large's word embedding alone has two, of 122 KB a
  // tile).
  const auto function = [&](const std::string& name, StepRange range,
                            std::optional<unsigned> group) {
    Program body = sdk::Sequence({});
    const auto add = [&](const Parameter& q, Tensor grad, unsigned site, const std::string& label) {
      add_to_sum(g, body, q, grad, site, label);
      g.set_scratch(grad);
    };
    for (size_t i = range.begin; i < range.end; ++i) {
      body.body.push_back(model.steps[i].program);
      if (!group) continue;
      for (size_t k = 0; k < params.size(); ++k)
        if (params[k].stage == *group && ready[k] == i + 1)
          add(params[k], params[k].grad, 0, params[k].name + ".added");
      if (*group == kHeadsStage && i + 1 == model.heads.end)
        add(params[word_t], model.grads.word_t_tied, 1, "word_t.added_tied");
    }
    return g.add_function(body, name);
  };
  std::vector<sdk::Function> forward(S), backward(S);
  for (unsigned k = 0; k < S; ++k) {
    forward[k] = function(fmt::format("stage{}.forward", k), model.stages[k].forward, {});
    backward[k] = function(fmt::format("stage{}.backward", k), model.stages[k].backward, k);
  }
  const sdk::Function heads = function("heads", model.heads, kHeadsStage);
  for (size_t k = 0; k < params.size(); ++k) {
    const StepRange r =
        params[k].stage == kHeadsStage ? model.heads : model.stages[params[k].stage].backward;
    if (ready[k] <= r.begin || ready[k] > r.end)
      throw std::logic_error(
          fmt::format("bert: {}'s gradient is complete after step {}, outside "
                      "its backward pass (steps {} to {})",
                      params[k].name, ready[k], r.begin, r.end));
  }

  // The schedule, slot by slot (pipeline_slots); the host replays its accumulations in the
  // same order.
  std::vector<std::pair<unsigned, unsigned>> accumulations;  // (group, micro-batch)
  // Micro-batch mb's entries of the step's inputs, copied into the model's input tensors.
  const auto inputs_of = [&](std::initializer_list<const char*> names, unsigned mb) {
    std::vector<std::pair<sdk::Region, sdk::Region>> pairs;
    for (const auto& [name, t] : inputs)
      for (const char* asked : names)
        if (std::string(name) == asked) pairs.push_back({entry(batch[name], mb), g.region(t)});
    return pairs;
  };
  const auto restore = [&](Program& p, unsigned k, unsigned mb) {
    std::vector<std::pair<sdk::Region, sdk::Region>> pairs;
    if (k == 0) {
      pairs = inputs_of({"tokens", "positions", "segments", "sequence_ids"}, mb);
    } else {
      pairs.push_back({entry(masks[k], mb), g.region(model.stages[k].mask)});
      pairs.push_back({entry(stash[k], mb % depth[k]), g.region(model.stages[k].input)});
    }
    p.body.push_back(sdk::Copy(pairs));
  };
  // `record`: the step's (the host replays it); a part measured alone is not.
  const auto run_heads = [&](Program& p, unsigned mb, bool record = true) {
    p.body.push_back(
        sdk::Copy(inputs_of({"mlm_positions", "mlm_labels", "nsp_positions", "nsp_labels"}, mb)));
    p.body.push_back(sdk::Call(heads));
    p.body.push_back(sdk::Copy({{g.region(model.mlm_loss), entry(mlm_losses, mb)},
                                {g.region(model.nsp_loss), entry(nsp_losses, mb)}}));
    if (record) accumulations.push_back({kHeadsStage, mb});
  };
  const auto run_backward = [&](Program& p, unsigned k, unsigned mb, bool record = true) {
    p.body.push_back(sdk::Call(backward[k]));
    if (record) accumulations.push_back({k, mb});
  };
  // Each slot's closing copy, by what it carries (slot_sends).
  std::map<std::string, std::vector<std::pair<sdk::Region, sdk::Region>>> slot_copies;
  for (const PipelineSlot& slot : pipeline_slots(S, A)) {
    std::vector<std::pair<sdk::Region, sdk::Region>> sends;
    for (unsigned k = 0; k < S; ++k) {
      const BertStage& st = model.stages[k];
      const int b = slot.backward[k], f = slot.forward[k];
      if (S == 1) {  // forward, heads and backward of one micro-batch; nothing recomputed
        restore(step_program, 0, static_cast<unsigned>(f));
        step_program.body.push_back(sdk::Call(forward[0]));
        run_heads(step_program, static_cast<unsigned>(slot.heads));
        run_backward(step_program, 0, static_cast<unsigned>(b));
        continue;
      }
      if (b >= 0) {
        restore(step_program, k, static_cast<unsigned>(b));
        step_program.body.push_back(sdk::Call(forward[k]));  // recomputed
        run_backward(step_program, k, static_cast<unsigned>(b));
        if (k > 0) sends.push_back({g.region(st.dinput), g.region(model.stages[k - 1].doutput)});
      }
      if (f >= 0) {
        restore(step_program, k, static_cast<unsigned>(f));
        step_program.body.push_back(sdk::Call(forward[k]));
        sends.push_back({g.region(st.output),
                         k + 1 < S ? entry(stash[k + 1], static_cast<unsigned>(f) % depth[k + 1])
                                   : g.region(model.heads_input)});
      }
      if (k == 0 && slot.heads >= 0) {
        run_heads(step_program, static_cast<unsigned>(slot.heads));
        sends.push_back({g.region(model.heads_dinput), g.region(model.stages[S - 1].doutput)});
      }
    }
    if (!sends.empty()) {
      step_program.body.push_back(sdk::Copy(sends));
      slot_copies.emplace(slot_sends(slot), sends);
    }
  }
  step_program.body.push_back(sdk::HostRead(mlm_losses, "mlm_loss"));
  step_program.body.push_back(sdk::HostRead(nsp_losses, "nsp_loss"));
  out.stages = S;
  out.slots = S == 1 ? A : A + 2 * S;
  // The update: the step's bias corrections and its number (the stochastic rounding's salt).
  const Tensor corrections = g.add_variable(DType::kF32, {2}, "bert.corrections");
  const Tensor step_number = g.add_variable(DType::kU32, {1}, "bert.step");
  g.set_tile_mapping(corrections, 0);
  g.set_tile_mapping(step_number, 0);
  g.add_host_stream("corrections", DType::kF32, 2, sdk::StreamDirection::kHostToDevice);
  g.add_host_stream("step", DType::kU32, 1, sdk::StreamDirection::kHostToDevice);
  Program update = sdk::Sequence(
      {sdk::HostWrite("corrections", corrections), sdk::HostWrite("step", step_number)});
  // Both on every tile once a step, for every parameter's update to read where it runs: each
  // update's own multicast of them from tile 0 gave that tile 290 KB of destination lists on
  // BERT-Large.
  std::vector<unsigned> every_tile(g.tiles());
  for (unsigned t = 0; t < g.tiles(); ++t) every_tile[t] = t;
  const Tensor corrections_here =
      ops::copies_on_tiles(g, update, corrections, every_tile, "bert.corrections.tiles");
  const Tensor step_here =
      ops::copies_on_tiles(g, update, step_number, every_tile, "bert.step.tiles");
  ops::AdamOptions lamb;
  lamb.lamb = true;
  lamb.learning_rate = c.learning_rate;
  // Each replica's sums added up over the replicas, then their mean over every micro-batch of
  // every replica.
  const float inverse_accumulate = 1.0f / static_cast<float>(c.accumulate * R);
  const Update updates =
      update_parts ? add_update(g, params, lamb, inverse_accumulate, corrections_here, step_here)
                   : Update{};
  update.body.push_back(updates.all.update);
  const Program& reduce = updates.all.reduce;
  hold_layers(g, model, c.held_layers, ops::encoder_vector_pieces(s.encoder()));
  if (!c.plan_choices.empty()) ops::save_plan_choices(c.plan_choices);
  const auto compile_start = std::chrono::steady_clock::now();
  std::vector<sdk::NamedProgram> programs = {{"step", step_program}, {"update", update}};
  if (R > 1) programs.push_back({"reduce", reduce});
  // Each part of the step alone, for compose_pipeline (BertConfig::measure_parts, parts_only).
  // Part of a stage's forward pass is restoring its inputs, as in every slot; micro-batch 0's
  // stand for any (the same tiles and sizes). The last stage's first layer's update parts stand
  // for any layer's.
  std::vector<sdk::NamedProgram> parts;
  if (c.measure_parts || c.parts_only) {
    parts.push_back({"empty", sdk::Sequence({})});
    for (unsigned k = 0; k < S; ++k) {
      Program back = sdk::Sequence({}), fwd = sdk::Sequence({}), bwd = sdk::Sequence({});
      restore(back, k, 0);
      fwd = back;
      fwd.body.push_back(sdk::Call(forward[k]));
      run_backward(bwd, k, 0, false);
      parts.push_back({fmt::format("stage{}.restore", k), back});
      parts.push_back({fmt::format("stage{}.forward", k), fwd});
      parts.push_back({fmt::format("stage{}.backward", k), bwd});
    }
    Program h = sdk::Sequence({});
    run_heads(h, 0, false);
    parts.push_back({"heads", h});
    for (const auto& [key, sends] : slot_copies)
      parts.push_back({"sends." + key, sdk::Copy(sends)});
    Program host_io = step_start;
    host_io.body.push_back(sdk::HostRead(mlm_losses, "mlm_loss"));
    host_io.body.push_back(sdk::HostRead(nsp_losses, "nsp_loss"));
    parts.push_back({"host_io", host_io});
    // The update's parts are the bench's (parts only): a run that trains times its update whole.
    // One layer's parameters, and the rest: those of no layer (the embeddings, the heads). The
    // update runs the parameters one after the other, so the whole update is the rest's and
    // every layer's.
    const bool update_alone = c.parts_only && update_parts;
    UpdatePrograms layer, rest;
    layer.reduce = layer.update = rest.reduce = rest.update = sdk::Sequence({});
    const std::string prefix = fmt::format("layer{}.", model.stages[S - 1].first_layer);
    for (size_t i = 0; i < updates.each.size(); ++i) {
      UpdatePrograms* to = params[i].name.rfind(prefix, 0) == 0    ? &layer
                           : params[i].name.rfind("layer", 0) != 0 ? &rest
                                                                   : nullptr;
      if (to == nullptr) continue;
      for (auto [into, from] : {std::pair{&to->reduce, &updates.each[i].reduce},
                                std::pair{&to->update, &updates.each[i].update}})
        into->body.insert(into->body.end(), from->body.begin(), from->body.end());
    }
    if (R > 1 && update_alone) parts.push_back({"layer.reduce", layer.reduce});
    if (update_alone) parts.push_back({"layer.update", layer.update});
    if (R > 1 && update_alone) parts.push_back({"rest.reduce", rest.reduce});
    if (update_alone) parts.push_back({"rest.update", rest.update});
    if (!c.parts.empty()) {  // the ones asked for, each known
      for (const std::string& name : c.parts)
        if (std::none_of(parts.begin(), parts.end(),
                         [&](const sdk::NamedProgram& p) { return p.name == name; }))
          throw std::invalid_argument(fmt::format("no part '{}' in this step", name));
      parts.erase(std::remove_if(parts.begin(), parts.end(),
                                 [&](const sdk::NamedProgram& p) {
                                   return p.name != "empty" &&
                                          std::find(c.parts.begin(), c.parts.end(), p.name) ==
                                              c.parts.end();
                                 }),
                  parts.end());
    }
    if (c.parts_only) programs.clear();
    for (const sdk::NamedProgram& p : parts) programs.push_back({"part." + p.name, p.program});
  }
  sdk::Executable exe = sdk::compile(g, programs);
  out.compile_seconds = seconds_since(compile_start);
  out.memory_report = exe.memory_report;
  out.fullest_tile = exe.fullest_tile.tile;
  out.fullest_tile_bytes = exe.fullest_tile.used;
  out.tile_free_bytes = exe.fullest_tile.free;
  if (c.compile_only) return out;

  // The data: enough rows for every micro-batch of every step.
  RowOptions ro;
  ro.seq = static_cast<unsigned>(s.seq);
  ro.max_per_row = static_cast<unsigned>(s.max_per_row);
  ro.vocab = static_cast<unsigned>(s.vocab);
  ro.seed = c.seed;
  const size_t micro_batches = size_t{c.steps} * c.accumulate * R;
  const size_t dataset_rows = c.dataset_rows ? c.dataset_rows : micro_batches * s.rows;
  Rows rows = rows_for(lengths, dataset_rows, ro);

  // Initial weights: N(0, 0.02)-like uniform for matrices, 1 and 0 for the norms, 0 biases.
  std::mt19937 rng(c.seed);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  std::vector<HostParameter> host(params.size());
  // Parts alone need no more of the graph than their inputs' sizes: its vertices, tensors and
  // programs (gigabytes at BERT-Large's size on a POD) go before the machine is built.
  std::map<std::string, size_t> input_elements;
  for (const auto& [name, t] : inputs) input_elements[name] = g.tensor(t).elements;
  if (c.parts_only) {
    std::vector<sdk::NamedProgram>().swap(programs);
    for (sdk::NamedProgram& p : parts) p.program = sdk::Sequence({});  // run by name
    g = Graph(target);
  }
  sdk::Device device(std::move(exe), c.device);
  for (size_t i = 0; i < (c.parts_only ? 0 : params.size()); ++i) {  // parts alone: zeros
    const Parameter& p = params[i];
    const sdk::TensorInfo& wi = g.tensor(p.weight);
    HostParameter& h = host[i];
    const bool gamma = p.name.find("gamma") != std::string::npos;
    h.master.resize(wi.elements);
    for (float& e : h.master) e = wi.shape.size() == 2 ? 0.035f * unit(rng) : gamma ? 1.0f : 0.0f;
    h.m.assign(wi.elements, 0.0f);
    h.v.assign(wi.elements, 0.0f);
    h.sums.assign(R, std::vector<float>(wi.elements, 0.0f));
    device.write_tensor(g.tensor(p.sum).name, h.sums[0].data(),
                        h.sums[0].size() * (p.f16_sum ? 2 : 4));
    if (p.sharded) {  // each replica's shard in its streaming memory
      const size_t n = wi.elements / R;
      for (unsigned q = 0; q < R; ++q)
        for (const auto& [buffer, values] :
             {std::pair{p.master_remote, &h.master}, std::pair{p.m_remote, &h.m},
              std::pair{p.v_remote, &h.v}})
          device.write_remote(g.remote_buffer(buffer).name, q, 0, values->data() + q * n, n * 4);
      if (!p.f16()) device.write_tensor(wi.name, h.master.data(), h.master.size() * 4);
    } else {
      device.write_tensor(g.tensor(p.master).name, h.master.data(), h.master.size() * 4);
      device.write_tensor(g.tensor(p.m).name, h.m.data(), h.m.size() * 4);
      device.write_tensor(g.tensor(p.v).name, h.v.data(), h.v.size() * 4);
    }
    if (p.f16()) {
      h.bits = ref::cast_to_f16(h.master);
      device.write_tensor(wi.name, h.bits.data(), h.bits.size() * 2);
    }
  }

  // Streams: a step's inputs (its micro-batches' in turn) and its losses.
  BertInputValues step_inputs;
  std::vector<float> mlm_loss(size_t{R} * A * s.predictions()),
      nsp_loss(size_t{R} * A * s.sentences());
  // Every replica gets the same corrections and step number.
  float correction_values[2] = {1, 1};
  std::vector<float> corrections_in(2 * size_t{R}, 1.0f);
  std::vector<uint32_t> step_in(R, 0);
  const auto connect = [&](const char* name, auto& v) {
    device.connect_stream(name, v.data(), v.size() * sizeof(v[0]));
  };
  // A sharded parameter's update on the host, as the replicas make it: each its shard of the
  // reduced sums (the same additions as the AllReduce's), LAMB's direction on it, the shards' two
  // sums of squares added over the replicas in the ring's order, then every shard's step.
  const auto update_shards = [&](HostParameter& h, const std::vector<float>& scaled,
                                 const ops::AdamOptions& o,
                                 const std::vector<std::pair<size_t, size_t>>& ranges,
                                 const std::vector<std::pair<size_t, size_t>>& cast_ranges,
                                 const Parameter& p, unsigned step) {
    const size_t n = scaled.size() / R;
    const auto slice = [n](const std::vector<float>& v, unsigned q) {
      return std::vector<float>(v.begin() + static_cast<ptrdiff_t>(q * n),
                                v.begin() + static_cast<ptrdiff_t>((q + 1) * n));
    };
    std::vector<std::vector<float>> w(R), m(R), v(R), u(R), totals(R);
    for (unsigned q = 0; q < R; ++q) {
      w[q] = slice(h.master, q), m[q] = slice(h.m, q), v[q] = slice(h.v, q);
      totals[q] = ref::lamb_direction(w[q], slice(scaled, q), m[q], v[q], u[q], correction_values,
                                      o, ranges);
    }
    // Two values, on one tile: the ring's chunks are contiguous.
    const std::vector<float> total = sdk::all_reduce_sum_reference(target, totals, {});
    if (p.f16()) h.bits.clear();
    for (unsigned q = 0; q < R; ++q) {
      ref::lamb_apply(w[q], u[q], total, o);
      std::copy(w[q].begin(), w[q].end(), h.master.begin() + static_cast<ptrdiff_t>(q * n));
      std::copy(m[q].begin(), m[q].end(), h.m.begin() + static_cast<ptrdiff_t>(q * n));
      std::copy(v[q].begin(), v[q].end(), h.v.begin() + static_cast<ptrdiff_t>(q * n));
      if (p.f16()) {
        const std::vector<uint16_t> bits =
            ref::cast_to_f16_stochastic(w[q], cast_ranges, p.seed, step);
        h.bits.insert(h.bits.end(), bits.begin(), bits.end());
      }
    }
  };
  connect("mlm_loss", mlm_loss);
  connect("nsp_loss", nsp_loss);
  connect("corrections", corrections_in);
  connect("step", step_in);

  // The host's weights as the model's reference reads them.
  const auto host_weights = [&]() {
    BertWeightValues v;
    v.layers.resize(s.layers);
    const std::vector<ParameterValues> values = parameter_values(v);
    for (size_t i = 0; i < params.size(); ++i) {
      if (values[i].f16)
        *values[i].f16 = host[i].bits;
      else
        *values[i].f32 = host[i].master;
    }
    return v;
  };
  const auto mean_used = [](const std::vector<float>& loss, const std::vector<uint32_t>& labels,
                            double& sum, size_t& used) {
    for (size_t i = 0; i < loss.size(); ++i)
      if (labels[i] != ops::kIgnoredLabel) sum += loss[i], ++used;
  };

  bool identical = !c.parts_only;
  size_t next_row = 0;
  std::map<std::string, std::vector<uint32_t>> part_inputs;
  for (unsigned step = 0; step < (c.parts_only ? 0u : c.steps); ++step) {
    BertStep r;
    double mlm = 0, nsp = 0, mlm_host = 0, nsp_host = 0;
    size_t predictions = 0, sentences = 0, unused = 0;
    const BertWeightValues weights = host_weights();
    // Replica q's micro-batch a is micro[q * A + a]: the replicas take the dataset's rows in turn.
    std::vector<BertInputValues> micro(size_t{R} * A);
    step_inputs = BertInputValues{};
    for (size_t u = 0; u < micro.size(); ++u) {
      micro[u] = input_values(rows, next_row, s);
      const auto append = [](auto& to, const auto& from) {
        to.insert(to.end(), from.begin(), from.end());
      };
      append(step_inputs.tokens, micro[u].tokens);
      append(step_inputs.positions, micro[u].positions);
      append(step_inputs.segments, micro[u].segments);
      append(step_inputs.sequence_ids, micro[u].sequence_ids);
      append(step_inputs.mlm_positions, micro[u].mlm_positions);
      append(step_inputs.mlm_labels, micro[u].mlm_labels);
      append(step_inputs.nsp_positions, micro[u].nsp_positions);
      append(step_inputs.nsp_labels, micro[u].nsp_labels);
      for (size_t row = next_row; row < next_row + s.rows; ++row)
        for (size_t k = 0; k < rows.max_per_row; ++k)
          r.sequences += rows.nsp_weights[row * rows.max_per_row + k] != 0.0f;
      for (size_t i = next_row * s.seq; i < (next_row + s.rows) * s.seq; ++i)
        r.real_tokens += rows.sequence_ids[i] != 0;
      next_row = (next_row + s.rows) % dataset_rows;
    }
    connect("tokens", step_inputs.tokens);
    connect("positions", step_inputs.positions);
    connect("segments", step_inputs.segments);
    connect("sequence_ids", step_inputs.sequence_ids);
    connect("mlm_positions", step_inputs.mlm_positions);
    connect("mlm_labels", step_inputs.mlm_labels);
    connect("nsp_positions", step_inputs.nsp_positions);
    connect("nsp_labels", step_inputs.nsp_labels);
    const sdk::DeviceReport& ran = device.run("step");
    r.pipeline_cycles = ran.run.cycles;
    r.host_io_cycles = ran.host_transfer_cycles;
    r.ipulink_bytes = ran.run.ipulink_bytes;
    r.joules = ran.energy.joules;
    r.chip_joules = ran.energy.chip_joules();
    r.flops = ran.run.flops;
    if (R > 1) {
      const sdk::DeviceReport& reduced = device.run("reduce");
      r.allreduce_cycles = reduced.run.cycles;
      r.update_ipulink_bytes = reduced.run.ipulink_bytes;
      r.joules += reduced.energy.joules;
      r.chip_joules += reduced.energy.chip_joules();
      r.flops += reduced.run.flops;
    }
    // The host: each micro-batch's run of the model, its gradients added to its replica's sums
    // in the order the schedule added them.
    std::vector<BertValues> want(micro.size());
    const size_t P = s.predictions(), K = s.sentences();
    for (size_t u = 0; u < micro.size(); ++u) {
      want[u] = bert_reference(model, s, micro[u], weights);
      identical &= std::memcmp(mlm_loss.data() + u * P, want[u].mlm_loss.data(), P * 4) == 0 &&
                   std::memcmp(nsp_loss.data() + u * K, want[u].nsp_loss.data(), K * 4) == 0;
      const std::vector<float> mlm_got(mlm_loss.begin() + static_cast<ptrdiff_t>(u * P),
                                       mlm_loss.begin() + static_cast<ptrdiff_t>((u + 1) * P));
      const std::vector<float> nsp_got(nsp_loss.begin() + static_cast<ptrdiff_t>(u * K),
                                       nsp_loss.begin() + static_cast<ptrdiff_t>((u + 1) * K));
      mean_used(mlm_got, micro[u].mlm_labels, mlm, predictions);
      mean_used(nsp_got, micro[u].nsp_labels, nsp, sentences);
      mean_used(want[u].mlm_loss, micro[u].mlm_labels, mlm_host, unused);
      mean_used(want[u].nsp_loss, micro[u].nsp_labels, nsp_host, unused);
    }
    // An f16 sum's additions round stochastically, each micro-batch's salted with its count of
    // earlier ones (every group's backward pass runs once a micro-batch).
    const auto add_to = [&](size_t i, unsigned q, const std::vector<float>& grad, unsigned site,
                            uint32_t draw) {
      const Parameter& p = params[i];
      std::vector<float>& sum = host[i].sums[q];
      if (!p.f16_sum) {
        sum = ref::binary(ops::BinaryOp::kAdd, sum, grad);
        return;
      }
      sum = ref::widen_f16(ref::accumulate_f16(ref::cast_to_f16(sum), grad,
                                               ops::element_ranges(g, p.sum, 2), true,
                                               p.accumulate_seed + (uint64_t{site} << 32), draw));
    };
    for (unsigned q = 0; q < R; ++q) {
      std::map<unsigned, uint32_t> earlier;  // by group: this step's micro-batches so far
      for (const auto& [group, mb] : accumulations) {
        const BertValues& v = want[size_t{q} * A + mb];
        const auto grads = gradient_values(v.grads);
        const uint32_t draw = step * A + earlier[group]++;
        for (size_t i = 0; i < params.size(); ++i)
          if (params[i].stage == group) add_to(i, q, *grads[i], 0, draw);
        if (group == kHeadsStage) add_to(word_t, q, v.grads.word_t_tied, 1, draw);
      }
    }
    r.mlm_loss = mlm / static_cast<double>(predictions);
    r.nsp_loss = nsp / static_cast<double>(sentences);
    r.expected_mlm_loss = mlm_host / static_cast<double>(predictions);
    r.expected_nsp_loss = nsp_host / static_cast<double>(sentences);
    // The update, on the device and on the host.
    const float b1t = std::pow(lamb.beta1, static_cast<float>(step + 1)),
                b2t = std::pow(lamb.beta2, static_cast<float>(step + 1));
    correction_values[0] = 1.0f / (1.0f - b1t);
    correction_values[1] = 1.0f / (1.0f - b2t);
    for (unsigned q = 0; q < R; ++q) {
      std::copy(correction_values, correction_values + 2, corrections_in.begin() + 2 * q);
      step_in[q] = step;
    }
    const sdk::DeviceReport& report = device.run("update");
    r.update_cycles = report.run.cycles;
    r.host_io_cycles += report.host_transfer_cycles;
    r.update_ipulink_bytes += report.run.ipulink_bytes;
    r.update_streaming_bytes = report.run.streaming_bytes_written + report.run.streaming_bytes_read;
    r.update_streaming_cycles = report.run.streaming_phase_cycles;
    r.update_cross_chip_cycles = report.run.cross_chip_phase_cycles;
    r.joules += report.energy.joules;
    r.chip_joules += report.energy.chip_joules();
    r.flops += report.run.flops;
    out.memory_hash = report.run.memory_hash;
    out.profile = report.profile;
    r.cycles = r.pipeline_cycles + r.allreduce_cycles + r.update_cycles;
    for (size_t i = 0; i < params.size(); ++i) {
      const Parameter& p = params[i];
      HostParameter& h = host[i];
      // The sums' AllReduce follows their tile mapping; a sharded one's ReduceScatter does not.
      const std::vector<sdk::Interval> mapping =
          p.sharded ? std::vector<sdk::Interval>{} : g.tensor(p.sum).mapping;
      std::vector<float> sum;
      if (p.f16_sum) {
        std::vector<std::vector<uint16_t>> bits;
        for (const std::vector<float>& values : h.sums) bits.push_back(ref::cast_to_f16(values));
        sum = ref::widen_f16(sdk::all_reduce_sum_reference_f16(target, bits, mapping));
      } else {
        sum = sdk::all_reduce_sum_reference(target, h.sums, mapping);
      }
      const std::vector<float> scaled = ref::unary(ops::UnaryOp::kScale, sum, inverse_accumulate);
      ops::AdamOptions o = lamb;
      o.weight_decay = p.weight_decay;
      if (p.sharded) {
        update_shards(h, scaled, o, ops::element_ranges(g, p.master),
                      p.f16() ? ops::element_ranges(g, *p.rounded, 2)
                              : std::vector<std::pair<size_t, size_t>>(),
                      p, step);
      } else {
        ref::adam(h.master, scaled, h.m, h.v, correction_values, o,
                  ops::element_ranges(g, p.master));
        if (p.f16())
          h.bits = ref::cast_to_f16_stochastic(h.master, ops::element_ranges(g, *p.rounded, 2),
                                               p.seed, step);
      }
      h.sums.assign(R, std::vector<float>(sum.size(), 0.0f));  // ops::zero
    }
    out.steps.push_back(r);
  }
  // The final weights, read back from every replica.
  for (size_t i = 0; i < (c.parts_only ? 0 : params.size()); ++i) {
    const Parameter& p = params[i];
    const sdk::TensorInfo& mi = g.tensor(p.master);
    if (p.sharded) {  // the masters and moments: each replica's shard, in streaming memory
      for (unsigned q = 0; q < R; ++q)
        for (const auto& [buffer, values] :
             {std::pair{p.master_remote, &host[i].master}, std::pair{p.m_remote, &host[i].m},
              std::pair{p.v_remote, &host[i].v}}) {
          std::vector<float> got(mi.elements);
          device.read_remote(g.remote_buffer(buffer).name, q, 0, got.data(), got.size() * 4);
          identical &=
              std::memcmp(got.data(), values->data() + q * mi.elements, got.size() * 4) == 0;
        }
    }
    // The weights every replica reads: the f32 master (a sharded one gathered into its
    // weight), and an f16 weight's bits.
    const sdk::TensorInfo& wi = g.tensor(p.weight);
    for (unsigned q = 0; q < R; ++q) {
      if (!p.f16() || !p.sharded) {
        const sdk::TensorInfo& full = g.tensor(p.sharded ? p.weight : p.master);
        std::vector<float> got(full.elements);
        device.read_tensor(full.name, q, got.data(), got.size() * 4);
        identical &= std::memcmp(got.data(), host[i].master.data(), got.size() * 4) == 0;
      }
      if (p.f16()) {
        std::vector<uint16_t> bits(wi.elements);
        device.read_tensor(wi.name, q, bits.data(), bits.size() * 2);
        identical &= bits == host[i].bits;
      }
    }
  }
  if (!parts.empty()) {  // after the checks: the parts' runs change the sums and the losses
    if (c.parts_only) {  // the streams the parts read, zeros
      for (const auto& [name, elements] : input_elements) {
        std::vector<uint32_t>& zeros = part_inputs[name];
        zeros.assign(size_t{R} * A * elements, 0);
        connect(name.c_str(), zeros);
      }
    }
    // The empty program's run after a first one (the device's first run pays for more).
    device.run("part.empty");
    const uint64_t dispatch = device.run("part.empty").run.cycles;
    for (const sdk::NamedProgram& p : parts) {
      if (p.name == "empty") continue;
      const auto part_start = std::chrono::steady_clock::now();
      const hw::RunReport& run = device.run("part." + p.name).run;
      const uint64_t cycles = run.cycles;
      out.part_host_seconds[p.name] = seconds_since(part_start);
      out.part_streaming_cycles[p.name] = run.streaming_phase_cycles;
      out.part_cross_chip_cycles[p.name] = run.cross_chip_phase_cycles;
      if (cycles < dispatch)
        throw std::logic_error(fmt::format(
            "part '{}' took {} cycles, less than an empty program's {}", p.name, cycles, dispatch));
      out.part_cycles[p.name] = cycles - dispatch;
    }
    const auto measured = [&](const std::string& name) {
      const auto found = out.part_cycles.find(name);
      return found == out.part_cycles.end() ? 0 : found->second;
    };
    if (c.parts.empty()) {
      PipelineParts& pp = out.parts.emplace();
      for (unsigned k = 0; k < S; ++k) {
        pp.forward.push_back(measured(fmt::format("stage{}.forward", k)));
        pp.backward.push_back(measured(fmt::format("stage{}.backward", k)));
      }
      pp.heads = measured("heads");
      for (const auto& [key, sends] : slot_copies) pp.sends[key] = measured("sends." + key);
      pp.host_io = measured("host_io");
      out.composed = compose_pipeline(pp, S, A);
    }
  }
  const size_t used_rows = std::min(dataset_rows, micro_batches * s.rows);
  uint64_t real = 0;
  for (size_t i = 0; i < used_rows * s.seq; ++i) real += rows.sequence_ids[i] != 0;
  out.packing_efficiency = static_cast<double>(real) / static_cast<double>(used_rows * s.seq);
  out.identical = identical;
  out.host_seconds = seconds_since(start);
  return out;
}

std::vector<double> parse_memory_proportions(const std::string& text) {
  std::vector<double> shares;
  for (size_t at = 0; at <= text.size();) {
    const size_t comma = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, comma - at);
    try {
      shares.push_back(sdk::parse_real("", item, 0.0, 1.0, true));
    } catch (const std::invalid_argument&) {
      throw std::invalid_argument(fmt::format(
          "'{}' at character {} is not a share of a tile's memory in (0, 1] (give one, e.g. 0.6, "
          "or one a chip of a replica, e.g. 0.2,0.3,0.3,0.3)",
          item, at + 1));
    }
    at = comma + 1;
  }
  return shares;
}

std::vector<size_t> parse_layers_per_chip(const std::string& text) {
  std::vector<size_t> counts;
  for (size_t at = 0; !text.empty() && at <= text.size();) {
    const size_t comma = std::min(text.find(',', at), text.size());
    size_t n = 0;
    const auto [end, error] = std::from_chars(text.data() + at, text.data() + comma, n);
    if (error != std::errc() || end != text.data() + comma || n == 0 || n > 48)
      throw std::invalid_argument(fmt::format(
          "'{}' at character {} is not a count of layers from 1 to 48 (give e.g. 3,7,7,7)",
          text.substr(at, comma - at), at + 1));
    counts.push_back(n);
    at = comma + 1;
  }
  return counts;
}

bool parse_gradient_sums(const std::string& text) {
  if (text == "f16") return true;
  if (text == "f32") return false;
  throw std::invalid_argument(
      fmt::format("'{}' is not a type for the gradient sums (f32 or f16)", text));
}

}  // namespace ipu::examples::bert
