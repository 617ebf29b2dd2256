// The parts the HTML report's sections share (report/html_report.h): its colours, number
// formats, reading the statistics (a missing member is 0, one of the wrong type a ReportError
// naming it), sortable tables, legends, bar charts and the tile heatmap.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "report/html_report.h"

namespace ipu::report::html {

using Json = nlohmann::ordered_json;

// Colours: one per memory kind and per BSP phase, the same in every chart and legend.
inline constexpr const char* kCode = "#4e79a7";
inline constexpr const char* kData = "#f28e2b";
inline constexpr const char* kStacks = "#b07aa1";
inline constexpr const char* kFree = "#e6e6e6";
inline constexpr const char* kCompute = "#59a14f";
inline constexpr const char* kSync = "#e15759";
inline constexpr const char* kExchange = "#4e79a7";
inline constexpr const char* kIdle = "#ffffff";  // a tile nothing was loaded on (outlined)

std::string escape(const std::string& text);
// 1234567 -> "1,234,567": figures of up to 20 digits stay readable.
std::string grouped(uint64_t n);
std::string bytes_text(double bytes);
std::string seconds_text(double s);
std::string percent(double part, double whole);

const Json& member(const Json& j, const char* key);
double number(const Json& j, const char* key);
uint64_t count(const Json& j, const char* key);
std::string text(const Json& j, const char* key);
const Json& array(const Json& j, const char* key);
// A superstep's chip: that of a chip's own sync, -1 for syncs across chips and with the host.
int64_t chip_of(const Json& step);
std::string chip_text(int64_t chip);

// A sortable table: a header row, then rows of cells (already escaped HTML).
class Table {
 public:
  explicit Table(std::vector<std::string> columns) : columns_(std::move(columns)) {}
  void row(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }
  size_t size() const { return rows_.size(); }
  std::string html(const std::string& id = "") const {
    std::string out = fmt::format("<table class=\"sortable\"{}><thead><tr>",
                                  id.empty() ? "" : " id=\"" + id + "\"");
    for (const std::string& c : columns_) out += "<th>" + escape(c) + "</th>";
    out += "</tr></thead><tbody>\n";
    for (const auto& r : rows_) {
      out += "<tr>";
      for (const std::string& c : r) out += "<td>" + c + "</td>";
      out += "</tr>\n";
    }
    return out + "</tbody></table>\n";
  }

 private:
  std::vector<std::string> columns_;
  std::vector<std::vector<std::string>> rows_;
};

std::string legend(const std::vector<std::pair<const char*, std::string>>& keys);
// A horizontal bar per label, longest first as given; values in `unit`.
std::string bar_chart(const std::vector<std::pair<std::string, double>>& bars, const char* colour,
                      const char* unit);
// 0 (light) to 1 (dark) on a sequential orange scale, whose lightest still stands apart from a
// tile that was not loaded.
std::string heat_colour(double shade);

// One chip's tiles laid out as its exchange columns (a row per column, a cell per tile), each
// shaded by its figure: `cell` gives a machine tile's shade (0 to 1) and hover text.
struct HeatCell {
  bool loaded = false;  // false: drawn outlined, as a tile nothing ran on
  double shade = 0;
  std::string title;
};
std::string tile_heatmap(const std::string& svg_class, uint64_t chip, uint64_t per_chip,
                         uint64_t per_column, const std::function<HeatCell(uint64_t)>& cell);

// The machine's layout as the statistics give it: tiles a chip, chips, tiles an exchange column.
struct TileLayout {
  explicit TileLayout(const Json& stats);
  uint64_t per_chip = 1, chips = 1, per_column = 1;
  uint64_t tiles() const { return per_chip * chips; }
  // "tile T" on one chip, "chip C tile T" on a machine.
  std::string label(uint64_t machine_tile) const;
  // The chips holding at least one of `tiles` (machine tile numbers, ascending), in order.
  std::vector<uint64_t> chips_holding(const std::vector<uint64_t>& tiles) const;
};

// tile_heatmap for each of `chips` (at most kHeatmapChips, each headed "IPU C" by `heading` on a
// machine), then how many more are not drawn.
std::string chip_heatmaps(const TileLayout& layout, const std::vector<uint64_t>& chips,
                          const std::string& svg_class, const char* heading,
                          const std::function<HeatCell(uint64_t)>& cell);

// The energy section (html_energy.cpp): totals, the breakdown by block and action, each
// superstep's power, and a heatmap of each tile's dynamic energy.
std::string energy_section(const Json& stats);

}  // namespace ipu::report::html
