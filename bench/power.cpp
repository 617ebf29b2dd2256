// Power of the energy model (hw/energy, docs/energy.md) on programs whose draw is published or
// follows from it, each beside its target and how the target is derived:
//   amp-mk2     the AMP at peak on all 1472 tiles of a GC200 at 1.325 GHz: the rated 300 W
//               within 10 % (the calibration of energy.tile.amp-f16-mac)
//   amp-bow     the same on a Bow at 1.85 GHz: the same energy per operation (Graphcore: 1.4x
//               the speed at the same energy per operation), so more watts, more TFLOP/s per W
//   amp-m2000   the same on the four chips of an IPU-Machine M2000 with its gateway and links:
//               its rated 1.5 kW within 10 % (the calibration of energy.gateway.static)
//   idle-mk2    a full chip syncing with nothing to compute: static power and little else
//   exchange-mk2  all-to-all exchange on all tiles: the exchange's share of the draw
//   train-m2000 the training main job (examples/train) on an M2000: its average power per chip
//               and for the machine, beside the machine's static floor, which it should barely
//               exceed: its arithmetic runs at about 0.01 % of the AMP's peak rate
// The IPU-Links' and streaming memory's draw at their rated rates are measured by the benchmarks
// that drive them at rate: bench/ipulink_bandwidth and bench/streaming_memory.
// Each runs in a process of its own (SystemC elaborates one design per process).
#include <string>

#define BENCH_RUNS \
  { "amp-mk2", "amp-bow", "amp-m2000", "idle-mk2", "exchange-mk2", "train-m2000" }
#include "bench/chip_bench.h"
#include "examples/train_app.h"
#include "hw/energy/energy.h"

namespace {

// A chip line's joules over every chip.
double line(const ipu::hw::EnergyReport& e, const std::string& action) {
  return ipu::bench::action_joules(e.chips, action);
}

// Where a chip's energy went: the largest shares, in percent.
std::string shares(const ipu::hw::EnergyReport& e) {
  std::string out;
  const double total = e.chip_joules();
  for (const char* action : {"tile.amp-f16-mac", "tile.sram-read", "tile.integer", "tile.control",
                             "exchange.byte", "exchange.distance", "sync.arrival", "static"}) {
    const double j = line(e, action);
    if (j > 0.005 * total) out += fmt::format(" {} {:.1f}%", action, 100 * j / total);
  }
  return out;
}

}  // namespace

// The training main job's average power over its steps (the step program's energy; the first
// step's included), per chip and for the machine, beside the machine's static floor.
int train_power(const std::string& preset) {
  ipu::examples::TrainConfig config;
  config.machine = ipu::hw::machine_preset(preset);
  config.steps = 2;
  const ipu::examples::TrainResult r = ipu::examples::run_training(config);
  double joules = 0, static_joules = 0, seconds = 0, chip_w = 0;
  for (const auto& st : r.steps) {
    joules += st.joules, static_joules += st.static_joules;
    const double s = static_cast<double>(st.cycles) / r.clock_hz;
    seconds += s, chip_w += st.watts_per_chip * s;
  }
  chip_w /= seconds;
  const double w = joules / seconds, floor_w = static_joules / seconds;
  const double tflops = r.flops_per_step * static_cast<double>(r.steps.size()) / seconds / 1e12;
  const double peak_tflops = 2.0 * ipu::iss::kAmpF16Macs * config.machine.chip.tiles *
                             config.machine.chips * r.clock_hz / 1e12;
  fmt::print(
      "power {}: the training job ({:.4f} TFLOP/s, {:.3f}% of the AMP's peak): {:.1f} W per "
      "chip, {:.1f} W for the machine; its static floor {:.1f} W (every chip's tiles, the "
      "gateway with its DIMMs, the idle links), the work {:.1f} W above it (expected: under 5% of "
      "the floor at this rate) {}; {:.3g} J a step\n",
      preset, tflops, 100 * tflops / peak_tflops, chip_w, w, floor_w, w - floor_w,
      ipu::bench::verdict(w >= floor_w && w <= 1.05 * floor_w),
      joules / static_cast<double>(r.steps.size()));
  return r.identical ? 0 : 1;
}

int bench_body(const std::string& run) {
  const std::string preset = run.substr(run.find('-') + 1);
  const std::string kind = run.substr(0, run.find('-'));
  if (kind == "train") return train_power(preset);
  const std::string image = kind == "amp"
                                ? (preset == "m2000" ? AMP_POWER_M2000_IMAGE : AMP_POWER_IMAGE)
                            : kind == "idle" ? SYNC_LOOP_IMAGE
                                             : ALL_TO_ALL_IMAGE;
  std::unique_ptr<ipu::hw::Platform> platform;
  std::ostringstream console;
  const ipu::hw::RunReport r = ipu::bench::run_image(preset, image, 1472, platform, console);
  const ipu::hw::MachineConfig& machine = platform->machine().config();
  const ipu::hw::EnergyReport e = ipu::hw::price_energy(machine, r);
  const double chip_w = e.watts_per_chip();
  double macs = 0;
  for (const auto& a : r.chip_actions)
    macs += ipu::iss::kAmpF16Macs *
            static_cast<double>(a.instructions[static_cast<size_t>(ipu::iss::InsnClass::kAmpF16)]);
  const double tflops = 2 * macs / e.seconds / 1e12;
  const double peak_tflops = ipu::hw::amp_peak_flops_per_second(r) / 1e12;
  if (kind == "amp" && machine.chips == 1) {
    const bool mk2 = preset == "mk2";
    fmt::print(
        "power {}: AMP at {:.0f}% of peak on 1472 tiles ({:.1f} of {:.1f} TFLOP/s): {:.1f} W "
        "per chip{}; {:.2f} TFLOP/s per W; {:.3f} pJ per f16 MAC with its SRAM, instructions "
        "and the chip's static share\n  shares:{}\n",
        preset, 100 * tflops / peak_tflops, tflops, peak_tflops, chip_w,
        mk2 ? fmt::format(" (target 300 W +-10%: the GC200's rating) {}",
                          ipu::bench::verdict(chip_w >= 270 && chip_w <= 330))
            : " (Mk2's energy per operation at 1.85 GHz; no published per-chip figure)",
        tflops / chip_w, e.chip_joules() / macs * 1e12, shares(e));
  } else if (kind == "amp") {
    const double w = e.watts();
    fmt::print(
        "power {}: AMP at {:.0f}% of peak on 4 x 1472 tiles ({:.1f} TFLOP/s): {:.0f} W for the "
        "machine (target 1500 W +-10%: the M2000's TDP) {}; chips {:.0f} W each, gateway {:.0f} "
        "W, IPU-Links {:.0f} W; {:.2f} TFLOP/s per W\n",
        preset, 100 * tflops / peak_tflops, tflops, w, ipu::bench::verdict(w >= 1350 && w <= 1650),
        chip_w, e.gateways.empty() ? 0 : e.gateways[0].joules() / e.seconds,
        e.links.joules() / e.seconds, tflops / w);
  } else if (kind == "idle") {
    const double static_w = line(e, "static") / e.seconds;
    fmt::print(
        "power {}: an idle chip syncing ({} supersteps of nothing): {:.1f} W per chip, of which "
        "static {:.1f} W ({:.0f}%; expected: static alone within 5%) {}\n",
        preset, r.supersteps, chip_w, static_w, 100 * static_w / chip_w,
        ipu::bench::verdict(static_w >= 0.95 * chip_w));
  } else {
    const double exchange_w = (line(e, "exchange.byte") + line(e, "exchange.distance")) / e.seconds;
    fmt::print(
        "power {}: all-to-all exchange on 1472 tiles ({:.1f} MB delivered): {:.1f} W per chip, "
        "the exchange {:.1f} W ({:.0f}%; expected: below the AMP's draw at peak, as Graphcore "
        "says arithmetic dominates)\n  shares:{}\n",
        preset, static_cast<double>(r.exchange_words) * 4 / 1e6, chip_w, exchange_w,
        100 * exchange_w / chip_w, shares(e));
  }
  return 0;
}
