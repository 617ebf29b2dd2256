// How many sequences a second packed BERT trains at on a machine (docs/bert.md, "Throughput at
// full size"). A whole step of BERT-Large on a POD16 (192 micro-batches through 4 chips, 16
// chips in all) is too long to simulate on this host; its parts are not. The bench simulates,
// at full size, a replica whose every stage holds one layer: each stage's forward pass (its
// inputs restored) and backward pass (its gradients accumulated), the heads, each set of copies
// that ends a pipeline slot, the step's host I/O, the reduce-scatter and LAMB (with its state in
// streaming memory) of the parameters outside the layers and of one layer. A stage of n layers
// is its one-layer stage and n - 1 more layers (every layer has the same shapes on the same
// tiles); the update of L layers is the one outside them and L layers' (the parameters are
// updated one after the other). The step is composed from them with the schedule the bert example
// runs (examples/bert/step_time.h): the busiest chip of each slot and the slot's copies, then the
// update.
//
// Each group of parts is compiled and run in a child process of its own: the forward and the
// backward passes of BERT-Large's layers do not fit one executable in this compiler
// (docs/ops.md). A group that does not fit tile memory is named with the tile and what
// overflowed. A chip's memory is that of all its layers: the one-layer stage holds its other
// layers' weights, gradient sums and kept tensors (BertConfig::held_layers).
//
// --check also simulates the whole step (every layer, every micro-batch) and fails unless the
// composed step is within 5 % of it: the method's own test, on a model small enough.
//
//   bert_throughput [--preset pod16,bow-pod16] [--model large|tiny] [--layers-per-chip 3,7,7,7]
//                   [--accumulate 192] [--rows 2] [--tiles N] [--param NAME=VALUE] [--check]
#include <fmt/format.h>

#include <atomic>
#include <boost/program_options.hpp>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <numeric>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/child_process.h"
#include "bench/param_overrides.h"
#include "examples/bert/bert_app.h"
#include "examples/bert/data.h"
#include "examples/bert/step_time.h"
#include "hw/machine/machine_config.h"
#include "sdk/tools/parse_count.h"

namespace {

using namespace ipu::examples::bert;
namespace po = boost::program_options;

// What a child sends back: each part's cycles, its executable's fullest tile, or its error.
struct GroupFigures {
  static constexpr size_t kMaxParts = 64;
  struct Part {
    char name[40];
    uint64_t cycles;
    double host_seconds;  // its run's
    // Of its cycles, those in phases that streamed and in other phases between chips
    // (BertResult::part_streaming_cycles).
    uint64_t streaming_cycles, cross_chip_cycles;
  } parts[kMaxParts];
  uint32_t count = 0;
  double clock_hz = 0, compile_seconds = 0, host_seconds = 0;
  uint32_t fullest_tile = 0, fullest_used = 0, fullest_free = 0;
  double flops_per_micro_batch = 0, layer_flops = 0;
  // The whole step (--check): the simulated pipeline, reduce and update.
  uint64_t pipeline_cycles = 0, reduce_cycles = 0, update_cycles = 0;
  char error[1536] = {};
};

struct Settings {
  ipu::hw::MachineConfig machine;
  BertShape shape;
  std::vector<size_t> layers_per_chip;
  unsigned accumulate = 192, tiles = 0;
  bool packing = true;
  std::vector<double> available_memory_proportion = {0.6};  // BertConfig's (one, or one a chip)
  double heads_memory_proportion = 0;                       // BertConfig's (0: the first chip's)
  bool f16_gradient_sums = true;                            // BertConfig's
  // The machine whose runs of the one-chip groups this one's are (its own when empty): a part
  // that stays on one chip takes the same cycles on machines whose configurations differ only
  // in the clock (a Bow POD16's and a POD16's).
  std::string cycles_from;
  std::string plan_choices;  // the children's shared file of matmul plan choices (BertConfig's)
};

// The groups whose parts run on one chip at a time, off-chip nothing.
bool on_one_chip(const std::string& group) {
  return group == "forward passes" || group == "backward passes" || group == "heads";
}

// Whether two machines' configurations differ in nothing but their name and clock: b with a's
// name and clock writes the same parameters as a.
bool same_but_clock(const ipu::hw::MachineConfig& a, ipu::hw::MachineConfig b) {
  b.preset = a.preset;
  b.chip.tile.clock_hz = a.chip.tile.clock_hz;
  std::ostringstream x, y;
  ipu::hw::write_machine_config(x, a);
  ipu::hw::write_machine_config(y, b);
  return x.str() == y.str();
}

// The measurement's configuration: one layer a stage, the target's micro-batches (the host I/O
// and the schedule's copies are the target's), nothing trained.
BertConfig one_layer_stages(const Settings& s) {
  BertConfig c;
  c.machine = s.machine;
  c.tiles = s.tiles;
  c.shape = s.shape;
  c.shape.layers = s.layers_per_chip.size();
  c.layers_per_chip.assign(s.layers_per_chip.size(), 1);
  // Each chip's memory is checked with all its layers: the ones it does not run are held.
  for (const size_t n : s.layers_per_chip) c.held_layers.push_back(n - 1);
  c.accumulate = s.accumulate;
  c.steps = 1;
  c.packing = s.packing;
  c.available_memory_proportion = s.available_memory_proportion;
  c.heads_memory_proportion = s.heads_memory_proportion;
  c.f16_gradient_sums = s.f16_gradient_sums;
  c.dataset_rows = 0;
  c.parts_only = true;
  c.plan_choices = s.plan_choices;
  return c;
}

// The groups, each one executable: a name and its parts.
std::vector<std::pair<std::string, std::vector<std::string>>> groups(unsigned stages,
                                                                     unsigned accumulate,
                                                                     bool replicas) {
  // Stage 0 (with the embeddings) and the last; the stages between are the last's twins.
  std::vector<std::string> forward, backward, copies = {"host_io"};
  for (unsigned k : {0u, stages - 1}) {
    forward.push_back(fmt::format("stage{}.restore", k));
    forward.push_back(fmt::format("stage{}.forward", k));
    backward.push_back(fmt::format("stage{}.backward", k));
  }
  std::vector<std::string> keys;
  for (const PipelineSlot& slot : pipeline_slots(stages, accumulate)) {
    const std::string key = slot_sends(slot);
    if (!key.empty() && std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
  }
  for (const std::string& key : keys) copies.push_back("sends." + key);
  // The update of the parameters outside the layers and of one layer: it runs the parameters
  // one after the other, so the model's is those and every layer's (simulating the whole
  // one-layer model's update, four layers on a POD16, took 380 of a 16-chip child's 774 s under
  // perf).
  std::vector<std::string> update = {"rest.update", "layer.update"};
  if (replicas) update.insert(update.end(), {"rest.reduce", "layer.reduce"});
  return {{"forward passes", forward},
          {"backward passes", backward},
          {"heads", {"heads"}},
          {"copies and host I/O", copies},
          {"update", update}};
}

// A child's work: the group's parts (or, for "whole", the whole step) into `out`.
void run_group(const Settings& s, const std::string& group, GroupFigures& out) {
  const auto start = std::chrono::steady_clock::now();
  BertConfig c = one_layer_stages(s);
  // No per-superstep records: at BERT-Large's size every tile's timeline of a part's tens of
  // thousands of supersteps outgrew this host's memory (children were killed at 13 to 22 GB).
  c.device.keep_records = false;
  if (group == "whole") {
    c.shape = s.shape;
    c.layers_per_chip = s.layers_per_chip;
    c.parts_only = false;
  } else {
    const unsigned S = static_cast<unsigned>(s.layers_per_chip.size());
    const bool replicas = s.machine.chips / S > 1;
    for (const auto& [name, parts] : groups(S, s.accumulate, replicas))
      if (name == group) c.parts = parts;
    if (c.parts.empty()) throw std::invalid_argument("no group '" + group + "'");
    // Every replica runs the pipeline's parts at once and alike: one replica runs them here.
    if (group != "update") c.machine.chips = S;
  }
  const BertResult r = run_bert(c);
  for (const auto& [name, cycles] : r.part_cycles) {
    if (out.count == GroupFigures::kMaxParts) throw std::runtime_error("too many parts");
    GroupFigures::Part& p = out.parts[out.count++];
    std::snprintf(p.name, sizeof p.name, "%s", name.c_str());
    p.cycles = cycles;
    p.host_seconds = r.part_host_seconds.at(name);
    p.streaming_cycles = r.part_streaming_cycles.at(name);
    p.cross_chip_cycles = r.part_cross_chip_cycles.at(name);
  }
  out.clock_hz = r.clock_hz;
  out.compile_seconds = r.compile_seconds;
  out.fullest_tile = r.fullest_tile;
  out.fullest_used = r.fullest_tile_bytes;
  out.fullest_free = r.tile_free_bytes;
  out.flops_per_micro_batch = r.flops_per_micro_batch;
  out.layer_flops = r.stage_flops.empty() ? 0 : r.stage_flops.back();
  if (!r.steps.empty()) {
    out.pipeline_cycles = r.steps[0].pipeline_cycles;
    out.reduce_cycles = r.steps[0].allreduce_cycles;
    out.update_cycles = r.steps[0].update_cycles;
  }
  out.host_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// A child's figures, or why there are none.
struct Outcome {
  bool ran = false;  // the child sent its figures
  std::string why;   // else how it ended
  GroupFigures figures;
  bool alone = false;  // run again alone: the OOM killer stopped it beside another
};

// Runs each (preset, group) child, `parallel` of them at a time (each simulates on every core).
// At BERT-Large's size a one-replica child takes about 7 GB; one that simulates every replica
// (the update, the whole step) takes up to 12 GB on a POD16, so those run first, alone, one at
// a time. A child the kernel killed (SIGKILL) beside another is run again, alone, after the
// others.
std::map<std::pair<std::string, std::string>, Outcome> run_children(
    int argc, char** argv, const std::vector<std::pair<std::string, std::string>>& jobs,
    const std::vector<bool>& alone, unsigned parallel,
    const std::string& plan_choices) {  // plan_choices: a file to add
  const auto args = [&](size_t i) {     // argv's own --plan-choices, if any, goes on as it is
    std::vector<std::string> a = {"--group", jobs[i].second, "--group-preset", jobs[i].first};
    if (!plan_choices.empty()) a.insert(a.end(), {"--plan-choices", plan_choices});
    return a;
  };
  std::vector<Outcome> outcomes(jobs.size());
  std::vector<size_t> shared;
  for (size_t i = 0; i < jobs.size(); ++i)
    if (alone[i])
      outcomes[i].ran =
          ipu::bench::run_child(argc, argv, args(i), outcomes[i].figures, &outcomes[i].why);
    else
      shared.push_back(i);
  std::atomic<size_t> next{0};
  std::vector<std::thread> workers;
  for (unsigned w = 0; w < std::max(1u, parallel); ++w)
    workers.emplace_back([&] {
      for (size_t k; (k = next++) < shared.size();) {
        const size_t i = shared[k];
        outcomes[i].ran =
            ipu::bench::run_child(argc, argv, args(i), outcomes[i].figures, &outcomes[i].why);
      }
    });
  for (std::thread& w : workers) w.join();
  for (size_t i = 0; i < jobs.size() && parallel > 1; ++i) {
    Outcome& o = outcomes[i];
    if (alone[i] || o.ran || o.why.find("SIGKILL") == std::string::npos) continue;
    o = Outcome{};
    o.alone = true;
    o.ran = ipu::bench::run_child(argc, argv, args(i), o.figures, &o.why);
  }
  std::map<std::pair<std::string, std::string>, Outcome> out;
  for (size_t i = 0; i < jobs.size(); ++i) out[jobs[i]] = outcomes[i];
  return out;
}

// Composes one machine's step from its children's figures and prints it. False when a part
// failed or --check found the composition off by more than 5 %.
bool bench_machine(const Settings& s, bool check,
                   const std::map<std::pair<std::string, std::string>, Outcome>& ran) {
  const unsigned S = static_cast<unsigned>(s.layers_per_chip.size());
  const unsigned R = s.machine.chips / S;
  const size_t N = std::accumulate(s.layers_per_chip.begin(), s.layers_per_chip.end(), size_t{0});
  const BertShape& b = s.shape;
  fmt::print("== packed BERT on a virtual {}: a training step composed from its parts ==\n",
             s.machine.preset);
  fmt::print(
      "model        {} layers, hidden {}, {} heads, FFN {}, {} tokens a row, vocabulary {}; {} "
      "rows a micro-batch{}\n",
      N, b.hidden, b.heads, b.ffn, b.seq, b.vocab, b.rows,
      s.packing ? fmt::format(", packed (at most {} sequences a row)", b.max_per_row)
                : std::string(", one sequence a row"));
  fmt::print(
      "schedule     {} replica{} of {} chips, layers {} (the embeddings and heads on the first); "
      "{} micro-batches a step, gradients summed in {}; LAMB's state {}\n",
      R, R == 1 ? "" : "s", S, fmt::join(s.layers_per_chip, ","), s.accumulate,
      s.f16_gradient_sums ? "f16 (as Graphcore's BERT)" : "f32",
      R > 1 && s.machine.gateway.present ? "sharded over the replicas in streaming memory"
                                         : "on the chips");
  std::map<std::string, uint64_t> cycles, streaming_cycles, cross_chip_cycles;
  GroupFigures first;
  bool ok = true;
  fmt::print(
      "parts        simulated at full size on {} one-layer stages, each group an executable of its "
      "own; the pipeline's on one replica, the update on every one; each chip's memory holds its "
      "other layers' weights, gradient sums and kept tensors:\n",
      S);
  for (const auto& [name, parts] : groups(S, s.accumulate, R > 1)) {
    const bool reused = on_one_chip(name) && !s.cycles_from.empty();
    const Outcome& o = ran.at({reused ? s.cycles_from : s.machine.preset, name});
    const GroupFigures& f = o.figures;
    if (!o.ran) {
      fmt::print("  {:<22} FAILED: the child process ended without its figures ({}{})\n", name,
                 o.why, o.alone ? ", run alone after it was killed beside another" : "");
      ok = false;
      continue;
    }
    if (f.error[0] != '\0') {
      fmt::print("  {:<22} FAILED: {}\n", name, f.error);
      ok = false;
      continue;
    }
    if (first.count == 0) first = f;
    for (uint32_t i = 0; i < f.count; ++i) {
      const GroupFigures::Part& p = f.parts[i];
      cycles[p.name] = p.cycles;
      streaming_cycles[p.name] = p.streaming_cycles;
      cross_chip_cycles[p.name] = p.cross_chip_cycles;
    }
    if (reused) {
      fmt::print("  {:<22} {}'s cycles (one chip at a time; only the clock differs)\n", name,
                 s.cycles_from);
      continue;
    }
    fmt::print(
        "  {:<22} {} part{}; fullest tile {} with {} of {} bytes ({:.0f}%); {:.0f} s of host "
        "time, {:.0f} s of it compiling{}\n",
        name, f.count, f.count == 1 ? "" : "s", f.fullest_tile, f.fullest_used, f.fullest_free,
        100.0 * f.fullest_used / std::max<uint32_t>(f.fullest_free, 1), f.host_seconds,
        f.compile_seconds, o.alone ? " (run alone: killed beside another)" : "");
    std::string list, runs;
    double run_seconds = 0;
    for (uint32_t i = 0; i < f.count; ++i) {
      list += fmt::format("{}{} {}", i ? ", " : "", f.parts[i].name, f.parts[i].cycles);
      runs += fmt::format("{}{} {:.0f} s", i ? ", " : "", f.parts[i].name, f.parts[i].host_seconds);
      run_seconds += f.parts[i].host_seconds;
    }
    fmt::print("  {:<22} cycles: {}\n", "", list);
    fmt::print("  {:<22} host time of the runs, {:.0f} s: {}\n", "", run_seconds, runs);
  }
  if (!ok) return false;
  const double hz = s.machine.chip.tile.clock_hz;
  const auto us = [hz](double n) { return n / hz * 1e6; };
  const auto of = [](const std::map<std::string, uint64_t>& figures, const std::string& name) {
    const auto found = figures.find(name);
    return found == figures.end() ? uint64_t{0} : found->second;
  };
  const auto part = [&](const std::string& name) { return of(cycles, name); };
  // A one-layer stage's layer alone: the last stage's forward less its restore; its backward.
  const uint64_t layer_forward =
      part(fmt::format("stage{}.forward", S - 1)) - part(fmt::format("stage{}.restore", S - 1));
  const uint64_t layer_backward = part(fmt::format("stage{}.backward", S - 1));
  PipelineParts p;
  for (unsigned k = 0; k < S; ++k) {
    const uint64_t more = s.layers_per_chip[k] - 1;
    const unsigned measured = k == 0 ? 0 : S - 1;
    p.forward.push_back(part(fmt::format("stage{}.forward", measured)) + more * layer_forward);
    p.backward.push_back(part(fmt::format("stage{}.backward", measured)) + more * layer_backward);
  }
  p.heads = part("heads");
  for (const auto& [name, n] : cycles)
    if (name.rfind("sends.", 0) == 0) p.sends[name.substr(6)] = n;
  p.host_io = part("host_io");
  const PipelineTime t = compose_pipeline(p, S, s.accumulate);
  // The update: the parameters outside the layers, then every layer's.
  const auto update_of = [&](const std::map<std::string, uint64_t>& figures, const char* what) {
    return of(figures, fmt::format("rest.{}", what)) +
           N * of(figures, fmt::format("layer.{}", what));
  };
  const uint64_t reduce = update_of(cycles, "reduce"), update = update_of(cycles, "update");
  // Of the update's cycles, its phases with streaming memory and its others between chips, as
  // the update's runs measured them.
  const uint64_t streaming = update_of(streaming_cycles, "update");
  const uint64_t gather = update_of(cross_chip_cycles, "update");
  const uint64_t step = t.cycles + reduce + update;

  fmt::print("a layer      forward {:.1f} us, backward {:.1f} us (its gradients summed)\n",
             us(layer_forward), us(layer_backward));
  for (unsigned k = 0; k < S; ++k)
    fmt::print("stage {}      {} layer{}{}: forward {:.1f} us, backward {:.1f} us\n", k,
               s.layers_per_chip[k], s.layers_per_chip[k] == 1 ? "" : "s",
               k == 0 ? " and the embeddings" : "", us(p.forward[k]), us(p.backward[k]));
  fmt::print("heads        {:.1f} us a micro-batch (forward and backward, on chip 0)\n",
             us(p.heads));
  fmt::print("\nstep         {:.1f} us; {} pipeline slots\n", us(step), t.slots);
  const auto row = [&](const char* name, uint64_t n, const char* what) {
    fmt::print("  {:<20} {:11.1f} us {:5.1f}%   {}\n", name, us(n), 100.0 * n / step, what);
  };
  row("compute", t.compute, "the chips' mean work: forward, recomputed forward, backward, heads");
  row("bubble", t.bubble, "waiting for the busiest chip: fill and drain, uneven stages");
  row("inter-stage copies", t.sends, "activations and gradients over the IPU-Links");
  row("host I/O", t.host_io, "the micro-batches' inputs in, the losses out");
  if (R > 1) row("reduce-scatter", reduce, "the gradient sums over the replicas");
  if (streaming) row("streaming memory", streaming, "LAMB's masters and moments in and out");
  if (gather)
    row("all-gather", gather, "the new weights from every replica, LAMB's norms over them");
  row("LAMB", update - std::min(update, streaming + gather), "the update of each shard");
  // Sequences a row: the packer's on the same histogram.
  const LengthHistogram lengths = scale_histogram(
      read_histogram(IPU_BERT_DATA_DIR "/wikipedia_512.csv"), static_cast<unsigned>(b.seq));
  RowOptions ro;
  ro.seq = static_cast<unsigned>(b.seq);
  ro.max_per_row = s.packing ? static_cast<unsigned>(b.max_per_row) : 1;
  ro.vocab = static_cast<unsigned>(b.vocab);
  constexpr uint64_t kSample = 20000;
  const Rows rows = make_rows(synthetic_sequences(lengths, kSample, ro.vocab, 7), ro);
  const double per_row = static_cast<double>(kSample) / static_cast<double>(rows.count);
  const double sequences = double{1} * R * s.accumulate * b.rows * per_row;
  const double seconds = static_cast<double>(step) / hz;
  const double flops =
      (first.flops_per_micro_batch + static_cast<double>(N - S) * first.layer_flops) *
      s.accumulate * R;  // the one-layer stages' and the other layers
  const double peak = 128.0 * hz * s.machine.chip.tiles;  // the AMP's f16 flop a chip
  fmt::print(
      "\nthroughput   {:.0f} sequences/s ({:.0f} a step: {} replicas x {} micro-batches x {} rows "
      "x "
      "{:.2f} sequences a row)\n",
      sequences / seconds, sequences, R, s.accumulate, b.rows, per_row);
  fmt::print("arithmetic   {:.2f} TFLOP/s a chip in the products ({:.1f}% of the AMP's peak)\n",
             flops / seconds / s.machine.chips / 1e12,
             100.0 * flops / seconds / s.machine.chips / peak);
  if (check) {
    const Outcome& o = ran.at({s.machine.preset, "whole"});
    const GroupFigures& whole = o.figures;
    if (!o.ran || whole.error[0] != '\0') {
      fmt::print("check        the whole step FAILED: {}\n", o.ran ? whole.error : o.why);
      return false;
    }
    const uint64_t simulated = whole.pipeline_cycles + whole.reduce_cycles + whole.update_cycles;
    const double off = static_cast<double>(step) / simulated - 1.0;
    fmt::print(
        "check        the whole step simulated: {:.1f} us (pipeline {:.1f}, reduce {:.1f}, update "
        "{:.1f}); composed {:+.2f}% off it ({}: within 5%)\n",
        us(simulated), us(whole.pipeline_cycles), us(whole.reduce_cycles), us(whole.update_cycles),
        100.0 * off, std::abs(off) <= 0.05 ? "met" : "NOT MET");
    ok = std::abs(off) <= 0.05;
  }
  double host = 0;
  for (const auto& [key, o] : ran)
    if (key.first == s.machine.preset) host += o.figures.host_seconds;
  fmt::print("host         {:.0f} s in its children\n\n", host);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  std::string presets = "pod16,bow-pod16", model = "large", split, group, group_preset;
  std::string memory = "0.25", heads_memory = "0.3", sums = "f16", plan_choices;
  unsigned accumulate = 192, tiles = 0, parallel = 2;
  size_t layers = 0, hidden = 0, heads = 0, ffn = 0, seq = 0, vocab = 0, rows = 0;
  int figures_fd = -1;
  std::vector<std::string> parameters;
  po::options_description desc(
      "Packed BERT's training step on a machine, composed from its parts simulated at full "
      "size: sequences a second and where the time goes.\nOptions");
  desc.add_options()("help,h", "this help")(
      "preset", po::value(&presets)->default_value(presets),
      "machines, comma-separated (pod16, bow-pod16, m2000, pod64, ...)")(
      "model", po::value(&model)->default_value(model), "large (BERT-Large) or tiny")(
      "layers", po::value(&layers), "encoder layers (the model's unless given)")(
      "hidden", po::value(&hidden), "hidden size")("heads", po::value(&heads), "attention heads")(
      "ffn", po::value(&ffn), "feed-forward size")("seq", po::value(&seq), "tokens a row")(
      "vocab", po::value(&vocab), "vocabulary")(
      "rows", po::value(&rows), "packed rows a micro-batch (2, as Graphcore's MLPerf runs)")(
      "layers-per-chip", po::value(&split),
      "layers on each chip of a replica (large: 3,7,7,7, as Graphcore's MLPerf POD16 runs)")(
      "accumulate", po::value(&accumulate)->default_value(accumulate),
      "micro-batches a step, gradients accumulated (MLPerf POD16: 192)")(
      "tiles", po::value(&tiles)->default_value(0), "tiles of each chip (0: every tile)")(
      "available-memory-proportion", po::value(&memory)->default_value(memory),
      "the share of a tile's memory a product's plan may take (poplar's "
      "availableMemoryProportion): one, or one a chip of a replica (e.g. 0.2,0.3,0.3,0.3; the "
      "first chip's also for the embeddings; 0.25 leaves BERT-Large's stages the least to fit: "
      "its feed-forward products then take N in two slices, one after the other; docs/bert.md)")(
      "heads-memory-proportion", po::value(&heads_memory)->default_value(heads_memory),
      "the heads' products' share: the tied decoder's weight gradient needs more than the "
      "layers beside it")(
      "gradient-sums", po::value(&sums)->default_value(sums),
      "the f16 weights' gradient sums: f16, as Graphcore's BERT keeps them (LAMB's accum_type "
      "float16), or f32")("jobs", po::value(&parallel)->default_value(parallel),
                          "children simulating at once (each one host thread)")(
      "no-packing", "one sequence a row, padded")(
      "plan-choices", po::value(&plan_choices),
      "FILE: the matmul plans' choices, kept between runs (the children share one file, made "
      "and removed by the run when not given; ops::save_plan_choices)")(
      "param", po::value(&parameters)->composing(),
      "NAME=VALUE: a machine parameter (ipu-sim --config-dump lists them), e.g. a faster link "
      "or a larger SRAM")("check",
                          "also simulate the whole step and require the composed one within 5%")(
      "group", po::value(&group), "(internal) a child's group of parts")(
      "group-preset", po::value(&group_preset), "(internal) the child's machine")(
      "figures-fd", po::value(&figures_fd), "(internal) a child's pipe for its figures");
  po::variables_map vm;
  Settings s;
  std::vector<std::string> machines;
  try {
    po::store(po::parse_command_line(argc, argv, desc), vm);
    po::notify(vm);
    if (model == "large")
      s.shape = BertShape::large();
    else if (model != "tiny")
      throw po::error("--model " + model + ": expected large or tiny");
    for (auto [value, field] :
         {std::pair{layers, &s.shape.layers}, std::pair{hidden, &s.shape.hidden},
          std::pair{heads, &s.shape.heads}, std::pair{ffn, &s.shape.ffn},
          std::pair{seq, &s.shape.seq}, std::pair{vocab, &s.shape.vocab},
          std::pair{rows, &s.shape.rows}})
      if (value) *field = value;
    if (split.empty() && model == "large" && !layers) split = "3,7,7,7";
    if (split.empty())
      throw po::error("--layers-per-chip: give the pipeline's split (at least 2 chips)");
    try {
      s.layers_per_chip = parse_layers_per_chip(split);
    } catch (const std::invalid_argument& e) {
      throw po::error(std::string("--layers-per-chip: ") + e.what());
    }
    if (s.layers_per_chip.size() < 2)
      throw po::error("--layers-per-chip " + split +
                      ": the bench composes a pipeline of at least 2 chips");
    const size_t total =
        std::accumulate(s.layers_per_chip.begin(), s.layers_per_chip.end(), size_t{0});
    if (total != s.shape.layers)
      throw po::error(fmt::format("--layers-per-chip {} places {} layers; the model has {}", split,
                                  total, s.shape.layers));
    if (accumulate < 1 || accumulate > 4096)
      throw po::error("--accumulate: from 1 to 4096 micro-batches");
    s.accumulate = accumulate;
    s.tiles = tiles;
    try {
      s.available_memory_proportion = parse_memory_proportions(memory);
      if (!heads_memory.empty())
        s.heads_memory_proportion =
            ipu::sdk::parse_real("--heads-memory-proportion", heads_memory, 0.0, 1.0, true);
    } catch (const std::invalid_argument& e) {
      throw po::error(e.what());
    }
    s.packing = !vm.count("no-packing");
    try {
      s.f16_gradient_sums = parse_gradient_sums(sums);
    } catch (const std::invalid_argument& e) {
      throw po::error(std::string("--gradient-sums: ") + e.what());
    }
    for (size_t at = 0; at <= presets.size();) {
      const size_t comma = std::min(presets.find(',', at), presets.size());
      machines.push_back(presets.substr(at, comma - at));
      at = comma + 1;
    }
  } catch (const po::error& e) {
    std::cerr << "bert_throughput: " << e.what() << "\n";
    return 2;
  }
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return 0;
  }
  try {
    const auto overrides = ipu::bench::param_overrides(parameters);
    const auto configure = [&](const std::string& preset) {
      Settings m = s;
      m.machine = ipu::hw::configure_machine(preset, "", overrides);
      const auto S = static_cast<unsigned>(s.layers_per_chip.size());
      if (m.machine.chips % S != 0)
        throw std::invalid_argument(fmt::format(
            "{} chips a replica on '{}', which has {} chip{}: the replicas must be whole", S,
            preset, m.machine.chips, m.machine.chips == 1 ? "" : "s"));
      return m;
    };
    if (!group.empty()) {  // a child: one group, its figures to the parent
      // For the bench's own test: the first child of the pipeline's groups (which run beside
      // one another) to find no file at $BERT_THROUGHPUT_KILL_ONCE makes it and is killed, as
      // the OOM killer kills.
      if (const char* once = std::getenv("BERT_THROUGHPUT_KILL_ONCE"))
        if (group != "update" && group != "whole" && !std::filesystem::exists(once)) {
          std::ofstream(once) << group << "\n";
          std::raise(SIGKILL);
        }
      GroupFigures f;
      try {
        Settings m = configure(group_preset);
        m.plan_choices = plan_choices;
        run_group(m, group, f);
      } catch (const std::exception& e) {
        // The first line to the parent (what and where), the whole message to stderr.
        const std::string what = e.what();
        std::snprintf(f.error, sizeof f.error, "%s%s", what.substr(0, what.find('\n')).c_str(),
                      what.find('\n') == std::string::npos ? "" : " (the rest on stderr)");
        std::cerr << "bert_throughput: " << group << " on " << group_preset << ": " << what << "\n";
      }
      return ipu::bench::send_figures(figures_fd, f) ? 0 : 1;
    }
    const auto start = std::chrono::steady_clock::now();
    const bool check = vm.count("check") > 0;
    std::vector<Settings> settings;
    std::vector<std::pair<std::string, std::string>> jobs;
    std::vector<bool> alone;  // the children that simulate every replica
    for (const std::string& preset : machines) {
      settings.push_back(configure(preset));
      Settings& m = settings.back();
      for (const Settings& earlier : settings)
        if (&earlier != &m && earlier.cycles_from.empty() &&
            same_but_clock(earlier.machine, m.machine))
          m.cycles_from = earlier.machine.preset;
      if (check) jobs.emplace_back(preset, "whole");
      const unsigned S = static_cast<unsigned>(s.layers_per_chip.size());
      for (const auto& [name, parts] : groups(S, s.accumulate, m.machine.chips / S > 1))
        if (m.cycles_from.empty() || !on_one_chip(name)) jobs.emplace_back(preset, name);
      alone.resize(jobs.size(), false);
      for (size_t i = 0; i < jobs.size(); ++i)
        if (jobs[i].first == preset)
          alone[i] =
              jobs[i].second == "whole" || (jobs[i].second == "update" && m.machine.chips > S);
    }
    // The children plan BERT's products once between them (each builds the whole graph).
    const bool own_choices = plan_choices.empty();
    if (own_choices)
      plan_choices = (std::filesystem::temp_directory_path() /
                      fmt::format("bert_throughput.{}.plans.json", getpid()))
                         .string();
    const auto ran =
        run_children(argc, argv, jobs, alone, parallel, own_choices ? plan_choices : "");
    if (own_choices)
      for (const char* suffix : {"", ".lock"}) std::filesystem::remove(plan_choices + suffix);
    bool ok = true;
    for (const Settings& m : settings) ok &= bench_machine(m, check, ran);
    fmt::print(
        "host         {:.1f} s in all, {} children: {} alone (every replica), the others {} at a "
        "time\n",
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
        jobs.size(), std::count(alone.begin(), alone.end(), true), parallel);
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "bert_throughput: " << e.what() << "\n";
    return 1;
  }
}
