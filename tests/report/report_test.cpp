// The HTML run report (report/html_report.h) drawn from statistics written by hand, so every
// figure it shows is derived here independently: the heatmap's cells and their figures, the
// timeline's phases in pixels, the tile balance, escaping, and the errors for statistics that
// are not as ipu-sim writes them.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>

#include "report/html_report.h"

namespace {

using ipu::report::ReportError;
using ipu::report::write_html_report;
using testing::HasSubstr;
using testing::Not;

// Two chips of 4 tiles in exchange columns of 2; tiles 0, 1 (chip 0) and 5 (chip 1 tile 1)
// loaded in 1000-byte SRAMs. Two supersteps over 1000 cycles.
const char* const kStats = R"({
  "config": {"preset": "mk2", "exchange.tiles-per-column": 2},
  "image": {"file": "a <b>.elf", "checksum": "0x00000001"},
  "summary": {"cycles": 1000, "seconds": 1e-6, "instructions": 500, "flops": 12800,
              "tflops": 0.0128, "amp_peak_fraction": 0.0125, "supersteps": 2,
              "exchange_bytes": 64, "result": "exited", "exit_status": 3},
  "contexts": [{"context": "supervisor", "instructions": 500, "issue_slots": 520, "runs": 3,
                "active_cycles": 3000}],
  "tile_memory": {"sram_bytes": 1000, "stack_bytes": 100, "tiles": [0, 1, 5],
                  "code": [100, 200, 300], "data": [50, 0, 100], "stacks": [100, 100, 100],
                  "free": [750, 700, 500]},
  "chip": {"preset": "mk2", "tiles": 4, "active_tiles": 3, "clock_hz": 1e9},
  "machine": {"chips": 2, "ipulinks": [], "gateways": []},
  "cycles": 1000,
  "supersteps": [
    {"index": 0, "group": 1073741824, "sync": "external", "chip": -1, "tiles": 3,
     "release_cycle": 300,
     "compute_cycles": {"min": 100, "mean": 150, "max": 200, "min_tile": 0, "max_tile": 5},
     "sync_wait_cycles": {"max": 10},
     "exchange": {"bytes": 64, "cycles": 50, "last_arrival_cycle": 340, "inter_chip_bytes": 0},
     "streaming": {}},
    {"index": 1, "group": 7, "chip": -1, "tiles": 3, "release_cycle": 800,
     "compute_cycles": {"min": 300, "mean": 300, "max": 300, "min_tile": 1, "max_tile": 1},
     "sync_wait_cycles": {"max": 20},
     "exchange": {"bytes": 0, "cycles": 200, "last_arrival_cycle": 0}, "streaming": {}}]
})";

std::string report(const std::string& stats) {
  std::ostringstream out;
  write_html_report(out, stats, "test <run>");
  return out.str();
}

size_t occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(Report, HeatmapHasACellPerTileWithItsMemory) {
  const std::string html = report(kStats);
  EXPECT_THAT(html,
              HasSubstr("<div class=\"card\"><b>12,800: 0.0128 TFLOP/s, 1.25% of the AMP&#39;s "
                        "peak</b><span>flops</span></div>"));
  EXPECT_EQ(occurrences(html, "<svg class=\"heatmap\""), 2u);  // both chips have a loaded tile
  // Only the exchange columns holding a loaded tile: column 0 of each chip (tiles 0, 1 and 5);
  // column 1 (tiles 2, 3 and 6, 7) holds none.
  EXPECT_EQ(occurrences(html, "<rect class=\"tile"), 4u);         // 2 chips x 2 tiles
  EXPECT_EQ(occurrences(html, "<rect class=\"tile idle\""), 1u);  // chip 1's tile 0
  EXPECT_EQ(occurrences(html,
                        "1 of the chip's 2 exchange columns hold no loaded tile and are not "
                        "drawn."),
            2u);  // under each chip's memory heatmap
  // Tile 5 is chip 1's tile 1: 300 + 100 + 100 = 500 of 1000 bytes used.
  EXPECT_THAT(html, HasSubstr("chip 1 tile 1: 500 B used (50.0%): code 300, data 100, stacks "
                              "100, free 500"));
  EXPECT_THAT(html, HasSubstr("The fullest is chip 1 tile 1: 500 B used (50.0%)"));
  // Totals: code 600, data 150, stacks 300, free 1950 of 3000.
  EXPECT_THAT(html, HasSubstr("code 600 B (20.0%), data 150 B (5.0%), stacks 300 B (10.0%), "
                              "free 1.9 KiB (65.0%)"));
  // Columns of 2 tiles: chip 1's tile 1 is in column 0, second cell: x = 64 + 11, y = 0.
  EXPECT_THAT(html, HasSubstr("<rect class=\"tile\" x=\"75\" y=\"0\" width=\"10\" height=\"10\""));
}

TEST(Report, TimelineDrawsEachPhaseOfTheBusiestTile) {
  const std::string html = report(kStats);
  // 1000 cycles over 1000 pixels from x = 150: superstep 0 computes 0-200, syncs to 300 and
  // exchanges for 50; superstep 1 computes from 350 for 300, syncs to 800; its exchange had
  // no traffic, so the run computes from 800 to its end.
  EXPECT_THAT(html, HasSubstr("<rect x=\"150.00\" y=\"2\" width=\"200.00\" height=\"18\" "
                              "fill=\"#59a14f\"><title>superstep 0: compute, busiest tile 5 for "
                              "200 cycles</title>"));
  EXPECT_THAT(html, HasSubstr("<rect x=\"450.00\" y=\"2\" width=\"50.00\""));
  EXPECT_THAT(html, HasSubstr("<rect x=\"500.00\" y=\"2\" width=\"300.00\""));
  EXPECT_THAT(html, HasSubstr("<rect x=\"800.00\" y=\"2\" width=\"150.00\" height=\"18\" "
                              "fill=\"#e15759\"><title>superstep 1: sync, released at cycle "
                              "800</title>"));
  EXPECT_THAT(html, HasSubstr("<rect x=\"950.00\" y=\"2\" width=\"200.00\" height=\"18\" "
                              "fill=\"#59a14f\"><title>after the last sync"));
  EXPECT_THAT(html, Not(HasSubstr("superstep 1: exchange")));
  // Balance: (150 + 300) / (200 + 300).
  EXPECT_THAT(html, HasSubstr("over the run: 90.0%"));
  EXPECT_THAT(html, HasSubstr("exited with status 3"));
  // The superstep table names a sync by its kind, or by its group without one.
  EXPECT_THAT(html, HasSubstr("<tr><td>0</td><td>external</td><td>all</td>"));
  EXPECT_THAT(html, HasSubstr("<tr><td>1</td><td>7</td><td>all</td>"));
}

// kStats with an energy block: two chips of 1000 integer instructions each (4 nJ a chip) and
// 50 uJ of static energy each; superstep 0 drew 100 W, superstep 1 250 W (the peak); tiles
// 0, 1 and 5 drew 1, 2 and 4 uJ.
std::string stats_with_energy() {
  nlohmann::ordered_json s = nlohmann::ordered_json::parse(kStats);
  auto chip = [](int c) {
    return nlohmann::ordered_json{
        {"block", "chip " + std::to_string(c)},
        {"dynamic_joules", 4e-9},
        {"static_joules", 5e-5},
        {"joules", 5e-5 + 4e-9},
        {"actions",
         {{{"action", "tile.integer"}, {"unit", "instructions"}, {"count", 1000}, {"joules", 4e-9}},
          {{"action", "static"}, {"unit", "s"}, {"count", 1e-6}, {"joules", 5e-5}}}}};
  };
  s["energy"] = {{"seconds", 1e-6},
                 {"joules", 1.00008e-4},
                 {"watts", 100.008},
                 {"watts_per_chip", 50.004},
                 {"chips", {chip(0), chip(1)}},
                 {"gateways", nlohmann::ordered_json::array()},
                 {"ipulinks",
                  {{"block", "ipulinks"},
                   {"dynamic_joules", 0},
                   {"static_joules", 0},
                   {"joules", 0},
                   {"actions", nlohmann::ordered_json::array()}}},
                 {"supersteps",
                  {{"count", 2},
                   {"joules", 6e-5},
                   {"mean_watts", 200},
                   {"peak_watts", 250},
                   {"peak_superstep", 1}}},
                 {"tiles", {{"tiles", {0, 1, 5}}, {"dynamic_joules", {1e-6, 2e-6, 4e-6}}}}};
  s["supersteps"][0]["energy"] = {{"joules", 1e-5}, {"seconds", 1e-7}, {"watts", 100}};
  s["supersteps"][1]["energy"] = {{"joules", 5e-5}, {"seconds", 2e-7}, {"watts", 250}};
  return s.dump();
}

TEST(Report, EnergyShowsTheBreakdownEachSuperstepsPowerAndEachTilesEnergy) {
  const std::string html = report(stats_with_energy());
  EXPECT_THAT(html, HasSubstr("The run drew 100.008 uJ in 1.000 us: 100.0 W on average, 50.0 W "
                              "a chip."));
  // The chips' lines summed: 2000 instructions, 8 nJ; 2 us of static time, 100 uJ (99.99%).
  EXPECT_THAT(html, HasSubstr("<td>2 chips</td><td>tile.integer</td><td>2,000</td>"
                              "<td>instructions</td><td>0.008 uJ</td><td>0.0%</td>"));
  EXPECT_THAT(html, HasSubstr("<td>2 chips</td><td>static</td><td>2.000 us</td><td>block "
                              "time</td><td>100.000 uJ</td><td>100.0%</td>"));
  EXPECT_THAT(html, HasSubstr("<td>chip 1</td><td>0.004 uJ</td><td>50.000 uJ</td>"));
  // Power: 250 W is the full 120 pixels; superstep 0's 100 W is 48 high, from y = 72, its
  // column 400 of 500 pixels wide; the mean, 200 W, is the dashed line at y = 24.
  EXPECT_THAT(html, HasSubstr("the peak, superstep 1, drew 250.0 W"));
  EXPECT_THAT(html, HasSubstr("<rect x=\"150.00\" y=\"72.00\" width=\"400.00\" height=\"48.00\" "
                              "fill=\"#f28e2b\"><title>superstep 0: 100.0 W, 10.000 uJ over "
                              "0.100 us</title></rect>"));
  EXPECT_THAT(html, HasSubstr("<rect x=\"650.00\" y=\"0.00\" width=\"400.00\" height=\"120.00\""));
  EXPECT_THAT(html, HasSubstr("y1=\"24.00\" y2=\"24.00\""));
  // Tiles: a heatmap per chip with a tile; chip 1 tile 1 drew the most (the darkest stop),
  // tile 0 a quarter of it (the scale's second stop).
  EXPECT_EQ(occurrences(html, "<svg class=\"heatmap tile-energy\""), 2u);
  EXPECT_THAT(html, HasSubstr("fill=\"#7f2704\"><title>chip 1 tile 1: 4.000 uJ dynamic</title>"));
  EXPECT_THAT(html, HasSubstr("fill=\"#fdae6b\"><title>chip 0 tile 0: 1.000 uJ dynamic</title>"));
  EXPECT_THAT(html, HasSubstr("<title>chip 1 tile 0: not loaded</title>"));
  EXPECT_THAT(html, Not(HasSubstr("<title>chip 0 tile 2:")));  // its column holds none
}

TEST(Report, EnergyTilesOfDifferentLengthsOrBeyondTheMachineAreRefused) {
  nlohmann::ordered_json s = nlohmann::ordered_json::parse(stats_with_energy());
  s["energy"]["tiles"]["dynamic_joules"] = {1e-6};
  EXPECT_THAT([&] { report(s.dump()); }, ::testing::ThrowsMessage<ReportError>(HasSubstr(
                                             "'energy.tiles' has columns of different lengths")));
  s["energy"]["tiles"] = {{"tiles", {8}}, {"dynamic_joules", {1e-6}}};
  EXPECT_THAT([&] { report(s.dump()); },
              ::testing::ThrowsMessage<ReportError>(
                  HasSubstr("'energy.tiles' names tile 8, but the machine has 8")));
}

TEST(Report, EscapesWhatItQuotesAndLoadsNothing) {
  const std::string html = report(kStats);
  EXPECT_THAT(html, HasSubstr("<title>test &lt;run&gt;</title>"));
  EXPECT_THAT(html, HasSubstr("image a &lt;b&gt;.elf"));
  EXPECT_THAT(html, Not(HasSubstr("<b>.elf")));
  // Self-contained: no external script, style, image or font.
  EXPECT_FALSE(std::regex_search(html, std::regex(R"((src|href)=["']?(https?:)?//)")));
  EXPECT_THAT(html, Not(HasSubstr("@import")));
}

// The time off the chips, in the chip's clock: 1,500 and 250 cycles at 1 GHz. Statistics
// without it (kStats) show no such card.
TEST(Report, TheSummaryShowsTheTimeOffTheChips) {
  nlohmann::json stats = nlohmann::json::parse(kStats);
  stats["summary"]["streaming_phase_cycles"] = 1500;
  stats["summary"]["cross_chip_phase_cycles"] = 250;
  EXPECT_THAT(report(stats.dump()), HasSubstr("1.500 us streaming, 0.250 us between chips"));
  EXPECT_THAT(report(kStats), Not(HasSubstr("off the chips")));
}

TEST(Report, StatisticsWithoutSuperstepsOrMemoryStillMakeAPage) {
  const std::string html = report(R"({"summary": {"cycles": 42}, "cycles": 42})");
  EXPECT_THAT(html, HasSubstr("carry no memory layout"));
  EXPECT_THAT(html, HasSubstr("one compute phase of 42 cycles"));
  EXPECT_EQ(occurrences(html, "<rect class=\"tile"), 0u);
}

TEST(Report, StatisticsNotAsIpuSimWritesThemAreRefusedWithTheReason) {
  auto error = [](const std::string& stats) {
    try {
      report(stats);
    } catch (const ReportError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(error("{\"cycles\": "), HasSubstr("the statistics are not JSON"));
  EXPECT_THAT(error("[1, 2]"), HasSubstr("not a JSON object"));
  EXPECT_THAT(error(R"({"summary": {"cycles": "many"}})"),
              HasSubstr("'cycles' is \"many\", not a number"));
  EXPECT_THAT(error(R"({"summary": {"cycles": -5}})"), HasSubstr("'cycles' is negative"));
  EXPECT_THAT(error(R"({"supersteps": {"index": 0}})"), HasSubstr("'supersteps' is not an array"));
  EXPECT_THAT(error(R"({"tile_memory": {"tiles": [0, 1], "code": [1]}})"),
              HasSubstr("'tile_memory' has columns of different lengths"));
  EXPECT_THAT(error(R"({"chip": {"tiles": 4}, "tile_memory": {"tiles": [4], "code": [1],
                       "data": [1], "stacks": [1], "free": [1]}})"),
              HasSubstr("'tile_memory' names tile 4, but the machine has 4"));
  EXPECT_THAT(error(R"({"tile_memory": {"tiles": ["x"], "code": [1], "data": [1],
                       "stacks": [1], "free": [1]}})"),
              HasSubstr("the statistics are not as ipu-sim writes them"));
}

}  // namespace
