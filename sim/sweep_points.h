// What ipu-sim sweep reads of each point: its statistics file, written by whatever program the
// point ran, so read as untrusted input (bounded nesting, every figure checked for its type),
// and the table's figures from its summary.
#pragma once

#include <istream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ipu::sim {

// The summary of a point's statistics, or why there is none (error non-empty): not JSON, nested
// deeper than kMaxStatsDepth (a deep document's destruction recurses), or no "summary" object.
struct PointSummary {
  nlohmann::ordered_json summary;
  std::string error;
};
inline constexpr int kMaxStatsDepth = 64;
PointSummary read_point_summary(std::istream& in);

// The sweep table's figure columns, in order.
const std::vector<std::string>& figure_columns();
// A summary's figures for those columns: "-" for one missing or of the wrong type.
std::vector<std::string> summary_figures(const nlohmann::ordered_json& summary);

}  // namespace ipu::sim
