#include "mlp_app.h"

#include <cstring>
#include <random>

#include "sdk/compiler/compiler.h"

extern "C" {
#include "firmware/codelets/mlp.c"  // the host reference: the codelets themselves
}

namespace ipu::examples {

MlpResult run_mlp(const hw::MachineConfig& machine, unsigned tiles, unsigned steps, uint32_t seed,
                  const sdk::DeviceOptions& device_options) {
  using namespace sdk;
  constexpr uint32_t b = 64, d = 8, h = 16, o = 4;
  constexpr uint32_t p = d * h + h * o, g = p + 1;  // parameters; gradient and loss
  const float learning_rate = 0.02f, k = learning_rate / static_cast<float>(tiles * b);
  uint32_t k_bits;
  std::memcpy(&k_bits, &k, 4);

  // Data: targets from a fixed linear teacher, so the loss can fall.
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  const size_t n = size_t{tiles} * b;
  std::vector<float> x(n * d), t(n * o), teacher(d * o), params(p);
  for (float& v : teacher) v = unit(rng);
  for (float& v : x) v = unit(rng);
  for (size_t s = 0; s < n; ++s)
    for (uint32_t c = 0; c < o; ++c) {
      float sum = 0;
      for (uint32_t i = 0; i < d; ++i) sum += x[s * d + i] * teacher[i * o + c];
      t[s * o + c] = sum;
    }
  for (float& v : params) v = 0.5f * unit(rng);
  std::vector<float> params_all(size_t{tiles} * p);
  for (unsigned tile = 0; tile < tiles; ++tile)
    std::copy(params.begin(), params.end(), params_all.begin() + tile * p);

  Graph graph(Target::of(machine));
  const std::string source = std::string(IPU_CODELET_DIR) + "/mlp.c";
  const Field f32_in{"", FieldKind::kInput, DType::kF32};
  auto field = [](const char* name, FieldKind kind, DType type) { return Field{name, kind, type}; };
  (void)f32_in;
  graph.add_codelet(
      "mlp_grad_f32", source,
      {field("x", FieldKind::kInput, DType::kF32), field("t", FieldKind::kInput, DType::kF32),
       field("params", FieldKind::kInput, DType::kF32),
       field("grad", FieldKind::kOutput, DType::kF32), field("b", FieldKind::kScalar, DType::kU32),
       field("d", FieldKind::kScalar, DType::kU32), field("h", FieldKind::kScalar, DType::kU32),
       field("o", FieldKind::kScalar, DType::kU32)});
  graph.add_codelet(
      "sum_rows_f32", source,
      {field("in", FieldKind::kInput, DType::kF32), field("out", FieldKind::kOutput, DType::kF32),
       field("rows", FieldKind::kScalar, DType::kU32),
       field("n", FieldKind::kScalar, DType::kU32)});
  graph.add_codelet(
      "sgd_f32", source,
      {field("params", FieldKind::kInOut, DType::kF32), field("g", FieldKind::kInput, DType::kF32),
       field("n", FieldKind::kScalar, DType::kU32), field("k", FieldKind::kScalar, DType::kU32)});
  graph.add_codelet("record_f32", source,
                    {field("history", FieldKind::kInOut, DType::kF32),
                     field("value", FieldKind::kInput, DType::kF32),
                     field("count", FieldKind::kInOut, DType::kU32)});

  const Tensor tx = graph.add_constant(DType::kF32, {n, d}, x.data(), "x");
  const Tensor tt = graph.add_constant(DType::kF32, {n, o}, t.data(), "targets");
  const Tensor tparams = graph.add_constant(DType::kF32, {tiles, p}, params_all.data(), "params");
  const Tensor grads = graph.add_variable(DType::kF32, {tiles, g}, "grads");
  const Tensor gathered = graph.add_variable(DType::kF32, {tiles, g}, "gathered");
  const Tensor gsum = graph.add_variable(DType::kF32, {g}, "gsum");
  const Tensor gsum_all = graph.add_variable(DType::kF32, {tiles, g}, "gsum_all");
  const Tensor history = graph.add_variable(DType::kF32, {steps}, "history");
  const Tensor count = graph.add_variable(DType::kU32, {1}, "count");
  graph.map_evenly(tx, 0, tiles, b * d);
  graph.map_evenly(tt, 0, tiles, b * o);
  for (Tensor per_tile : {tparams, grads, gsum_all})
    graph.map_evenly(per_tile, 0, tiles, graph.tensor(per_tile).elements / tiles);
  for (Tensor on_zero : {gathered, gsum, history, count}) graph.set_tile_mapping(on_zero, 0);

  const ComputeSet cs_grad = graph.add_compute_set("gradients"),
                   cs_sum = graph.add_compute_set("sum");
  const ComputeSet cs_record = graph.add_compute_set("record"),
                   cs_update = graph.add_compute_set("update");
  for (unsigned tile = 0; tile < tiles; ++tile) {
    graph.add_vertex(cs_grad, "mlp_grad_f32", tile,
                     {{"x", graph.region(tx, tile * b * d, (tile + 1) * b * d)},
                      {"t", graph.region(tt, tile * b * o, (tile + 1) * b * o)},
                      {"params", graph.region(tparams, tile * p, (tile + 1) * p)},
                      {"grad", graph.region(grads, tile * g, (tile + 1) * g)},
                      {"b", b},
                      {"d", d},
                      {"h", h},
                      {"o", o}});
    // The update on all six workers: a sixth of the tile's parameters each.
    for (uint32_t w = 0; w < 6; ++w) {
      const uint32_t lo = p * w / 6, hi = p * (w + 1) / 6;
      if (hi == lo) continue;
      graph.add_vertex(cs_update, "sgd_f32", tile,
                       {{"params", graph.region(tparams, tile * p + lo, tile * p + hi)},
                        {"g", graph.region(gsum_all, tile * g + lo, tile * g + hi)},
                        {"n", hi - lo},
                        {"k", k_bits}});
    }
  }
  graph.add_vertex(
      cs_sum, "sum_rows_f32", 0,
      {{"in", graph.region(gathered)}, {"out", graph.region(gsum)}, {"rows", tiles}, {"n", g}});
  graph.add_vertex(cs_record, "record_f32", 0,
                   {{"history", graph.region(history)},
                    {"value", graph.region(gsum, p, p + 1)},
                    {"count", graph.region(count)}});
  const Executable exe = compile(
      graph,
      Repeat(steps, Sequence({Execute(cs_grad), Copy(grads, gathered), Execute(cs_sum),
                              Execute(cs_record), Broadcast(gsum, gsum_all), Execute(cs_update)})));

  MlpResult out;
  out.tiles = tiles;
  out.steps = steps;
  out.samples = static_cast<unsigned>(n);
  Device device(exe, device_options);
  out.report = device.run();
  out.losses.resize(steps);
  device.read_tensor("history", out.losses.data(), steps * 4);
  std::vector<float> trained(size_t{tiles} * p);
  device.read_tensor("params", trained.data(), trained.size() * 4);
  out.weights.assign(trained.begin(), trained.begin() + p);

  // The host: the same codelets, the same order.
  std::vector<float> host_params = params_all, host_grads(size_t{tiles} * g), host_sum(g);
  for (unsigned step = 0; step < steps; ++step) {
    for (unsigned tile = 0; tile < tiles; ++tile) {
      const mlp_grad_f32_fields f{x.data() + tile * b * d,
                                  t.data() + tile * b * o,
                                  host_params.data() + tile * p,
                                  host_grads.data() + tile * g,
                                  b,
                                  d,
                                  h,
                                  o};
      mlp_grad_f32(&f);
    }
    const sum_rows_f32_fields s{host_grads.data(), host_sum.data(), tiles, g};
    sum_rows_f32(&s);
    out.expected_losses.push_back(host_sum[p]);
    for (unsigned tile = 0; tile < tiles; ++tile) {
      const sgd_f32_fields u{host_params.data() + tile * p, host_sum.data(), p, k_bits};
      sgd_f32(&u);
    }
  }
  out.expected_weights.assign(host_params.begin(), host_params.begin() + p);
  out.identical = std::memcmp(out.losses.data(), out.expected_losses.data(), steps * 4) == 0 &&
                  std::memcmp(out.weights.data(), out.expected_weights.data(), p * 4) == 0;
  return out;
}

}  // namespace ipu::examples
