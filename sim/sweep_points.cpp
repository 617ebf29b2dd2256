#include "sim/sweep_points.h"

#include <fmt/format.h>

#include <cstdint>
#include <stdexcept>

namespace ipu::sim {

using Json = nlohmann::ordered_json;

PointSummary read_point_summary(std::istream& in) {
  const Json::parser_callback_t bounded = [](int depth, Json::parse_event_t, Json&) {
    if (depth > kMaxStatsDepth)
      throw std::runtime_error(fmt::format("nested deeper than {} levels", kMaxStatsDepth));
    return true;
  };
  PointSummary point;
  try {
    Json stats = Json::parse(in, bounded);
    if (!stats.is_object() || !stats.contains("summary") || !stats["summary"].is_object())
      throw std::runtime_error("no \"summary\" object");
    point.summary = std::move(stats["summary"]);
  } catch (const std::exception& e) {
    point.error = e.what();
  }
  return point;
}

const std::vector<std::string>& figure_columns() {
  static const std::vector<std::string> columns = {
      "cycles",    "time (us)",    "TFLOP/s",       "energy (J)",   "W",
      "TFLOP/s/W", "exchange (B)", "IPU-Links (B)", "streaming (B)"};
  return columns;
}

namespace {

bool is_number(const Json& s, const char* key) { return s.contains(key) && s[key].is_number(); }

std::string figure(const Json& summary, const char* key, const char* format, double scale = 1) {
  if (!is_number(summary, key)) return "-";
  return fmt::format(fmt::runtime(format), summary[key].get<double>() * scale);
}

}  // namespace

std::vector<std::string> summary_figures(const Json& s) {
  std::vector<std::string> row;
  row.push_back(figure(s, "cycles", "{:.0f}"));
  row.push_back(figure(s, "seconds", "{:.2f}", 1e6));
  row.push_back(figure(s, "tflops", "{:.3f}"));
  row.push_back(figure(s, "energy_joules", "{:.4g}"));
  row.push_back(figure(s, "watts", "{:.1f}"));
  const bool per_watt =
      is_number(s, "tflops") && is_number(s, "watts") && s["watts"].get<double>() > 0;
  row.push_back(
      per_watt ? fmt::format("{:.3f}", s["tflops"].get<double>() / s["watts"].get<double>()) : "-");
  row.push_back(figure(s, "exchange_bytes", "{:.0f}"));
  row.push_back(figure(s, "ipulink_bytes", "{:.0f}"));
  const bool streaming =
      s.contains("streaming_bytes_read") && s["streaming_bytes_read"].is_number_unsigned() &&
      s.contains("streaming_bytes_written") && s["streaming_bytes_written"].is_number_unsigned();
  row.push_back(streaming ? fmt::format("{}", s["streaming_bytes_read"].get<uint64_t>() +
                                                  s["streaming_bytes_written"].get<uint64_t>())
                          : "-");
  return row;
}

}  // namespace ipu::sim
