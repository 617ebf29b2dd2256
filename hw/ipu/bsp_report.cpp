// BSP statistics and traces of a finished chip run (docs/chip.md has the JSON schema).
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <map>
#include <ostream>

#include "ipu.h"

namespace ipu::hw {
namespace {

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

// The compute segment of `tile` that ends at `arrival` (its compute before that barrier).
uint64_t compute_before(const Tile& tile, uint64_t arrival) {
  for (const TileSegment& s : tile.timeline())
    if (s.kind == TileSegment::kCompute && s.end == arrival) return s.end - s.begin;
  return 0;
}

}  // namespace

void write_stats_json(std::ostream& out, const Ipu& chip) {
  const ChipConfig& c = chip.config();
  std::map<uint64_t, const ExchangeRecord*> exchanges;
  for (const ExchangeRecord& e : chip.exchange().records()) exchanges[e.phase] = &e;

  fmt::print(out,
             "{{\n  \"chip\": {{\"preset\": \"{}\", \"tiles\": {}, \"active_tiles\": {}, "
             "\"clock_hz\": {}}},\n",
             c.preset, c.tiles, chip.active_tiles().size(), c.tile.clock_hz);
  fmt::print(out, "  \"cycles\": {},\n  \"instructions\": {},\n  \"supersteps\": [", chip.cycles(),
             chip.instructions_retired());
  const auto& barriers = chip.sync_network().barriers();
  for (size_t i = 0; i < barriers.size(); ++i) {
    const BarrierRecord& b = barriers[i];
    Summary compute, wait;
    for (size_t m = 0; m < b.tiles.size(); ++m) {
      compute.add(b.tiles[m], compute_before(chip.tile(b.tiles[m]), b.arrivals[m]));
      wait.add(b.tiles[m], b.release - b.arrivals[m]);
    }
    const auto e = exchanges.find(b.phase);
    const uint64_t words = e == exchanges.end() ? 0 : e->second->words;
    const uint64_t end = e == exchanges.end() ? b.release : e->second->end;
    const uint64_t last = e == exchanges.end() ? 0 : e->second->last_arrival;
    fmt::print(out,
               "{}\n    {{\"index\": {}, \"group\": {}, \"tiles\": {}, \"release_cycle\": {},\n"
               "     \"compute_cycles\": {},\n     \"sync_wait_cycles\": {},\n"
               "     \"exchange\": {{\"words\": {}, \"bytes\": {}, \"cycles\": {}, "
               "\"last_arrival_cycle\": {}}}}}",
               i ? "," : "", i, b.group, b.tiles.size(), b.release, compute.json(), wait.json(),
               words, 4 * words, end - b.release, last);
  }
  fmt::print(out, "\n  ]\n}}\n");
}

void write_trace_json(std::ostream& out, const Ipu& chip, unsigned tiles_per_track) {
  const double us_per_cycle = 1e6 / chip.config().tile.clock_hz;
  if (tiles_per_track == 0) tiles_per_track = 1;
  fmt::print(out, "{{\"displayTimeUnit\": \"ns\", \"traceEvents\": [\n");
  bool first = true;
  auto event = [&](const std::string& text) {
    fmt::print(out, "{}{}", first ? "  " : ",\n  ", text);
    first = false;
  };
  event(R"({"name": "process_name", "ph": "M", "pid": 0, "args": {"name": "IPU"}})");
  for (unsigned id : chip.active_tiles()) {
    if (id % tiles_per_track != 0 && id != chip.active_tiles().front())
      continue;  // a group's first tile
    const unsigned track = id / tiles_per_track;
    const std::string label =
        tiles_per_track == 1 ? fmt::format("tile {}", id)
                             : fmt::format("tiles {}-{} (tile {} shown)", track * tiles_per_track,
                                           (track + 1) * tiles_per_track - 1, id);
    event(fmt::format(
        R"({{"name": "thread_name", "ph": "M", "pid": 0, "tid": {}, "args": {{"name": "{}"}}}})",
        track, label));
    event(fmt::format(
        R"({{"name": "thread_sort_index", "ph": "M", "pid": 0, "tid": {}, "args": {{"sort_index": {}}}}})",
        track, track));
    for (const TileSegment& s : chip.tile(id).timeline()) {
      if (s.end <= s.begin) continue;
      static const char* const kNames[] = {"compute", "sync", "exchange"};
      event(fmt::format(
          R"({{"name": "{}", "cat": "bsp", "ph": "X", "pid": 0, "tid": {}, "ts": {:.4f}, "dur": {:.4f}, )"
          R"("args": {{"tile": {}, "phase": {}, "cycles": {}, "first_cycle": {}}}}})",
          kNames[s.kind], track, static_cast<double>(s.begin) * us_per_cycle,
          static_cast<double>(s.end - s.begin) * us_per_cycle, id, s.phase, s.end - s.begin,
          s.begin));
    }
  }
  fmt::print(out, "\n]}}\n");
}

}  // namespace ipu::hw
