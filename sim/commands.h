// The commands of ipu-sim (sim/main.cpp binds the command line and dispatches to these):
// running an image on a machine (run-elf and demo: a bare ELF on a machine of one tile), and
// describing an image.
#pragma once

#include <fmt/format.h>

#include <memory>
#include <optional>
#include <ostream>
#include <string>

#include "debug/gdb_server.h"
#include "hw/machine/machine_config.h"
#include "hw/machine/platform.h"
#include "report/output_options.h"
#include "report/run_statistics.h"
#include "sdk/image/elf_reader.h"
#include "sdk/runtime/debug_options.h"

namespace ipu::sim {

// What `run` writes besides its report (--stats, --trace, --report: report/output_options.h), and
// what the files say of the image and how the trace shows it.
struct Outputs : report::OutputOptions {
  report::StatsSource source;  // the image, for --stats
  report::TraceOptions trace_options;
};

// --gdb PORT: a GDB server the platform stops in before its first instruction (null: none).
// A GDB server on `port` (none without one) for `image`'s tiles.
std::unique_ptr<debug::GdbServer> open_gdb_server(const std::optional<unsigned>& port,
                                                  const sdk::ElfImage& image);

// The machine run-elf and demo run on: one chip of one tile, its tile and clock configured as
// `config`'s, without the sync groups that name other tiles and chips.
hw::MachineConfig one_tile(hw::MachineConfig config);

// `ipu-sim run IMAGE` of a bare image, `run-elf` and `demo`: the machine runs it, prints its
// report and writes the outputs; returns the exit status (sim/exit_status.h).
int run_machine(hw::PlatformOptions options, const sdk::DebugOptions& debug,
                const sdk::ElfImage& image, const Outputs& outputs, debug::GdbServer* gdb);

// `ipu-sim info IMAGE`: what an image holds, chip by chip and tile by tile, and its manifest.
int print_info(const sdk::ElfImage& image, const hw::MachineConfig& config);

}  // namespace ipu::sim
