// IPU-Link bandwidth: one link one way (16 GB/s) and both ways (32 GB/s), a rung's 6 links and a
// column's 2 between a pair of chips, and all 10 links of one chip of a POD16 both ways
// (320 GB/s). Each link is filled by tiles sending a word per cycle (as many as fit its
// 12.08 bytes per Mk2 cycle, 8.65 per Bow cycle) plus fillers taking turns to send single
// words, each at its cycle from the sync's release, for the fraction left
// (bench/firmware/link_stream.c). The figure is bytes over the time from the first word entering
// a link to the last, from the links' own counters.
#define BENCH_RUNS                                                                              \
  {                                                                                             \
    "mk2:one-link", "mk2:one-link-both-ways", "mk2:rung", "mk2:column", "mk2:chip-10-links",    \
        "bow:one-link", "bow:one-link-both-ways", "bow:rung", "bow:column", "bow:chip-10-links" \
  }
#include <cmath>
#include <map>

#include "bench/chip_bench.h"

namespace {

// As bench/firmware/link_stream.c lays out its `plan`.
struct Plan {
  uint32_t send_words = 0, period = 0, start = 0, dest = 0, listen = 0, recv_words = 0;
};
struct Flow {
  unsigned from, to, bundle_links, links;
};
constexpr uint32_t kWords = 4000;
// Cycles after the sync's release the senders start at (the receivers listen before), and the
// least a filler's words are apart (a round of its loop takes about 210 cycles: the exchange
// clock's reads and waits, the send's setup, at one issue in six cycles).
constexpr uint32_t kStart = 600, kFillerRound = 240;
constexpr unsigned kImageTiles = 256;  // tiles the images program a chip (bench/CMakeLists.txt)
constexpr uint32_t remote(unsigned chip, unsigned tile) { return 0x40000000u | chip << 16 | tile; }

}  // namespace

int bench_body(const std::string& run) {
  const std::string chip = run.substr(0, run.find(':')), scenario = run.substr(run.find(':') + 1);
  const bool pod = scenario == "chip-10-links";
  const std::string preset =
      pod ? (chip == "mk2" ? "pod16" : "bow-pod16") : (chip == "mk2" ? "m2000" : "bow2000");
  // (from, to, links in the bundle, links used): GCC 12 warns falsely on assigning an
  // initializer list of these, so they are added one by one. A flow and its reverse use the
  // same tiles, each sending one way and receiving the other.
  std::vector<Flow> flows;
  auto both_ways = [&flows](unsigned a, unsigned b, unsigned bundle, unsigned used) {
    flows.push_back({a, b, bundle, used});
    flows.push_back({b, a, bundle, used});
  };
  double target = 0;
  if (scenario == "one-link") {
    flows.push_back({0, 1, 6, 1});
    target = 16;
  } else if (scenario == "one-link-both-ways") {
    both_ways(0, 1, 6, 1);
    target = 32;
  } else if (scenario == "rung") {
    both_ways(0, 1, 6, 6);
    target = 192;
  } else if (scenario == "column") {
    both_ways(0, 2, 2, 2);
    target = 64;
  } else {  // chip 6: rung to 7, up to 8, down to 4, and back
    both_ways(6, 7, 6, 6);
    both_ways(6, 8, 2, 2);
    both_ways(6, 4, 2, 2);
    target = 320;
  }
  const ipu::hw::MachineConfig config = ipu::hw::machine_preset(preset);
  const double clock = config.chip.tile.clock_hz;
  const double words_per_cycle = config.ipulink.bytes_per_second / clock / 4;
  const auto full = static_cast<unsigned>(std::floor(words_per_cycle));
  // The rest of a word a cycle: the link has no queue (hw/ipulink/ipulink.h), so a word beyond
  // the full senders' fits only once the backlog it leaves has drained at the link's slack,
  // 0.65 bytes a cycle on Bow (0.075 on Mk2), 7 cycles on Bow (55 on Mk2), and a supervisor
  // issues on one cycle in `worker-contexts`: a filler word every 12 cycles on Bow (60 on Mk2).
  // Fillers take turns, each sending every `round` (240) cycles: 20 on Bow, 4 on Mk2.
  const double slack_bytes = (words_per_cycle - full) * 4;
  const uint32_t slot = config.chip.tile.worker_contexts;
  const uint32_t spacing =
      slot * static_cast<uint32_t>(std::ceil((std::ceil(4 / slack_bytes) + 1) / slot));
  const unsigned fillers = (std::max(kFillerRound, spacing) + spacing - 1) / spacing;
  const uint32_t round = fillers * spacing;
  std::map<unsigned, Plan> plans;  // machine tile -> plan
  const unsigned per_chip = config.chip.tiles;
  // Tiles in order, a flow's and its reverse's the same: a tile uses link tile % bundle links
  // of its bundle (hw/ipulink/link_fabric.h), so a bundle's senders start at a multiple of it.
  std::map<std::pair<unsigned, unsigned>, unsigned> first_tile;  // {chip, chip} -> tile
  unsigned next_tile = 0;
  for (const Flow& f : flows) {
    const auto pair = std::minmax(f.from, f.to);
    auto [at, added] = first_tile.try_emplace({pair.first, pair.second}, next_tile);
    if (added) next_tile += f.bundle_links * (full + fillers);
    for (unsigned l = 0; l < f.links; ++l)
      for (unsigned k = 0; k < full + fillers; ++k) {
        const unsigned tile = at->second + l + f.bundle_links * k;
        const bool filler = k >= full;
        // A filler's words end before the full senders' do.
        const uint32_t offset = filler ? (k - full) * spacing : 0;
        const uint32_t words = filler ? (kWords - offset) / round : kWords;
        Plan& s = plans[f.from * per_chip + tile];
        s.send_words = words, s.dest = remote(f.to, tile), s.start = kStart + offset;
        if (filler) s.period = round;
        Plan& r = plans[f.to * per_chip + tile];
        r.listen = remote(f.from, tile), r.recv_words = words;
      }
  }
  if (next_tile > kImageTiles) {
    fmt::print(stderr, "ipulink_bandwidth {}: the plan takes {} tiles a chip, the image {}\n", run,
               next_tile, kImageTiles);
    return 1;
  }

  std::unique_ptr<ipu::hw::Platform> platform;
  const ipu::hw::RunReport report = ipu::bench::run_with_plans(
      "ipulink_bandwidth " + run, ipu::sdk::read_elf(pod ? LINK_STREAM_16 : LINK_STREAM_4), config,
      plans, platform);
  uint64_t bytes = 0, first = ~uint64_t{0}, last = 0;
  unsigned directions = 0;
  for (const auto& link : platform->machine().links().links())
    for (unsigned d = 0; d < 2; ++d) {
      const auto& n = link->counters(d);
      if (n.words == 0) continue;
      ++directions;
      bytes += n.bytes;
      first = std::min(first, n.first_cycle);
      last = std::max(last, n.last_cycle);
    }
  const double seconds = static_cast<double>(last - first + 1) / clock;
  const double gbps = static_cast<double>(bytes) / seconds / 1e9;
  fmt::print(
      "ipulink_bandwidth {} {} ({}): {} link directions, {} bytes in {} cycles: {:.1f} GB/s "
      "(target {:.0f} GB/s +-5%) {}; per link direction {:.2f} GB/s\n",
      chip, scenario, preset, directions, bytes, last - first + 1, gbps, target,
      ipu::bench::verdict(std::abs(gbps - target) <= 0.05 * target), gbps / directions);
  // The links' power at this rate (issue 37): the bytes' energy over the transfer, beside the
  // rated rate times energy.ipulink.byte; the idle links' and the machine's over the run.
  const ipu::hw::EnergyReport e = ipu::hw::price_energy(config, report);
  const double moving_w = ipu::bench::action_joules({e.links}, "ipulink.byte") / seconds;
  const double expected_w = target * 1e9 * config.energy.ipulink_pj_per_byte * 1e-12;
  fmt::print(
      "ipulink_bandwidth {} {} ({}) power: the bytes {:.2f} W (expected {:.2f} W: {:.0f} GB/s x "
      "{:.0f} pJ/B, energy.ipulink.byte) {}; {} links idle {:.1f} W; the links {:.1f}% of the "
      "machine's {:.0f} W over the run\n",
      chip, scenario, preset, moving_w, expected_w, target, config.energy.ipulink_pj_per_byte,
      ipu::bench::verdict(std::abs(moving_w - expected_w) <= 0.05 * expected_w), report.ipulinks,
      report.ipulinks * config.energy.ipulink_idle_w, 100 * e.links.joules() / e.joules, e.watts());
  return 0;
}
