#include "examples/bert/bert_app.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <random>

#include "sdk/compiler/compiler.h"

namespace ipu::examples::bert {

using sdk::DType;
using sdk::Graph;
using sdk::Program;
using sdk::Tensor;
namespace ops = sdk::ops;
namespace ref = sdk::ops::reference;

namespace {

// One trained parameter: the tensor the model reads, its gradient, and what LAMB keeps. An f16
// weight has an f32 master; an f32 weight is its own master.
struct Parameter {
  std::string name;
  Tensor weight, grad, master, m, v, sum, scaled;
  std::optional<Tensor> rounded;  // f16 weights: the master rounded stochastically
  uint64_t seed = 0;
  float weight_decay = 0;
  bool f16() const { return rounded.has_value(); }
};

struct HostParameter {
  std::vector<float> master, m, v, sum;
  std::vector<uint16_t> bits;  // f16 weights
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

}  // namespace

BertResult run_bert(const BertConfig& c) {
  const auto start = std::chrono::steady_clock::now();
  BertResult out;
  // Padded rows hold one sequence each: one next-sentence slot a row.
  BertShape s = c.shape;
  if (!c.packing) s.max_per_row = 1;
  out.shape = s;
  // What cannot fit is refused before anything is built: every parameter's f32 master, LAMB's
  // two moments and the gradient sum, and the products' f16 copies, against the chip's memory.
  const uint64_t state_bytes = 16 * s.parameters() + 2 * s.f16_parameters();
  const uint64_t chip_bytes =
      uint64_t{c.tiles ? c.tiles : c.machine.chip.tiles} * c.machine.chip.tile.sram_bytes;
  if (state_bytes > chip_bytes)
    throw std::invalid_argument(fmt::format(
        "{} parameters need {:.0f} MB with LAMB's state (16 bytes each, 2 more for an f16 "
        "weight), more than the {:.0f} MB of the chip's {} tiles: a model this size needs the "
        "pipeline over a machine's chips",
        s.parameters(), state_bytes / 1e6, chip_bytes / 1e6,
        c.tiles ? c.tiles : c.machine.chip.tiles));
  // Bad data options are refused before anything is built; the rows are made up front, so
  // their number is bounded.
  if (c.dataset_rows != 0 && c.dataset_rows % s.rows != 0)
    throw std::invalid_argument(
        fmt::format("a dataset of {} rows is not a whole number of micro-batches of {} rows",
                    c.dataset_rows, s.rows));
  constexpr uint64_t kMaxDatasetRows = 1u << 16;
  const uint64_t wanted =
      c.dataset_rows ? c.dataset_rows : uint64_t{c.steps} * c.accumulate * s.rows;
  if (wanted > kMaxDatasetRows)
    throw std::invalid_argument(fmt::format(
        "a dataset of {} rows ({}) is more than the {} this example makes; give --dataset-rows "
        "N to read N rows again epoch after epoch",
        wanted,
        c.dataset_rows
            ? std::string("--dataset-rows")
            : fmt::format("{} steps x {} micro-batches x {} rows", c.steps, c.accumulate, s.rows),
        kMaxDatasetRows));
  const LengthHistogram lengths = scale_histogram(
      read_histogram(c.histogram), static_cast<unsigned>(std::max<size_t>(s.seq, 1)));
  Graph g(sdk::Target::of(c.machine, c.tiles));
  out.tiles = g.tiles();
  out.clock_hz = c.machine.chip.tile.clock_hz;
  BertModel model = build_bert(g, s);
  for (const ops::LayerStep& step : model.steps) out.flops_per_micro_batch += step.flops;
  out.operations = model.steps.size();

  // The parameters, each with its gradient, its LAMB state and its accumulated sum.
  std::vector<Parameter> params;
  const auto param = [&](const std::string& name, Tensor weight, Tensor grad) {
    Parameter p;
    p.name = name;
    p.weight = weight;
    p.grad = grad;
    const sdk::TensorInfo wi = g.tensor(weight);
    const auto like = [&](const char* what) {
      const Tensor t = g.add_variable(DType::kF32, wi.shape, fmt::format("{}.{}", name, what));
      g.set_tile_mapping(t, wi.mapping);
      return t;
    };
    p.master = wi.type == DType::kF16 ? like("master") : weight;
    p.m = like("m");
    p.v = like("v");
    p.sum = like("sum");
    p.seed = 0x5eed0000u + params.size();
    p.weight_decay = wi.shape.size() == 2 ? 0.01f : 0.0f;  // not biases and norms
    out.parameters += wi.elements;
    params.push_back(p);
  };
  for (const ParameterRef& r : parameters(model)) param(r.name, r.weight, r.grad);

  // Programs: a micro-batch (its inputs streamed in, its losses out) whose gradients start the
  // sums or add to them, and the update.
  const BertInputs& in = model.inputs;
  const std::vector<std::pair<const char*, Tensor>> inputs = {{"tokens", in.tokens},
                                                              {"positions", in.positions},
                                                              {"segments", in.segments},
                                                              {"sequence_ids", in.sequence_ids},
                                                              {"mlm_positions", in.mlm_positions},
                                                              {"mlm_labels", in.mlm_labels},
                                                              {"nsp_positions", in.nsp_positions},
                                                              {"nsp_labels", in.nsp_labels}};
  Program stream_in = sdk::Sequence({});
  for (const auto& [name, t] : inputs) {
    g.add_host_stream(name, g.tensor(t).type, g.tensor(t).elements,
                      sdk::StreamDirection::kHostToDevice);
    stream_in.body.push_back(sdk::HostWrite(name, t));
  }
  g.add_host_stream("mlm_loss", DType::kF32, s.predictions(), sdk::StreamDirection::kDeviceToHost);
  g.add_host_stream("nsp_loss", DType::kF32, s.sentences(), sdk::StreamDirection::kDeviceToHost);
  const Program stream_out = sdk::Sequence(
      {sdk::HostRead(model.mlm_loss, "mlm_loss"), sdk::HostRead(model.nsp_loss, "nsp_loss")});
  // One program a micro-batch (a second copy of the model's exchanges would not fit the
  // tiles): its gradients added to the sums, which the update sets back to 0.
  Program accumulate = sdk::Sequence({});
  for (const Parameter& p : params) {
    const Tensor added =
        ops::binary(g, accumulate, ops::BinaryOp::kAdd, p.sum, p.grad, p.name + ".added");
    accumulate.body.push_back(sdk::Copy(added, p.sum));
  }
  const Program model_program = ops::sequence_of(model.steps);
  // The update: the step's bias corrections and its number (the stochastic rounding's salt).
  const Tensor corrections = g.add_variable(DType::kF32, {2}, "bert.corrections");
  const Tensor step_number = g.add_variable(DType::kU32, {1}, "bert.step");
  g.set_tile_mapping(corrections, 0);
  g.set_tile_mapping(step_number, 0);
  g.add_host_stream("corrections", DType::kF32, 2, sdk::StreamDirection::kHostToDevice);
  g.add_host_stream("step", DType::kU32, 1, sdk::StreamDirection::kHostToDevice);
  Program update = sdk::Sequence(
      {sdk::HostWrite("corrections", corrections), sdk::HostWrite("step", step_number)});
  ops::AdamOptions lamb;
  lamb.lamb = true;
  lamb.learning_rate = c.learning_rate;
  const float inverse_accumulate = 1.0f / static_cast<float>(c.accumulate);
  for (Parameter& p : params) {
    p.scaled =
        ops::unary(g, update, ops::UnaryOp::kScale, p.sum, p.name + ".mean", inverse_accumulate);
    ops::AdamOptions o = lamb;
    o.weight_decay = p.weight_decay;
    ops::adam(g, update, p.master, p.scaled, p.m, p.v, corrections, o, p.name + ".lamb");
    if (g.tensor(p.weight).type == DType::kF16) {
      ops::CastOptions sr;
      sr.stochastic = true;
      sr.seed = p.seed;
      sr.step = step_number;
      p.rounded = ops::cast(g, update, p.master, DType::kF16, p.name + ".rounded", sr);
      update.body.push_back(sdk::Copy(*p.rounded, p.weight));
    }
    const Tensor cleared =
        ops::unary(g, update, ops::UnaryOp::kScale, p.sum, p.name + ".cleared", 0.0f);
    update.body.push_back(sdk::Copy(cleared, p.sum));
  }
  const auto compile_start = std::chrono::steady_clock::now();
  const sdk::Executable exe =
      sdk::compile(g, {{"micro", sdk::Sequence({stream_in, model_program, stream_out, accumulate})},
                       {"update", update}});
  out.compile_seconds = seconds_since(compile_start);
  out.memory_report = exe.memory_report;
  out.fullest_tile = exe.fullest_tile.tile;
  out.fullest_tile_bytes = exe.fullest_tile.used;
  out.tile_free_bytes = exe.fullest_tile.free;

  // The data: enough rows for every micro-batch of every step.
  RowOptions ro;
  ro.seq = static_cast<unsigned>(s.seq);
  ro.max_per_row = static_cast<unsigned>(s.max_per_row);
  ro.vocab = static_cast<unsigned>(s.vocab);
  ro.seed = c.seed;
  const size_t micro_batches = size_t{c.steps} * c.accumulate;
  const size_t dataset_rows = c.dataset_rows ? c.dataset_rows : micro_batches * s.rows;
  Rows rows = rows_for(lengths, dataset_rows, ro);

  // Initial weights: N(0, 0.02)-like uniform for matrices, 1 and 0 for the norms, 0 biases.
  std::mt19937 rng(c.seed);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  std::vector<HostParameter> host(params.size());
  sdk::Device device(exe, c.device);
  for (size_t i = 0; i < params.size(); ++i) {
    const Parameter& p = params[i];
    const sdk::TensorInfo& wi = g.tensor(p.weight);
    HostParameter& h = host[i];
    const bool gamma = p.name.find("gamma") != std::string::npos;
    h.master.resize(wi.elements);
    for (float& e : h.master) e = wi.shape.size() == 2 ? 0.035f * unit(rng) : gamma ? 1.0f : 0.0f;
    h.m.assign(wi.elements, 0.0f);
    h.v.assign(wi.elements, 0.0f);
    h.sum.assign(wi.elements, 0.0f);
    device.write_tensor(g.tensor(p.sum).name, h.sum.data(), h.sum.size() * 4);
    device.write_tensor(g.tensor(p.master).name, h.master.data(), h.master.size() * 4);
    device.write_tensor(g.tensor(p.m).name, h.m.data(), h.m.size() * 4);
    device.write_tensor(g.tensor(p.v).name, h.v.data(), h.v.size() * 4);
    if (p.f16()) {
      h.bits = ref::cast_to_f16(h.master);
      device.write_tensor(wi.name, h.bits.data(), h.bits.size() * 2);
    }
  }

  // Streams: one micro-batch's inputs, its losses.
  BertInputValues batch;
  std::vector<float> mlm_loss(s.predictions()), nsp_loss(s.sentences());
  float correction_values[2] = {1, 1};
  uint32_t step_value = 0;
  const auto connect = [&](const char* name, auto& v) {
    device.connect_stream(name, v.data(), v.size() * sizeof(v[0]));
  };
  batch = input_values(rows, 0, s);
  connect("tokens", batch.tokens);
  connect("positions", batch.positions);
  connect("segments", batch.segments);
  connect("sequence_ids", batch.sequence_ids);
  connect("mlm_positions", batch.mlm_positions);
  connect("mlm_labels", batch.mlm_labels);
  connect("nsp_positions", batch.nsp_positions);
  connect("nsp_labels", batch.nsp_labels);
  connect("mlm_loss", mlm_loss);
  connect("nsp_loss", nsp_loss);
  device.connect_stream("corrections", correction_values, 8);
  device.connect_stream("step", &step_value, 4);

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

  bool identical = true;
  size_t next_row = 0;
  for (unsigned step = 0; step < c.steps; ++step) {
    BertStep r;
    double mlm = 0, nsp = 0, mlm_host = 0, nsp_host = 0;
    size_t predictions = 0, sentences = 0, unused = 0;
    const BertWeightValues weights = host_weights();
    for (unsigned a = 0; a < c.accumulate; ++a) {
      // New contents in the buffers the streams read.
      const BertInputValues fresh = input_values(rows, next_row, s);
      const auto refill = [](auto& to, const auto& from) {
        std::copy(from.begin(), from.end(), to.begin());
      };
      refill(batch.tokens, fresh.tokens);
      refill(batch.positions, fresh.positions);
      refill(batch.segments, fresh.segments);
      refill(batch.sequence_ids, fresh.sequence_ids);
      refill(batch.mlm_positions, fresh.mlm_positions);
      refill(batch.mlm_labels, fresh.mlm_labels);
      refill(batch.nsp_positions, fresh.nsp_positions);
      refill(batch.nsp_labels, fresh.nsp_labels);
      for (size_t row = next_row; row < next_row + s.rows; ++row)
        for (size_t k = 0; k < rows.max_per_row; ++k)
          r.sequences += rows.nsp_weights[row * rows.max_per_row + k] != 0.0f;
      for (size_t i = next_row * s.seq; i < (next_row + s.rows) * s.seq; ++i)
        r.real_tokens += rows.sequence_ids[i] != 0;
      next_row = (next_row + s.rows) % dataset_rows;
      r.cycles += device.run("micro").run.cycles;
      const BertValues want = bert_reference(model, s, batch, weights);
      identical &= std::memcmp(mlm_loss.data(), want.mlm_loss.data(), mlm_loss.size() * 4) == 0 &&
                   std::memcmp(nsp_loss.data(), want.nsp_loss.data(), nsp_loss.size() * 4) == 0;
      mean_used(mlm_loss, batch.mlm_labels, mlm, predictions);
      mean_used(nsp_loss, batch.nsp_labels, nsp, sentences);
      mean_used(want.mlm_loss, batch.mlm_labels, mlm_host, unused);
      mean_used(want.nsp_loss, batch.nsp_labels, nsp_host, unused);
      const auto grads = gradient_values(want.grads);
      for (size_t i = 0; i < params.size(); ++i)
        host[i].sum = ref::binary(ops::BinaryOp::kAdd, host[i].sum, *grads[i]);
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
    step_value = step;
    const sdk::DeviceReport& report = device.run("update");
    r.update_cycles = report.run.cycles;
    out.memory_hash = report.run.memory_hash;
    out.profile = report.profile;
    r.cycles += r.update_cycles;
    for (size_t i = 0; i < params.size(); ++i) {
      const Parameter& p = params[i];
      HostParameter& h = host[i];
      const std::vector<float> scaled = ref::unary(ops::UnaryOp::kScale, h.sum, inverse_accumulate);
      ops::AdamOptions o = lamb;
      o.weight_decay = p.weight_decay;
      ref::adam(h.master, scaled, h.m, h.v, correction_values, o, ops::element_ranges(g, p.master));
      if (p.f16())
        h.bits = ref::cast_to_f16_stochastic(h.master, ops::element_ranges(g, *p.rounded, 2),
                                             p.seed, step);
      h.sum = ref::unary(ops::UnaryOp::kScale, h.sum, 0.0f);
    }
    out.steps.push_back(r);
  }
  // The final weights, read back.
  for (size_t i = 0; i < params.size(); ++i) {
    const Parameter& p = params[i];
    const sdk::TensorInfo& mi = g.tensor(p.master);
    std::vector<float> got(mi.elements);
    device.read_tensor(mi.name, got.data(), got.size() * 4);
    identical &= std::memcmp(got.data(), host[i].master.data(), got.size() * 4) == 0;
    if (p.f16()) {
      std::vector<uint16_t> bits(mi.elements);
      device.read_tensor(g.tensor(p.weight).name, bits.data(), bits.size() * 2);
      identical &= bits == host[i].bits;
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

}  // namespace ipu::examples::bert
