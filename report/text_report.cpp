// The text report ipu-sim prints after a run.
#include "report/text_report.h"

#include <fmt/format.h>
#include <fmt/ostream.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "hw/common/machine_shape.h"

namespace ipu::report {
using namespace hw;  // the run's counts

namespace {

// When tiles exited with different statuses: each status and the tiles that gave it (the
// report's result names the first non-zero one only).
void print_exit_statuses(std::ostream& out, const RunReport& r) {
  std::map<int, std::vector<unsigned>> by_status;
  for (const TileCounts& t : r.per_tile)
    if (t.exited) by_status[t.exit_status].push_back(t.tile);
  if (by_status.size() < 2) return;
  constexpr size_t kNamed = 4;
  std::vector<std::string> parts;
  for (const auto& [status, tiles] : by_status) {
    std::vector<std::string> names;
    for (size_t i = 0; i < std::min(tiles.size(), kNamed); ++i)
      names.push_back(tile_name(tiles[i], r.tiles_per_chip, r.chips));
    parts.push_back(fmt::format("{} on {} tile{} ({}{})", status, tiles.size(),
                                tiles.size() == 1 ? "" : "s", fmt::join(names, ", "),
                                tiles.size() > kNamed ? ", ..." : ""));
  }
  fmt::print(out, "exit statuses        {}\n", fmt::join(parts, "; "));
}

}  // namespace

void print_report(std::ostream& out, const RunReport& r, const EnergyReport& energy) {
  const double seconds = static_cast<double>(r.cycles) / r.clock_hz;
  const double mips =
      r.host_seconds > 0 ? static_cast<double>(r.instructions) / r.host_seconds / 1e6 : 0;
  fmt::print(out, "\n== ipu-sim run summary ==\n");
  switch (r.outcome.result) {
    case ChipOutcome::Result::kExited:
      fmt::print(out, "result               exited with status {}\n", r.outcome.exit_status);
      break;
    case ChipOutcome::Result::kFault:
      fmt::print(out, "result               stopped by a fault\n");
      break;
    case ChipOutcome::Result::kCycleLimit:
      fmt::print(out, "result               stopped at the cycle limit\n");
      break;
    case ChipOutcome::Result::kDeadlock: fmt::print(out, "result               deadlock\n"); break;
  }
  if (r.chips > 1) fmt::print(out, "chips                {}\n", r.chips);
  fmt::print(out, "tiles                {}\n", r.tiles);
  fmt::print(out, "supersteps           {}\n", r.supersteps);
  fmt::print(out, "tile cycles          {}\n", r.cycles);
  fmt::print(out, "simulated time       {:.3f} us at {:.3f} GHz\n", seconds * 1e6,
             r.clock_hz / 1e9);
  fmt::print(out, "exchange             {} words ({} bytes)\n", r.exchange_words,
             4 * r.exchange_words);
  if (r.chips > 1)
    fmt::print(out, "between chips        {} bytes delivered; {} bytes on IPU-Links\n",
               4 * r.inter_chip_words, r.ipulink_bytes);
  if (r.gateways > 0)
    fmt::print(out, "streaming memory     {} bytes written, {} bytes read ({} gateway{})\n",
               r.streaming_bytes_written, r.streaming_bytes_read, r.gateways,
               r.gateways > 1 ? "s" : "");
  if (r.streaming_phase_cycles + r.cross_chip_phase_cycles > 0)
    fmt::print(out,
               "off the chips        {} cycles in phases that streamed, {} in other phases "
               "between chips\n",
               r.streaming_phase_cycles, r.cross_chip_phase_cycles);
  fmt::print(out, "instructions retired {}\n", r.instructions);
  print_energy(out, energy);
  const double tflops = flops_per_second(r) / 1e12;
  fmt::print(out,
             "flops                {} executed: {:.4g} TFLOP/s, {:.3g}% of the AMP's f16 peak; "
             "{:.3g} TFLOP/s per W\n",
             r.flops, tflops, 100e12 * tflops / amp_peak_flops_per_second(r),
             energy.watts() > 0 ? tflops / energy.watts() : 0.0);
  fmt::print(out, "host time            {:.3f} s\n", r.host_seconds);
  fmt::print(out, "simulator speed      {:.1f} MIPS\n", mips);
  if (r.ranks > 1)
    fmt::print(out,
               "MPI ranks            {} (rank 0: its tiles' compute {:.3f} s, the slowest "
               "rank's (rank {}) {:.3f} s; swapping results with the other ranks {} times, "
               "{:.3f} s)\n",
               r.ranks, r.burst_seconds, r.slowest_rank, r.slowest_burst_seconds, r.shares,
               r.share_seconds);
  if (r.memory_hash) fmt::print(out, "memory hash          {:016x}\n", *r.memory_hash);
  print_exit_statuses(out, r);
  print_context_table(out, r.per_tile, r.tiles_per_chip, r.chips);
}

void print_energy(std::ostream& out, const EnergyReport& e) {
  double gateways = 0;
  for (const BlockEnergy& g : e.gateways) gateways += g.joules();
  std::string parts = fmt::format("chips {:.4g} J", e.chip_joules());
  if (!e.gateways.empty()) parts += fmt::format(", gateways {:.4g} J", gateways);
  if (!e.links.lines.empty()) parts += fmt::format(", IPU-Links {:.4g} J", e.links.joules());
  fmt::print(out, "energy               {:.4g} J ({}; docs/energy.md)\n", e.joules, parts);
  fmt::print(out, "power                {:.1f} W per chip, {:.1f} W in all (averages)\n",
             e.watts_per_chip(), e.watts());
}

void print_context_table(std::ostream& out, const std::vector<TileCounts>& tiles,
                         unsigned tiles_per_chip, unsigned chips) {
  if (tiles.empty()) return;
  auto name = [](unsigned context) {
    return context == 0 ? std::string("sup") : fmt::format("w{}", context);
  };
  if (tiles.size() == 1) {
    fmt::print(out, "context  instructions  issue slots  runs  active cycles\n");
    const auto& contexts = tiles[0].contexts;
    for (unsigned i = 0; i < contexts.size(); ++i) {
      const ContextCounts& c = contexts[i];
      if (c.runs == 0) continue;
      fmt::print(out, "{:>7}  {:>12}  {:>11}  {:>4}  {:>13}\n", name(i), c.instructions,
                 c.issue_slots, c.runs, c.active_cycles);
    }
    return;
  }
  if (tiles.size() <= kContextTableTiles) {
    fmt::print(out,
               "tile                 context  instructions  issue slots  runs  active cycles\n");
    for (const TileCounts& t : tiles)
      for (unsigned i = 0; i < t.contexts.size(); ++i) {
        const ContextCounts& c = t.contexts[i];
        if (c.runs == 0) continue;
        fmt::print(out, "{:<20} {:>7}  {:>12}  {:>11}  {:>4}  {:>13}\n",
                   i == 0 ? tile_name(t.tile, tiles_per_chip, chips) : "", name(i), c.instructions,
                   c.issue_slots, c.runs, c.active_cycles);
      }
    return;
  }
  // Many tiles: each context summed over them, and the spread of one tile's active cycles.
  const size_t contexts = tiles[0].contexts.size();
  fmt::print(out, "contexts summed over {} tiles\n", tiles.size());
  fmt::print(out,
             "context  instructions  issue slots     runs  active cycles  active cycles of one "
             "tile: least (tile), most (tile)\n");
  for (size_t i = 0; i < contexts; ++i) {
    ContextCounts sum;
    const TileCounts *least = nullptr, *most = nullptr;
    for (const TileCounts& t : tiles) {
      const ContextCounts& c = t.contexts.at(i);
      sum += c;
      if (least == nullptr || c.active_cycles < least->contexts[i].active_cycles) least = &t;
      if (most == nullptr || c.active_cycles > most->contexts[i].active_cycles) most = &t;
    }
    if (sum.runs == 0) continue;
    fmt::print(out, "{:>7}  {:>12}  {:>11}  {:>7}  {:>13}  {} ({}), {} ({})\n", name(i),
               sum.instructions, sum.issue_slots, sum.runs, sum.active_cycles,
               least->contexts[i].active_cycles, tile_name(least->tile, tiles_per_chip, chips),
               most->contexts[i].active_cycles, tile_name(most->tile, tiles_per_chip, chips));
  }
}

}  // namespace ipu::report
