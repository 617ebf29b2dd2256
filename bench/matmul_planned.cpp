// The planned matmul (sdk/ops/matmul.h) on a whole chip: for each shape and pass, the planner's
// choice, its estimate beside the simulated cycles (target: within 10 %), the split of the
// simulated cycles between exchange and each compute phase, TFLOP/s and the fraction of the
// chip's AMP peak (targets from issue 33: >= 50 % for 1024 x 1024 x 4096 forward, >= 40 % for
// each BERT-Large shape's passes). Each case runs in a child process (one SystemC design per
// process); 64 sampled elements of each result are checked bit for bit against the host
// reference.
//   matmul_planned [--preset mk2|bow] [--quick] [--bounds]   --quick: the three smallest cases
//
// --bounds prints, instead, each case's bound under BSP for the best split (no simulation), at
// the AMP's peak and with this tile model's weight loads (bench/matmul_bound.h says how). Where
// that bound's fraction of peak is below a target, no plan can meet it here.
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "bench/bench_help.h"
#include "bench/matmul_bound.h"
#include "iss/isa.h"
#include "sdk/compiler/compiler.h"
#include "sdk/ops/matmul.h"
#include "sdk/runtime/device.h"

namespace {

using namespace ipu::sdk;

struct Case {
  const char* name;
  size_t m, k, n;
  bool ta, tb;
  size_t groups = 1;  // > 1: that many products side by side (grouped_matmul), as attention's heads
};

struct Figures {
  double estimate, cycles, widen, pack, amp, reduce, exchange;
  unsigned pm, pn, pk, reduce_groups, mismatches, samples;
  double clock_hz;
};

std::vector<uint16_t> random_f16(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint16_t> out(n);
  for (uint16_t& h : out)
    h = static_cast<uint16_t>((rng() & 1) << 15 | (15 - 4 + rng() % 6) << 10 | (rng() & 0x3ff));
  return out;
}

Figures run_case(const std::string& preset, const Case& c) {
  Graph g(Target::preset(preset));
  ops::MatmulOptions o;
  o.transpose_a = c.ta;
  o.transpose_b = c.tb;
  const ops::MatmulShape shape{c.m, c.k, c.n};
  const ops::MatmulPlan plan = c.groups > 1
                                   ? ops::plan_grouped_matmul(g.target(), shape, c.groups, o)
                                   : ops::plan_matmul(g.target(), shape, o);
  Tensor a, b;
  if (c.groups == 1) {
    a = ops::create_matmul_input(g, shape, true, "a", o);
    b = ops::create_matmul_input(g, shape, false, "b", o);
  } else {  // whole rows, spread over the chip
    a = g.add_variable(DType::kF16, {c.groups, c.ta ? c.k : c.m, c.ta ? c.m : c.k}, "a");
    b = g.add_variable(DType::kF16, {c.groups, c.tb ? c.n : c.k, c.tb ? c.k : c.n}, "b");
    g.map_evenly(a, 0, g.tiles(), g.tensor(a).shape[2]);
    g.map_evenly(b, 0, g.tiles(), g.tensor(b).shape[2]);
  }
  Program program = Sequence({});
  const Tensor result = c.groups == 1 ? ops::matmul(g, program, a, b, o, &plan)
                                      : ops::grouped_matmul(g, program, a, b, o, &plan);
  const Executable exe = compile(g, program);
  if (std::getenv("MATMUL_PLANNED_VERBOSE")) {  // the plans, and the schedule's exchange phases
    std::ostringstream explain;
    if (c.groups > 1)
      ops::plan_grouped_matmul(g.target(), shape, c.groups, o, &explain);
    else
      ops::plan_matmul(g.target(), shape, o, &explain);
    std::fputs(explain.str().c_str(), stderr);
    const nlohmann::json manifest = nlohmann::json::parse(exe.manifest);
    for (const nlohmann::json& step : manifest.at("steps"))
      if (step.contains("end_cycles"))
        std::fprintf(stderr, "  exchange phase: %s cycles\n", step.at("end_cycles").dump().c_str());
  }
  DeviceOptions options;
  options.profile = true;
  Device device(exe, options);
  const size_t a_size = c.m * c.k, b_size = c.k * c.n, c_size = c.m * c.n;
  const std::vector<uint16_t> av = random_f16(c.groups * a_size, 1),
                              bv = random_f16(c.groups * b_size, 2);
  device.write_tensor("a", av.data(), av.size() * 2);
  device.write_tensor("b", bv.data(), bv.size() * 2);
  const DeviceReport& report = device.run();
  Figures f{};
  f.estimate = plan.estimate.total();
  f.cycles = static_cast<double>(report.run.cycles - report.host_transfer_cycles);
  f.clock_hz = report.run.clock_hz;
  double compute = 0;
  for (const ComputeSetProfile& cs : device.profile().compute_sets) {
    const double cycles = static_cast<double>(cs.cycles);
    compute += cycles;
    const std::string& n = cs.name;
    if (n.size() > 6 && n.compare(n.size() - 6, 6, ".widen") == 0) f.widen = cycles;
    if (n.size() > 5 && n.compare(n.size() - 5, 5, ".pack") == 0) f.pack = cycles;
    if (n.size() > 4 && n.compare(n.size() - 4, 4, ".amp") == 0) f.amp = cycles;
    if (n.size() > 7 && n.compare(n.size() - 7, 7, ".reduce") == 0) f.reduce = cycles;
  }
  if (std::getenv("MATMUL_PLANNED_VERBOSE"))
    for (const CodeletProfile& cp : device.profile().codelets)
      std::fprintf(stderr, "  codelet %s: %llu runs, %.1f instructions and %.1f cycles a run\n",
                   cp.codelet.c_str(), static_cast<unsigned long long>(cp.runs.runs),
                   static_cast<double>(cp.runs.instructions) / cp.runs.runs,
                   static_cast<double>(cp.runs.cycles) / cp.runs.runs);
  f.exchange = f.cycles - compute;  // the exchange phases and the syncs between the steps
  f.pm = plan.pm;
  f.pn = plan.pn;
  f.pk = plan.pk;
  f.reduce_groups = plan.reduce_groups;
  std::vector<float> out(c.groups * c_size);
  device.read_tensor(g.tensor(result).name, out.data(), out.size() * 4);
  std::mt19937 rng(3);
  for (unsigned s = 0; s < 64; ++s) {
    const size_t group = rng() % c.groups, row = rng() % c.m, column = rng() % c.n;
    const std::vector<uint16_t> ag(av.begin() + group * a_size, av.begin() + (group + 1) * a_size);
    const std::vector<uint16_t> bg(bv.begin() + group * b_size, bv.begin() + (group + 1) * b_size);
    const float want = ops::matmul_reference_at(plan, ag, bg, row, column);
    f.mismatches += std::memcmp(&want, &out[group * c_size + row * c.n + column], 4) != 0;
    ++f.samples;
  }
  return f;
}

const std::vector<Case> kCases = {
    {"square 256", 256, 256, 256, false, false},
    {"square 512", 512, 512, 512, false, false},
    {"16 heads 512x64x512", 512, 64, 512, false, false, 16},
    {"16 heads 512x512x64", 512, 512, 64, false, false, 16},
    {"square 1024", 1024, 1024, 1024, false, false},
    {"1024x1024x1024 dA", 1024, 1024, 1024, false, true},
    {"1024x1024x1024 dW", 1024, 1024, 1024, true, false},
    {"1024x1024x4096 fwd", 1024, 1024, 4096, false, false},
    {"1024x1024x4096 dA", 1024, 4096, 1024, false, true},
    {"1024x1024x4096 dW", 1024, 1024, 4096, true, false},
    {"1024x4096x1024 fwd", 1024, 4096, 1024, false, false},
    {"16 heads 512x64x512 dA", 512, 512, 64, false, true, 16},
    {"16 heads 512x64x512 dW", 64, 512, 512, true, false, 16},
    {"16 heads 512x512x64 dA", 512, 64, 512, false, true, 16},
    {"16 heads 512x512x64 dW", 512, 512, 64, true, false, 16},
    {"square 2048", 2048, 2048, 2048, false, false},
};

void print_bounds() {
  const double peak_flop_per_cycle = 128.0 * 1472;
  fmt::print(
      "the bound under BSP for the best split, one chip (1472 tiles; a grouped case's group "
      "on its share): the AMP at its peak, then with each worker's weight loads\n");
  fmt::print("{:<24} {:>12} {:>9} {:>8} {:>8} {:>8} {:>7}   {:>12} {:>9} {:>8} {:>7}\n", "case",
             "split", "bound", "amp", "operands", "partials", "% peak", "split", "bound", "amp",
             "% peak");
  for (const Case& c : kCases) {
    const unsigned tiles = static_cast<unsigned>(1472 / c.groups);
    const ipu::bench::Bound b = ipu::bench::bsp_bound(c.m, c.k, c.n, tiles, false),
                            w = ipu::bench::bsp_bound(c.m, c.k, c.n, tiles, true);
    const double flops = 2.0 * c.m * c.n * c.k * c.groups;
    fmt::print(
        "{:<24} {:>12} {:>9.0f} {:>8.0f} {:>8.0f} {:>8.0f} {:>6.1f}%   {:>12} {:>9.0f} {:>8.0f} "
        "{:>6.1f}%\n",
        c.name, fmt::format("{}x{}x{}", b.pm, b.pn, b.pk), b.cycles, b.compute, b.receive,
        b.partials, 100.0 * flops / b.cycles / peak_flop_per_cycle,
        fmt::format("{}x{}x{}", w.pm, w.pn, w.pk), w.cycles, w.compute,
        100.0 * flops / w.cycles / peak_flop_per_cycle);
  }
  fmt::print(
      "targets: >= 50% of peak for 1024x1024x4096 fwd, >= 40% for the BERT-Large passes; a "
      "bound below a target: no plan can meet it\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (ipu::bench::print_help(argc, argv, "[--preset mk2|bow] [--quick] [--bounds]",
                             "The planned matmul on a whole chip: the planner's estimate beside "
                             "the simulated cycles, and the fraction of the AMP's peak."))
    return 0;
  std::string preset = "mk2";
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--case=", 7) == 0 && i + 1 < argc) {  // a child: one case
      const unsigned index = static_cast<unsigned>(std::stoul(argv[i] + 7));
      const size_t colon = std::string(argv[i]).find(':');
      preset = std::string(argv[i]).substr(colon + 1);
      try {
        const Figures f = run_case(preset, kCases.at(index));
        const int fd = std::stoi(argv[i + 1]);
        return write(fd, &f, sizeof f) == static_cast<ssize_t>(sizeof f) ? 0 : 1;
      } catch (const std::exception& e) {  // the parent reports the case failed
        std::fprintf(stderr, "matmul_planned: %s: %s\n", kCases.at(index).name, e.what());
        return 1;
      }
    }
    if (std::strcmp(argv[i], "--preset") == 0 && i + 1 < argc)
      preset = argv[++i];
    else if (std::strcmp(argv[i], "--quick") == 0)
      quick = true;
    else if (std::strcmp(argv[i], "--bounds") == 0) {
      print_bounds();
      return 0;
    }
  }
  const double peak_flop_per_cycle = 128.0 * 1472;  // 64 f16 MACs a tile cycle (docs/xipu-model.md)
  fmt::print("planned matmul on one {} chip, f16 in, f32 partials and out\n", preset);
  fmt::print("{:<24} {:>14} {:>9} {:>9} {:>7} {:>8} {:>8} {:>8} {:>8} {:>8} {:>7} {:>7} {}\n",
             "case", "split", "estimate", "cycles", "est/sim", "exchange", "pack", "amp", "reduce",
             "widen", "TFLOP/s", "% peak", "check");
  int failures = 0;
  for (size_t i = 0; i < (quick ? 3 : kCases.size()); ++i) {
    const Case& c = kCases[i];
    Figures f{};
    const std::string arg = fmt::format("--case={}:{}", i, preset);
    if (!ipu::bench::run_self_in_child(arg.c_str(), f)) {
      fmt::print("{:<24} failed\n", c.name);
      ++failures;
      continue;
    }
    const double flops = 2.0 * c.m * c.n * c.k * c.groups;
    fmt::print(
        "{:<24} {:>14} {:>9.0f} {:>9.0f} {:>7.2f} {:>8.0f} {:>8.0f} {:>8.0f} {:>8.0f} {:>8.0f} "
        "{:>7.1f} {:>6.1f}% {}\n",
        c.name,
        fmt::format("{}x{}x{}{}", f.pm, f.pn, f.pk,
                    f.reduce_groups > 1 ? fmt::format("/{}", f.reduce_groups) : ""),
        f.estimate, f.cycles, f.estimate / f.cycles, f.exchange, f.pack, f.amp, f.reduce, f.widen,
        flops / (f.cycles / f.clock_hz) / 1e12, 100.0 * flops / f.cycles / peak_flop_per_cycle,
        f.mismatches == 0 ? fmt::format("{} equal", f.samples)
                          : fmt::format("{} of {} DIFFER", f.mismatches, f.samples));
    failures += f.mismatches != 0;
  }
  fmt::print(
      "targets: estimate within 10% of the simulation (est/sim 0.90-1.10); >= 50% of peak "
      "for 1024x1024x4096 fwd, >= 40% for the BERT-Large passes\n");
  return failures == 0 ? 0 : 1;
}
