// One transformer encoder layer (sdk/ops/transformer.h), forward and backward, on one chip:
// every operation compiled as a program of its own and run in order, so that each one's
// simulated cycles are its own. Prints each operation's cycles, its share of the layer and, for
// the products, TFLOP/s and the fraction of the AMP's peak; then the layer's totals beside the
// target of issue 33 (>= 35 % of the AMP's peak over the forward and backward passes), the
// fullest tile's memory and the host time. The default is BERT-Large's layer: hidden 1024, 16
// heads, FFN 4096, two sequences of 512.
//
// By default each pass is compiled and run in a child process of its own (--pass both): the
// two passes' exchange tables and staging together need more than a tile's memory in this
// compiler (docs/ops.md). The backward pass's child runs on the forward's activations as its
// memory holds them, zeros, not the forward's values: the codelets' loops do not depend on the
// values (a few early returns do, for arguments beyond a function's range), and the layer's
// arithmetic is checked in tests/sdk/ops_transformer_test.cpp. --pass together compiles both passes
// as one.
//   transformer_layer [--preset mk2|bow] [--hidden N] [--heads N] [--ffn N] [--seq N]
//                     [--sequences N] [--tiles N] [--memory P] [--pass P] [--param NAME=VALUE]
//                     [--top N] [--profile]
#include <fmt/format.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <chrono>
#include <cmath>
#include <cstring>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "bench/child_process.h"
#include "bench/matmul_bound.h"
#include "bench/param_overrides.h"
#include "hw/machine/machine_config.h"
#include "sdk/compiler/compiler.h"
#include "sdk/ops/transformer.h"
#include "sdk/runtime/device.h"

namespace {

using namespace ipu::sdk;
namespace po = boost::program_options;

// What a pass's child reports: a fixed-size record, to cross a pipe as bytes.
struct PassFigures {
  static constexpr size_t kMaxSteps = 256;
  struct Step {
    char label[56];
    char plan[24];  // a product's split, "pm x pn x pk" (serial: "4 x pm x pn x pk"), "/g" its
                    // reducers' group parts
    uint64_t cycles;
    double flops;
    double estimate;          // a product's planned cycles (its cast to f16 not counted); else 0
    uint32_t m, k, n, tiles;  // a product's shape (one group's) and its (a group's) tiles
  } steps[kMaxSteps];
  uint32_t count = 0;
  double clock_hz = 0, compile_seconds = 0;
  uint32_t fullest_tile = 0, fullest_used = 0, fullest_free = 0, tiles = 0;
  bool finite = true;
};

enum class Pass { kForward, kBackward, kTogether };

void fill(Device& device, const Graph& g, Tensor t, double offset, double range,
          std::mt19937& rng) {
  const TensorInfo& i = g.tensor(t);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(i.elements);
  for (float& e : v) e = static_cast<float>(offset + range * u(rng));
  if (i.type == DType::kF16) {
    const std::vector<uint16_t> bits = ops::reference::cast_to_f16(v);
    device.write_tensor(i.name, bits.data(), bits.size() * 2);
  } else {
    device.write_tensor(i.name, v.data(), v.size() * 4);
  }
}

// "layer.json" -> "layer.forward.json": each pass's child writes its own statistics.
std::string stats_file(const std::string& stats, const std::string& pass) {
  if (stats.empty()) return stats;
  const size_t dot = stats.find_last_of('.');
  const size_t slash = stats.find_last_of('/');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash))
    return stats + "." + pass;
  return stats.substr(0, dot) + "." + pass + stats.substr(dot);
}

// Builds the layer, compiles the pass's steps, runs each in order.
void run_pass(Pass pass, const ipu::hw::MachineConfig& machine, unsigned tiles,
              const ops::EncoderShape& shape, const ops::EncoderOptions& options, bool profile,
              const std::string& stats, PassFigures& out) {
  Graph g(Target::of(machine, tiles));
  const size_t T = shape.tokens(), H = shape.hidden;
  const ops::EncoderWeights w = ops::add_encoder_weights(g, shape, options);
  const Tensor x = g.add_variable(DType::kF32, {T, H}, "x");
  const Tensor dy = g.add_variable(DType::kF32, {T, H}, "dy");
  const Tensor mask = g.add_variable(DType::kF32, {shape.sequences, shape.seq}, "mask");
  for (Tensor t : {x, dy})
    g.map_evenly(t, 0, static_cast<unsigned>(std::min<size_t>(g.tiles(), T)), H);
  g.map_evenly(mask, 0, static_cast<unsigned>(std::min<size_t>(g.tiles(), shape.sequences)),
               shape.seq);
  std::vector<ops::LayerStep> steps;
  const ops::EncoderForward f = ops::encoder_forward(g, steps, shape, w, x, mask, options);
  const size_t forward_steps = steps.size();
  ops::encoder_backward(g, steps, shape, w, f, dy,
                        options);  // its steps; the gradients stay on the tiles
  const size_t first = pass == Pass::kBackward ? forward_steps : 0;
  const size_t end = pass == Pass::kForward ? forward_steps : steps.size();
  if (end - first > PassFigures::kMaxSteps) throw std::runtime_error("too many steps to report");
  std::vector<NamedProgram> programs;
  for (size_t i = first; i < end; ++i) programs.push_back({steps[i].label, steps[i].program});
  const auto compile_start = std::chrono::steady_clock::now();
  const Executable exe = compile(g, programs);
  out.compile_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - compile_start).count();
  DeviceOptions device_options;
  device_options.profile = profile;
  device_options.stats = stats;
  Device device(exe, device_options);
  std::mt19937 rng(1);
  for (Tensor t : {w.qkv_t, w.out, w.ffn_in, w.ffn_out}) fill(device, g, t, 0, 0.05, rng);
  for (Tensor t : {w.out_bias, w.ffn_in_bias, w.ffn_out_bias, w.beta1, w.beta2})
    fill(device, g, t, 0, 0.1, rng);
  for (Tensor t : {w.gamma1, w.gamma2}) fill(device, g, t, 1, 0.1, rng);
  for (Tensor t : {x, dy}) fill(device, g, t, 0, 1, rng);
  fill(device, g, mask, 0, 0, rng);  // every key attended
  for (size_t i = first; i < end; ++i) {
    const DeviceReport& r = device.run(steps[i].label);
    PassFigures::Step& s = out.steps[out.count++];
    std::snprintf(s.label, sizeof s.label, "%s", steps[i].label.c_str());
    s.cycles = r.run.cycles - r.host_transfer_cycles;
    s.flops = steps[i].flops;
    s.plan[0] = 0;
    s.estimate = 0;
    s.m = s.k = s.n = s.tiles = 0;
    if (const auto& p = steps[i].plan; p.has_value()) {
      s.estimate = p->estimate.total();
      s.m = static_cast<uint32_t>(p->shape.m);
      s.k = static_cast<uint32_t>(p->shape.k);
      s.n = static_cast<uint32_t>(p->shape.n);
      s.tiles = p->options.tiles;
      if (profile) fmt::print(stderr, "plan {}: {}\n", steps[i].label, p->describe());
      std::snprintf(s.plan, sizeof s.plan, "%s",
                    fmt::format("{}{}x{}x{}{}", p->serial > 1 ? fmt::format("{}x", p->serial) : "",
                                p->pm, p->pn, p->pk,
                                p->reduce_groups > 1 ? fmt::format("/{}", p->reduce_groups) : "")
                        .c_str());
    }
    out.clock_hz = r.run.clock_hz;
  }
  if (profile) {  // what each operation's cycles went on: its compute sets, its codelets
    for (const ComputeSetProfile& cs : device.profile().compute_sets)
      fmt::print(stderr, "  compute set {:<36} {:>9} cycles\n", cs.name, cs.cycles);
    for (const CodeletProfile& cp : device.profile().codelets)
      fmt::print(stderr,
                 "  codelet {:<28} {:>9} runs, {:.1f} instructions and {:.1f} cycles a run\n",
                 cp.codelet, cp.runs.runs,
                 static_cast<double>(cp.runs.instructions) / static_cast<double>(cp.runs.runs),
                 static_cast<double>(cp.runs.cycles) / static_cast<double>(cp.runs.runs));
  }
  // The layer's output finite, where the forward pass ran (alone, the backward pass reads
  // zeros for its activations, and a norm's gradient from a zero variance is not).
  if (pass != Pass::kBackward) {
    std::vector<float> v(T * H);
    device.read_tensor(g.tensor(f.y).name, v.data(), v.size() * 4);
    out.finite = std::all_of(v.begin(), v.end(), [](float e) { return std::isfinite(e); });
  }
  out.fullest_tile = exe.fullest_tile.tile;
  out.fullest_used = exe.fullest_tile.used;
  out.fullest_free = exe.fullest_tile.free;
  out.tiles = g.tiles();
}

}  // namespace

int main(int argc, char** argv) {
  std::string preset = "mk2", pass = "both";
  ops::EncoderShape shape;
  ops::EncoderOptions options;
  unsigned tiles = 0, top = 20;
  bool profile = false;
  int figures_fd = -1;
  std::string stats;
  std::vector<std::string> parameters;
  po::options_description desc(
      "One encoder layer forward and backward on one chip: each operation's simulated cycles, "
      "TFLOP/s and share of the AMP's peak (target: >= 35 % over the layer).\nOptions");
  desc.add_options()("help,h", "this help")("preset", po::value(&preset)->default_value(preset),
                                            "chip: mk2 or bow")(
      "hidden", po::value(&shape.hidden)->default_value(shape.hidden), "hidden size")(
      "heads", po::value(&shape.heads)->default_value(shape.heads), "attention heads")(
      "ffn", po::value(&shape.ffn)->default_value(shape.ffn), "feed-forward size")(
      "seq", po::value(&shape.seq)->default_value(shape.seq), "tokens a sequence")(
      "sequences", po::value(&shape.sequences)->default_value(shape.sequences),
      "sequences a micro-batch")("tiles", po::value(&tiles)->default_value(0),
                                 "tiles of the chip to use (0: all)")(
      "memory", po::value(&options.available_memory_proportion)->default_value(0.35),
      "each product's share of a tile's memory")(
      "pass", po::value(&pass)->default_value(pass),
      "both (each pass compiled alone, in a child process), forward, backward, or together "
      "(both passes in one executable)")("top", po::value(&top)->default_value(top),
                                         "operations listed (the longest first; 0: all)")(
      "profile", po::bool_switch(&profile),
      "also print, on stderr, each compute set's cycles and each codelet's runs, instructions "
      "and cycles a run (the exchanges and syncs are the rest of an operation's cycles)")(
      "stats", po::value(&stats),
      "FILE: each pass's run statistics, every superstep with its step, compute and exchange "
      "cycles (docs/chip.md), to FILE with the pass's name before its extension")(
      "param", po::value(&parameters)->composing(),
      "NAME=VALUE: a machine parameter (ipu-sim --config-dump lists them)")(
      "figures-fd", po::value(&figures_fd), "(internal) a child's pipe for its figures");
  po::variables_map vm;
  try {
    po::store(po::parse_command_line(argc, argv, desc), vm);
    po::notify(vm);
    if (pass != "both" && pass != "forward" && pass != "backward" && pass != "together")
      throw po::error("--pass " + pass + ": expected both, forward, backward or together");
  } catch (const po::error& e) {
    std::cerr << "transformer_layer: " << e.what() << "\n";
    return 2;
  }
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return 0;
  }
  const auto host_start = std::chrono::steady_clock::now();
  std::vector<PassFigures> passes;
  try {
    const auto overrides = ipu::bench::param_overrides(parameters);
    const ipu::hw::MachineConfig machine = ipu::hw::configure_machine(preset, "", overrides);
    if (pass == "both") {
      for (const char* p : {"forward", "backward"}) {
        passes.emplace_back();
        if (!ipu::bench::run_child(argc, argv, {"--pass", p}, passes.back())) {
          std::cerr << "transformer_layer: the " << p << " pass failed\n";
          return 1;
        }
      }
    } else {
      passes.emplace_back();
      run_pass(pass == "forward"    ? Pass::kForward
               : pass == "backward" ? Pass::kBackward
                                    : Pass::kTogether,
               machine, tiles, shape, options, profile, stats_file(stats, pass), passes.back());
      if (figures_fd >= 0) return ipu::bench::send_figures(figures_fd, passes.back()) ? 0 : 1;
    }
  } catch (const std::exception& e) {
    std::cerr << "transformer_layer: " << e.what() << "\n";
    return 1;
  }

  const double clock_hz = passes.front().clock_hz;
  const double peak = 128.0 * passes.front().tiles;  // flop a cycle: 64 f16 MACs a tile
  struct Row {
    std::string label, plan;
    uint64_t cycles;
    double flops, estimate;
    bool backward;
    double bound;  // a product's BSP bound (bench/matmul_bound.h); else its cycles
  };
  std::vector<Row> rows;
  for (const PassFigures& p : passes)
    for (uint32_t i = 0; i < p.count; ++i)
      rows.push_back({p.steps[i].label, p.steps[i].plan, p.steps[i].cycles, p.steps[i].flops,
                      p.steps[i].estimate, std::strstr(p.steps[i].label, ".grad.") != nullptr,
                      p.steps[i].flops > 0
                          ? ipu::bench::bsp_bound(p.steps[i].m, p.steps[i].k, p.steps[i].n,
                                                  p.steps[i].tiles, true)
                                .cycles
                          : static_cast<double>(p.steps[i].cycles)});
  uint64_t cycles[2] = {0, 0}, product_cycles = 0;
  double flops[2] = {0, 0}, bound = 0, product_bound = 0;
  for (const Row& r : rows) {
    cycles[r.backward] += r.cycles;
    flops[r.backward] += r.flops;
    product_cycles += r.flops > 0 ? r.cycles : 0;
    bound += r.bound;
    product_bound += r.flops > 0 ? r.bound : 0;
  }
  const uint64_t total = cycles[0] + cycles[1];
  fmt::print(
      "encoder layer on one {} chip ({} tiles at {:.3f} GHz): hidden {}, {} heads, FFN {}, {} "
      "sequences of {}; f16 operands, f32 partials, statistics and elementwise arithmetic; "
      "products at most {} of a tile's memory\n",
      preset, passes.front().tiles, clock_hz / 1e9, shape.hidden, shape.heads, shape.ffn,
      shape.sequences, shape.seq, options.available_memory_proportion);
  std::vector<Row> order = rows;
  std::stable_sort(order.begin(), order.end(),
                   [](const Row& a, const Row& b) { return a.cycles > b.cycles; });
  if (top != 0 && order.size() > top) order.resize(top);
  fmt::print("{:<36} {:>10} {:>7} {:>8} {:>7} {:>7}  {}\n", "operation (longest first)", "cycles",
             "share", "TFLOP/s", "% peak", "est/sim", "split");
  for (const Row& r : order)
    fmt::print("{:<36} {:>10} {:>6.1f}% {:>8} {:>7} {:>7}  {}\n", r.label, r.cycles,
               100.0 * static_cast<double>(r.cycles) / static_cast<double>(total),
               r.flops > 0 ? fmt::format("{:.1f}", r.flops / (r.cycles / clock_hz) / 1e12) : "",
               r.flops > 0 ? fmt::format("{:.1f}%", 100.0 * r.flops / r.cycles / peak) : "",
               r.estimate > 0 ? fmt::format("{:.2f}", r.estimate / r.cycles) : "", r.plan);
  const char* names[2] = {"forward", "backward"};
  for (int p = 0; p < 2; ++p)
    if (cycles[p] > 0)
      fmt::print("{:<9} {:>10} cycles {:>8.1f} us {:>6.1f} TFLOP/s {:>5.1f}% of AMP peak\n",
                 names[p], cycles[p], cycles[p] / clock_hz * 1e6,
                 flops[p] / (cycles[p] / clock_hz) / 1e12, 100.0 * flops[p] / cycles[p] / peak);
  fmt::print(
      "layer     {:>10} cycles {:>8.1f} us {:>6.1f} TFLOP/s {:>5.1f}% of AMP peak (target >= "
      "35%); {} operations, the products {:.1f}% of the cycles, {:.2f} GFLOP\n",
      total, total / clock_hz * 1e6, (flops[0] + flops[1]) / (total / clock_hz) / 1e12,
      100.0 * (flops[0] + flops[1]) / total / peak, rows.size(),
      100.0 * static_cast<double>(product_cycles) / static_cast<double>(total),
      (flops[0] + flops[1]) / 1e9);
  // Where the target stands under BSP: each product at the bound of its best split, on its
  // tiles (a group's share for the heads).
  const double all_flops = flops[0] + flops[1];
  fmt::print(
      "bound     {:>10.0f} cycles: every product at its best split's BSP bound (its AMP's weight "
      "loads counted; bench/matmul_bound.h), the other operations as measured: {:.1f}% of AMP "
      "peak; the products at their bound ({:.0f} cycles, {:.1f}% of what they took) and the other "
      "operations free: {:.1f}%\n",
      bound, 100.0 * all_flops / bound / peak, product_bound,
      100.0 * product_bound / static_cast<double>(product_cycles),
      100.0 * all_flops / product_bound / peak);
  bool finite = true;
  for (const PassFigures& p : passes) {
    const char* which = passes.size() == 1                        ? pass.c_str()
                        : std::strstr(p.steps[0].label, ".grad.") ? "backward"
                                                                  : "forward";
    fmt::print(
        "{} executable: fullest tile {} with {} bytes of {} ({:.1f}%), compiled in {:.1f} s\n",
        which, p.fullest_tile, p.fullest_used, p.fullest_free,
        100.0 * p.fullest_used / p.fullest_free, p.compile_seconds);
    finite &= p.finite;
  }
  fmt::print("forward output {}; host {:.1f} s\n", finite ? "finite" : "NOT FINITE",
             std::chrono::duration<double>(std::chrono::steady_clock::now() - host_start).count());
  return finite ? 0 : 1;
}
