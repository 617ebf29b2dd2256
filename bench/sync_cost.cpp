// Internal sync cost over the full chip: tiles sync back to back with nothing between
// (bench/firmware/sync_loop.c). Prints the measured release latency (last arrival to release)
// and the cycles per empty superstep beside the configured sync.internal-cycles.
#include "bench/chip_bench.h"

int bench_body(const std::string& preset) {
  std::unique_ptr<ipu::hw::Platform> platform;
  std::ostringstream console;
  const auto r = ipu::bench::run_image(preset, SYNC_LOOP_IMAGE, 1472, platform, console);
  const auto& barriers = platform->machine().chip(0).sync_network().barriers();
  const unsigned configured = platform->machine().chip(0).config().sync.internal_cycles;
  uint64_t latency_min = ~uint64_t{0}, latency_max = 0;
  for (const auto& b : barriers) {
    const uint64_t last = *std::max_element(b.arrivals.begin(), b.arrivals.end());
    latency_min = std::min(latency_min, b.release - last);
    latency_max = std::max(latency_max, b.release - last);
  }
  const double period = static_cast<double>(barriers.back().release - barriers.front().release) /
                        static_cast<double>(barriers.size() - 1);
  fmt::print(
      "sync_cost {}: {} syncs of {} tiles: last arrival to release {}..{} cycles (configured {}) "
      "{}; "
      "{:.0f} cycles per empty superstep ({:.1f} ns)\n",
      preset, barriers.size(), r.tiles, latency_min, latency_max, configured,
      ipu::bench::verdict(latency_min == configured && latency_max == configured), period,
      period / r.clock_hz * 1e9);
  return 0;
}
