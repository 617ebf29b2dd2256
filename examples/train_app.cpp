#include "train_app.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <random>

#include "hw/machine/machine.h"
#include "iss/fpu.h"
#include "iss/prng.h"
#include "sdk/compiler/compiler.h"

// The host reference: the codelets themselves, with the tile's f16 rounding and PRNG.
namespace {
ipu::iss::Xoroshiro128aox host_prng;
unsigned host_worker = 1;
}  // namespace

extern "C" {
unsigned train_host_worker_id(void) { return host_worker; }
void train_host_seed(uint64_t s0, uint64_t s1) { host_prng = {s0, s1}; }
uint32_t train_host_to_f16x2(float a, float b) {
  namespace fpu = ipu::iss::fpu;
  // As ipu.f32v2tof16 under stochastic rounding: one 64-bit draw, lane 0 the low word.
  const uint64_t r = host_prng.next();
  uint32_t flags = 0;
  const uint32_t lo = fpu::f32_to_f16(fpu::bits_of(a), fpu::kStochastic, flags, uint32_t(r));
  const uint32_t hi = fpu::f32_to_f16(fpu::bits_of(b), fpu::kStochastic, flags, uint32_t(r >> 32));
  return lo | hi << 16;
}
void train_host_from_f16x2(uint32_t w, float* a, float* b) {
  namespace fpu = ipu::iss::fpu;
  uint32_t flags = 0;
  *a = fpu::float_of(fpu::f16_to_f32(w & 0xffff, flags));
  *b = fpu::float_of(fpu::f16_to_f32(w >> 16, flags));
}
float train_host_sqrt(float x) { return std::sqrt(x); }
#include "firmware/codelets/train.c"
}

namespace ipu::examples {
namespace {

using namespace sdk;

// The model's shape: small per tile (the simulation runs every instruction), wide in total.
constexpr uint32_t kBatch = 12, kInputs = 12, kUnits = 6, kOutputs = 4;  // b, d, k per tile, o
constexpr uint32_t kParams = kUnits * (kInputs + kOutputs);              // per tile
constexpr uint32_t kGroup = 32;  // tiles whose partial outputs one tile sums
constexpr float kBeta1 = 0.9f, kBeta2 = 0.999f, kEpsilon = 1e-6f;

uint32_t bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

// Runs `codelet` as the device does with six workers: each worker's share, in worker order.
template <typename Fields>
void on_workers(void (*codelet)(const Fields*), const Fields& f) {
  for (host_worker = 1; host_worker <= 6; ++host_worker) codelet(&f);
}

// The collectives' ring: one chip per replica goes up the even column and down the odd one.
std::vector<unsigned> ring_order(unsigned replicas, unsigned replica_chips) {
  std::vector<unsigned> order;
  if (replica_chips == 1 && replicas > 2) {
    for (unsigned r = 0; r < replicas; r += 2) order.push_back(r);
    for (unsigned r = replicas; r-- > 0;)
      if (r % 2 == 1) order.push_back(r);
  } else {
    for (unsigned r = 0; r < replicas; ++r) order.push_back(r);
  }
  return order;
}

}  // namespace

TrainResult run_training(const TrainConfig& config) {
  const unsigned R = config.machine.chips;  // one replica per chip
  const Target target = Target::of(config.machine, config.tiles, R);
  const unsigned T = target.replica_tiles();
  const unsigned group = T < kGroup ? T : kGroup, groups = T / group;
  if (T % group != 0)
    throw std::invalid_argument(fmt::format(
        "{} tiles per replica: the partial outputs are summed in groups of {} tiles, so the tile "
        "count must be a multiple of {} (or at most {})",
        T, kGroup, kGroup, kGroup));
  if (kParams % (2 * R) != 0)
    throw std::invalid_argument(
        fmt::format("{} replicas do not divide a tile's {} parameters into f16 pairs", R, kParams));
  const uint64_t n = uint64_t{T} * kParams, shard = n / R;
  const uint32_t yb = kOutputs * kBatch;  // one tile's partial outputs
  // Adam moves every weight by about the learning rate a step, and the output sums all hidden
  // units: 2 / hidden keeps a step's change of the output near one, whatever the width.
  const float learning_rate = 2.0f / static_cast<float>(kUnits * T);

  TrainResult out;
  out.replicas = R;
  out.tiles = T;
  out.batch = kBatch * R;
  out.inputs = kInputs;
  out.hidden = kUnits * T;
  out.outputs = kOutputs;
  out.parameters = n;
  out.flops_per_step = 2.0 * kBatch * (2.0 * kUnits * kInputs + 3.0 * kOutputs * kUnits) * T * R;
  out.clock_hz = target.machine.chip.tile.clock_hz;

  // ---- the graph: one replica; the compiler makes R of them ----
  Graph g(target);
  const std::string source = std::string(IPU_CODELET_DIR) + "/train.c";
  const auto in = [](const char* name, DType t) { return Field{name, FieldKind::kInput, t}; };
  const auto outf = [](const char* name, DType t) { return Field{name, FieldKind::kOutput, t}; };
  const auto inout = [](const char* name, DType t) { return Field{name, FieldKind::kInOut, t}; };
  const auto scalar = [](const char* name) { return Field{name, FieldKind::kScalar, DType::kU32}; };
  g.add_codelet(
      "train_forward", source,
      {in("x", DType::kF32), in("w", DType::kU32), outf("h", DType::kU32), outf("y", DType::kF32),
       in("seeds", DType::kU32), scalar("b"), scalar("d"), scalar("k"), scalar("o")});
  g.add_codelet("train_sum_rows", source,
                {in("in", DType::kF32), outf("out", DType::kF32), scalar("rows"), scalar("n")});
  g.add_codelet("train_loss", source,
                {in("y", DType::kF32), in("t", DType::kF32), outf("dy", DType::kF32),
                 outf("loss", DType::kF32), scalar("b"), scalar("o")});
  g.add_codelet(
      "train_backward", source,
      {in("x", DType::kF32), in("w", DType::kU32), in("h", DType::kU32), in("dy", DType::kF32),
       outf("g", DType::kF32), scalar("b"), scalar("d"), scalar("k"), scalar("o")});
  g.add_codelet("train_adam", source,
                {in("g", DType::kF32), inout("master", DType::kF32), inout("m", DType::kF32),
                 inout("v", DType::kF32), outf("w", DType::kU32), in("state", DType::kF32),
                 in("seeds", DType::kU32), scalar("n"), scalar("scale"), scalar("lr"), scalar("b1"),
                 scalar("b2"), scalar("eps")});
  g.add_codelet(
      "train_cast", source,
      {in("master", DType::kF32), outf("w", DType::kU32), in("seeds", DType::kU32), scalar("n")});
  g.add_codelet(
      "train_tick", source,
      {inout("seeds", DType::kU32), inout("state", DType::kF32), scalar("b1"), scalar("b2")});

  const auto per_tile = [&](DType type, size_t each, const std::string& name) {
    const Tensor t = g.add_variable(type, {T, each}, name);
    g.map_evenly(t, 0, T, each);
    return t;
  };
  const auto on_tile0 = [&](DType type, size_t elements, const std::string& name) {
    const Tensor t = g.add_variable(type, {elements}, name);
    g.set_tile_mapping(t, 0);
    return t;
  };
  const Tensor x_in = on_tile0(DType::kF32, kBatch * kInputs, "x_in");
  const Tensor t_in = on_tile0(DType::kF32, kBatch * kOutputs, "t_in");
  const Tensor x_all = per_tile(DType::kF32, kBatch * kInputs, "x_all");
  const Tensor w16 = per_tile(DType::kU32, kParams / 2, "weights_f16");
  const Tensor h = per_tile(DType::kU32, kUnits * kBatch / 2, "hidden_f16");
  const Tensor ypart = per_tile(DType::kF32, yb, "y_partial");
  const Tensor dy_all = per_tile(DType::kF32, yb, "dy_all");
  const Tensor grads = per_tile(DType::kF32, kParams, "grads");
  const Tensor seeds = per_tile(DType::kU32, 2, "seeds");
  const Tensor state = per_tile(DType::kF32, 2, "adam_powers");
  // Level 1: each group's partial outputs on its first tile; level 2: the groups' on tile 0.
  const Tensor gathered = g.add_variable(DType::kF32, {T, yb}, "y_gathered");
  const Tensor group_sums = g.add_variable(DType::kF32, {groups, yb}, "y_group_sums");
  std::vector<Interval> gathered_map, sums_map;
  for (unsigned q = 0; q < groups; ++q) {
    gathered_map.push_back({size_t{q} * group * yb, size_t{q + 1} * group * yb, q * group});
    sums_map.push_back({size_t{q} * yb, size_t{q + 1} * yb, q * group});
  }
  g.set_tile_mapping(gathered, gathered_map);
  g.set_tile_mapping(group_sums, sums_map);
  const Tensor group_gathered = on_tile0(DType::kF32, size_t{groups} * yb, "y_groups_gathered");
  const Tensor y = groups > 1 ? on_tile0(DType::kF32, yb, "y") : group_sums;
  const Tensor dy = on_tile0(DType::kF32, yb, "dy");
  const Tensor loss = on_tile0(DType::kF32, 1, "loss");
  // Replicated tensor sharding: replica r keeps shard r of the optimizer's state.
  const auto sharded = [&](DType type, size_t elements, const std::string& name) {
    const Tensor t = g.add_variable(type, {elements}, name);
    g.map_evenly(t, 0, T, elements / T);
    return t;
  };
  const Tensor gshard = sharded(DType::kF32, shard, "grad_shard");
  const Tensor master = sharded(DType::kF32, shard, "master_shard");
  const Tensor m = sharded(DType::kF32, shard, "adam_m");
  const Tensor v = sharded(DType::kF32, shard, "adam_v");
  const Tensor wshard = sharded(DType::kU32, shard / 2, "weights_f16_shard");
  const RemoteBuffer m_remote = g.add_remote_buffer("adam_m", DType::kF32, shard, 1);
  const RemoteBuffer v_remote = g.add_remote_buffer("adam_v", DType::kF32, shard, 1);
  g.add_host_stream("x", DType::kF32, kBatch * kInputs, StreamDirection::kHostToDevice);
  g.add_host_stream("t", DType::kF32, kBatch * kOutputs, StreamDirection::kHostToDevice);
  g.add_host_stream("loss", DType::kF32, 1, StreamDirection::kDeviceToHost);

  const ComputeSet cs_tick = g.add_compute_set("tick"), cs_forward = g.add_compute_set("forward");
  const ComputeSet cs_sum1 = g.add_compute_set("sum_groups"), cs_sum2 = g.add_compute_set("sum");
  const ComputeSet cs_loss = g.add_compute_set("loss"), cs_backward = g.add_compute_set("backward");
  const ComputeSet cs_adam = g.add_compute_set("adam"), cs_cast = g.add_compute_set("cast");
  const uint32_t sp = static_cast<uint32_t>(shard / T);  // shard elements per tile
  for (unsigned tile = 0; tile < T; ++tile) {
    const auto row = [&](Tensor t, size_t each) {
      return g.region(t, tile * each, (tile + 1) * each);
    };
    g.add_vertex(cs_tick, "train_tick", tile,
                 {{"seeds", row(seeds, 2)},
                  {"state", row(state, 2)},
                  {"b1", bits(kBeta1)},
                  {"b2", bits(kBeta2)}});
    g.add_vertex(cs_forward, "train_forward", tile,
                 {{"x", row(x_all, kBatch * kInputs)},
                  {"w", row(w16, kParams / 2)},
                  {"h", row(h, kUnits * kBatch / 2)},
                  {"y", row(ypart, yb)},
                  {"seeds", row(seeds, 2)},
                  {"b", kBatch},
                  {"d", kInputs},
                  {"k", kUnits},
                  {"o", kOutputs}},
                 6);
    g.add_vertex(cs_backward, "train_backward", tile,
                 {{"x", row(x_all, kBatch * kInputs)},
                  {"w", row(w16, kParams / 2)},
                  {"h", row(h, kUnits * kBatch / 2)},
                  {"dy", row(dy_all, yb)},
                  {"g", row(grads, kParams)},
                  {"b", kBatch},
                  {"d", kInputs},
                  {"k", kUnits},
                  {"o", kOutputs}},
                 6);
    g.add_vertex(cs_adam, "train_adam", tile,
                 {{"g", row(gshard, sp)},
                  {"master", row(master, sp)},
                  {"m", row(m, sp)},
                  {"v", row(v, sp)},
                  {"w", row(wshard, sp / 2)},
                  {"state", row(state, 2)},
                  {"seeds", row(seeds, 2)},
                  {"n", sp},
                  {"scale", bits(1.0f / static_cast<float>(kBatch * R))},
                  {"lr", bits(learning_rate)},
                  {"b1", bits(kBeta1)},
                  {"b2", bits(kBeta2)},
                  {"eps", bits(kEpsilon)}},
                 6);
    g.add_vertex(cs_cast, "train_cast", tile,
                 {{"master", row(master, sp)},
                  {"w", row(wshard, sp / 2)},
                  {"seeds", row(seeds, 2)},
                  {"n", sp}},
                 6);
  }
  for (unsigned q = 0; q < groups; ++q)
    g.add_vertex(cs_sum1, "train_sum_rows", q * group,
                 {{"in", g.region(gathered, size_t{q} * group * yb, size_t{q + 1} * group * yb)},
                  {"out", g.region(group_sums, size_t{q} * yb, size_t{q + 1} * yb)},
                  {"rows", group},
                  {"n", yb}});
  if (groups > 1)
    g.add_vertex(
        cs_sum2, "train_sum_rows", 0,
        {{"in", g.region(group_gathered)}, {"out", g.region(y)}, {"rows", groups}, {"n", yb}});
  g.add_vertex(cs_loss, "train_loss", 0,
               {{"y", g.region(y)},
                {"t", g.region(t_in)},
                {"dy", g.region(dy)},
                {"loss", g.region(loss)},
                {"b", kBatch},
                {"o", kOutputs}});

  std::vector<Program> forward = {
      Execute(cs_tick),    HostWrite("x", x_in),  HostWrite("t", t_in), Broadcast(x_in, x_all),
      Execute(cs_forward), Copy(ypart, gathered), Execute(cs_sum1)};
  if (groups > 1) {
    forward.push_back(Copy(group_sums, group_gathered));
    forward.push_back(Execute(cs_sum2));
  }
  const Program stream_in =
      Sequence({CopyFromRemote(m_remote, 0, m), CopyFromRemote(v_remote, 0, v)});
  const Program stream_out = Sequence({CopyToRemote(m, m_remote, 0), CopyToRemote(v, v_remote, 0)});
  const Program step =
      Sequence({Sequence(forward), Execute(cs_loss), HostRead(loss, "loss"), Broadcast(dy, dy_all),
                Execute(cs_backward), ReduceScatter(grads, gshard, CollectiveOp::kSum), stream_in,
                Execute(cs_adam), stream_out, AllGather(wshard, w16)});
  const Executable exe = compile(
      g, {{"init", Sequence({Execute(cs_cast), AllGather(wshard, w16)})},
          {"step", step},
          // A step's parts on their own, to time them.
          {"part_collectives",
           Sequence({ReduceScatter(grads, gshard, CollectiveOp::kSum), AllGather(wshard, w16)})},
          {"part_streaming", Sequence({stream_in, stream_out})},
          {"part_host_io",
           Sequence({HostWrite("x", x_in), HostWrite("t", t_in), HostRead(loss, "loss")})},
          {"part_none", Sequence({})}});
  out.memory_report = exe.memory_report;

  // ---- data, initial weights, seeds ----
  std::mt19937 rng(config.seed);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  std::vector<float> teacher(kInputs * kOutputs);
  for (float& w : teacher) w = unit(rng);
  std::vector<float> params(n);  // tile-major: W1 (k x d) then W2 (o x k) of each tile
  const float scale1 = 1.0f / std::sqrt(static_cast<float>(kInputs)),
              scale2 = 1.0f / std::sqrt(static_cast<float>(kUnits * T));
  for (unsigned tile = 0; tile < T; ++tile)
    for (uint32_t i = 0; i < kParams; ++i)
      params[size_t{tile} * kParams + i] = (i < kUnits * kInputs ? scale1 : scale2) * unit(rng);
  const auto batch = [&](std::vector<float>& x, std::vector<float>& t) {
    for (float& e : x) e = unit(rng);
    for (uint32_t s = 0; s < kBatch; ++s)
      for (uint32_t c = 0; c < kOutputs; ++c) {
        float sum = 0;
        for (uint32_t i = 0; i < kInputs; ++i)
          sum += x[s * kInputs + i] * teacher[i * kOutputs + c];
        t[s * kOutputs + c] = sum;
      }
  };
  std::vector<std::vector<uint32_t>> seed_words(R, std::vector<uint32_t>(2 * T));
  for (unsigned r = 0; r < R; ++r)
    for (unsigned tile = 0; tile < T; ++tile)
      seed_words[r][2 * tile] = static_cast<uint32_t>(rng());
  const std::vector<float> powers_init(2 * T, 1.0f);

  // ---- the device ----
  Device device(exe, config.device);
  std::vector<float> x_host(size_t{R} * kBatch * kInputs), t_host(size_t{R} * kBatch * kOutputs),
      loss_host(R);
  device.connect_stream("x", x_host.data(), x_host.size() * 4);
  device.connect_stream("t", t_host.data(), t_host.size() * 4);
  device.connect_stream("loss", loss_host.data(), loss_host.size() * 4);
  for (unsigned r = 0; r < R; ++r) {
    device.write_tensor("master_shard", r, params.data() + r * shard, shard * 4);
    device.write_tensor("seeds", r, seed_words[r].data(), 2 * T * 4);
    device.write_tensor("adam_powers", r, powers_init.data(), 2 * T * 4);
  }
  if (config.save) {
    SavedTraining& saved = out.saved.emplace();
    saved.image = exe.image;
    for (unsigned r = 0; r < R; ++r) {
      saved.master_shard.insert(saved.master_shard.end(), params.begin() + r * shard,
                                params.begin() + (r + 1) * shard);
      saved.seeds.insert(saved.seeds.end(), seed_words[r].begin(), seed_words[r].end());
      saved.adam_powers.insert(saved.adam_powers.end(), powers_init.begin(), powers_init.end());
    }
  }
  out.load_seconds = device.run("init").load_seconds;

  // ---- the host reference's state, replica by replica ----
  struct Replica {
    std::vector<uint32_t> seeds, w16, h, wshard;
    std::vector<float> powers, ypart, gathered, sums, gsum, y, dy, grads, master, m, v, gshard;
    float loss = 0;
  };
  std::vector<Replica> host(R);
  const auto cast_all = [&](Replica& rep) {
    for (unsigned tile = 0; tile < T; ++tile) {
      const train_cast_fields f{rep.master.data() + tile * sp, rep.wshard.data() + tile * sp / 2,
                                rep.seeds.data() + 2 * tile, sp};
      on_workers(train_cast, f);
    }
  };
  for (unsigned r = 0; r < R; ++r) {
    Replica& rep = host[r];
    rep.seeds = seed_words[r];
    rep.powers = powers_init;
    rep.master.assign(params.begin() + r * shard, params.begin() + (r + 1) * shard);
    rep.m.assign(shard, 0.0f);
    rep.v.assign(shard, 0.0f);
    rep.wshard.resize(shard / 2);
    rep.w16.resize(n / 2);
    rep.h.resize(size_t{T} * kUnits * kBatch / 2);
    rep.ypart.resize(size_t{T} * yb);
    rep.sums.resize(size_t{groups} * yb);
    rep.y.resize(yb);
    rep.dy.resize(yb);
    rep.grads.resize(n);
    rep.gshard.resize(shard);
  }
  const auto all_gather = [&] {
    for (unsigned r = 0; r < R; ++r)
      for (unsigned q = 0; q < R; ++q)
        std::copy(host[q].wshard.begin(), host[q].wshard.end(),
                  host[r].w16.begin() + q * shard / 2);
  };
  for (Replica& rep : host) cast_all(rep);
  all_gather();
  const std::vector<unsigned> order = ring_order(R, 1);

  // ---- training ----
  for (unsigned s = 0; s < config.steps; ++s) {
    std::vector<std::vector<float>> xs(R, std::vector<float>(kBatch * kInputs)),
        ts(R, std::vector<float>(kBatch * kOutputs));
    for (unsigned r = 0; r < R; ++r) {
      batch(xs[r], ts[r]);
      std::copy(xs[r].begin(), xs[r].end(), x_host.begin() + r * kBatch * kInputs);
      std::copy(ts[r].begin(), ts[r].end(), t_host.begin() + r * kBatch * kOutputs);
    }
    const DeviceReport& report = device.run("step");
    if (out.saved) {
      SavedTraining& saved = *out.saved;
      saved.x.insert(saved.x.end(), x_host.begin(), x_host.end());
      saved.t.insert(saved.t.end(), t_host.begin(), t_host.end());
      saved.loss.insert(saved.loss.end(), loss_host.begin(), loss_host.end());
    }
    TrainStep st;
    st.cycles = report.run.cycles;
    st.host_seconds = report.run.host_seconds;
    st.instructions = report.run.instructions;
    st.flops = report.run.flops;
    st.supersteps = report.run.supersteps;
    st.ipulink_bytes = report.run.ipulink_bytes;
    st.joules = report.energy.joules;
    st.watts_per_chip = report.energy.watts_per_chip();
    st.static_joules = report.energy.static_joules();
    out.profile = report.profile;
    st.streaming_bytes = report.run.streaming_bytes_written + report.run.streaming_bytes_read;
    out.memory_hash = report.run.memory_hash;
    for (unsigned r = 0; r < R; ++r) st.loss += loss_host[r];

    // The host: the same step, replica by replica, tile by tile.
    for (unsigned r = 0; r < R; ++r) {
      Replica& rep = host[r];
      const float* x = xs[r].data();
      for (unsigned tile = 0; tile < T; ++tile) {
        const train_tick_fields tick{rep.seeds.data() + 2 * tile, rep.powers.data() + 2 * tile,
                                     bits(kBeta1), bits(kBeta2)};
        train_tick(&tick);
        const train_forward_fields f{x,
                                     rep.w16.data() + tile * kParams / 2,
                                     rep.h.data() + tile * kUnits * kBatch / 2,
                                     rep.ypart.data() + tile * yb,
                                     rep.seeds.data() + 2 * tile,
                                     kBatch,
                                     kInputs,
                                     kUnits,
                                     kOutputs};
        on_workers(train_forward, f);
      }
      for (unsigned q = 0; q < groups; ++q) {
        const train_sum_rows_fields f{rep.ypart.data() + size_t{q} * group * yb,
                                      rep.sums.data() + size_t{q} * yb, group, yb};
        train_sum_rows(&f);
      }
      if (groups > 1) {
        const train_sum_rows_fields f{rep.sums.data(), rep.y.data(), groups, yb};
        train_sum_rows(&f);
      } else {
        rep.y.assign(rep.sums.begin(), rep.sums.begin() + yb);
      }
      const train_loss_fields lf{rep.y.data(), ts[r].data(), rep.dy.data(),
                                 &rep.loss,    kBatch,       kOutputs};
      train_loss(&lf);
      st.expected_loss += rep.loss;
      for (unsigned tile = 0; tile < T; ++tile) {
        const train_backward_fields f{x,
                                      rep.w16.data() + tile * kParams / 2,
                                      rep.h.data() + tile * kUnits * kBatch / 2,
                                      rep.dy.data(),
                                      rep.grads.data() + size_t{tile} * kParams,
                                      kBatch,
                                      kInputs,
                                      kUnits,
                                      kOutputs};
        on_workers(train_backward, f);
      }
    }
    // Reduce-scatter in the order of the ring the compiler chose (docs/sdk.md): on the
    // bidirectional ring chunk r's first half adds up the replicas after r going one way round,
    // its second half the other way; on the one-way ring all of it goes the first way.
    const bool both_ways =
        collective_algorithm({}, R, n * 4) == CollectiveAlgorithm::kBidirectionalRing;
    for (unsigned r = 0; r < R; ++r) {
      const size_t begin = r * shard, middle = begin + shard / 2, end = begin + shard;
      unsigned pos = 0;
      while (order[pos] != r) ++pos;
      for (int way = 0; way < (both_ways ? 2 : 1); ++way) {
        const size_t lo = way == 0 ? begin : middle,
                     hi = way == 0 ? (both_ways ? middle : end) : end;
        for (size_t i = lo; i < hi; ++i) {
          const auto at = [&](unsigned hop) {  // the replica `hop` places from r on this way
            const unsigned p = way == 0 ? (pos + hop) % R : (pos + R - hop % R) % R;
            return host[order[p]].grads[i];
          };
          float sum = R > 1 ? at(1) : at(0);
          for (unsigned hop = 2; hop < R; ++hop) sum = sum + at(hop);
          if (R > 1) sum = sum + at(0);
          host[r].gshard[i - begin] = sum;
        }
        if (R == 1) break;
      }
    }
    for (Replica& rep : host)
      for (unsigned tile = 0; tile < T; ++tile) {
        const train_adam_fields f{rep.gshard.data() + tile * sp,
                                  rep.master.data() + tile * sp,
                                  rep.m.data() + tile * sp,
                                  rep.v.data() + tile * sp,
                                  rep.wshard.data() + tile * sp / 2,
                                  rep.powers.data() + 2 * tile,
                                  rep.seeds.data() + 2 * tile,
                                  sp,
                                  bits(1.0f / static_cast<float>(kBatch * R)),
                                  bits(learning_rate),
                                  bits(kBeta1),
                                  bits(kBeta2),
                                  bits(kEpsilon)};
        on_workers(train_adam, f);
      }
    all_gather();
    out.steps.push_back(st);
  }

  // ---- results ----
  out.weights.resize(n / 2);
  device.read_tensor("weights_f16", out.weights.data(), n / 2 * 4);
  out.expected_weights = host[0].w16;
  out.master.resize(shard);
  device.read_tensor("master_shard", out.master.data(), shard * 4);
  out.expected_master = host[0].master;
  bool same = out.weights == out.expected_weights &&
              std::memcmp(out.master.data(), out.expected_master.data(), shard * 4) == 0;
  for (unsigned r = 1; r < R; ++r) {  // every replica holds the same weights
    std::vector<uint32_t> w(n / 2);
    device.read_tensor("weights_f16", r, w.data(), n / 2 * 4);
    same = same && w == out.weights;
  }
  for (const TrainStep& st : out.steps) same = same && bits(st.loss) == bits(st.expected_loss);
  out.identical = same;

  // ---- a step's parts, each on its own ----
  const uint64_t none = device.run("part_none").run.cycles;
  const auto part = [&](const char* name) {
    const DeviceReport& report = device.run(name);
    if (std::string(name) == "part_streaming")
      out.adam_streaming_bytes =
          report.run.streaming_bytes_written + report.run.streaming_bytes_read;
    return report.run.cycles > none ? report.run.cycles - none : 0;
  };
  out.collective_cycles = part("part_collectives");
  out.streaming_cycles = part("part_streaming");
  out.host_io_cycles = part("part_host_io");
  out.ipulinks = static_cast<unsigned>(device.machine().links().links().size());
  out.ipulink_bytes_per_second = target.machine.ipulink.bytes_per_second;
  return out;
}

}  // namespace ipu::examples
