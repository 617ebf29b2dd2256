// External sync cost on machines of 4, 16 and 64 chips (bench/firmware/xsync_loop.c: tile 0 of
// every chip syncs externally back to back). Prints last arrival to release beside Graphcore's
// model: sync.internal-cycles + ceil(2 x hops x 15 ns x clock), hops = 1 + (chips / 2) / 2.
#define BENCH_RUNS \
  { "m2000", "pod16", "pod64", "bow2000", "bow-pod16", "bow-pod64" }
#include <cmath>

#include "bench/chip_bench.h"

int bench_body(const std::string& preset) {
  std::unique_ptr<ipu::hw::Platform> platform;
  std::ostringstream console;
  const unsigned chips = ipu::hw::machine_preset(preset).chips;
  const char* image = chips == 4 ? XSYNC_4 : chips == 16 ? XSYNC_16 : XSYNC_64;
  const auto r = ipu::bench::run_image(preset, image, 1472, platform, console);
  const auto& m = platform->machine();
  const auto& barriers = m.sync_network().barriers();
  uint64_t lo = ~uint64_t{0}, hi = 0;
  for (const auto& b : barriers) {
    const uint64_t last = *std::max_element(b.arrivals.begin(), b.arrivals.end());
    lo = std::min(lo, b.release - last);
    hi = std::max(hi, b.release - last);
  }
  const double clock = m.config().chip.tile.clock_hz;
  const unsigned hops = 1 + (chips / 2) / 2;
  const double model_ns = 2.0 * hops * 15.0;
  const uint64_t model = m.config().chip.sync.internal_cycles +
                         static_cast<uint64_t>(std::ceil(model_ns * 1e-9 * clock - 1e-9));
  fmt::print(
      "external_sync {} ({} chips, {} hops): {} syncs, last arrival to release {}..{} cycles = "
      "{:.1f} ns; model {} cycles (150 internal + {:.0f} ns) {}\n",
      preset, chips, hops, barriers.size(), lo, hi, static_cast<double>(hi) / clock * 1e9, model,
      model_ns, ipu::bench::verdict(lo == model && hi == model));
  (void)r;
  return 0;
}
