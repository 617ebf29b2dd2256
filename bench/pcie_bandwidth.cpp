// PCIe host link bandwidth in simulated time: DMA of 16 MiB host->device, device->host, and both
// at once (the two channels run together), through the endpoint's registers, spread over 64
// tiles in 256 KiB transfers. Prints the link's rate while data moves (compared with the figures:
// 32 GB/s each way, 64 GB/s both) and the effective rate once each transfer's latency
// (pcie.latency-ns, not overlapped: the driver waits for each transfer) is counted; then the
// effective rate with every transfer queued at once, as the SDK runtime does (target: at least
// 90% of the link), where each latency overlaps the data ahead of it.
#include <cmath>
#include <memory>
#include <vector>

#include "bench/chip_bench.h"
#include "hw/ipu/ipu.h"

namespace {

constexpr unsigned kTiles = 64;
constexpr uint32_t kChunk = 256 * 1024, kTileAddress = 0x50000;
constexpr uint32_t kIntCause = 0x08, kIntEnable = 0x0c;

struct Bench : sc_core::sc_module {
  ipu::hw::Ipu& chip;
  std::vector<uint8_t> up, down;
  double h2d = 0, d2h = 0, both = 0, queued_h2d = 0, queued_d2h = 0;
  SC_HAS_PROCESS(Bench);
  Bench(const sc_core::sc_module_name& n, ipu::hw::Ipu& c)
      : sc_module(n), chip(c), up(kTiles * size_t{kChunk}, 0x5a), down(kTiles * size_t{kChunk}) {
    SC_THREAD(run);
  }
  // Streams every tile's chunk on channel c; returns when all are done.
  void stream(unsigned c, std::vector<uint8_t>& buffer) {
    for (unsigned t = 0; t < kTiles; ++t) {
      const uint64_t bus = chip.host_memory().map(buffer.data() + size_t{t} * kChunk, kChunk);
      chip.start_dma(c, bus, t, kTileAddress, kChunk);
      while ((chip.mmio_read(kIntCause) & (1u << c)) == 0) wait(chip.pcie().interrupt);
      chip.mmio_write(kIntCause, 1u << c);
    }
  }
  // The same with all transfers queued before waiting (the queue holds all 64).
  void stream_queued(unsigned c, std::vector<uint8_t>& buffer) {
    const uint32_t done_register =
        ipu::hw::PcieEndpoint::channel_base(c) + ipu::hw::PcieEndpoint::kDone;
    const uint32_t before = chip.mmio_read(done_register);
    for (unsigned t = 0; t < kTiles; ++t)
      chip.start_dma(c, chip.host_memory().map(buffer.data() + size_t{t} * kChunk, kChunk), t,
                     kTileAddress, kChunk);
    while (chip.mmio_read(done_register) - before < kTiles) {
      if ((chip.mmio_read(kIntCause) & (1u << c)) == 0) wait(chip.pcie().interrupt);
      chip.mmio_write(kIntCause, 1u << c);
    }
  }
  void run() {
    chip.mmio_write(kIntEnable, 7);
    sc_core::sc_time t0 = sc_core::sc_time_stamp();
    stream(0, up);
    h2d = (sc_core::sc_time_stamp() - t0).to_seconds();
    t0 = sc_core::sc_time_stamp();
    stream(1, down);
    d2h = (sc_core::sc_time_stamp() - t0).to_seconds();
    t0 = sc_core::sc_time_stamp();
    sc_core::sc_event_and_list done;
    sc_core::sc_event up_done, down_done;
    sc_core::sc_spawn([&] {
      stream(0, up);
      up_done.notify();
    });
    sc_core::sc_spawn([&] {
      stream(1, down);
      down_done.notify();
    });
    done &= up_done;
    done &= down_done;
    wait(done);
    both = (sc_core::sc_time_stamp() - t0).to_seconds();
    t0 = sc_core::sc_time_stamp();
    stream_queued(0, up);
    queued_h2d = (sc_core::sc_time_stamp() - t0).to_seconds();
    t0 = sc_core::sc_time_stamp();
    stream_queued(1, down);
    queued_d2h = (sc_core::sc_time_stamp() - t0).to_seconds();
    chip.host_memory().unmap_all();
  }
};

}  // namespace

int bench_body(const std::string& preset) {
  ipu::hw::ChipConfig config = ipu::hw::chip_preset(preset);
  std::vector<unsigned> tiles;
  for (unsigned t = 0; t < kTiles; ++t) tiles.push_back(t);
  sc_core::sc_set_time_resolution(1, sc_core::SC_FS);
  ipu::hw::Ipu chip("ipu", config, tiles);
  Bench bench("bench", chip);
  sc_core::sc_start();
  const double bytes = static_cast<double>(kTiles) * kChunk;
  const double each = config.pcie.bytes_per_second;
  const double latency = kTiles * config.pcie.latency_ns * 1e-9;  // one per transfer, per channel
  auto line = [&](const char* what, double moved, double seconds, double target) {
    const double link = moved / (seconds - latency) / 1e9, effective = moved / seconds / 1e9;
    fmt::print(
        "pcie_bandwidth {}: {}: link {:.1f} GB/s (target {:.0f} GB/s +-5%) {}; effective {:.1f} "
        "GB/s with "
        "{:.0f} ns per 256 KiB transfer\n",
        preset, what, link, target, ipu::bench::verdict(std::abs(link / target - 1) <= 0.05),
        effective, config.pcie.latency_ns);
  };
  line("host->device", bytes, bench.h2d, each / 1e9);
  line("device->host", bytes, bench.d2h, each / 1e9);
  line("both ways at once", 2 * bytes, bench.both, 2 * each / 1e9);
  for (const auto& [what, seconds] : {std::make_pair("host->device", bench.queued_h2d),
                                      std::make_pair("device->host", bench.queued_d2h)}) {
    const double rate = bytes / seconds;
    fmt::print(
        "pcie_bandwidth {}: {} with all 64 transfers queued: effective {:.1f} GB/s = {:.1f}% of "
        "the link (target >= 90%) {}\n",
        preset, what, rate / 1e9, 100 * rate / each, ipu::bench::verdict(rate >= 0.9 * each));
  }
  return 0;
}
