// libFuzzer target: a sweep point's statistics file, which ipu-sim sweep reads from whatever
// program the point ran (sim/sweep_points.h). Any bytes give a summary or the reason there is
// none, and a summary gives one figure per column; a crash, a sanitizer report, deep recursion
// or a hang is a finding.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>

#include "sim/sweep_points.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  const ipu::sim::PointSummary point = ipu::sim::read_point_summary(in);
  if (point.error.empty() && !point.summary.is_object()) std::abort();
  if (ipu::sim::summary_figures(point.summary).size() != ipu::sim::figure_columns().size())
    std::abort();
  return 0;
}
