#include "report/html_parts.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace ipu::report::html {

std::string escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

// 1234567 -> "1,234,567": figures of up to 20 digits stay readable.
std::string grouped(uint64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i != 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string bytes_text(double bytes) {
  if (bytes >= 1 << 30) return fmt::format("{:.2f} GiB", bytes / (1 << 30));
  if (bytes >= 1 << 20) return fmt::format("{:.2f} MiB", bytes / (1 << 20));
  if (bytes >= 1 << 10) return fmt::format("{:.1f} KiB", bytes / (1 << 10));
  return fmt::format("{:.0f} B", bytes);
}

std::string seconds_text(double s) {
  if (s >= 1) return fmt::format("{:.3f} s", s);
  if (s >= 1e-3) return fmt::format("{:.3f} ms", s * 1e3);
  return fmt::format("{:.3f} us", s * 1e6);
}

std::string percent(double part, double whole) {
  return whole > 0 ? fmt::format("{:.1f}%", 100.0 * part / whole) : std::string("-");
}

// Reading the statistics: a missing member is 0 (or empty), one of the wrong type a
// ReportError naming it.
const Json& member(const Json& j, const char* key) {
  static const Json kNull;
  return j.is_object() && j.contains(key) ? j.at(key) : kNull;
}
double number(const Json& j, const char* key) {
  const Json& v = member(j, key);
  if (v.is_null()) return 0;
  if (!v.is_number()) throw ReportError(fmt::format("'{}' is {}, not a number", key, v.dump()));
  return v.get<double>();
}
uint64_t count(const Json& j, const char* key) {
  const double v = number(j, key);
  if (v < 0) throw ReportError(fmt::format("'{}' is negative ({})", key, v));
  return static_cast<uint64_t>(v);
}
std::string text(const Json& j, const char* key) {
  const Json& v = member(j, key);
  if (v.is_null()) return {};
  return v.is_string() ? v.get<std::string>() : v.dump();
}
const Json& array(const Json& j, const char* key) {
  static const Json kEmpty = Json::array();
  const Json& v = member(j, key);
  if (v.is_null()) return kEmpty;
  if (!v.is_array()) throw ReportError(fmt::format("'{}' is not an array", key));
  return v;
}

// A superstep's chip: that of a chip's own sync, -1 for syncs across chips and with the host.
int64_t chip_of(const Json& step) { return static_cast<int64_t>(number(step, "chip")); }
std::string chip_text(int64_t chip) { return chip < 0 ? std::string("all") : std::to_string(chip); }

std::string legend(const std::vector<std::pair<const char*, std::string>>& keys) {
  std::string out = "<div class=\"legend\">";
  for (const auto& [colour, label] : keys)
    out += fmt::format("<span><i style=\"background:{}\"></i>{}</span>", colour, escape(label));
  return out + "</div>\n";
}

// A horizontal bar per label, longest first as given; values in `unit`.
std::string bar_chart(const std::vector<std::pair<std::string, double>>& bars, const char* colour,
                      const char* unit) {
  if (bars.empty()) return {};
  double most = 0;
  for (const auto& b : bars) most = std::max(most, b.second);
  const int label_width = 300, plot = 560, row = 18;
  std::string out = fmt::format("<svg class=\"chart\" width=\"{}\" height=\"{}\" role=\"img\">\n",
                                label_width + plot + 140, row * static_cast<int>(bars.size()) + 4);
  for (size_t i = 0; i < bars.size(); ++i) {
    const double w = most > 0 ? plot * bars[i].second / most : 0;
    const double y = static_cast<double>(i * row);
    std::string label = bars[i].first;
    if (label.size() > 44) label = label.substr(0, 41) + "...";
    out += fmt::format(
        "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>"
        "<rect x=\"{}\" y=\"{}\" width=\"{:.2f}\" height=\"{}\" fill=\"{}\"><title>{}: {} "
        "{}</title></rect>"
        "<text x=\"{:.2f}\" y=\"{}\">{}</text>\n",
        label_width - 6, y + 13, escape(label), label_width, y + 2, std::max(w, 0.5), row - 4,
        colour, escape(bars[i].first), grouped(static_cast<uint64_t>(bars[i].second)), unit,
        label_width + w + 4, y + 13, grouped(static_cast<uint64_t>(bars[i].second)));
  }
  return out + "</svg>\n";
}

// Used SRAM 0 (light) to full (dark): five stops of a sequential orange scale, whose lightest
// still stands apart from a tile that was not loaded.
std::string heat_colour(double used) {
  static const int kStops[5][3] = {
      {254, 230, 206}, {253, 174, 107}, {253, 141, 60}, {217, 72, 1}, {127, 39, 4}};
  used = std::clamp(used, 0.0, 1.0) * 4;
  const int i = std::min(static_cast<int>(used), 3);
  const double f = used - i;
  int rgb[3];
  for (int k = 0; k < 3; ++k)
    rgb[k] = static_cast<int>(std::lround(kStops[i][k] + f * (kStops[i + 1][k] - kStops[i][k])));
  return fmt::format("#{:02x}{:02x}{:02x}", rgb[0], rgb[1], rgb[2]);
}

std::string tile_heatmap(const std::string& svg_class, uint64_t chip, uint64_t per_chip,
                         uint64_t per_column, const std::function<HeatCell(uint64_t)>& cell) {
  const uint64_t columns = (per_chip + per_column - 1) / per_column;
  std::vector<HeatCell> cells(per_chip);
  std::vector<bool> used(columns, false);
  for (uint64_t id = 0; id < per_chip; ++id) {
    cells[id] = cell(chip * per_chip + id);
    if (cells[id].loaded) used[id / per_column] = true;
  }
  // Only the exchange columns that hold a loaded tile: a program on 16 of 1472 tiles is one
  // row, not 23 rows of empty cells. (A chip with none loaded is drawn whole.)
  std::vector<uint64_t> drawn;
  for (uint64_t col = 0; col < columns; ++col)
    if (used[col]) drawn.push_back(col);
  if (drawn.empty())
    for (uint64_t col = 0; col < columns; ++col) drawn.push_back(col);
  const int size = per_column > 96 ? 6 : 10, pitch = size + 1, left = 64;
  std::string out =
      fmt::format("<svg class=\"{}\" data-chip=\"{}\" width=\"{}\" height=\"{}\" role=\"img\">\n",
                  svg_class, chip, left + per_column * pitch, drawn.size() * pitch + 2);
  for (size_t k = 0; k < drawn.size(); ++k)
    out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">col {}</text>\n", left - 4,
                       k * pitch + size, drawn[k]);
  for (size_t k = 0; k < drawn.size(); ++k)
    for (uint64_t id = drawn[k] * per_column; id < std::min(per_chip, (drawn[k] + 1) * per_column);
         ++id) {
      const HeatCell& c = cells[id];
      out += fmt::format(
          "<rect class=\"tile{}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" "
          "fill=\"{}\"><title>{}</title></rect>\n",
          c.loaded ? "" : " idle", left + (id % per_column) * pitch, k * pitch, size, size,
          c.loaded ? heat_colour(c.shade) : kIdle, escape(c.title));
    }
  out += "</svg>\n";
  if (drawn.size() < columns)
    out += fmt::format(
        "<p class=\"sub\">{} of the chip's {} exchange columns hold no loaded tile and are not "
        "drawn.</p>\n",
        columns - drawn.size(), columns);
  return out;
}

TileLayout::TileLayout(const Json& stats)
    : per_chip(std::max<uint64_t>(count(member(stats, "chip"), "tiles"), 1)),
      chips(std::max<uint64_t>(count(member(stats, "machine"), "chips"), 1)),
      per_column(
          std::max<uint64_t>(count(member(stats, "config"), "exchange.tiles-per-column"), 1)) {}

std::string TileLayout::label(uint64_t machine_tile) const {
  return chips > 1
             ? fmt::format("chip {} tile {}", machine_tile / per_chip, machine_tile % per_chip)
             : fmt::format("tile {}", machine_tile);
}

std::vector<uint64_t> TileLayout::chips_holding(const std::vector<uint64_t>& tiles) const {
  std::vector<uint64_t> out;
  for (const uint64_t t : tiles)
    if (out.empty() || out.back() != t / per_chip) out.push_back(t / per_chip);
  return out;
}

std::string chip_heatmaps(const TileLayout& layout, const std::vector<uint64_t>& chips,
                          const std::string& svg_class, const char* heading,
                          const std::function<HeatCell(uint64_t)>& cell) {
  std::string out;
  const size_t drawn = std::min<size_t>(chips.size(), kHeatmapChips);
  for (size_t k = 0; k < drawn; ++k) {
    if (layout.chips > 1) out += fmt::format("<{0}>IPU {1}</{0}>\n", heading, chips[k]);
    out += tile_heatmap(svg_class, chips[k], layout.per_chip, layout.per_column, cell);
  }
  if (drawn < chips.size())
    out += fmt::format("<p>{} more chips are not drawn.</p>\n", chips.size() - drawn);
  return out;
}

}  // namespace ipu::report::html
