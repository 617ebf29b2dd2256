// Statistics and traces of a finished run, written from the machine's blocks above the
// hardware: the statistics JSON (what ipu-sim --stats, the SDK's profile and the HTML report read)
// and the Chrome/Perfetto trace of the BSP phases.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "hw/common/loaded_program.h"
#include "hw/common/run_report.h"
#include "hw/energy/energy.h"
#include "hw/machine/machine.h"

namespace ipu::report {

// The configuration as a JSON object (every parameter by name, and the preset), and each
// context's counts summed over `tiles` as a JSON array: parts of the statistics files.
std::string config_json(const hw::MachineConfig& machine);
std::string contexts_json(const std::vector<hw::TileCounts>& tiles);
// A run's energy (hw/energy/energy.h) as a JSON object: totals, then each chip's, gateway's and
// the IPU-Links' dynamic and static joules with every priced action.
std::string energy_json(const hw::EnergyReport& energy);

// Which program step made a superstep, as the SDK names it (sdk/runtime/superstep_labels.h):
// the named program that ran, the step whose sync it is ("Copy 'x' -> 'y'"), and the compute
// sets the tiles ran since their previous sync. Empty: unlabelled (a raw image's superstep).
struct SuperstepLabel {
  std::string program, step;
  std::vector<std::string> compute;
};

// What ran, for the statistics: the image's file (or a name) and its checksum, the name of the
// function at an address, for the workers' functions (unset: their addresses alone), the
// program as loaded, for each tile's memory (null: none), and how the run ended (none: the
// statistics leave it out).
struct StatsSource {
  std::string image;
  std::optional<uint32_t> image_checksum;
  iss::Core::PcLocator function_name;
  const hw::LoadedProgram* program = nullptr;
  std::optional<hw::ChipOutcome> outcome;
  std::vector<SuperstepLabel> labels;  // by barrier (SyncNetwork::barriers()); none: unlabelled
};

// Statistics of a finished run as JSON (schema in docs/chip.md and docs/machine.md): the
// configuration, the image, a summary, the workers' functions when the run profiled them
// (PlatformOptions::profile_workers) and every superstep.
void write_stats_json(std::ostream& out, const hw::Machine& machine,
                      const StatsSource& source = {});

// Every function the active tiles' workers ran (when profiled), summed over the tiles, the most
// cycles first: name (or address), runs, cycles, instructions and the tiles that ran it.
struct WorkerFunction {
  uint32_t function = 0;
  std::string name;
  iss::RunTotals totals;
  unsigned tiles = 0;
};
std::vector<WorkerFunction> worker_functions(const hw::Machine& machine,
                                             const iss::Core::PcLocator& function_name);

struct TraceOptions {
  unsigned tiles_per_track = 1;
  // A lane per worker under each tile's track, with a slice per run named by its function
  // (PlatformOptions::profile_workers keeps the runs).
  bool worker_lanes = false;
  iss::Core::PcLocator function_name;  // unset: functions by address
  // By barrier: each superstep's compute and exchange slices are named for its program step.
  std::vector<SuperstepLabel> labels;
};
// Chrome/Perfetto trace-event JSON of the BSP phases: a process per chip, and in it one track
// per tile, or per group of `tiles_per_track` tiles (showing the group's first tile).
void write_trace_json(std::ostream& out, const hw::Machine& machine, const TraceOptions& options);

}  // namespace ipu::report
