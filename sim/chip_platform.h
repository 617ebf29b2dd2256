// The platform `ipu-sim run` builds: one IPU chip whose active tiles are those the image loads
// (the tile number is in each segment's physical address), started together at the image's
// entry point.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <systemc>

#include "hw/ipu/ipu.h"
#include "sdk/image/elf_reader.h"
#include "sdk/image/elf_writer.h"
#include "tlm/rtl_platform.h"

namespace ipu::sim {

struct ChipRunOptions {
  hw::ChipConfig chip;
  uint64_t max_cycles = 2'000'000'000;  // per tile; 0: no limit
  bool trace_instructions = false;
  bool memory_hash = false;  // hash every active tile's SRAM after the run (touches all of it)
  // false: the platform neither loads the image nor starts the tiles; a host does both (the
  // SDK runtime, over the PCIe link).
  bool load_and_start = true;
  tlm_rtl::RtlSelection rtl;  // blocks computed by their verilated RTL (--rtl)
  std::string rtl_trace;      // FST waveforms of those blocks (--rtl-trace)
};

struct ChipRunReport {
  hw::ChipOutcome outcome;
  unsigned tiles = 0;
  uint64_t cycles = 0;
  uint64_t instructions = 0;
  size_t supersteps = 0;
  uint64_t exchange_words = 0;
  double clock_hz = 0;
  double host_seconds = 0;
  std::optional<uint64_t> memory_hash;  // FNV-1a over the active tiles' SRAM, in tile order
  std::vector<tlm_rtl::RtlBlockStats> rtl;
  std::vector<std::string> rtl_trace_files;
  std::string rtl_mismatch;  // the first RTL block that departed from its model (stops the run)
};

class ChipPlatform {
 public:
  // Throws sdk::ImageError when the image does not fit the chip.
  ChipPlatform(const ChipRunOptions& options, const sdk::ElfImage& image, std::ostream& console,
               std::ostream& trace);
  ChipRunReport run();  // once per process (SystemC elaborates once)
  uint32_t entry() const { return entry_; }
  uint64_t max_cycles() const {
    return options_.max_cycles == 0 ? ~uint64_t{0} : options_.max_cycles;
  }
  // The image's data per tile (tile -> segments), for a host that loads it itself.
  const std::map<unsigned, std::vector<sdk::TileSegment>>& segments() const { return segments_; }
  const hw::Ipu& chip() const { return *chip_; }
  hw::Ipu& chip() { return *chip_; }

 private:
  ChipRunOptions options_;
  uint32_t entry_ = 0;
  std::map<unsigned, std::vector<sdk::TileSegment>> segments_;
  std::unique_ptr<hw::Ipu> chip_;
  std::unique_ptr<tlm_rtl::RtlPlatform> rtl_;
};

void print_report(std::ostream& out, const ChipRunReport& report);

}  // namespace ipu::sim
