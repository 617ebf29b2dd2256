#include "pipeline_app.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>

#include "sdk/compiler/compiler.h"

extern "C" {
#include "firmware/codelets/pipeline.c"  // the host reference: the codelets themselves
}

namespace ipu::examples {

PipelineResult run_pipeline(const PipelineConfig& config) {
  using namespace sdk;
  const unsigned S = config.machine.chips;  // one stage per chip
  const unsigned T = config.tiles, W = config.width, M = config.micro_batches,
                 mb = config.micro_batch;
  if (S < 2)
    throw std::invalid_argument(
        fmt::format("'{}' has one chip: nothing to pipeline", config.machine.preset));
  if (T == 0 || W % T != 0 || W / T > PIPE_MAX_ROWS)
    throw std::invalid_argument(fmt::format(
        "a width of {} over {} tiles: each tile takes a whole number of rows, at most {}", W, T,
        PIPE_MAX_ROWS));
  if (mb == 0 || mb > PIPE_MAX_MB || M == 0)
    throw std::invalid_argument(
        fmt::format("micro-batches of {} samples (1 to {}), {} of them a step (at least 1)", mb,
                    PIPE_MAX_MB, M));
  const unsigned r = W / T, xs = W * mb, rows = r * mb;  // a tile's rows; a stage's input
  const float k = 0.5f / static_cast<float>(M * mb);
  uint32_t k_bits;
  std::memcpy(&k_bits, &k, 4);

  // ---- data and weights ----
  std::mt19937 rng(config.seed);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  std::vector<std::vector<float>> weights(S, std::vector<float>(size_t{W} * W));
  for (auto& w : weights)
    for (float& v : w) v = unit(rng) / std::sqrt(static_cast<float>(W));
  std::vector<std::vector<float>> inputs(M, std::vector<float>(xs)),
      targets(M, std::vector<float>(xs));
  for (unsigned m = 0; m < M; ++m) {
    for (float& v : inputs[m]) v = unit(rng);
    for (unsigned f = 0; f < W; ++f)  // a smooth target: a shifted, scaled copy of the input
      for (unsigned s = 0; s < mb; ++s)
        targets[m][f * mb + s] = 0.5f * inputs[m][((f + 1) % W) * mb + s];
  }

  // ---- the graph ----
  Target target = Target::of(config.machine, 0, 1);
  Graph g(target);
  const std::string source = std::string(IPU_CODELET_DIR) + "/pipeline.c";
  const auto f = [](const char* name, FieldKind kind) { return Field{name, kind, DType::kF32}; };
  const auto u = [](const char* name) { return Field{name, FieldKind::kScalar, DType::kU32}; };
  const auto in = FieldKind::kInput, out = FieldKind::kOutput, inout = FieldKind::kInOut;
  g.add_codelet(
      "pipe_forward", source,
      {f("x", in), f("w", in), f("z", out), f("y", out), u("r"), u("width"), u("mb"), u("relu")});
  g.add_codelet("pipe_forward_nosave", source,
                {f("x", in), f("w", in), f("y", out), u("r"), u("width"), u("mb"), u("relu")});
  g.add_codelet("pipe_loss", source,
                {f("y", in), f("t", in), f("dy", out), f("loss", inout), u("n"), u("first")});
  const std::vector<Field> tail = {u("r"), u("width"), u("mb"), u("relu"), u("first")};
  const auto backward = [&](const char* name, bool z, bool dx) {
    std::vector<Field> fields = {f("x", in), f("w", in)};
    if (z) fields.push_back(f("z", in));
    fields.push_back(f("dy", in));
    fields.push_back(f("gw", inout));
    if (dx) fields.push_back(f("dx", out));
    fields.insert(fields.end(), tail.begin(), tail.end());
    g.add_codelet(name, source, fields);
  };
  backward("pipe_backward", true, true);
  backward("pipe_backward_nodx", true, false);
  backward("pipe_backward_rc", false, true);
  backward("pipe_backward_rc_nodx", false, false);
  g.add_codelet("pipe_sum", source, {f("in", in), f("out", out), u("parts"), u("n")});
  g.add_codelet("pipe_sgd", source, {f("w", inout), f("gw", in), u("n"), u("k")});

  const auto on_stage = [&](Tensor t, unsigned s, size_t grain) {
    g.map_evenly(t, g.tile(s, 0), T, grain);
    return t;
  };
  const auto name = [](const char* what, unsigned s, unsigned m) {
    return fmt::format("{}_s{}_m{}", what, s, m);
  };
  std::vector<Tensor> w(S), gw(S);
  std::vector<std::vector<Tensor>> x_in(S), z(S), y(S), dy(S), dxp(S), gathered(S);
  std::vector<Tensor> t_last(M);
  for (unsigned s = 0; s < S; ++s) {
    w[s] = on_stage(g.add_variable(DType::kF32, {W, W}, fmt::format("w_s{}", s)), s, r * W);
    gw[s] = on_stage(g.add_variable(DType::kF32, {W, W}, fmt::format("gw_s{}", s)), s, r * W);
    for (unsigned m = 0; m < M; ++m) {
      if (s == 0) {  // every tile of the first stage holds the micro-batch
        std::vector<float> copies(size_t{T} * xs);
        for (unsigned j = 0; j < T; ++j)
          std::copy(inputs[m].begin(), inputs[m].end(), copies.begin() + j * xs);
        x_in[s].push_back(
            on_stage(g.add_constant(DType::kF32, {T, xs}, copies.data(), name("x", s, m)), s, xs));
      } else {
        x_in[s].push_back(on_stage(g.add_variable(DType::kF32, {T, xs}, name("x", s, m)), s, xs));
      }
      if (!config.recompute)
        z[s].push_back(on_stage(g.add_variable(DType::kF32, {W, mb}, name("z", s, m)), s, rows));
      y[s].push_back(on_stage(g.add_variable(DType::kF32, {W, mb}, name("y", s, m)), s, rows));
      dy[s].push_back(on_stage(g.add_variable(DType::kF32, {W, mb}, name("dy", s, m)), s, rows));
      if (s > 0)
        dxp[s].push_back(on_stage(g.add_variable(DType::kF32, {T, xs}, name("dx", s, m)), s, xs));
      if (s + 1 < S)
        gathered[s].push_back(on_stage(
            g.add_variable(DType::kF32, {T, T * rows}, name("dy_parts", s, m)), s, T * rows));
    }
  }
  for (unsigned m = 0; m < M; ++m)
    t_last[m] = on_stage(
        g.add_constant(DType::kF32, {W, mb}, targets[m].data(), name("t", S - 1, m)), S - 1, rows);
  const Tensor loss = on_stage(g.add_variable(DType::kF32, {T}, "loss"), S - 1, 1);

  // ---- the schedule ----
  const auto valid = [&](int m) { return m >= 0 && m < static_cast<int>(M); };
  std::vector<Program> program;
  const unsigned slots = M + S - 1;
  for (unsigned t = 0; t < slots; ++t) {  // forward: stage s on micro-batch t - s
    const ComputeSet cs = g.add_compute_set(fmt::format("forward_{}", t));
    const ComputeSet cs_loss = g.add_compute_set(fmt::format("loss_{}", t));
    std::vector<std::pair<Region, Region>> pairs;
    bool any_loss = false;
    for (unsigned s = 0; s < S; ++s) {
      const int m = static_cast<int>(t) - static_cast<int>(s);
      if (!valid(m)) continue;
      for (unsigned j = 0; j < T; ++j) {
        std::map<std::string, Binding> fields = {{"x", g.region(x_in[s][m], j * xs, (j + 1) * xs)},
                                                 {"w", g.region(w[s], j * r * W, (j + 1) * r * W)},
                                                 {"y", g.region(y[s][m], j * rows, (j + 1) * rows)},
                                                 {"r", r},
                                                 {"width", W},
                                                 {"mb", mb},
                                                 {"relu", s + 1 < S ? 1u : 0u}};
        if (!config.recompute) fields["z"] = g.region(z[s][m], j * rows, (j + 1) * rows);
        g.add_vertex(cs, config.recompute ? "pipe_forward_nosave" : "pipe_forward", g.tile(s, j),
                     fields);
        if (s + 1 == S) {
          g.add_vertex(cs_loss, "pipe_loss", g.tile(s, j),
                       {{"y", g.region(y[s][m], j * rows, (j + 1) * rows)},
                        {"t", g.region(t_last[m], j * rows, (j + 1) * rows)},
                        {"dy", g.region(dy[s][m], j * rows, (j + 1) * rows)},
                        {"loss", g.region(loss, j, j + 1)},
                        {"n", rows},
                        {"first", m == 0 ? 1u : 0u}});
          any_loss = true;
        } else {
          pairs.push_back({g.region(y[s][m]), g.region(x_in[s + 1][m], j * xs, (j + 1) * xs)});
        }
      }
    }
    program.push_back(Execute(cs));
    if (any_loss) program.push_back(Execute(cs_loss));
    if (!pairs.empty()) program.push_back(Copy(pairs));
  }
  for (unsigned t = 0; t < slots; ++t) {  // backward: stage s on micro-batch t - (S - 1 - s)
    const ComputeSet cs = g.add_compute_set(fmt::format("backward_{}", t));
    const ComputeSet cs_sum = g.add_compute_set(fmt::format("sum_{}", t));
    std::vector<std::pair<Region, Region>> pairs;
    for (unsigned s = 0; s < S; ++s) {
      const int m = static_cast<int>(t) - static_cast<int>(S - 1 - s);
      if (!valid(m)) continue;
      for (unsigned j = 0; j < T; ++j) {
        std::map<std::string, Binding> fields = {
            {"x", g.region(x_in[s][m], j * xs, (j + 1) * xs)},
            {"w", g.region(w[s], j * r * W, (j + 1) * r * W)},
            {"dy", g.region(dy[s][m], j * rows, (j + 1) * rows)},
            {"gw", g.region(gw[s], j * r * W, (j + 1) * r * W)},
            {"r", r},
            {"width", W},
            {"mb", mb},
            {"relu", s + 1 < S ? 1u : 0u},
            {"first", m == 0 ? 1u : 0u}};
        if (!config.recompute) fields["z"] = g.region(z[s][m], j * rows, (j + 1) * rows);
        if (s > 0) fields["dx"] = g.region(dxp[s][m], j * xs, (j + 1) * xs);
        const std::string codelet =
            std::string("pipe_backward") + (config.recompute ? "_rc" : "") + (s > 0 ? "" : "_nodx");
        g.add_vertex(cs, codelet, g.tile(s, j), fields);
        if (s == 0) continue;
        // Tile i's partial of the previous stage's dy, rows of that stage's tile j.
        for (unsigned i = 0; i < T; ++i)
          pairs.push_back(
              {g.region(dxp[s][m], i * xs + j * rows, i * xs + (j + 1) * rows),
               g.region(gathered[s - 1][m], (j * T + i) * rows, (j * T + i + 1) * rows)});
        g.add_vertex(cs_sum, "pipe_sum", g.tile(s - 1, j),
                     {{"in", g.region(gathered[s - 1][m], j * T * rows, (j + 1) * T * rows)},
                      {"out", g.region(dy[s - 1][m], j * rows, (j + 1) * rows)},
                      {"parts", T},
                      {"n", rows}});
      }
    }
    program.push_back(Execute(cs));
    if (!pairs.empty()) {
      program.push_back(Copy(pairs));
      program.push_back(Execute(cs_sum));
    }
  }
  const ComputeSet cs_sgd = g.add_compute_set("sgd");
  for (unsigned s = 0; s < S; ++s)
    for (unsigned j = 0; j < T; ++j)
      g.add_vertex(cs_sgd, "pipe_sgd", g.tile(s, j),
                   {{"w", g.region(w[s], j * r * W, (j + 1) * r * W)},
                    {"gw", g.region(gw[s], j * r * W, (j + 1) * r * W)},
                    {"n", r * W},
                    {"k", k_bits}});
  program.push_back(Execute(cs_sgd));
  const Executable exe = compile(g, {{"step", Sequence(program)}});

  // ---- the device ----
  PipelineResult res;
  res.stages = S;
  res.clock_hz = target.machine.chip.tile.clock_hz;
  res.stored_activation_bytes = uint64_t{M} * (xs + (config.recompute ? 0 : rows)) * 4;
  Device device(exe, config.device);
  for (unsigned s = 0; s < S; ++s)
    device.write_tensor(fmt::format("w_s{}", s), weights[s].data(), weights[s].size() * 4);
  std::vector<float> tile_losses(T);
  for (unsigned step = 0; step < config.steps; ++step) {
    const DeviceReport& report = device.run("step");
    res.cycles.push_back(report.run.cycles);
    res.ipulink_bytes = report.run.ipulink_bytes;
    res.supersteps = report.run.supersteps;
    res.host_seconds += report.run.host_seconds;
    res.profile = report.profile;
    res.memory_hash = report.run.memory_hash;
    device.read_tensor("loss", tile_losses.data(), T * 4);
    float sum = 0.0f;
    for (float l : tile_losses) sum += l;
    res.losses.push_back(sum);
  }

  // ---- the host: the same codelets, micro-batch by micro-batch ----
  std::vector<std::vector<float>> hw = weights, hgw(S, std::vector<float>(size_t{W} * W));
  std::vector<std::vector<std::vector<float>>> hx(S, std::vector<std::vector<float>>(M)),
      hz = hx, hy = hx, hdy = hx;
  std::vector<float> hloss(T), partial(size_t{T} * xs), parts(size_t{T} * rows);
  for (unsigned step = 0; step < config.steps; ++step) {
    for (unsigned m = 0; m < M; ++m) {
      hx[0][m] = inputs[m];
      for (unsigned s = 0; s < S; ++s) {
        hz[s][m].assign(xs, 0.0f);
        hy[s][m].assign(xs, 0.0f);
        for (unsigned j = 0; j < T; ++j) {
          const pipe_forward_fields fw{hx[s][m].data(),
                                       hw[s].data() + j * r * W,
                                       config.recompute ? nullptr : hz[s][m].data() + j * rows,
                                       hy[s][m].data() + j * rows,
                                       r,
                                       W,
                                       mb,
                                       s + 1 < S ? 1u : 0u};
          pipe_forward(&fw);
        }
        if (s + 1 < S) hx[s + 1][m] = hy[s][m];
      }
      hdy[S - 1][m].assign(xs, 0.0f);
      for (unsigned j = 0; j < T; ++j) {
        const pipe_loss_fields lf{hy[S - 1][m].data() + j * rows,
                                  targets[m].data() + j * rows,
                                  hdy[S - 1][m].data() + j * rows,
                                  &hloss[j],
                                  rows,
                                  m == 0 ? 1u : 0u};
        pipe_loss(&lf);
      }
    }
    float sum = 0.0f;
    for (float l : hloss) sum += l;
    res.expected_losses.push_back(sum);
    for (unsigned m = 0; m < M; ++m)
      for (unsigned s = S; s-- > 0;) {
        for (unsigned j = 0; j < T; ++j) {
          const pipe_backward_fields bw{hx[s][m].data(),
                                        hw[s].data() + j * r * W,
                                        config.recompute ? nullptr : hz[s][m].data() + j * rows,
                                        hdy[s][m].data() + j * rows,
                                        hgw[s].data() + j * r * W,
                                        s > 0 ? partial.data() + j * xs : nullptr,
                                        r,
                                        W,
                                        mb,
                                        s + 1 < S ? 1u : 0u,
                                        m == 0 ? 1u : 0u};
          pipe_backward(&bw);
        }
        if (s == 0) continue;
        hdy[s - 1][m].assign(xs, 0.0f);
        for (unsigned j = 0; j < T; ++j) {
          for (unsigned i = 0; i < T; ++i)
            std::copy(partial.begin() + i * xs + j * rows,
                      partial.begin() + i * xs + (j + 1) * rows, parts.begin() + i * rows);
          const pipe_sum_fields sf{parts.data(), hdy[s - 1][m].data() + j * rows, T, rows};
          pipe_sum(&sf);
        }
      }
    for (unsigned s = 0; s < S; ++s) {
      const pipe_sgd_fields sg{hw[s].data(), hgw[s].data(), W * W, k_bits};
      pipe_sgd(&sg);
    }
  }
  bool same =
      std::memcmp(res.losses.data(), res.expected_losses.data(), res.losses.size() * 4) == 0;
  for (unsigned s = 0; s < S; ++s) {
    std::vector<float> trained(size_t{W} * W);
    device.read_tensor(fmt::format("w_s{}", s), trained.data(), trained.size() * 4);
    same = same && std::memcmp(trained.data(), hw[s].data(), trained.size() * 4) == 0;
  }
  res.identical = same;
  return res;
}

}  // namespace ipu::examples
