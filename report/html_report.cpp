#include "report/html_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "report/html_parts.h"

namespace ipu::report {
namespace {

using namespace html;  // the parts (html_parts.h)

// ---- sections ----

std::string summary_section(const Json& stats, const std::string& title) {
  const Json& s = member(stats, "summary");
  const Json& chip = member(stats, "chip");
  const Json& machine = member(stats, "machine");
  const Json& image = member(stats, "image");
  std::vector<std::pair<std::string, std::string>> cards;
  const std::string result = text(s, "result");
  if (!result.empty())
    cards.push_back({"result", result == "exited"
                                   ? fmt::format("exited with status {}", count(s, "exit_status"))
                                   : result});
  cards.push_back({"simulated time", seconds_text(number(s, "seconds"))});
  cards.push_back({"cycles", grouped(count(s, "cycles"))});
  cards.push_back({"instructions", grouped(count(s, "instructions"))});
  if (count(s, "flops") > 0)
    cards.push_back({"flops", fmt::format("{}: {:.4g} TFLOP/s, {:.3g}% of the AMP's peak",
                                          grouped(count(s, "flops")), number(s, "tflops"),
                                          100 * number(s, "amp_peak_fraction"))});
  cards.push_back({"supersteps", grouped(count(s, "supersteps"))});
  const uint64_t chips = std::max<uint64_t>(count(machine, "chips"), 1);
  cards.push_back({"tiles used", fmt::format("{} of {}", grouped(count(chip, "active_tiles")),
                                             grouped(chips * count(chip, "tiles")))});
  cards.push_back({"chips", fmt::format("{} ({} at {:.0f} MHz)", chips, text(chip, "preset"),
                                        number(chip, "clock_hz") / 1e6)});
  cards.push_back({"exchange", bytes_text(number(s, "exchange_bytes"))});
  if (number(s, "energy_joules") > 0)
    cards.push_back({"energy", fmt::format("{:.4g} J, {:.1f} W", number(s, "energy_joules"),
                                           number(s, "watts"))});
  if (chips > 1) cards.push_back({"between chips", bytes_text(number(s, "inter_chip_bytes"))});
  if (number(s, "streaming_bytes_written") + number(s, "streaming_bytes_read") > 0)
    cards.push_back(
        {"streaming memory",
         fmt::format("{} written, {} read", bytes_text(number(s, "streaming_bytes_written")),
                     bytes_text(number(s, "streaming_bytes_read")))});
  // Older statistics lack the phases' times: number() reads a missing one as 0.
  const double streaming = number(s, "streaming_phase_cycles"),
               between = number(s, "cross_chip_phase_cycles");
  if (streaming + between > 0) {
    const double hz = std::max(number(chip, "clock_hz"), 1.0);
    cards.push_back(
        {"off the chips", fmt::format("{} streaming, {} between chips",
                                      seconds_text(streaming / hz), seconds_text(between / hz))});
  }
  std::string out = fmt::format(
      "<h1>{}</h1>\n<p class=\"sub\">image {}{}</p>\n", escape(title), escape(text(image, "file")),
      text(image, "checksum").empty() ? "" : ", checksum " + escape(text(image, "checksum")));
  if (result != "" && result != "exited")
    out += "<p class=\"warn\">" + escape(text(s, "message")) + "</p>\n";
  out += "<div class=\"cards\">";
  for (const auto& [name, value] : cards)
    out += fmt::format("<div class=\"card\"><b>{}</b><span>{}</span></div>", escape(value),
                       escape(name));
  return out + "</div>\n";
}

std::string memory_section(const Json& stats) {
  std::string out = "<h2 id=\"memory\">Tile memory</h2>\n";
  const Json& m = member(stats, "tile_memory");
  if (m.is_null())
    return out +
           "<p>These statistics carry no memory layout (ipu-sim run and the SDK write it).</p>\n";
  const Json &tiles = array(m, "tiles"), &code = array(m, "code"), &data = array(m, "data"),
             &stacks = array(m, "stacks"), &free = array(m, "free");
  if (code.size() != tiles.size() || data.size() != tiles.size() || stacks.size() != tiles.size() ||
      free.size() != tiles.size())
    throw ReportError("'tile_memory' has columns of different lengths");
  const double sram = number(m, "sram_bytes");
  const TileLayout layout(stats);
  const uint64_t per_chip = layout.per_chip, chips = layout.chips, per_column = layout.per_column;
  struct Use {
    uint64_t code, data, stacks, free;
    uint64_t used() const { return code + data + stacks; }
  };
  std::map<uint64_t, Use> use;  // machine tile -> its memory
  for (size_t i = 0; i < tiles.size(); ++i) {
    const uint64_t t = tiles[i].get<uint64_t>();
    if (t >= chips * per_chip)
      throw ReportError(
          fmt::format("'tile_memory' names tile {}, but the machine has {}", t, chips * per_chip));
    use[t] = {code[i].get<uint64_t>(), data[i].get<uint64_t>(), stacks[i].get<uint64_t>(),
              free[i].get<uint64_t>()};
  }
  Use total{0, 0, 0, 0};
  uint64_t busiest = 0, busiest_used = 0;
  for (const auto& [t, u] : use) {
    total.code += u.code, total.data += u.data, total.stacks += u.stacks, total.free += u.free;
    if (u.used() > busiest_used || busiest_used == 0) busiest = t, busiest_used = u.used();
  }
  const double all = static_cast<double>(total.used() + total.free);
  out += fmt::format(
      "<p>{} tiles loaded, {} of SRAM each. In all: code {} ({}), data {} ({}), stacks {} ({}), "
      "free {} ({}). The fullest is {}: {} used ({}).</p>\n",
      grouped(use.size()), bytes_text(sram), bytes_text(total.code), percent(total.code, all),
      bytes_text(total.data), percent(total.data, all), bytes_text(total.stacks),
      percent(total.stacks, all), bytes_text(total.free), percent(total.free, all),
      layout.label(busiest), bytes_text(busiest_used), percent(busiest_used, sram));
  // The whole machine's SRAM by kind, as one stacked bar.
  out += "<svg class=\"chart\" width=\"900\" height=\"26\" role=\"img\">";
  double x = 0;
  const std::pair<const char*, uint64_t> kinds[] = {
      {kCode, total.code}, {kData, total.data}, {kStacks, total.stacks}, {kFree, total.free}};
  const char* const kind_names[] = {"code", "data", "stacks", "free"};
  for (int k = 0; k < 4; ++k) {
    const double w = all > 0 ? 900 * kinds[k].second / all : 0;
    out += fmt::format(
        "<rect x=\"{:.2f}\" y=\"2\" width=\"{:.2f}\" height=\"22\" fill=\"{}\"><title>{}: {} "
        "({})</title></rect>",
        x, w, kinds[k].first, kind_names[k], bytes_text(kinds[k].second),
        percent(kinds[k].second, all));
    x += w;
  }
  out += "</svg>\n";
  out += legend({{kCode, "code"},
                 {kData, "data (tensors, vertex state, globals)"},
                 {kStacks, "stacks (supervisor and workers)"},
                 {kFree, "free"}});
  // A heatmap per chip: a row per exchange column, a cell per tile, shaded by the SRAM used.
  const uint64_t columns = (per_chip + per_column - 1) / per_column;
  out += fmt::format(
      "<p>Each cell is a tile, shaded by the share of its SRAM in use; a row is one of the chip's "
      "{} exchange columns of {} tiles (exchange latency grows with the columns between "
      "tiles). Hover a cell for its figures.</p>\n",
      columns, per_column);
  out += "<div class=\"scale\"><span>0%</span>";
  for (int i = 0; i <= 20; ++i)
    out += fmt::format("<i style=\"background:{}\"></i>", heat_colour(i / 20.0));
  out += fmt::format(
      "<span>100% used</span><i style=\"background:{}\"></i><span>not loaded</span></div>\n",
      kIdle);
  std::vector<uint64_t> loaded;
  for (const auto& [t, u] : use) loaded.push_back(t);
  const std::vector<uint64_t> shown_chips = layout.chips_holding(loaded);
  out += chip_heatmaps(layout, shown_chips, "heatmap", "h3", [&](uint64_t t) {
    const auto it = use.find(t);
    if (it == use.end()) return HeatCell{false, 0, layout.label(t) + ": not loaded"};
    const Use& u = it->second;
    return HeatCell{
        true, sram > 0 ? u.used() / sram : 0,
        fmt::format("{}: {} used ({}): code {}, data {}, stacks {}, free {}", layout.label(t),
                    bytes_text(u.used()), percent(u.used(), sram), grouped(u.code), grouped(u.data),
                    grouped(u.stacks), grouped(u.free))};
  });
  if (chips > 1) {
    Table table(
        {"chip", "tiles loaded", "code", "data", "stacks", "free", "fullest tile", "its use"});
    for (const uint64_t c : shown_chips) {
      Use sum{0, 0, 0, 0};
      uint64_t n = 0, full = 0, full_used = 0;
      for (auto it = use.lower_bound(c * per_chip);
           it != use.end() && it->first < (c + 1) * per_chip; ++it, ++n) {
        const Use& u = it->second;
        sum.code += u.code, sum.data += u.data, sum.stacks += u.stacks, sum.free += u.free;
        if (u.used() > full_used || n == 0) full = it->first % per_chip, full_used = u.used();
      }
      table.row({grouped(c), grouped(n), grouped(sum.code), grouped(sum.data), grouped(sum.stacks),
                 grouped(sum.free), grouped(full), percent(full_used, sram)});
    }
    out += table.html("chip-memory");
  }
  return out;
}

// The program step that made superstep `s` ("main: Copy 'x' -> 'y'"), and the compute sets it
// ran; empty for a superstep the statistics do not label (a raw image's).
std::string step_text(const Json& s) {
  if (!s.contains("step")) return {};
  return s.contains("program") ? text(s, "program") + ": " + text(s, "step") : text(s, "step");
}
std::string compute_text(const Json& s) {
  std::vector<std::string> names;
  if (s.contains("compute") && s["compute"].is_array())
    for (const Json& n : s["compute"])
      if (n.is_string()) names.push_back(n.get<std::string>());
  return fmt::format("{}", fmt::join(names, ", "));
}

std::string timeline_section(const Json& stats) {
  std::string out = "<h2 id=\"bsp\">BSP timeline</h2>\n";
  const Json& steps = array(stats, "supersteps");
  const double total = number(stats, "cycles");
  if (steps.empty())
    return out + "<p>The run had no sync: all of it was one compute phase of " +
           grouped(static_cast<uint64_t>(total)) + " cycles.</p>\n";
  const size_t shown = std::min(steps.size(), kChartSupersteps);
  // A row per chip that has syncs of its own, holding those and the syncs across chips (or
  // with the host) in release order; one row when no chip syncs alone.
  std::vector<int64_t> keys;
  for (size_t i = 0; i < shown; ++i)
    if (const int64_t chip = chip_of(steps[i]);
        chip >= 0 && std::find(keys.begin(), keys.end(), chip) == keys.end())
      keys.push_back(chip);
  if (keys.size() <= 1) keys.assign(1, -1);
  std::sort(keys.begin(), keys.end());
  std::map<int64_t, std::vector<size_t>> rows;
  for (const int64_t key : keys) {
    for (size_t i = 0; i < shown; ++i)
      if (key < 0 || chip_of(steps[i]) < 0 || chip_of(steps[i]) == key) rows[key].push_back(i);
    std::stable_sort(rows[key].begin(), rows[key].end(), [&](size_t a, size_t b) {
      return number(steps[a], "release_cycle") < number(steps[b], "release_cycle");
    });
  }
  const size_t drawn_rows = std::min<size_t>(keys.size(), 16);
  const int left = 150, plot = 1000, row_height = 24;
  const double scale = total > 0 ? plot / total : 0;
  out += fmt::format(
      "<p>Each superstep of the busiest tile: compute, waiting at the sync, then exchange; "
      "the phase after the last sync is compute. {} cycles in all.</p>\n",
      grouped(static_cast<uint64_t>(total)));
  out +=
      legend({{kCompute, "compute (busiest tile)"}, {kSync, "sync wait"}, {kExchange, "exchange"}});
  out +=
      "<p class=\"sub\">Scroll on the timeline to zoom in on the cycles under the pointer, "
      "drag to pan, double-click to see the whole run.</p>\n";
  out += fmt::format(
      "<svg class=\"chart timeline\" width=\"{}\" height=\"{}\" role=\"img\" data-left=\"{}\" "
      "data-plot=\"{}\" data-cycles=\"{}\">\n",
      left + plot + 20, drawn_rows * row_height + 30, left, plot, static_cast<uint64_t>(total));
  auto rect = [&](double from, double to, double y, const char* colour, const std::string& title) {
    if (to <= from) return std::string();
    return fmt::format(
        "<rect x=\"{:.2f}\" y=\"{}\" width=\"{:.2f}\" height=\"{}\" "
        "fill=\"{}\"><title>{}</title></rect>",
        left + from * scale, y, std::max((to - from) * scale, 0.3), row_height - 6, colour,
        escape(title));
  };
  for (size_t r = 0; r < drawn_rows; ++r) {
    const auto key = keys[r];
    const double y = static_cast<double>(r * row_height + 2);
    out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n", left - 6, y + 13,
                       key < 0 ? std::string("all tiles") : "IPU " + chip_text(key));
    double start = 0;
    for (const size_t i : rows[key]) {
      const Json& s = steps[i];
      const double release = number(s, "release_cycle");
      const Json& compute = member(s, "compute_cycles");
      const double busiest_end = std::min(start + number(compute, "max"), release);
      // After a row's last sync its tiles compute to their exit: the exchange phase there
      // lasts only as long as its traffic.
      const bool last = i == rows[key].back();
      const double exchange_end =
          last ? std::max({release, number(member(s, "exchange"), "last_arrival_cycle"),
                           number(member(s, "streaming"), "done_cycle")})
               : release + number(member(s, "exchange"), "cycles");
      const std::string step = step_text(s), sets = compute_text(s);
      const std::string named = step.empty() ? std::string() : " (" + step + ")";
      out += rect(start, busiest_end, y, kCompute,
                  fmt::format("superstep {}: compute{}, busiest tile {} for {} cycles", i,
                              sets.empty() ? std::string() : " of " + sets,
                              count(compute, "max_tile"), count(compute, "max")));
      out += rect(
          busiest_end, release, y, kSync,
          fmt::format("superstep {}{}: sync, released at cycle {}", i, named, grouped(release)));
      out += rect(release, exchange_end, y, kExchange,
                  fmt::format("superstep {}{}: exchange of {} for {} cycles", i, named,
                              bytes_text(number(member(s, "exchange"), "bytes")),
                              grouped(exchange_end - release)));
      out += "\n";
      start = exchange_end;
    }
    out += rect(start, total, y, kCompute, "after the last sync: compute to the end of the run");
  }
  const double axis_y = static_cast<double>(drawn_rows * row_height + 6);
  for (int k = 0; k <= 4; ++k)
    out += fmt::format(
        "<line x1=\"{0}\" x2=\"{0}\" y1=\"{1}\" y2=\"{2}\" stroke=\"#888\"/>"
        "<text class=\"tick\" x=\"{0}\" y=\"{3}\" text-anchor=\"middle\">{4}</text>\n",
        left + plot * k / 4, axis_y, axis_y + 4, axis_y + 18,
        grouped(static_cast<uint64_t>(total * k / 4)));
  out += "</svg>\n";
  if (drawn_rows < keys.size())
    out += fmt::format("<p>{} more chips are not drawn.</p>\n", keys.size() - drawn_rows);

  // Tile balance: the busiest tile's compute against the mean, superstep by superstep.
  double sum_max = 0, sum_mean = 0, most = 0;
  for (size_t i = 0; i < shown; ++i) {
    const Json& c = member(steps[i], "compute_cycles");
    sum_max += number(c, "max"), sum_mean += number(c, "mean");
    most = std::max(most, number(c, "max"));
  }
  out += fmt::format(
      "<h3>Tile balance</h3>\n<p>Per superstep, the busiest tile's compute cycles (bar), the "
      "mean over the tiles that synced (dark) and the least (line). Balance (mean over busiest) "
      "over the run: {}.</p>\n",
      percent(sum_mean, sum_max));
  out += legend({{"#a6d69a", "busiest tile"}, {kCompute, "mean"}, {"#222", "least"}});
  const int height = 160;
  const double bar = static_cast<double>(plot) / static_cast<double>(shown);
  out += fmt::format("<svg class=\"chart balance\" width=\"{}\" height=\"{}\" role=\"img\">\n",
                     left + plot + 20, height + 24);
  for (size_t i = 0; i < shown; ++i) {
    const Json& c = member(steps[i], "compute_cycles");
    auto h = [&](double v) { return most > 0 ? height * v / most : 0.0; };
    const double x = left + bar * static_cast<double>(i), w = std::max(bar * 0.8, 0.3);
    out += fmt::format(
        "<g><title>superstep {}: compute {} (tile {}) / {:.1f} / {} (tile {}) cycles, balance "
        "{}</title><rect x=\"{:.2f}\" y=\"{:.2f}\" width=\"{:.2f}\" height=\"{:.2f}\" "
        "fill=\"#a6d69a\"/><rect x=\"{:.2f}\" y=\"{:.2f}\" width=\"{:.2f}\" height=\"{:.2f}\" "
        "fill=\"{}\"/><rect x=\"{:.2f}\" y=\"{:.2f}\" width=\"{:.2f}\" height=\"1\" "
        "fill=\"#222\"/></g>\n",
        i, grouped(count(c, "min")), count(c, "min_tile"), number(c, "mean"),
        grouped(count(c, "max")), count(c, "max_tile"),
        percent(number(c, "mean"), number(c, "max")), x, height - h(number(c, "max")), w,
        h(number(c, "max")), x, height - h(number(c, "mean")), w, h(number(c, "mean")), kCompute, x,
        height - h(number(c, "min")), w);
  }
  out += fmt::format(
      "<text x=\"{}\" y=\"12\" text-anchor=\"end\">{}</text><text x=\"{}\" y=\"{}\" "
      "text-anchor=\"end\">0</text><text x=\"{}\" y=\"{}\">superstep 0</text><text x=\"{}\" "
      "y=\"{}\" text-anchor=\"end\">{}</text></svg>\n",
      left - 6, grouped(static_cast<uint64_t>(most)), left - 6, height, left, height + 18,
      left + plot, height + 18, shown - 1);
  if (shown < steps.size())
    out +=
        fmt::format("<p>The charts show the first {} of {} supersteps.</p>\n", shown, steps.size());

  // The program steps, as PopVision names them, where the statistics label the supersteps.
  const bool labelled =
      std::any_of(steps.begin(), steps.end(), [](const Json& s) { return s.contains("step"); });
  std::vector<std::string> columns = {"superstep",
                                      "sync",
                                      "chip",
                                      "tiles",
                                      "released at",
                                      "compute least",
                                      "mean",
                                      "busiest",
                                      "busiest tile",
                                      "balance",
                                      "sync wait (most)",
                                      "exchange bytes",
                                      "exchange cycles",
                                      "between chips",
                                      "streaming bytes"};
  if (labelled) columns.insert(columns.begin() + 1, {"program step", "compute sets"});
  Table table(columns);
  for (size_t i = 0; i < std::min(steps.size(), kTableRows); ++i) {
    const Json& s = steps[i];
    const Json &c = member(s, "compute_cycles"), &x = member(s, "exchange"),
               &sm = member(s, "streaming");
    // The sync's kind by name where the statistics give one (older files: the group number).
    const std::string sync = s.contains("sync") ? text(s, "sync") : grouped(count(s, "group"));
    std::vector<std::string> cells = {
        grouped(i),
        escape(sync),
        chip_text(chip_of(s)),
        grouped(count(s, "tiles")),
        grouped(count(s, "release_cycle")),
        grouped(count(c, "min")),
        fmt::format("{:.1f}", number(c, "mean")),
        grouped(count(c, "max")),
        grouped(count(c, "max_tile")),
        percent(number(c, "mean"), number(c, "max")),
        grouped(count(member(s, "sync_wait_cycles"), "max")),
        grouped(count(x, "bytes")),
        grouped(count(x, "cycles")),
        grouped(count(x, "inter_chip_bytes")),
        grouped(count(sm, "bytes_written") + count(sm, "bytes_read"))};
    if (labelled) cells.insert(cells.begin() + 1, {escape(step_text(s)), escape(compute_text(s))});
    table.row(cells);
  }
  out += table.html("supersteps");
  if (steps.size() > kTableRows)
    out += fmt::format("<p>The first {} of {} supersteps; the statistics file has them all.</p>\n",
                       kTableRows, steps.size());
  return out;
}

// The SDK's compute sets and codelets, or ipu-sim's worker functions.
std::string compute_section(const Json& stats) {
  std::string out = "<h2 id=\"compute\">Compute</h2>\n";
  const Json& sets = array(stats, "compute_sets");
  const Json& codelets = array(stats, "codelets");
  const Json& functions = array(stats, "worker_functions");
  // A row of a table of worker runs: `first` cells, then the runs' count, cycles (total, mean,
  // least and most of one run) and instructions.
  const auto runs_row = [](std::vector<std::string> first, const Json& j) {
    const double runs = number(j, "runs");
    for (const char* key : {"runs", "cycles"}) first.push_back(grouped(count(j, key)));
    first.push_back(runs > 0 ? fmt::format("{:.1f}", number(j, "cycles") / runs) : "-");
    for (const char* key : {"min_cycles", "max_cycles", "instructions"})
      first.push_back(grouped(count(j, key)));
    return first;
  };
  if (!sets.empty()) {
    double sum = 0;
    for (const Json& c : sets) sum += number(c, "cycles");
    out +=
        "<h3>Compute sets</h3>\n<p>Cycles are the busiest tile's worker time, summed over the "
        "set's executions; tile cycles are every tile's.</p>\n";
    std::vector<std::pair<std::string, double>> bars;
    Table table({"compute set", "cycles", "share", "busiest tile", "executions", "tile cycles",
                 "vertices", "tiles"});
    for (const Json& c : sets) {
      if (bars.size() < 20) bars.push_back({text(c, "name"), number(c, "cycles")});
      table.row({escape(text(c, "name")), grouped(count(c, "cycles")),
                 percent(number(c, "cycles"), sum), grouped(count(c, "busiest_tile")),
                 grouped(count(c, "executions")), grouped(count(c, "tile_cycles")),
                 grouped(count(c, "vertices")), grouped(count(c, "tiles"))});
    }
    out += bar_chart(bars, kCompute, "cycles") + table.html("compute-sets");
  }
  if (!codelets.empty()) {
    out += "<h3>Codelets</h3>\n";
    std::vector<std::pair<std::string, double>> bars;
    Table table({"codelet", "vertices", "tiles", "runs", "cycles", "mean", "least", "most",
                 "instructions"});
    for (const Json& c : codelets) {
      if (bars.size() < 20) bars.push_back({text(c, "codelet"), number(c, "cycles")});
      table.row(runs_row(
          {escape(text(c, "codelet")), grouped(count(c, "vertices")), grouped(count(c, "tiles"))},
          c));
    }
    out += bar_chart(bars, kData, "worker cycles") + table.html("codelets");
  }
  if (!functions.empty()) {
    out +=
        "<h3>Worker functions</h3>\n<p>Every function the workers ran, summed over the "
        "tiles.</p>\n";
    std::vector<std::pair<std::string, double>> bars;
    Table table({"function", "address", "tiles", "runs", "cycles", "mean", "least", "most",
                 "instructions"});
    for (const Json& f : functions) {
      if (bars.size() < 20) bars.push_back({text(f, "function"), number(f, "cycles")});
      table.row(runs_row(
          {escape(text(f, "function")), escape(text(f, "address")), grouped(count(f, "tiles"))},
          f));
    }
    out += bar_chart(bars, kData, "worker cycles") + table.html("worker-functions");
  }
  if (sets.empty() && codelets.empty() && functions.empty())
    out += "<p>The workers were not profiled on this run.</p>\n";
  const Json& contexts = array(stats, "contexts");
  if (!contexts.empty()) {
    out +=
        "<h3>Contexts</h3>\n<p>Summed over the tiles. Each worker issues at most every sixth "
        "cycle, so a busy worker's instructions per active cycle approach 1/6.</p>\n";
    Table table({"context", "instructions", "issue slots", "runs", "active cycles",
                 "instructions per active cycle"});
    for (const Json& c : contexts)
      table.row({escape(text(c, "context")), grouped(count(c, "instructions")),
                 grouped(count(c, "issue_slots")), grouped(count(c, "runs")),
                 grouped(count(c, "active_cycles")),
                 number(c, "active_cycles") > 0
                     ? fmt::format("{:.4f}", number(c, "instructions") / number(c, "active_cycles"))
                     : std::string("-")});
    out += table.html("contexts");
  }
  return out;
}

std::string traffic_section(const Json& stats) {
  std::string out = "<h2 id=\"traffic\">Exchange, IPU-Link and streaming-memory traffic</h2>\n";
  const Json& steps = array(stats, "supersteps");
  const Json& s = member(stats, "summary");
  out += fmt::format(
      "<p>Exchange moved {} in {} supersteps; {} of it between chips, which the "
      "IPU-Links carried as {} (a word counts on every hop).</p>\n",
      bytes_text(number(s, "exchange_bytes")), steps.size(),
      bytes_text(number(s, "inter_chip_bytes")), bytes_text(number(s, "ipulink_bytes")));
  const size_t shown = std::min(steps.size(), kChartSupersteps);
  double most = 0;
  for (size_t i = 0; i < shown; ++i)
    most = std::max(most, number(member(steps[i], "exchange"), "bytes"));
  if (most > 0) {
    const int left = 150, plot = 1000, height = 120;
    const double bar = static_cast<double>(plot) / static_cast<double>(shown);
    out += legend({{kExchange, "on the chip"}, {kSync, "between chips"}});
    out += fmt::format("<svg class=\"chart\" width=\"{}\" height=\"{}\" role=\"img\">\n",
                       left + plot + 20, height + 24);
    for (size_t i = 0; i < shown; ++i) {
      const Json& x = member(steps[i], "exchange");
      const double all = number(x, "bytes"), between = number(x, "inter_chip_bytes");
      if (all <= 0) continue;
      const double h = height * all / most, hb = height * between / most;
      const double px = left + bar * static_cast<double>(i), w = std::max(bar * 0.8, 0.3);
      out += fmt::format(
          "<g><title>superstep {}: {} exchanged, {} between chips, {} cycles</title>"
          "<rect x=\"{:.2f}\" y=\"{:.2f}\" width=\"{:.2f}\" height=\"{:.2f}\" fill=\"{}\"/>"
          "<rect x=\"{:.2f}\" y=\"{:.2f}\" width=\"{:.2f}\" height=\"{:.2f}\" fill=\"{}\"/></g>\n",
          i, bytes_text(all), bytes_text(between), grouped(count(x, "cycles")), px, height - h, w,
          h - hb, kExchange, px, height - hb, w, hb, kSync);
    }
    out += fmt::format(
        "<text x=\"{}\" y=\"12\" text-anchor=\"end\">{}</text><text x=\"{}\" y=\"{}\" "
        "text-anchor=\"end\">0</text><text x=\"{}\" y=\"{}\">superstep 0</text></svg>\n",
        left - 6, bytes_text(most), left - 6, height, left, height + 18);
  }
  const Json& machine = member(stats, "machine");
  const Json& links = array(machine, "ipulinks");
  const double cycles = number(stats, "cycles");
  if (!links.empty()) {
    out +=
        "<h3>IPU-Links</h3>\n<p>Each direction of each link that carried traffic; busy is "
        "the share of the run's cycles the link was sending.</p>\n";
    Table table({"from chip", "port", "to chip", "port", "bytes", "busy cycles", "busy"});
    for (const Json& l : links)
      table.row({grouped(count(l, "from_chip")), grouped(count(l, "from_port")),
                 grouped(count(l, "to_chip")), grouped(count(l, "to_port")),
                 grouped(count(l, "bytes")), fmt::format("{:.1f}", number(l, "busy_cycles")),
                 percent(number(l, "busy_cycles"), cycles)});
    out += table.html("ipulinks");
  }
  const Json& gateways = array(machine, "gateways");
  if (!gateways.empty()) {
    out += "<h3>Streaming memory</h3>\n";
    Table table({"gateway", "chips", "memory", "resident", "written by tiles", "read by tiles"});
    for (const Json& g : gateways)
      table.row({grouped(count(g, "index")),
                 fmt::format("{}-{}", count(g, "first_chip"),
                             count(g, "first_chip") + std::max<uint64_t>(count(g, "chips"), 1) - 1),
                 bytes_text(number(g, "memory_bytes")), bytes_text(number(g, "resident_bytes")),
                 grouped(count(g, "bytes_written")), grouped(count(g, "bytes_read"))});
    out += table.html("gateways");
  }
  return out;
}

std::string config_section(const Json& stats) {
  std::string out =
      "<h2 id=\"config\">Configuration</h2>\n<details open><summary>Every "
      "parameter of the run (ipu-sim --config takes them back)</summary>\n";
  Table table({"parameter", "value"});
  const Json& config = member(stats, "config");
  if (config.is_object())
    for (const auto& [name, value] : config.items())
      table.row(
          {escape(name), escape(value.is_string() ? value.get<std::string>() : value.dump())});
  return out + table.html("config") + "</details>\n";
}

constexpr const char* kStyle = R"(
body { font: 14px/1.45 system-ui, sans-serif; margin: 24px 32px; color: #222; max-width: 1400px; }
h1 { font-size: 22px; margin-bottom: 2px; } h2 { font-size: 18px; margin-top: 32px; border-bottom: 1px solid #ddd; }
h3 { font-size: 15px; margin-top: 20px; } .sub { color: #666; margin-top: 0; }
nav a { margin-right: 14px; } .warn { color: #b00; font-weight: 600; }
.cards { display: flex; flex-wrap: wrap; gap: 10px; margin: 14px 0; }
.card { border: 1px solid #ddd; border-radius: 6px; padding: 8px 12px; min-width: 130px; }
.card b { display: block; font-size: 16px; } .card span { color: #666; font-size: 12px; }
.legend span, .scale span { margin-right: 14px; font-size: 12px; }
.legend i, .scale i { display: inline-block; width: 12px; height: 12px; margin-right: 4px; vertical-align: -2px; }
.scale i { margin-right: 0; width: 10px; } .scale span { margin: 0 8px; }
svg text { font-size: 11px; fill: #444; } svg.heatmap { display: block; margin: 6px 0 12px; }
svg.heatmap rect.idle { stroke: #ddd; stroke-width: 1; }
.scale i:last-of-type { border: 1px solid #ddd; box-sizing: border-box; }
svg.heatmap rect.tile:hover { stroke: #000; stroke-width: 1.5; }
table { border-collapse: collapse; margin: 8px 0 16px; font-size: 12.5px; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: right; }
th { background: #f3f3f3; cursor: pointer; user-select: none; } td:first-child, th:first-child { text-align: left; }
th.asc::after { content: " \25b2"; } th.desc::after { content: " \25bc"; }
)";

// Errors are kept on the page (the report's test reads them from the DOM); tables sort on a
// header click; the page says when it has rendered and how many heatmap cells it holds.
constexpr const char* kScript = R"(
window.reportErrors = [];
window.addEventListener('error', function (e) {
  window.reportErrors.push(String(e.message));
  document.documentElement.setAttribute('data-errors', window.reportErrors.join('; '));
});
function sortTable(table, column, header) {
  var down = !header.classList.contains('desc');
  Array.prototype.forEach.call(table.tHead.rows[0].cells, function (h) { h.className = ''; });
  header.className = down ? 'desc' : 'asc';
  var value = function (row) {
    var t = row.cells[column].textContent, n = Number(t.replace(/[,%]/g, ''));
    return t !== '' && !isNaN(n) ? n : t;
  };
  var rows = Array.prototype.slice.call(table.tBodies[0].rows);
  rows.sort(function (a, b) {
    var x = value(a), y = value(b), c = x < y ? -1 : x > y ? 1 : 0;
    return down ? -c : c;
  });
  rows.forEach(function (r) { table.tBodies[0].appendChild(r); });
}
// The BSP timeline zooms and pans along its cycles: each phase's rectangle is redrawn from its
// first position for the cycles in view, and the axis' ticks relabelled.
function setupTimeline(svg) {
  var left = Number(svg.getAttribute('data-left')), plot = Number(svg.getAttribute('data-plot'));
  var cycles = Number(svg.getAttribute('data-cycles'));
  var rects = Array.prototype.slice.call(svg.querySelectorAll('rect'));
  rects.forEach(function (r) {
    r.setAttribute('data-x', r.getAttribute('x'));
    r.setAttribute('data-w', r.getAttribute('width'));
  });
  var ticks = svg.querySelectorAll('text.tick');
  var view = {from: 0, to: cycles};
  function draw() {
    var k = cycles / (view.to - view.from), shift = view.from / cycles * plot;
    rects.forEach(function (r) {
      var x = (Number(r.getAttribute('data-x')) - left - shift) * k;
      var x1 = Math.max(x, 0), x2 = Math.min(x + Number(r.getAttribute('data-w')) * k, plot);
      if (x2 <= x1) { r.setAttribute('display', 'none'); return; }
      r.removeAttribute('display');
      r.setAttribute('x', (left + x1).toFixed(2));
      r.setAttribute('width', Math.max(x2 - x1, 0.3).toFixed(2));
    });
    Array.prototype.forEach.call(ticks, function (t, i) {
      t.textContent = Math.round(view.from + (view.to - view.from) * i / 4).toLocaleString('en-US');
    });
  }
  svg.zoomTo = function (from, to) {
    var span = Math.min(Math.max(to - from, Math.min(cycles, 10)), cycles);
    view.from = Math.max(0, Math.min(from, cycles - span));
    view.to = view.from + span;
    draw();
  };
  svg.addEventListener('wheel', function (e) {
    e.preventDefault();
    var box = svg.getBoundingClientRect();
    var at = view.from + (view.to - view.from) *
             Math.min(Math.max((e.clientX - box.left - left) / plot, 0), 1);
    var f = e.deltaY < 0 ? 0.8 : 1.25;
    svg.zoomTo(at - (at - view.from) * f, at + (view.to - at) * f);
  }, {passive: false});
  var drag = null;
  svg.addEventListener('mousedown', function (e) { drag = {x: e.clientX, from: view.from, to: view.to}; });
  window.addEventListener('mouseup', function () { drag = null; });
  svg.addEventListener('mousemove', function (e) {
    if (!drag) return;
    var d = (e.clientX - drag.x) / plot * (drag.to - drag.from);
    svg.zoomTo(drag.from - d, drag.to - d);
  });
  svg.addEventListener('dblclick', function () { svg.zoomTo(0, cycles); });
  // A check the report's test reads: on the first half of the cycles the first phase is drawn
  // wider (or off the view), and on all of them as it was.
  var first = rects[0];
  if (!first) return true;
  var width = first.getAttribute('width');
  svg.zoomTo(0, cycles / 2);
  var zoomed = first.getAttribute('display') === 'none' || first.getAttribute('width') !== width;
  svg.zoomTo(0, cycles);
  return zoomed && first.getAttribute('width') === width;
}
document.addEventListener('DOMContentLoaded', function () {
  var zoomable = 0;
  document.querySelectorAll('svg.timeline').forEach(function (svg) { if (setupTimeline(svg)) ++zoomable; });
  document.documentElement.setAttribute('data-zoomable-timelines', String(zoomable));
  document.querySelectorAll('table.sortable').forEach(function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (h, i) {
      h.addEventListener('click', function () { sortTable(table, i, h); });
    });
  });
  var root = document.documentElement;
  root.setAttribute('data-heatmap-cells', String(document.querySelectorAll('svg.heatmap:not(.tile-energy) rect.tile').length));
  root.setAttribute('data-energy-cells', String(document.querySelectorAll('svg.tile-energy rect.tile').length));
  root.setAttribute('data-rendered', 'yes');
});
)";

}  // namespace

void write_html_report(std::ostream& out, const std::string& stats_text, const std::string& title) {
  Json stats;
  try {
    stats = Json::parse(stats_text);
  } catch (const Json::parse_error& e) {
    throw ReportError(fmt::format("the statistics are not JSON: {}", e.what()));
  }
  if (!stats.is_object()) throw ReportError("the statistics are not a JSON object");
  std::string body;
  try {
    body = summary_section(stats, title) +
           "<nav><a href=\"#memory\">tile memory</a><a href=\"#bsp\">BSP timeline</a><a "
           "href=\"#compute\">compute</a><a href=\"#traffic\">traffic</a><a "
           "href=\"#energy\">energy</a><a href=\"#config\">configuration</a></nav>\n" +
           memory_section(stats) + timeline_section(stats) + compute_section(stats) +
           traffic_section(stats) + energy_section(stats) + config_section(stats);
  } catch (const Json::exception& e) {
    throw ReportError(fmt::format("the statistics are not as ipu-sim writes them: {}", e.what()));
  }
  out << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>"
      << escape(title) << "</title>\n<style>" << kStyle << "</style>\n<script>" << kScript
      << "</script>\n</head><body>\n"
      << body << "<p class=\"sub\">Written by the virtual IPU from the run's statistics.</p>\n"
      << "</body></html>\n";
}

}  // namespace ipu::report
