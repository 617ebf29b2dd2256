// The PCIe endpoint through its real registers: reset values, access policies, DMA data both
// ways with the time the figures give (latency + bytes / 32 GB/s), the two channels running at
// once, and an error for a transfer to a tile without a program.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "hw/ipu/ipu.h"

namespace ipu::test {
namespace {

using ::testing::HasSubstr;

struct Host : sc_core::sc_module {
  hw::Ipu& chip;
  std::function<void(Host&)> script;
  SC_HAS_PROCESS(Host);
  Host(const sc_core::sc_module_name& n, hw::Ipu& c) : sc_module(n), chip(c) { SC_THREAD(run); }
  void run() { script(*this); }

  // Starts a DMA on channel c; returns immediately.
  void start(unsigned c, uint8_t* buffer, uint32_t bytes, unsigned tile, uint32_t address) {
    const uint64_t bus = chip.host_memory().map(buffer, bytes);
    chip.start_dma(c, bus, tile, address, bytes);
  }
  void wait_for(uint32_t cause_bits) {
    while ((chip.mmio_read(0x08) & cause_bits) != cause_bits) wait(chip.pcie().interrupt);
  }
};

TEST(Pcie, RegistersDmaTimingAndErrors) {
  sc_core::sc_set_time_resolution(1, sc_core::SC_FS);
  hw::ChipConfig config = hw::chip_preset("mk2");
  hw::Ipu chip("ipu", config, {0, 1});
  Host host("host", chip);
  std::vector<uint8_t> out(1000), back(1000), other(4096);
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<uint8_t>(i * 7 + 1);
  host.script = [&](Host& h) {
    // Reset values and access policies.
    EXPECT_EQ(chip.mmio_read(0x00), 1u);  // CONTROL: enabled
    EXPECT_EQ(chip.mmio_read(0x04), 0u);  // STATUS: idle
    EXPECT_EQ(chip.mmio_read(0x08), 0u);  // INT_CAUSE
    EXPECT_THAT([&] { chip.mmio_write(0x04, 1); },
                ::testing::ThrowsMessage<std::runtime_error>(HasSubstr("0x4 refused")));
    EXPECT_THAT([&] { chip.mmio_read(0x1000); },
                ::testing::ThrowsMessage<std::runtime_error>(HasSubstr("refused")));
    chip.mmio_write(0x0c, 7);  // interrupts on

    // Host -> tile 1: 1000 bytes take 1000 ns + 1000 B / 32 GB/s = 1031.25 ns.
    sc_core::sc_time t0 = sc_core::sc_time_stamp();
    h.start(0, out.data(), 1000, 1, 0x50000);
    EXPECT_EQ(chip.mmio_read(0x04) & 1, 1u);  // busy
    h.wait_for(1);
    EXPECT_EQ(sc_core::sc_time_stamp() - t0, sc_core::sc_time(1031.25, sc_core::SC_NS));
    chip.mmio_write(0x08, 1);  // write one to clear
    EXPECT_EQ(chip.mmio_read(0x08), 0u);
    // Tile 1 -> host, back into another buffer.
    h.start(1, back.data(), 1000, 1, 0x50000);
    h.wait_for(2);
    chip.mmio_write(0x08, 2);
    EXPECT_EQ(back, out);

    // Both channels at once: 4096 bytes each way finish together, not one after the other.
    t0 = sc_core::sc_time_stamp();
    h.start(0, other.data(), 4096, 0, 0x50000);
    h.start(1, back.data(), 1000, 1, 0x50000);
    h.wait_for(3);
    chip.mmio_write(0x08, 3);
    EXPECT_EQ(sc_core::sc_time_stamp() - t0, sc_core::sc_time(1000 + 4096 / 32.0, sc_core::SC_NS));
    EXPECT_EQ(chip.pcie().bytes_moved(0), 1000u + 4096);
    EXPECT_EQ(chip.pcie().bytes_moved(1), 2000u);

    // A tile without a program: the error bit and a report naming it.
    h.start(0, out.data(), 16, 7, 0x50000);
    h.wait_for(4);
    EXPECT_EQ(chip.mmio_read(0x04) & 4, 4u);
    EXPECT_THAT(chip.pcie().last_error(),
                HasSubstr("DMA channel 0: tile 7 has no program loaded on this chip"));
    chip.mmio_write(0x08, 4);
    EXPECT_EQ(chip.mmio_read(0x04) & 4, 0u);
  };
  sc_core::sc_start();
}

// Queued transfers: each one's 1 us latency runs from its doorbell, so three queued at once end
// at 1000 + 31.25, + 62.5 and + 93.75 ns (1000 B each at 32 GB/s), not three latencies apart.
// DONE counts them; QUEUED shows what is left; a doorbell beyond the queue's depth is refused.
TEST(Pcie, QueuedTransfersOverlapTheirLatencies) {
  sc_core::sc_set_time_resolution(1, sc_core::SC_FS);
  hw::ChipConfig config = hw::chip_preset("mk2");
  hw::Ipu chip("ipu", config, {0, 1});
  Host host("host", chip);
  std::vector<uint8_t> out(3000);
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<uint8_t>(i * 13 + 5);
  const uint32_t ch0 = hw::PcieEndpoint::channel_base(0);
  host.script = [&](Host& h) {
    chip.mmio_write(0x0c, 7);
    const sc_core::sc_time t0 = sc_core::sc_time_stamp();
    for (unsigned k = 0; k < 3; ++k) h.start(0, out.data() + 1000 * k, 1000, 1, 0x50000 + 1000 * k);
    EXPECT_EQ(chip.mmio_read(ch0 + hw::PcieEndpoint::kQueued), 3u);
    for (uint32_t k = 1; k <= 3; ++k) {
      h.wait_for(1);
      chip.mmio_write(0x08, 1);
      EXPECT_EQ(chip.mmio_read(ch0 + hw::PcieEndpoint::kDone), k);
      EXPECT_EQ(sc_core::sc_time_stamp() - t0, sc_core::sc_time(1000 + 31.25 * k, sc_core::SC_NS));
    }
    EXPECT_EQ(chip.mmio_read(ch0 + hw::PcieEndpoint::kQueued), 0u);
    EXPECT_EQ(chip.mmio_read(0x04) & 1, 0u);  // idle
    std::vector<uint8_t> back(3000);
    chip.tile(1).read(0x50000, back.data(), back.size());
    EXPECT_EQ(back, out);

    // The queue holds kQueueDepth transfers; the next doorbell is refused with the error bit.
    for (unsigned k = 0; k <= hw::PcieEndpoint::kQueueDepth; ++k)
      h.start(0, out.data(), 4, 1, 0x50000);
    EXPECT_EQ(chip.mmio_read(0x04) & 4, 4u);
    EXPECT_THAT(chip.pcie().last_error(),
                HasSubstr("DMA channel 0: doorbell with 64 transfers already queued"));
    EXPECT_EQ(chip.mmio_read(ch0 + hw::PcieEndpoint::kQueued), hw::PcieEndpoint::kQueueDepth);
  };
  sc_core::sc_start();
}

}  // namespace
}  // namespace ipu::test
