// Local SRAM bandwidth over the full chip: on every tile six workers stream with
// ipu.ld2x64st64 (24 bytes per issue; bench/firmware/sram_stream.c). Prints the aggregate
// bandwidth beside the published figure: 47.5 TB/s (Mk2) and 65.4 TB/s (Bow), +-5%.
#include "bench/chip_bench.h"

int bench_body(const std::string& preset) {
  const double target = preset == "mk2" ? 47.5e12 : 65.4e12;
  std::unique_ptr<ipu::hw::Platform> platform;
  std::ostringstream console;
  const auto r = ipu::bench::run_image(preset, SRAM_STREAM_IMAGE, 1472, platform, console);
  const auto symbols = ipu::sdk::read_elf(SRAM_STREAM_IMAGE).symbols;
  const uint32_t window_symbol = symbols.at("window"), whole_symbol = symbols.at("whole");
  constexpr double kBytesPerTile =
      24.0 * 6 * 128 * SRAM_ITERATIONS;  // six workers, 128 per iteration
  uint32_t slowest = 0, slowest_whole = 0;
  for (unsigned t : platform->machine().chip(0).active_tiles()) {
    slowest =
        std::max(slowest, platform->machine().chip(0).tile(t).core().read_word(window_symbol));
    slowest_whole =
        std::max(slowest_whole, platform->machine().chip(0).tile(t).core().read_word(whole_symbol));
  }
  const double bytes = kBytesPerTile * static_cast<double>(r.tiles);
  const double bandwidth = bytes / (slowest / r.clock_hz);
  fmt::print(
      "sram_bandwidth {}: {} tiles x {:.0f} bytes steady state {} cycles = {:.1f} B/cycle/tile = "
      "{:.1f} TB/s "
      "(target {:.1f} TB/s +-5%) {}\n",
      preset, r.tiles, kBytesPerTile, slowest, kBytesPerTile / slowest, bandwidth / 1e12,
      target / 1e12, ipu::bench::verdict(std::abs(bandwidth / target - 1) <= 0.05));
  fmt::print(
      "sram_bandwidth {}: whole run with worker start-up and join {} cycles = {:.1f} "
      "B/cycle/tile\n",
      preset, slowest_whole, kBytesPerTile / slowest_whole);
  return 0;
}
