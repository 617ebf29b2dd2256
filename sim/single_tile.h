// The platform `ipu-sim run-elf` builds: one tile, and a host-side initiator socket through which
// the loader writes the image into tile SRAM (TLM debug transport, zero simulated time).
#pragma once

#include <tlm_utils/simple_initiator_socket.h>

#include <cstdint>
#include <iosfwd>
#include <string>
#include <systemc>

#include "hw/common/run_report.h"
#include "hw/machine/machine.h"
#include "hw/machine/platform.h"
#include "hw/tile/tile.h"
#include "sdk/image/elf_reader.h"

namespace ipu::sim {

// The run options (hw/machine/run_options.h; threads and memory-hash do not apply to one tile),
// and the tile's own.
struct SingleTileOptions : hw::RunOptions {
  hw::TileConfig tile;
  bool trace_instructions = false;
  hw::TraceFilter trace_filter;       // what of it to print (tiles aside)
  hw::Core::PcLocator locate_pc;      // the source of a pc in reports (PlatformOptions)
  hw::DebugHook* debugger = nullptr;  // a GDB server hooked into the core (PlatformOptions)
};

struct RunReport {
  hw::TileOutcome outcome;
  uint64_t cycles = 0;
  uint64_t instructions = 0;
  double clock_hz = 0;
  double simulated_seconds = 0;
  double host_seconds = 0;
  hw::TileCounts counts;  // its contexts, for the report's table
};

class SingleTilePlatform : public sc_core::sc_module {
 public:
  tlm_utils::simple_initiator_socket<SingleTilePlatform> host;

  SingleTilePlatform(const sc_core::sc_module_name& name, const SingleTileOptions& options,
                     std::ostream& console, std::ostream& trace);

  // Writes the image's segments (zero-filling past their file data) and prepares the run.
  // Throws sdk::ImageError when the image does not fit the tile's SRAM window.
  void load(const sdk::ElfImage& image);

  // Runs the SystemC simulation to the end of the program. Call once per process: SystemC
  // elaborates a design only once.
  RunReport run();

  hw::Tile& tile() { return tile_; }

 private:
  void write(uint32_t address, const uint8_t* data, size_t size);

  SingleTileOptions options_;
  hw::Tile tile_;
  uint32_t entry_ = 0;
};

// Prints the run summary (instructions, cycles, simulated time, host time, MIPS).
void print_report(std::ostream& out, const RunReport& report);
// run-elf --stats: the configuration, the image, the summary and each context (docs/chip.md).
void write_stats_json(std::ostream& out, const RunReport& report, const hw::MachineConfig& config,
                      const hw::StatsSource& source);

}  // namespace ipu::sim
