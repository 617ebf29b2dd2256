// One transformer encoder layer (sdk/ops/transformer.h), forward and backward, on one chip:
// every operation compiled as a program of its own and run in order, so that each one's
// simulated cycles are its own. Prints each operation's cycles, its share of the layer and, for
// the products, TFLOP/s and the fraction of the AMP's peak; then the layer's totals beside the
// target of issue 33 (>= 35 % of the AMP's peak over the forward and backward passes), the
// fullest tile's memory and the host time. The default is BERT-Large's layer: hidden 1024, 16
// heads, FFN 4096, two sequences of 512.
//   transformer_layer [--preset mk2|bow] [--hidden N] [--heads N] [--ffn N] [--seq N]
//                     [--sequences N] [--tiles N] [--memory P] [--top N]
#include <fmt/format.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "sdk/compiler/compiler.h"
#include "sdk/ops/transformer.h"
#include "sdk/runtime/device.h"

namespace {

using namespace ipu::sdk;
namespace po = boost::program_options;

struct Timed {
  std::string label;
  double flops;
  uint64_t cycles;
  bool forward;
};

// Random f16 weights of magnitude up to `range`; f32 vectors near `offset`.
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

}  // namespace

int main(int argc, char** argv) {
  std::string preset = "mk2";
  ops::EncoderShape shape;
  ops::EncoderOptions options;
  unsigned tiles = 0, top = 12;
  bool forward_only = false;
  po::options_description desc(
      "One encoder layer forward and backward on one chip: each operation's simulated cycles, "
      "TFLOP/s and share of the AMP's peak (target: >= 35 % over the layer).\nOptions");
  desc.add_options()("help,h", "this help")(
      "preset", po::value(&preset)->default_value(preset), "chip: mk2 or bow")(
      "hidden", po::value(&shape.hidden)->default_value(shape.hidden), "hidden size")(
      "heads", po::value(&shape.heads)->default_value(shape.heads), "attention heads")(
      "ffn", po::value(&shape.ffn)->default_value(shape.ffn), "feed-forward size")(
      "seq", po::value(&shape.seq)->default_value(shape.seq), "tokens a sequence")(
      "sequences", po::value(&shape.sequences)->default_value(shape.sequences),
      "sequences a micro-batch")("tiles", po::value(&tiles)->default_value(0),
                                 "tiles of the chip to use (0: all)")(
      "memory", po::value(&options.available_memory_proportion)->default_value(0.6),
      "each product's share of a tile's memory")(
      "top", po::value(&top)->default_value(top), "operations listed (the longest first; 0: all)")(
      "forward-only", po::bool_switch(&forward_only), "the forward pass alone");
  po::variables_map vm;
  try {
    po::store(po::parse_command_line(argc, argv, desc), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << "transformer_layer: " << e.what() << "\n";
    return 2;
  }
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return 0;
  }
  const auto host_start = std::chrono::steady_clock::now();
  try {
    Graph g(Target::preset(preset, tiles));
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
    if (!forward_only) ops::encoder_backward(g, steps, shape, w, f, dy, options);
    if (std::getenv("TRANSFORMER_LAYER_VERTICES")) {  // where the vertices are
      std::map<unsigned, size_t> per_tile;
      std::map<std::string, size_t> on_first;
      for (const VertexInfo& v : g.vertices()) {
        ++per_tile[v.tile];
        if (v.tile == 0) ++on_first[g.compute_sets()[v.compute_set]];
      }
      std::vector<std::pair<size_t, unsigned>> busiest;
      for (const auto& [t, n] : per_tile) busiest.emplace_back(n, t);
      std::sort(busiest.rbegin(), busiest.rend());
      for (size_t i = 0; i < 5 && i < busiest.size(); ++i)
        fmt::print(stderr, "tile {}: {} vertices\n", busiest[i].second, busiest[i].first);
      fmt::print(stderr, "median tile: {} vertices\n", busiest[busiest.size() / 2].first);
      for (const auto& [cs, n] : on_first)
        if (n > 50) fmt::print(stderr, "  tile 0, {}: {}\n", cs, n);
    }
    std::vector<NamedProgram> programs;
    for (const ops::LayerStep& s : steps) programs.push_back({s.label, s.program});
    const auto compile_start = std::chrono::steady_clock::now();
    const Executable exe = compile(g, programs);
    const double compile_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - compile_start).count();
    if (const char* path = std::getenv("TRANSFORMER_LAYER_MANIFEST")) {  // the compiled steps
      std::ofstream(path) << exe.manifest;
    }
    Device device(exe);
    std::mt19937 rng(1);
    for (Tensor t : {w.qkv_t, w.out, w.ffn_in, w.ffn_out}) fill(device, g, t, 0, 0.05, rng);
    for (Tensor t : {w.out_bias, w.ffn_in_bias, w.ffn_out_bias, w.beta1, w.beta2})
      fill(device, g, t, 0, 0.1, rng);
    for (Tensor t : {w.gamma1, w.gamma2}) fill(device, g, t, 1, 0.1, rng);
    for (Tensor t : {x, dy}) fill(device, g, t, 0, 1, rng);
    fill(device, g, mask, 0, 0, rng);  // every key attended

    std::vector<Timed> timed;
    double clock_hz = 0;
    for (size_t i = 0; i < steps.size(); ++i) {
      const DeviceReport& r = device.run(steps[i].label);
      clock_hz = r.run.clock_hz;
      timed.push_back({steps[i].label, steps[i].flops, r.run.cycles - r.host_transfer_cycles,
                       i < forward_steps});
    }
    std::vector<float> y(T * H);
    device.read_tensor(g.tensor(f.y).name, y.data(), y.size() * 4);
    const bool finite =
        std::all_of(y.begin(), y.end(), [](float v) { return std::isfinite(v); });

    const double peak = 128.0 * g.tiles();  // flop a cycle: 64 f16 MACs a tile (docs/xipu-model.md)
    uint64_t cycles[2] = {0, 0};
    double flops[2] = {0, 0};
    for (const Timed& t : timed) {
      cycles[t.forward ? 0 : 1] += t.cycles;
      flops[t.forward ? 0 : 1] += t.flops;
    }
    const uint64_t total = cycles[0] + cycles[1];
    fmt::print(
        "encoder layer on one {} chip ({} tiles at {:.3f} GHz): hidden {}, {} heads, FFN {}, {} "
        "sequences of {}; f16 operands, f32 partials, statistics and elementwise arithmetic\n",
        preset, g.tiles(), clock_hz / 1e9, H, shape.heads, shape.ffn, shape.sequences, shape.seq);
    std::vector<Timed> order = timed;
    std::stable_sort(order.begin(), order.end(),
                     [](const Timed& a, const Timed& b) { return a.cycles > b.cycles; });
    if (top != 0 && order.size() > top) order.resize(top);
    fmt::print("{:<36} {:>10} {:>7} {:>8} {:>7}\n", "operation (longest first)", "cycles",
               "share", "TFLOP/s", "% peak");
    for (const Timed& t : order)
      fmt::print("{:<36} {:>10} {:>6.1f}% {:>8} {:>7}\n", t.label, t.cycles,
                 100.0 * static_cast<double>(t.cycles) / static_cast<double>(total),
                 t.flops > 0 ? fmt::format("{:.1f}", t.flops / (t.cycles / clock_hz) / 1e12) : "",
                 t.flops > 0 ? fmt::format("{:.1f}%", 100.0 * t.flops / t.cycles / peak) : "");
    // Where the cycles went: the products against everything else.
    uint64_t product_cycles = 0;
    for (const Timed& t : timed) product_cycles += t.flops > 0 ? t.cycles : 0;
    const char* names[2] = {"forward", "backward"};
    for (int p = 0; p < 2; ++p)
      fmt::print("{:<9} {:>10} cycles {:>8.1f} us {:>6.1f} TFLOP/s {:>5.1f}% of AMP peak\n",
                 names[p], cycles[p], cycles[p] / clock_hz * 1e6,
                 flops[p] / (cycles[p] / clock_hz) / 1e12, 100.0 * flops[p] / cycles[p] / peak);
    fmt::print(
        "layer     {:>10} cycles {:>8.1f} us {:>6.1f} TFLOP/s {:>5.1f}% of AMP peak (target >= "
        "35%); {} operations, products {:.1f}% of the cycles, {:.2f} GFLOP\n",
        total, total / clock_hz * 1e6, (flops[0] + flops[1]) / (total / clock_hz) / 1e12,
        100.0 * (flops[0] + flops[1]) / total / peak, timed.size(),
        100.0 * static_cast<double>(product_cycles) / static_cast<double>(total),
        (flops[0] + flops[1]) / 1e9);
    fmt::print("fullest tile: {} bytes of {} ({:.1f}%, {}); output {}\n", exe.fullest_tile.used,
               exe.fullest_tile.free, 100.0 * exe.fullest_tile.used / exe.fullest_tile.free,
               g.describe_tile(exe.fullest_tile.tile), finite ? "finite" : "NOT FINITE");
    fmt::print("host: {:.1f} s (compile {:.1f} s)\n",
               std::chrono::duration<double>(std::chrono::steady_clock::now() - host_start).count(),
               compile_seconds);
    return finite ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "transformer_layer: " << e.what() << "\n";
    return 1;
  }
}
