// The run report: one self-contained HTML page drawn from a run's statistics (ipu-sim --stats
// JSON, with the SDK's compute sets and codelets when it profiled them), in the spirit of
// Graphcore's PopVision Graph Analyser. Charts are SVG written here, with a few lines of inline
// script for sorting tables; the page loads nothing, so it opens offline and in a mail client.
//
// Sections: the run's summary; each tile's memory (code, data, stacks, free) as a heatmap laid
// out as the chip's exchange columns; the BSP timeline and each superstep's tile balance; the
// compute sets and codelets (or the workers' functions); exchange, IPU-Link and
// streaming-memory traffic; the energy by block and action, each superstep's power and each
// tile's energy as a heatmap; the per-context counts; and the configuration.
#pragma once

#include <ostream>
#include <stdexcept>
#include <string>

namespace ipu::report {

// The statistics are not JSON or not as ipu-sim writes them; the message names what is wrong.
struct ReportError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Writes the page for `stats` (the statistics' JSON text). `title` heads the page (for example
// the image's name). Throws ReportError.
void write_html_report(std::ostream& out, const std::string& stats, const std::string& title);

// Chips drawn in full in the memory heatmap; a larger machine's others are in the chip table.
inline constexpr unsigned kHeatmapChips = 16;
// Supersteps drawn in the timeline and balance charts, and rows in the superstep table.
inline constexpr size_t kChartSupersteps = 4000;
inline constexpr size_t kTableRows = 200;

}  // namespace ipu::report
