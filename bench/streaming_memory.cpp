// Streaming-memory bandwidth through the IPU-Gateway, and the host's RoCE link into it.
//  - chip-write, chip-read: 64 tiles of one chip of an M2000 move 32 KiB each (2 MiB); the
//    chip's PCIe Gen4 x8 link to the gateway bounds it: 16 GB/s.
//  - board-write, board-read: 64 tiles of each of the board's 4 chips (8 MiB); the two DDR4-2400
//    DIMMs bound it: 2 x 19.2 = 38.4 GB/s.
//  - host-write, host-read: 256 MiB over both 100 GbE RoCE ports: 2 x 12.5 = 25 GB/s.
// The tile figures are bytes over the time from the first transfer's issue to the last one's
// completion (the tiles' syncs wait for them), so they include the latencies; the data moved is
// checked word by word.
#define BENCH_RUNS                                                                              \
  {                                                                                             \
    "mk2:chip-write", "mk2:chip-read", "mk2:board-write", "mk2:board-read", "mk2:host-write",   \
        "mk2:host-read", "bow:chip-write", "bow:chip-read", "bow:board-write", "bow:board-read" \
  }
#include <cmath>
#include <functional>
#include <map>
#include <vector>

#include "bench/chip_bench.h"

namespace {

struct Plan {
  uint32_t words = 0, write = 0, address_low = 0, address_high = 0;
};
constexpr unsigned kTiles = 64;                // per chip
constexpr uint32_t kWords = 8192;              // per tile: 32 KiB
constexpr uint64_t kBase = uint64_t{3} << 32;  // above 4 GiB: the high address word matters

uint32_t pattern(unsigned chip, unsigned tile, uint32_t i) { return chip << 24 | tile << 13 | i; }
uint64_t address_of(unsigned chip, unsigned tile) {
  return kBase + (uint64_t{chip} * kTiles + tile) * kWords * 4;
}

struct HostScript : sc_core::sc_module {
  std::function<void()> script;
  SC_HAS_PROCESS(HostScript);
  explicit HostScript(const sc_core::sc_module_name& n) : sc_module(n) { SC_THREAD(run); }
  void run() { script(); }
};

int host_link(const std::string& chip, bool write) {
  ipu::hw::MachineConfig config = ipu::hw::machine_preset(chip == "mk2" ? "m2000" : "bow2000");
  sc_core::sc_set_time_resolution(1, sc_core::SC_FS);
  ipu::hw::Gateways gateways(config.gateway, config.shape(),
                             ipu::hw::ChipEdge::of(config.chip.exchange));
  HostScript host("host");
  const uint64_t bytes = uint64_t{256} << 20;
  std::vector<uint8_t> data(bytes), back(bytes);
  for (uint64_t i = 0; i < bytes; ++i) data[i] = static_cast<uint8_t>(i * 2654435761u >> 24);
  double seconds = 0;
  bool same = false;
  host.script = [&] {
    if (!write) gateways.host_link(0).write(kBase, data.data(), bytes);  // something to read
    const sc_core::sc_time t0 = sc_core::sc_time_stamp();
    if (write)
      gateways.host_link(0).write(kBase, data.data(), bytes);
    else
      gateways.host_link(0).read(kBase, back.data(), bytes);
    seconds = (sc_core::sc_time_stamp() - t0).to_seconds();
    if (write) gateways.all()[0]->memory().read(kBase, back.data(), bytes);
    same = back == data;
  };
  sc_core::sc_start();
  const double target = config.gateway.host_ports * config.gateway.host_port_bytes_per_second;
  const double gbps = static_cast<double>(bytes) / seconds / 1e9;
  fmt::print(
      "streaming_memory {} host-{} ({} RoCE ports): {} MiB in {:.1f} us: {:.2f} GB/s (target "
      "{:.1f} GB/s +-5%) {}; data {}\n",
      chip, write ? "write" : "read", config.gateway.host_ports, bytes >> 20, seconds * 1e6, gbps,
      target / 1e9, ipu::bench::verdict(std::abs(gbps * 1e9 - target) <= 0.05 * target),
      same ? "checked" : "WRONG");
  return same ? 0 : 1;
}

}  // namespace

int bench_body(const std::string& run) {
  const std::string chip = run.substr(0, run.find(':')), scenario = run.substr(run.find(':') + 1);
  const bool write = scenario.find("write") != std::string::npos;
  if (scenario.rfind("host", 0) == 0) return host_link(chip, write);
  const bool board = scenario.rfind("board", 0) == 0;
  const ipu::hw::MachineConfig config =
      ipu::hw::machine_preset(chip == "mk2" ? "m2000" : "bow2000");
  const ipu::hw::GatewayConfig& g = config.gateway;
  const unsigned chips = board ? 4 : 1;
  const double target =
      board ? std::min(g.dimms * g.dimm_bytes_per_second, chips * g.chip_link_bytes_per_second)
            : std::min(g.chip_link_bytes_per_second, g.dimms * g.dimm_bytes_per_second);

  const ipu::sdk::ElfImage elf = ipu::sdk::read_elf(SM_STREAM_IMAGE);
  std::map<unsigned, Plan> plans;  // machine tile -> plan
  for (unsigned c = 0; c < chips; ++c)
    for (unsigned t = 0; t < kTiles; ++t) {
      const uint64_t address = address_of(c, t);
      plans[c * config.chip.tiles + t] = {kWords, write ? 1u : 0u, static_cast<uint32_t>(address),
                                          static_cast<uint32_t>(address >> 32)};
    }
  std::vector<uint32_t> words(kWords);
  std::unique_ptr<ipu::hw::Platform> platform;
  const ipu::hw::RunReport report = ipu::bench::run_with_plans(
      "streaming_memory " + run, elf, config, plans, platform, [&](ipu::hw::Machine& machine) {
        if (write) return;
        // Something to read: the pattern of a tile of the next chip.
        for (unsigned c = 0; c < chips; ++c)
          for (unsigned t = 0; t < kTiles; ++t) {
            for (uint32_t i = 0; i < kWords; ++i) words[i] = pattern(c + 1, t, i);
            machine.gateways().all()[0]->memory().write(address_of(c, t), words.data(), 4 * kWords);
          }
      });
  ipu::hw::Machine& machine = platform->machine();
  ipu::hw::Gateway& gateway = *machine.gateways().all()[0];
  const uint32_t buffer = elf.symbols.at("buffer");
  // The data, word by word: in streaming memory after writes, in the tiles after reads.
  bool same = true;
  for (unsigned c = 0; c < chips; ++c)
    for (unsigned t = 0; t < kTiles; ++t) {
      if (write)
        gateway.memory().read(address_of(c, t), words.data(), 4 * kWords);
      else
        machine.tile(c * config.chip.tiles + t)
            .read(buffer, reinterpret_cast<uint8_t*>(words.data()), 4 * kWords);
      for (uint32_t i = 0; i < kWords; ++i) same &= words[i] == pattern(c + !write, t, i);
    }
  // From the release of the sync before the transfers to the last completion.
  const auto& exchanges = machine.exchange().records();
  uint64_t begin = 0, done = 0, bytes = 0;
  for (const auto& e : exchanges)
    if (e.streaming_done != 0)
      begin = e.release, done = e.streaming_done,
      bytes = e.streaming_bytes_written + e.streaming_bytes_read;
  const double clock = config.chip.tile.clock_hz;
  const double seconds = static_cast<double>(done - begin) / clock;
  const double gbps = static_cast<double>(bytes) / seconds / 1e9;
  double dimm_busy = 0;
  for (unsigned d = 0; d < g.dimms; ++d)
    dimm_busy = std::max(dimm_busy, gateway.dimm(d).busy_cycles);
  fmt::print(
      "streaming_memory {} {} ({} chip{} x {} tiles x {} KiB): {} bytes in {} cycles: {:.2f} "
      "GB/s (target {:.1f} GB/s +-5%) {}; busiest DIMM {:.0f}% busy; data {}\n",
      chip, scenario, chips, chips > 1 ? "s" : "", kTiles, kWords * 4 / 1024, bytes, done - begin,
      gbps, target / 1e9, ipu::bench::verdict(std::abs(gbps * 1e9 - target) <= 0.05 * target),
      100 * dimm_busy / static_cast<double>(done - begin), same ? "checked" : "WRONG");
  // The gateway's power at this rate (issue 37): its DIMMs' bytes over the transfer, beside the
  // rated rate times energy.gateway.ddr-byte; its static power and share over the run.
  const ipu::hw::EnergyReport e = ipu::hw::price_energy(config, report);
  const double ddr_w = ipu::bench::action_joules(e.gateways, "gateway.ddr-byte") / seconds;
  const double expected_w = target * config.energy.ddr_pj_per_byte * 1e-12;
  double gateway_j = 0;
  for (const auto& b : e.gateways) gateway_j += b.joules();
  fmt::print(
      "streaming_memory {} {} power: the DIMMs' bytes {:.2f} W (expected {:.2f} W: {:.1f} GB/s "
      "x {:.0f} pJ/B, energy.gateway.ddr-byte) {}; the gateway {:.0f} W in all ({:.0f}% of the "
      "machine's {:.0f} W over the run, most of it static)\n",
      chip, scenario, ddr_w, expected_w, target / 1e9, config.energy.ddr_pj_per_byte,
      ipu::bench::verdict(std::abs(ddr_w - expected_w) <= 0.05 * expected_w), gateway_j / e.seconds,
      100 * gateway_j / e.joules, e.watts());
  return same ? 0 : 1;
}
