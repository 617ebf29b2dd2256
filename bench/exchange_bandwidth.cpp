// All-to-all exchange over the full chip, in simulated time: every tile sends and receives one
// 32-bit word per cycle (bench/firmware/all_to_all.c). Prints the aggregate bandwidth of the
// exchange phases beside the published figure: ~8 TB/s (Mk2) and ~11 TB/s (Bow), +-5%.
#include "bench/chip_bench.h"

int bench_body(const std::string& preset) {
  const double target = preset == "mk2" ? 8e12 : 11e12;
  std::unique_ptr<ipu::hw::Platform> platform;
  std::ostringstream console;
  const auto r = ipu::bench::run_image(preset, ALL_TO_ALL_IMAGE, 1472, platform, console);
  uint64_t words = 0, cycles = 0;
  for (const ipu::hw::ExchangeRecord& e : platform->machine().chip(0).exchange().records()) {
    if (e.words == 0) continue;  // the phase after the final sync carries nothing
    words += e.words;
    cycles += e.last_arrival - e.release;  // from the release to the last word's arrival
  }
  const double seconds = static_cast<double>(cycles) / r.clock_hz;
  const double bandwidth = 4.0 * static_cast<double>(words) / seconds;
  fmt::print(
      "exchange_bandwidth {}: {} tiles, {} words in {} exchange cycles = {:.2f} TB/s (target "
      "{:.0f} TB/s +-5%) {}\n",
      preset, r.tiles, words, cycles, bandwidth / 1e12, target / 1e12,
      ipu::bench::verdict(std::abs(bandwidth / target - 1) <= 0.05));
  fmt::print("exchange_bandwidth {}: host {:.2f} s, peak RSS {:.0f} MiB\n", preset, r.host_seconds,
             ipu::bench::peak_rss_mib());
  return 0;
}
