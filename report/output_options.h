// What a run writes besides its text report, whoever starts it: ipu-sim, the SDK's Device, the
// examples. Declared once, here, as the run options are (hw/machine/run_options.h): ipu-sim and
// the examples bind their options from this list and sdk::DeviceOptions embeds the struct.
#pragma once

#include <stdexcept>
#include <string>

#include "base/parameters.h"

namespace ipu::report {

struct OutputOptions {
  std::string stats;           // the statistics JSON (run_statistics.h) to this file ("": none)
  std::string trace;           // the BSP trace (Chrome/Perfetto JSON) to this file ("": none)
  bool trace_workers = false;  // in the trace, a lane per worker with a slice per run
  unsigned trace_tiles_per_track = 1;  // tiles per track of the trace (each shows its first)
  std::string report;  // the HTML run report (html_report.h) to this file ("": none)

  bool any() const { return !stats.empty() || !trace.empty() || !report.empty(); }
};

template <typename C, typename Visitor, base::if_config_t<C, OutputOptions> = 0>
void visit_parameters(C& o, Visitor&& v) {
  using base::Parameter;
  v(
      base::Parameter{
          "stats", "file",
          "write statistics as JSON to this file (the configuration, the image, the summary, "
          "every context and superstep)"},
      o.stats);
  v(
      base::Parameter{
          "trace", "file",
          "write the BSP execution trace (Chrome/Perfetto trace-event JSON) to this file"},
      o.trace);
  v(
      base::Parameter{
          "trace-workers", "yes/no",
          "in --trace, a lane per worker under each tile's track with a slice per run, named "
          "by the function it ran"},
      o.trace_workers);
  v(base::Parameter{"trace-tiles-per-track", "tiles",
                    "tiles per track in --trace (each track shows its first tile)", 1, 1 << 20},
    o.trace_tiles_per_track);
  v(base::Parameter{"report", "file",
                    "write the run report, one self-contained HTML page (tile memory heatmap, BSP "
                    "timeline and tile balance, compute, traffic, configuration), to this file"},
    o.report);
}

// Throws std::invalid_argument naming the option.
inline void validate(const OutputOptions& o) {
  base::check_ranges(o, "--");
  if (o.trace_workers && o.trace.empty())
    throw std::invalid_argument("--trace-workers adds lanes to --trace, which is not given");
}

}  // namespace ipu::report
