// Statistics and traces of a finished run, as JSON (docs/chip.md and docs/machine.md have the
// schema).
#include "report/run_statistics.h"

#include <fmt/format.h>
#include <fmt/ostream.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>

#include "hw/energy/tile_prices.h"

namespace ipu::report {
using namespace hw;  // the machine this file reads
namespace {

// JSON text of `j`, and `text` as a quoted JSON string: bytes that are not UTF-8 (a symbol's
// name, a console line) become U+FFFD rather than an exception that would cut the file short.
template <typename Json>
std::string json_text(const Json& j) {
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}
std::string json_string(const std::string& text) { return json_text(nlohmann::json(text)); }

// TileSegment::Kind for people.
const char* const kSegmentKinds[] = {"compute", "sync", "exchange"};

// A labelled superstep's "program", "step" and "compute" members, after a comma; nothing for
// an unlabelled one.
std::string label_json(const SuperstepLabel& label) {
  if (label.step.empty()) return {};
  std::vector<std::string> compute;
  for (const std::string& name : label.compute) compute.push_back(json_string(name));
  return fmt::format(",\n     \"program\": {}, \"step\": {}, \"compute\": [{}]",
                     json_string(label.program), json_string(label.step), fmt::join(compute, ", "));
}

struct Summary {
  uint64_t min = 0, max = 0, total = 0;
  unsigned min_tile = 0, max_tile = 0, count = 0;
  void add(unsigned tile, uint64_t v) {
    if (count == 0 || v < min) min = v, min_tile = tile;
    if (count == 0 || v > max) max = v, max_tile = tile;
    total += v;
    ++count;
  }
  std::string json() const {
    const double mean = count ? static_cast<double>(total) / count : 0.0;
    return fmt::format(
        R"({{"min": {}, "mean": {:.1f}, "max": {}, "total": {}, "min_tile": {}, "max_tile": {}}})",
        min, mean, max, total, min_tile, max_tile);
  }
};

// The compute segment of `tile` before its arrival at a barrier (the last one ending by then:
// a tile waiting for its streaming-memory transfers arrives after its compute ended).
uint64_t compute_before(const Tile& tile, uint64_t arrival) {
  uint64_t cycles = 0;
  for (const TileSegment& s : tile.timeline()) {
    if (s.end > arrival) break;
    if (s.kind == TileSegment::kCompute) cycles = s.end - s.begin;
    if (s.kind == TileSegment::kSync) cycles = 0;  // an earlier barrier's
  }
  return cycles;
}

}  // namespace

std::string config_json(const MachineConfig& machine) {
  nlohmann::ordered_json config;
  config["preset"] = machine.preset;
  visit_parameters(machine, [&config](const base::Parameter& p, const auto& member) {
    config[p.name] = member;
  });
  return json_text(config);
}

std::string contexts_json(const std::vector<TileCounts>& tiles) {
  nlohmann::ordered_json all = nlohmann::ordered_json::array();
  const size_t contexts = tiles.empty() ? 0 : tiles[0].contexts.size();
  for (size_t i = 0; i < contexts; ++i) {
    ContextCounts sum;
    for (const TileCounts& t : tiles) sum += t.contexts.at(i);
    nlohmann::ordered_json c;
    c["context"] = i == 0 ? std::string("supervisor") : fmt::format("worker {}", i);
    c["instructions"] = sum.instructions;
    c["issue_slots"] = sum.issue_slots;
    c["runs"] = sum.runs;
    c["active_cycles"] = sum.active_cycles;
    all.push_back(c);
  }
  return json_text(all);
}

std::vector<WorkerFunction> worker_functions(const Machine& machine,
                                             const iss::Core::PcLocator& function_name) {
  std::map<uint32_t, WorkerFunction> by_address;
  for (unsigned id : machine.active_tiles()) {
    uint32_t last = 0;
    bool any = false;
    for (const auto& [key, totals] : machine.tile(id).core().profile().runs()) {
      WorkerFunction& f = by_address[key.first];
      f.totals += totals;
      if (!any || key.first != last) ++f.tiles;  // keys are sorted by function
      last = key.first, any = true;
    }
  }
  std::vector<WorkerFunction> all;
  for (auto& [address, f] : by_address) {
    f.function = address;
    f.name = function_name ? function_name(address) : std::string();
    if (f.name.empty()) f.name = fmt::format("0x{:08x}", address);
    all.push_back(std::move(f));
  }
  std::stable_sort(all.begin(), all.end(), [](const WorkerFunction& a, const WorkerFunction& b) {
    return a.totals.cycles > b.totals.cycles;
  });
  return all;
}

namespace {

bool profiled(const Machine& machine) {
  const auto& active = machine.active_tiles();
  return !active.empty() && machine.tile(active.front()).core().profile().enabled();
}

std::string worker_functions_json(const Machine& machine,
                                  const iss::Core::PcLocator& function_name) {
  nlohmann::ordered_json all = nlohmann::ordered_json::array();
  for (const WorkerFunction& f : worker_functions(machine, function_name)) {
    nlohmann::ordered_json j;
    j["function"] = f.name;
    j["address"] = fmt::format("0x{:08x}", f.function);
    j["tiles"] = f.tiles;
    j["runs"] = f.totals.runs;
    j["cycles"] = f.totals.cycles;
    j["min_cycles"] = f.totals.min_cycles;
    j["max_cycles"] = f.totals.max_cycles;
    j["instructions"] = f.totals.instructions;
    j["flops"] = f.totals.flops;
    all.push_back(std::move(j));
  }
  return json_text(all);
}

// Column by column (a POD64 has 94,208 tiles): tiles[i] has code[i], data[i], stacks[i] and
// free[i] bytes.
std::string tile_memory_json(const std::vector<TileMemory>& tiles, uint32_t sram_bytes,
                             uint32_t stack_bytes) {
  nlohmann::ordered_json j;
  j["sram_bytes"] = sram_bytes;
  j["stack_bytes"] = stack_bytes;
  std::vector<uint32_t> columns[5];
  for (const TileMemory& m : tiles) {
    columns[0].push_back(m.tile);
    columns[1].push_back(m.code);
    columns[2].push_back(m.data);
    columns[3].push_back(m.stacks);
    columns[4].push_back(m.free);
  }
  const char* const kNames[] = {"tiles", "code", "data", "stacks", "free"};
  for (int i = 0; i < 5; ++i) j[kNames[i]] = std::move(columns[i]);
  return json_text(j);
}

}  // namespace

namespace {

nlohmann::ordered_json energy_object(const EnergyReport& energy) {
  auto block = [](const BlockEnergy& b) {
    nlohmann::ordered_json j;
    j["block"] = b.block;
    j["dynamic_joules"] = b.dynamic_joules;
    j["static_joules"] = b.static_joules;
    j["joules"] = b.joules();
    nlohmann::ordered_json lines = nlohmann::ordered_json::array();
    for (const EnergyLine& l : b.lines)
      lines.push_back(
          {{"action", l.action}, {"unit", l.unit}, {"count", l.count}, {"joules", l.joules}});
    j["actions"] = lines;
    return j;
  };
  nlohmann::ordered_json j;
  j["seconds"] = energy.seconds;
  j["joules"] = energy.joules;
  j["watts"] = energy.watts();
  j["watts_per_chip"] = energy.watts_per_chip();
  j["chips"] = nlohmann::ordered_json::array();
  for (const BlockEnergy& b : energy.chips) j["chips"].push_back(block(b));
  j["gateways"] = nlohmann::ordered_json::array();
  for (const BlockEnergy& b : energy.gateways) j["gateways"].push_back(block(b));
  j["ipulinks"] = block(energy.links);
  return j;
}

// Each released barrier's superstep priced (hw/energy/energy.h, SuperstepActions), in the sync
// network's order: its tiles' instructions since their previous arrival (the dynamic energy of
// the compute segment that ends at each arrival, less the previous one's), its exchange, its
// barrier, and its chips' static power from the end of its sync group's previous superstep to
// the end of its exchange.
std::vector<SuperstepEnergy> superstep_energies(
    const Machine& machine, const std::map<uint64_t, const ExchangeRecord*>& exchanges) {
  const MachineConfig& config = machine.config();
  const unsigned per_chip = config.chip.tiles;
  // Each tile's dynamic energy at each of its arrivals: a compute segment followed by a sync.
  std::map<unsigned, std::vector<double>> arrivals_pj;
  for (unsigned t : machine.active_tiles()) {
    const std::vector<TileSegment>& line = machine.tile(t).timeline();
    std::vector<double>& pj = arrivals_pj[t];
    for (size_t i = 0; i + 1 < line.size(); ++i)
      if (line[i].kind == TileSegment::kCompute && line[i + 1].kind == TileSegment::kSync)
        pj.push_back(line[i].dynamic_pj);
  }
  std::map<unsigned, size_t> arrived;                      // tile -> its arrivals counted so far
  std::map<std::pair<unsigned, int>, uint64_t> group_end;  // (group, chip) -> its last end
  std::vector<SuperstepEnergy> energies;
  for (const BarrierRecord& b : machine.sync_network().barriers()) {
    SuperstepActions step;
    std::vector<bool> taking_part(machine.chips());
    for (unsigned t : b.tiles) {
      const std::vector<double>& pj = arrivals_pj[t];
      const size_t k = arrived[t]++;
      if (k < pj.size()) step.tile_pj += pj[k] - (k > 0 ? pj[k - 1] : 0.0);
      taking_part.at(t / per_chip) = true;
    }
    const auto e = exchanges.find(b.phase);
    step.exchange_bytes = e == exchanges.end() ? 0 : 4 * e->second->words;
    step.exchange_column_bytes = e == exchanges.end() ? 0 : 4 * e->second->column_words;
    const uint64_t end = e == exchanges.end() ? b.release : std::max(b.release, e->second->end);
    const unsigned chips_taking_part =
        static_cast<unsigned>(std::count(taking_part.begin(), taking_part.end(), true));
    if (b.chip >= 0)
      step.arrivals = b.tiles.size();
    else
      step.external_chips = chips_taking_part;
    step.chips = b.chip >= 0 ? 1 : chips_taking_part;
    uint64_t& begin = group_end[{b.group, b.chip}];
    step.seconds = static_cast<double>(end - std::min(begin, end)) / config.chip.tile.clock_hz;
    begin = end;
    energies.push_back(price_superstep(config, step));
  }
  return energies;
}

}  // namespace

std::string energy_json(const EnergyReport& energy) { return json_text(energy_object(energy)); }

void write_stats_json(std::ostream& out, const Machine& machine, const StatsSource& source) {
  const ChipConfig& c = machine.config().chip;
  std::map<uint64_t, const ExchangeRecord*> exchanges;
  for (const ExchangeRecord& e : machine.exchange().records()) exchanges[e.phase] = &e;

  // What ran and on what: enough to tell two runs of a sweep apart and to repeat either.
  nlohmann::ordered_json image;
  image["file"] = source.image;
  image["checksum"] =
      source.image_checksum ? fmt::format("0x{:08x}", *source.image_checksum) : std::string();
  const RunReport r = count_run(machine);
  nlohmann::ordered_json summary;
  summary["cycles"] = r.cycles;
  summary["seconds"] = static_cast<double>(r.cycles) / r.clock_hz;
  summary["instructions"] = r.instructions;
  summary["flops"] = r.flops;
  summary["tflops"] = flops_per_second(r) / 1e12;
  summary["amp_peak_fraction"] = flops_per_second(r) / amp_peak_flops_per_second(r);
  summary["supersteps"] = r.supersteps;
  summary["exchange_bytes"] = 4 * r.exchange_words;
  summary["inter_chip_bytes"] = 4 * r.inter_chip_words;
  summary["ipulink_bytes"] = r.ipulink_bytes;
  summary["streaming_bytes_written"] = r.streaming_bytes_written;
  summary["streaming_bytes_read"] = r.streaming_bytes_read;
  // The time during which a phase that streamed, or another phase between chips, was under way
  // (the chips' concurrent phases merged, not added).
  summary["streaming_phase_cycles"] = r.streaming_phase_cycles;
  summary["cross_chip_phase_cycles"] = r.cross_chip_phase_cycles;
  const EnergyReport energy = price_energy(machine.config(), r);
  summary["energy_joules"] = energy.joules;
  summary["watts"] = energy.watts();
  summary["watts_per_chip"] = energy.watts_per_chip();
  if (source.outcome) {
    summary["result"] = hw::outcome_name(source.outcome->result);
    summary["exit_status"] = source.outcome->exit_status;
    summary["message"] = source.outcome->message;
  }
  fmt::print(out,
             "{{\n  \"config\": {},\n  \"image\": {},\n  \"summary\": {},\n  \"contexts\": {},\n",
             config_json(machine.config()), json_text(image), json_text(summary),
             contexts_json(r.per_tile));
  // The energy, with each superstep's (peak and mean power) and each tile's dynamic energy.
  const std::vector<SuperstepEnergy> step_energy = superstep_energies(machine, exchanges);
  nlohmann::ordered_json energy_block = energy_object(energy);
  {
    double joules = 0, seconds = 0, peak = 0;
    size_t peak_index = 0;
    for (size_t i = 0; i < step_energy.size(); ++i) {
      joules += step_energy[i].joules(), seconds += step_energy[i].seconds;
      if (step_energy[i].watts() > peak) peak = step_energy[i].watts(), peak_index = i;
    }
    energy_block["supersteps"] = {{"count", step_energy.size()},
                                  {"joules", joules},
                                  {"mean_watts", seconds > 0 ? joules / seconds : 0.0},
                                  {"peak_watts", peak},
                                  {"peak_superstep", peak_index}};
    const TilePrices prices = tile_prices(machine.config().energy);
    nlohmann::ordered_json tiles = nlohmann::ordered_json::array(),
                           joules_of = nlohmann::ordered_json::array();
    for (unsigned t : machine.active_tiles()) {
      tiles.push_back(t);
      joules_of.push_back(prices.pj(machine.tile(t).core().actions()) * 1e-12);
    }
    energy_block["tiles"] = {{"tiles", tiles}, {"dynamic_joules", joules_of}};
  }
  fmt::print(out, "  \"energy\": {},\n", json_text(energy_block));
  if (profiled(machine))
    fmt::print(out, "  \"worker_functions\": {},\n",
               worker_functions_json(machine, source.function_name));

  fmt::print(out,
             "  \"chip\": {{\"preset\": \"{}\", \"tiles\": {}, \"active_tiles\": {}, "
             "\"clock_hz\": {}}},\n",
             c.preset, c.tiles, machine.active_tiles().size(), c.tile.clock_hz);
  if (source.program != nullptr)
    fmt::print(out, "  \"tile_memory\": {},\n",
               tile_memory_json(tile_memory(*source.program, c.tile.sram_bytes), c.tile.sram_bytes,
                                source.program->stack_bytes));
  fmt::print(out, "  \"machine\": {{\"chips\": {}, \"ipulinks\": [", machine.chips());
  bool first = true;
  for (const auto& link : machine.links().links()) {
    for (unsigned d = 0; d < 2; ++d) {
      const IpuLink::Counters& n = link->counters(d);
      if (n.words == 0) continue;
      const IpuLink::End &from = link->end(d), to = link->end(1 - d);
      fmt::print(out,
                 "{}\n    {{\"from_chip\": {}, \"from_port\": {}, \"to_chip\": {}, "
                 "\"to_port\": {}, \"bytes\": {}, \"busy_cycles\": {:.1f}}}",
                 first ? "" : ",", from.chip, from.port, to.chip, to.port, n.bytes, n.busy_cycles);
      first = false;
    }
  }
  fmt::print(out, "],\n    \"gateways\": [");
  auto counters = [](const TransferCounters& n) {
    return fmt::format(
        R"({{"bytes": {}, "transfers": {}, "busy_cycles": {:.1f}, "first_cycle": {}, )"
        R"("last_cycle": {}}})",
        n.bytes, n.transfers, n.busy_cycles, n.first_cycle, n.last_cycle);
  };
  for (const auto& g : machine.gateways().all()) {
    fmt::print(out,
               R"({}
      {{"index": {}, "first_chip": {}, "chips": {}, "memory_bytes": {}, "resident_bytes": {}, )"
               R"("bytes_written": {}, "bytes_read": {},
       "chip_links": [)",
               g->index() ? "," : "", g->index(), g->first_chip(), g->chips(), g->memory().size(),
               g->memory().resident_bytes(), g->bytes_written(), g->bytes_read());
    for (unsigned k = 0; k < g->chips(); ++k)
      fmt::print(out, R"({}
        {{"chip": {}, "to_gateway": {}, "to_chip": {}}})",
                 k ? "," : "", g->first_chip() + k, counters(g->chip_link(k, true)),
                 counters(g->chip_link(k, false)));
    fmt::print(out, R"(],
       "dimms": [)");
    for (unsigned d = 0; d < g->config().dimms; ++d)
      fmt::print(out, "{}\n        {}", d ? "," : "", counters(g->dimm(d)));
    fmt::print(out, R"(],
       "host_ports": [)");
    for (unsigned p = 0; p < g->config().host_ports; ++p)
      fmt::print(out, R"({}
        {{"to_gateway": {}, "to_host": {}}})",
                 p ? "," : "", counters(g->host_port(p, true)), counters(g->host_port(p, false)));
    fmt::print(out, "]}}");
  }
  fmt::print(out, "]}},\n");
  fmt::print(out, "  \"cycles\": {},\n  \"instructions\": {},\n  \"supersteps\": [",
             machine.cycles(), machine.instructions_retired());
  const auto& barriers = machine.sync_network().barriers();
  for (size_t i = 0; i < barriers.size(); ++i) {
    const BarrierRecord& b = barriers[i];
    Summary compute, wait;
    for (size_t m = 0; m < b.tiles.size(); ++m) {
      compute.add(b.tiles[m], compute_before(machine.tile(b.tiles[m]), b.arrivals[m]));
      wait.add(b.tiles[m], b.release - b.arrivals[m]);
    }
    const auto e = exchanges.find(b.phase);
    const uint64_t words = e == exchanges.end() ? 0 : e->second->words;
    const uint64_t chip_words = e == exchanges.end() ? 0 : e->second->chip_words;
    const uint64_t end = e == exchanges.end() ? b.release : e->second->end;
    const uint64_t last = e == exchanges.end() ? 0 : e->second->last_arrival;
    const ExchangeRecord none;
    const ExchangeRecord& x = e == exchanges.end() ? none : *e->second;
    fmt::print(
        out,
        "{}\n    {{\"index\": {}, \"phase\": {}, \"group\": {}, \"sync\": \"{}\", \"chip\": {}, "
        "\"tiles\": {}, \"release_cycle\": {},\n"
        "     \"compute_cycles\": {},\n     \"sync_wait_cycles\": {},\n"
        "     \"exchange\": {{\"words\": {}, \"bytes\": {}, \"inter_chip_bytes\": {}, "
        "\"column_bytes\": {}, "
        "\"cycles\": {}, \"last_arrival_cycle\": {}}},\n"
        "     \"streaming\": {{\"bytes_written\": {}, \"bytes_read\": {}, "
        "\"done_cycle\": {}}},\n"
        "     \"energy\": {{\"joules\": {}, \"seconds\": {}, \"watts\": {}}}{}}}",
        i ? "," : "", i, b.phase, b.group, SyncNetwork::kind(b.group), b.chip, b.tiles.size(),
        b.release, compute.json(), wait.json(), words, 4 * words, 4 * chip_words,
        4 * x.column_words, end - b.release, last, x.streaming_bytes_written,
        x.streaming_bytes_read, x.streaming_done, step_energy[i].joules(), step_energy[i].seconds,
        step_energy[i].watts(),
        i < source.labels.size() ? label_json(source.labels[i]) : std::string());
  }
  fmt::print(out, "\n  ]\n}}\n");
}

void write_trace_json(std::ostream& out, const Machine& machine, const TraceOptions& options) {
  // Times in whole picoseconds, printed as microseconds (the format's unit): a slice runs from
  // its begin's rounded time to its end's, so adjacent slices meet exactly and never overlap.
  const double clock_hz = machine.config().chip.tile.clock_hz;
  auto ps = [clock_hz](uint64_t cycle) {
    return static_cast<uint64_t>(std::llround(static_cast<double>(cycle) * 1e12 / clock_hz));
  };
  auto us = [](uint64_t picoseconds) {
    return fmt::format("{}.{:06}", picoseconds / 1000000, picoseconds % 1000000);
  };
  auto span = [&](uint64_t begin, uint64_t end) {
    return fmt::format(R"("ts": {}, "dur": {})", us(ps(begin)), us(ps(end) - ps(begin)));
  };
  const unsigned per_chip = machine.config().chip.tiles;
  const unsigned tiles_per_track = std::max(options.tiles_per_track, 1u);
  // With worker lanes, track t's tile lane is tid t * (workers + 1) and its worker w's lane the
  // tid w after it.
  const bool lanes = options.worker_lanes && profiled(machine);
  const unsigned workers = machine.config().chip.tile.worker_contexts;
  const unsigned stride = lanes ? workers + 1 : 1;
  auto lane_of = [&](unsigned machine_tile) {
    return machine_tile % per_chip / tiles_per_track * stride;
  };
  // A function's name comes from the image's symbols: untrusted, so written as a JSON string
  // (quotes and control bytes escaped, bytes that are not UTF-8 replaced), never pasted raw.
  auto function_name = [&](uint32_t address) {
    std::string name = options.function_name ? options.function_name(address) : std::string();
    return json_string(name.empty() ? fmt::format("0x{:08x}", address) : name);
  };
  // A labelled superstep's slices are named for its program step: the compute slice for the
  // compute sets it ran, the exchange slice for the step whose sync it is.
  std::map<uint64_t, const SuperstepLabel*> label_of_phase;
  const auto& barriers = machine.sync_network().barriers();
  for (size_t i = 0; i < barriers.size() && i < options.labels.size(); ++i)
    if (!options.labels[i].step.empty()) label_of_phase[barriers[i].phase] = &options.labels[i];
  // `phase`: the superstep's (a compute segment's is that of the sync after it).
  auto slice_name = [&](const TileSegment& s,
                        uint64_t phase) -> std::pair<std::string, std::string> {
    const std::string kind = kSegmentKinds[s.kind];
    const auto l = label_of_phase.find(phase);
    if (l == label_of_phase.end()) return {json_string(kind), ""};
    const SuperstepLabel& label = *l->second;
    std::string name = kind;
    if (s.kind == TileSegment::kExchange) name = label.step;
    if (s.kind == TileSegment::kCompute && !label.compute.empty())
      name = fmt::format("{}", fmt::join(label.compute, ", "));
    return {json_string(name), fmt::format(R"(, "program": {}, "step": {})",
                                           json_string(label.program), json_string(label.step))};
  };
  uint64_t runs_dropped = 0;
  fmt::print(out, "{{\"displayTimeUnit\": \"ns\", \"traceEvents\": [\n");
  bool first = true;
  auto event = [&](const std::string& text) {
    fmt::print(out, "{}{}", first ? "  " : ",\n  ", text);
    first = false;
  };
  int named_chip = -1;
  for (unsigned machine_tile : machine.active_tiles()) {
    const unsigned chip = machine_tile / per_chip, id = machine_tile % per_chip;
    const bool first_of_chip = static_cast<int>(chip) != named_chip;
    if (first_of_chip) {  // a process (track group) per chip
      named_chip = static_cast<int>(chip);
      event(fmt::format(
          R"({{"name": "process_name", "ph": "M", "pid": {}, "args": {{"name": "{}"}}}})", chip,
          machine.chips() > 1 ? fmt::format("IPU {}", chip) : std::string("IPU")));
    }
    if (id % tiles_per_track != 0 && !first_of_chip) continue;  // a group's first tile
    const unsigned track = id / tiles_per_track;
    const std::string label =
        tiles_per_track == 1 ? fmt::format("tile {}", id)
                             : fmt::format("tiles {}-{} (tile {} shown)", track * tiles_per_track,
                                           (track + 1) * tiles_per_track - 1, id);
    const unsigned lane = lane_of(machine_tile);
    for (unsigned w = 0; w < stride; ++w) {
      event(fmt::format(
          R"({{"name": "thread_name", "ph": "M", "pid": {}, "tid": {}, "args": {{"name": "{}"}}}})",
          chip, lane + w, w == 0 ? label : fmt::format("tile {} worker {}", id, w)));
      event(fmt::format(
          R"({{"name": "thread_sort_index", "ph": "M", "pid": {}, "tid": {}, "args": {{"sort_index": {}}}}})",
          chip, lane + w, lane + w));
    }
    const Tile& tile = machine.tile(machine_tile);
    const auto& timeline = tile.timeline();
    for (size_t i = 0; i < timeline.size(); ++i) {
      const TileSegment& s = timeline[i];
      if (s.end <= s.begin) continue;
      // A compute segment belongs to the superstep of the tile's next sync (none after the last).
      uint64_t phase = s.phase;
      if (s.kind == TileSegment::kCompute) {
        size_t next = i + 1;
        while (next < timeline.size() && timeline[next].kind != TileSegment::kSync) ++next;
        phase = next < timeline.size() ? timeline[next].phase : ~uint64_t{0};
      }
      const auto [name, label_args] = slice_name(s, phase);
      event(fmt::format(R"({{"name": {}, "cat": "bsp", "ph": "X", "pid": {}, "tid": {}, {}, )"
                        R"("args": {{"kind": "{}", "tile": {}, "phase": {}, "cycles": {}, )"
                        R"("first_cycle": {}{}}}}})",
                        name, chip, lane, span(s.begin, s.end), kSegmentKinds[s.kind], id, s.phase,
                        s.end - s.begin, s.begin, label_args));
    }
    if (!lanes) continue;
    // A worker's runs never overlap (it starts again only after its exit), so its lane's
    // slices do not either.
    auto run_event = [&](const iss::WorkerRun& r, bool finished) {
      event(fmt::format(
          R"({{"name": {}, "cat": "worker", "ph": "X", "pid": {}, "tid": {}, {}, )"
          R"("args": {{"tile": {}, "worker": {}, "function": "0x{:08x}", "argument": "0x{:08x}", )"
          R"("cycles": {}, "instructions": {}, "flops": {}, "first_cycle": {}, "finished": {}}}}})",
          function_name(r.function), chip, lane + r.worker, span(r.start, r.end), id, r.worker,
          r.function, r.argument, r.end - r.start, r.instructions, r.flops, r.start, finished));
    };
    const iss::WorkerProfile& profile = tile.core().profile();
    for (const iss::WorkerRun& r : profile.log()) run_event(r, true);
    runs_dropped += profile.dropped();
    if (profile.dropped() == 0)
      for (unsigned w = 1; w <= workers; ++w)
        if (const auto open = tile.core().open_run(w)) run_event(*open, false);
  }
  if (runs_dropped != 0)
    event(fmt::format(
        R"({{"name": "worker runs not shown", "ph": "i", "s": "g", "pid": 0, "tid": 0, "ts": 0, )"
        R"("args": {{"dropped": {}}}}})",
        runs_dropped));
  // Exchange flows (when the run recorded them): an arrow from the sending tile's track at the
  // send to the receiving tile's at the first word's arrival; the words and the last arrival
  // are in its arguments.
  uint64_t flow_id = 0;
  for (const ExchangeFlow& f : machine.exchange().flows()) {
    const unsigned from_chip = f.from / per_chip, to_chip = f.to / per_chip;
    const std::string args = fmt::format(
        R"("args": {{"from": "{}", "to": "{}", "phase": {}, "words": {}, "last_arrival_cycle": {}}})",
        machine.tile_name(f.from), machine.tile_name(f.to), f.phase, f.words, f.last_arrival);
    event(fmt::format(
        R"({{"name": "send", "cat": "exchange", "ph": "s", "id": {}, "pid": {}, "tid": {}, "ts": {}, {}}})",
        flow_id, from_chip, lane_of(f.from), us(ps(f.sent)), args));
    event(fmt::format(
        R"({{"name": "send", "cat": "exchange", "ph": "f", "bp": "e", "id": {}, "pid": {}, "tid": {}, "ts": {}, {}}})",
        flow_id, to_chip, lane_of(f.to), us(ps(f.first_arrival)), args));
    ++flow_id;
  }
  if (machine.exchange().flows_dropped() != 0)
    event(fmt::format(
        R"({{"name": "exchange flows not shown", "ph": "i", "s": "g", "pid": 0, "tid": 0, "ts": 0, )"
        R"("args": {{"dropped": {}, "shown": {}}}}})",
        machine.exchange().flows_dropped(), machine.exchange().flows().size()));
  // Traffic between chips and to streaming memory: a "Machine" process after the chips', with
  // a span per exchange phase that used IPU-Links (release to last arrival) or streaming memory
  // (release to its last transfer's completion).
  if (machine.chips() > 1 || machine.gateways().present()) {
    const unsigned pid = machine.chips();
    event(fmt::format(
        R"({{"name": "process_name", "ph": "M", "pid": {}, "args": {{"name": "Machine"}}}})", pid));
    const char* const tracks[] = {"IPU-Links", "streaming memory"};
    for (unsigned tid = 0; tid < 2; ++tid)
      event(fmt::format(
          R"({{"name": "thread_name", "ph": "M", "pid": {}, "tid": {}, "args": {{"name": "{}"}}}})",
          pid, tid, tracks[tid]));
    for (const ExchangeRecord& e : machine.exchange().records()) {
      if (e.chip_words != 0)
        event(fmt::format(
            R"({{"name": "inter-chip exchange", "cat": "ipulink", "ph": "X", "pid": {}, )"
            R"("tid": 0, {}, "args": {{"phase": {}, "bytes": {}}}}})",
            pid, span(e.release, e.last_arrival), e.phase, 4 * e.chip_words));
      if (e.streaming_done != 0)
        event(fmt::format(
            R"({{"name": "streaming memory", "cat": "gateway", "ph": "X", "pid": {}, "tid": 1, )"
            R"({}, "args": {{"phase": {}, "bytes_written": {}, "bytes_read": {}}}}})",
            pid, span(e.release, e.streaming_done), e.phase, e.streaming_bytes_written,
            e.streaming_bytes_read));
    }
  }
  fmt::print(out, "\n]}}\n");
}

}  // namespace ipu::report
