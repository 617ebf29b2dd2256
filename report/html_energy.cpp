// The HTML report's energy section: the run's joules and watts, the breakdown by block and
// action (the statistics' energy block, hw/energy/energy.h), each superstep's power over the
// run, and each tile's dynamic energy as a heatmap of the chip's exchange columns.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "report/html_parts.h"

namespace ipu::report::html {
namespace {

constexpr const char* kDynamic = "#f28e2b";
constexpr const char* kStatic = "#bab0ac";

std::string joules_text(double j) {
  if (j >= 1) return fmt::format("{:.3f} J", j);
  if (j >= 1e-3) return fmt::format("{:.3f} mJ", j * 1e3);
  return fmt::format("{:.3f} uJ", j * 1e6);
}

// Each action's count and joules summed over the blocks of one kind (the chips, the gateways).
struct ActionSum {
  std::string unit;
  double count = 0, joules = 0;
};

void add_lines(std::map<std::string, ActionSum>& sums, const Json& block) {
  for (const Json& line : array(block, "actions")) {
    ActionSum& s = sums[text(line, "action")];
    s.unit = text(line, "unit");
    s.count += number(line, "count");
    s.joules += number(line, "joules");
  }
}

// Each superstep's average power as a column, the run's mean as a line.
std::string power_chart(const Json& steps, double mean_watts) {
  const size_t shown = std::min(steps.size(), kChartSupersteps);
  double most = mean_watts;
  for (size_t i = 0; i < shown; ++i)
    most = std::max(most, number(member(steps[i], "energy"), "watts"));
  if (most <= 0) return {};
  const int left = 150, plot = 1000, height = 120;
  const double bar = static_cast<double>(plot) / static_cast<double>(shown);
  std::string out =
      fmt::format("<svg class=\"chart power\" width=\"{}\" height=\"{}\" role=\"img\">\n",
                  left + plot + 20, height + 24);
  for (size_t i = 0; i < shown; ++i) {
    const Json& e = member(steps[i], "energy");
    const double w = number(e, "watts");
    const double h = height * w / most, px = left + bar * static_cast<double>(i);
    out += fmt::format(
        "<rect x=\"{:.2f}\" y=\"{:.2f}\" width=\"{:.2f}\" height=\"{:.2f}\" fill=\"{}\">"
        "<title>superstep {}: {:.1f} W, {} over {}</title></rect>\n",
        px, height - h, std::max(bar * 0.8, 0.3), h, kDynamic, i, w,
        joules_text(number(e, "joules")), seconds_text(number(e, "seconds")));
  }
  const double y = height - height * mean_watts / most;
  out += fmt::format(
      "<line x1=\"{}\" x2=\"{}\" y1=\"{:.2f}\" y2=\"{:.2f}\" stroke=\"#222\" "
      "stroke-dasharray=\"4 3\"><title>mean {:.1f} W</title></line>\n",
      left, left + plot, y, y, mean_watts);
  out += fmt::format(
      "<text x=\"{}\" y=\"12\" text-anchor=\"end\">{:.0f} W</text><text x=\"{}\" y=\"{}\" "
      "text-anchor=\"end\">0</text><text x=\"{}\" y=\"{}\">superstep 0</text></svg>\n",
      left - 6, most, left - 6, height, left, height + 18);
  return out;
}

}  // namespace

std::string energy_section(const Json& stats) {
  std::string out = "<h2 id=\"energy\">Energy</h2>\n";
  const Json& e = member(stats, "energy");
  if (e.is_null()) return out + "<p>These statistics carry no energy.</p>\n";
  const Json &chips = array(e, "chips"), &gateways = array(e, "gateways");
  const Json& links = member(e, "ipulinks");
  const double joules = number(e, "joules");
  out += fmt::format(
      "<p>The run drew {} in {}: {:.1f} W on average, {:.1f} W a chip. The energies per action "
      "are the <code>energy.*</code> parameters (see the configuration), assumptions calibrated "
      "to the chips' rated power (docs/energy.md).</p>\n",
      joules_text(joules), seconds_text(number(e, "seconds")), number(e, "watts"),
      number(e, "watts_per_chip"));

  // By block and action, each kind of block summed over its blocks.
  Table table({"block", "action", "count", "unit", "energy", "share"});
  auto rows = [&](const std::string& block, const std::map<std::string, ActionSum>& sums) {
    for (const auto& [action, s] : sums)
      if (s.joules > 0 || s.count > 0)
        table.row({escape(block), escape(action),
                   s.unit == "s" ? seconds_text(s.count)
                                 : grouped(static_cast<uint64_t>(std::max(s.count, 0.0) + 0.5)),
                   escape(s.unit == "s" ? "block time" : s.unit), joules_text(s.joules),
                   percent(s.joules, joules)});
  };
  std::map<std::string, ActionSum> chip_sums, gateway_sums, link_sums;
  for (const Json& c : chips) add_lines(chip_sums, c);
  for (const Json& g : gateways) add_lines(gateway_sums, g);
  add_lines(link_sums, links);
  rows(chips.size() == 1 ? "chip" : fmt::format("{} chips", chips.size()), chip_sums);
  if (!gateways.empty())
    rows(gateways.size() == 1 ? "gateway" : fmt::format("{} gateways", gateways.size()),
         gateway_sums);
  rows("IPU-Links", link_sums);
  // The whole run as one stacked bar: dynamic against static.
  double dynamic = 0;
  for (const Json* kind : {&chips, &gateways})
    for (const Json& b : *kind) dynamic += number(b, "dynamic_joules");
  dynamic += number(links, "dynamic_joules");
  const double dynamic_width = joules > 0 ? 900 * dynamic / joules : 0;
  out += fmt::format(
      "<svg class=\"chart\" width=\"900\" height=\"26\" role=\"img\"><rect x=\"0\" y=\"2\" "
      "width=\"{:.2f}\" height=\"22\" fill=\"{}\"><title>dynamic: {} ({})</title></rect><rect "
      "x=\"{:.2f}\" y=\"2\" width=\"{:.2f}\" height=\"22\" fill=\"{}\"><title>static: {} "
      "({})</title></rect></svg>\n",
      dynamic_width, kDynamic, joules_text(dynamic), percent(dynamic, joules), dynamic_width,
      900 - dynamic_width, kStatic, joules_text(joules - dynamic),
      percent(joules - dynamic, joules));
  out += legend({{kDynamic, "dynamic (actions)"}, {kStatic, "static (power x time)"}});
  out += table.html("energy");
  if (chips.size() > 1) {
    Table per_chip({"chip", "dynamic", "static", "energy", "average power"});
    const double seconds = number(e, "seconds");
    for (const Json& c : chips)
      per_chip.row({escape(text(c, "block")), joules_text(number(c, "dynamic_joules")),
                    joules_text(number(c, "static_joules")), joules_text(number(c, "joules")),
                    seconds > 0 ? fmt::format("{:.1f} W", number(c, "joules") / seconds) : "-"});
    out += per_chip.html("chip-energy");
  }

  // Power over the supersteps.
  const Json& steps = array(stats, "supersteps");
  const Json& summary = member(e, "supersteps");
  if (!steps.empty()) {
    out += fmt::format(
        "<h3>Power by superstep</h3>\n<p>Each superstep's average power: its tiles' instructions "
        "since their previous sync, its exchange and barrier, and its chips' static power over "
        "its span (IPU-Links, PCIe and gateways are in the totals only). Mean {:.1f} W (dashed); "
        "the peak, superstep {}, drew {:.1f} W.</p>\n",
        number(summary, "mean_watts"), count(summary, "peak_superstep"),
        number(summary, "peak_watts"));
    out += power_chart(steps, number(summary, "mean_watts"));
  }

  // Each tile's dynamic energy, shaded against the most any tile drew.
  const Json& tiles = member(e, "tiles");
  const Json &ids = array(tiles, "tiles"), &tile_joules = array(tiles, "dynamic_joules");
  if (ids.size() != tile_joules.size())
    throw ReportError("'energy.tiles' has columns of different lengths");
  if (ids.empty()) return out;
  const TileLayout layout(stats);
  std::map<uint64_t, double> of_tile;
  double most = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    const uint64_t t = ids[i].get<uint64_t>();
    if (t >= layout.tiles())
      throw ReportError(
          fmt::format("'energy.tiles' names tile {}, but the machine has {}", t, layout.tiles()));
    of_tile[t] = tile_joules[i].get<double>();
    most = std::max(most, of_tile[t]);
  }
  out += fmt::format(
      "<h3>Energy by tile</h3>\n<p>Each cell is a tile, shaded by the dynamic energy of the "
      "instructions it retired against the most any tile drew ({}); rows are exchange columns, "
      "as in the memory heatmap.</p>\n",
      joules_text(most));
  std::vector<uint64_t> loaded;
  for (const auto& [t, j] : of_tile) loaded.push_back(t);
  return out + chip_heatmaps(layout, layout.chips_holding(loaded), "heatmap tile-energy", "h4",
                             [&](uint64_t t) {
                               const auto it = of_tile.find(t);
                               if (it == of_tile.end())
                                 return HeatCell{false, 0, layout.label(t) + ": not loaded"};
                               return HeatCell{true, most > 0 ? it->second / most : 0,
                                               fmt::format("{}: {} dynamic", layout.label(t),
                                                           joules_text(it->second))};
                             });
}

}  // namespace ipu::report::html
