#include "sdk/runtime/profile.h"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <set>

#include "hw/machine/machine.h"

namespace ipu::sdk {
namespace {

nlohmann::ordered_json totals_json(const iss::RunTotals& t) {
  nlohmann::ordered_json j;
  j["runs"] = t.runs;
  j["cycles"] = t.cycles;
  j["min_cycles"] = t.runs == 0 ? 0 : t.min_cycles;
  j["max_cycles"] = t.max_cycles;
  j["instructions"] = t.instructions;
  j["flops"] = t.flops;
  return j;
}

}  // namespace

Profile make_profile(const Executable& executable, const hw::Machine& machine,
                     const std::function<std::string(uint32_t)>& function_name) {
  Profile p;
  const size_t sets = executable.compute_sets.size();
  p.compute_sets.resize(sets);
  for (unsigned cs = 0; cs < sets; ++cs) {
    p.compute_sets[cs].id = cs;
    p.compute_sets[cs].name = executable.compute_sets[cs];
  }
  std::map<std::string, CodeletProfile> codelets;
  std::map<std::string, std::set<unsigned>> codelet_tiles;
  auto name_of = [&](uint32_t function) {
    std::string name = function_name ? function_name(function) : std::string();
    return name.empty() ? fmt::format("0x{:08x}", function) : name;
  };
  for (unsigned tile : machine.active_tiles()) {
    const iss::WorkerProfile& profile = machine.tile(tile).core().profile();
    std::set<unsigned> sets_here;
    for (const auto& [key, totals] : profile.runs()) {
      const auto site = executable.vertex_sites.find({tile, key.second});
      if (site == executable.vertex_sites.end() || site->second >= sets) {
        p.other_runs += totals;
        continue;
      }
      VertexProfile& v = p.vertices.emplace_back();
      v.tile = tile, v.state = key.second, v.compute_set = site->second;
      v.codelet = name_of(key.first);
      v.runs = totals;
      ComputeSetProfile& cs = p.compute_sets[site->second];
      cs.runs += totals;
      ++cs.vertices;
      if (sets_here.insert(site->second).second) ++cs.tiles;
      CodeletProfile& c = codelets[v.codelet];
      c.runs += totals;
      ++c.vertices;
      codelet_tiles[v.codelet].insert(tile);
    }
    // Executions: each joined batch, by its first run's vertex.
    std::map<unsigned, iss::RunTotals> spans;
    for (const auto& [key, batches] : profile.batches()) {
      const auto site = executable.vertex_sites.find({tile, key.second});
      if (site != executable.vertex_sites.end() && site->second < sets)
        spans[site->second] += batches;
    }
    for (const auto& [id, span] : spans) {
      ComputeSetProfile& cs = p.compute_sets[id];
      cs.tile_cycles += span.cycles;
      if (cs.executions == 0 || span.cycles > cs.cycles)
        cs.busiest_tile = tile, cs.cycles = span.cycles, cs.executions = span.runs;
    }
  }
  std::vector<ComputeSetProfile> ran;
  for (ComputeSetProfile& cs : p.compute_sets)
    if (cs.runs.runs != 0) ran.push_back(std::move(cs));
  p.compute_sets = std::move(ran);
  std::stable_sort(
      p.compute_sets.begin(), p.compute_sets.end(),
      [](const ComputeSetProfile& a, const ComputeSetProfile& b) { return a.cycles > b.cycles; });
  for (auto& [name, c] : codelets) {
    c.codelet = name;
    c.tiles = static_cast<unsigned>(codelet_tiles[name].size());
    p.codelets.push_back(std::move(c));
  }
  std::stable_sort(p.codelets.begin(), p.codelets.end(),
                   [](const CodeletProfile& a, const CodeletProfile& b) {
                     return a.runs.cycles > b.runs.cycles;
                   });
  return p;
}

void print_profile(std::ostream& out, const Profile& p, unsigned tiles_per_chip, unsigned chips,
                   size_t rows) {
  auto mean = [](const iss::RunTotals& t) {
    return t.runs == 0 ? 0.0 : static_cast<double>(t.cycles) / static_cast<double>(t.runs);
  };
  auto least = [](const iss::RunTotals& t) { return t.runs == 0 ? 0 : t.min_cycles; };
  // Compute sets: the busiest tile's cycles over every execution (what the superstep waits
  // for), then every vertex run's cycles summed over the tiles.
  // Flops: what the set's or codelet's runs executed (iss/insn_class.h), and per run cycle.
  auto per_cycle = [](const iss::RunTotals& t) {
    return t.cycles == 0 ? 0.0 : static_cast<double>(t.flops) / static_cast<double>(t.cycles);
  };
  fmt::print(out, "{:<34} {:>10}  {:<16} {:>10} {:>9} {:>6} {:>10} {:>14} {:>14}\n", "compute set",
             "cycles", "busiest tile", "executions", "vertices", "tiles", "runs", "run cycles",
             "flops");
  size_t shown = 0;
  ComputeSetProfile rest;
  for (const ComputeSetProfile& cs : p.compute_sets) {
    if (shown++ < rows)
      fmt::print(out, "  {:<32} {:>10}  {:<16} {:>10} {:>9} {:>6} {:>10} {:>14} {:>14}\n", cs.name,
                 cs.cycles, hw::tile_name(cs.busiest_tile, tiles_per_chip, chips), cs.executions,
                 cs.vertices, cs.tiles, cs.runs.runs, cs.runs.cycles, cs.runs.flops);
    else
      rest.cycles += cs.cycles, rest.vertices += cs.vertices, rest.runs += cs.runs;
  }
  if (shown > rows)
    fmt::print(out, "  {:<32} {:>10}  {:<16} {:>10} {:>9} {:>6} {:>10} {:>14} {:>14}\n",
               fmt::format("({} more)", shown - rows), rest.cycles, "", "", rest.vertices, "",
               rest.runs.runs, rest.runs.cycles, rest.runs.flops);
  fmt::print(out, "{:<34} {:>14} {:>10} {:>10} {:>10} {:>10} {:>9} {:>6} {:>14} {:>8}\n", "codelet",
             "run cycles", "runs", "mean", "min", "max", "vertices", "tiles", "flops", "a cycle");
  shown = 0;
  CodeletProfile other;
  for (const CodeletProfile& c : p.codelets) {
    if (shown++ < rows)
      fmt::print(out,
                 "  {:<32} {:>14} {:>10} {:>10.1f} {:>10} {:>10} {:>9} {:>6} {:>14} {:>8.2f}\n",
                 c.codelet, c.runs.cycles, c.runs.runs, mean(c.runs), least(c.runs),
                 c.runs.max_cycles, c.vertices, c.tiles, c.runs.flops, per_cycle(c.runs));
    else
      other.runs += c.runs, other.vertices += c.vertices;
  }
  if (shown > rows)
    fmt::print(out, "  {:<32} {:>14} {:>10} {:>10.1f} {:>10} {:>10} {:>9} {:>6} {:>14} {:>8.2f}\n",
               fmt::format("({} more)", shown - rows), other.runs.cycles, other.runs.runs,
               mean(other.runs), least(other.runs), other.runs.max_cycles, other.vertices, "",
               other.runs.flops, per_cycle(other.runs));
  if (p.other_runs.runs != 0)
    fmt::print(out,
               "  {:<32} {:>14} {:>10} {:>10.1f} {:>10} {:>10} {:>9} {:>6} {:>14} {:>8.2f}  "
               "(started by no vertex)\n",
               "(other)", p.other_runs.cycles, p.other_runs.runs, mean(p.other_runs),
               least(p.other_runs), p.other_runs.max_cycles, "", "", p.other_runs.flops,
               per_cycle(p.other_runs));
}

std::string profile_json(const Profile& p) {
  nlohmann::ordered_json j;
  j["compute_sets"] = nlohmann::ordered_json::array();
  for (const ComputeSetProfile& cs : p.compute_sets) {
    nlohmann::ordered_json c;
    c["name"] = cs.name;
    c["id"] = cs.id;
    c["cycles"] = cs.cycles;
    c["busiest_tile"] = cs.busiest_tile;
    c["executions"] = cs.executions;
    c["tile_cycles"] = cs.tile_cycles;
    c["vertices"] = cs.vertices;
    c["tiles"] = cs.tiles;
    c["vertex_runs"] = totals_json(cs.runs);
    j["compute_sets"].push_back(std::move(c));
  }
  j["codelets"] = nlohmann::ordered_json::array();
  for (const CodeletProfile& c : p.codelets) {
    nlohmann::ordered_json o;
    o["codelet"] = c.codelet;
    o["vertices"] = c.vertices;
    o["tiles"] = c.tiles;
    o.update(totals_json(c.runs));
    j["codelets"].push_back(std::move(o));
  }
  j["vertices"] = nlohmann::ordered_json::array();
  for (const VertexProfile& v : p.vertices) {
    nlohmann::ordered_json o;
    o["tile"] = v.tile;
    o["state"] = fmt::format("0x{:08x}", v.state);
    o["compute_set"] = v.compute_set;
    o["codelet"] = v.codelet;
    o.update(totals_json(v.runs));
    j["vertices"].push_back(std::move(o));
  }
  j["other_worker_runs"] = totals_json(p.other_runs);
  return j.dump();
}

}  // namespace ipu::sdk
