// The commands of ipu-sim (sim/main.cpp binds the command line and dispatches to these):
// running an image on a machine or one tile, and describing an image.
#pragma once

#include <fmt/format.h>

#include <memory>
#include <ostream>
#include <string>

#include "debug/gdb_server.h"
#include "hw/machine/machine_config.h"
#include "hw/machine/platform.h"
#include "sdk/image/elf_reader.h"
#include "sim/single_tile.h"
#include "tlm/rtl_selection.h"

namespace ipu::sim {

// Where `run` writes what it saw (stats JSON, trace, HTML report), and what they say of the image.
struct Outputs {
  std::string stats, trace, report;
  hw::StatsSource source;  // the image, for --stats
  hw::TraceOptions trace_options;
};

// What `run` needs beyond the platform's options: the RTL blocks and their waveforms.
struct RtlOptions {
  tlm_rtl::RtlSelection blocks;
  std::string trace;
};

// --gdb PORT: a GDB server the platform stops in before its first instruction (null: none).
std::unique_ptr<debug::GdbServer> open_gdb_server(const std::string& port_text);

// `ipu-sim run IMAGE` of a bare image: the machine runs it, prints its report and writes the
// outputs; returns the exit status (sim/exit_status.h).
int run_machine(hw::PlatformOptions options, const RtlOptions& rtl_options,
                const sdk::ElfImage& image, const Outputs& outputs, debug::GdbServer* gdb);

// `ipu-sim run-elf FILE` and `ipu-sim demo`: one tile runs the image.
int run_tile(SingleTileOptions options, const sdk::ElfImage& image, const hw::MachineConfig& config,
             const RtlOptions& rtl_options, const Outputs& outputs, debug::GdbServer* gdb);

// `ipu-sim info IMAGE`: what an image holds, chip by chip and tile by tile, and its manifest.
int print_info(const sdk::ElfImage& image, const hw::MachineConfig& config);

}  // namespace ipu::sim
