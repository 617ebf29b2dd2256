// The platform `ipu-sim run` and the SDK runtime drive: a machine (one chip or many) whose
// active tiles are those the program loads, started together at the program's entry point,
// with console and instruction-trace sinks, the cycle limit, and the report of a finished run.
// It knows nothing of image files: sdk/image turns an image into a LoadedProgram.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "hw/common/loaded_program.h"
#include "hw/common/run_report.h"
#include "hw/machine/machine.h"
#include "hw/machine/run_options.h"
#include "hw/parallel/ranks.h"

namespace ipu::hw {

// Which instructions --trace-instructions prints (everything by default). Tiles outside the
// filter are not traced at all, so they keep the interpreter's fast loops.
struct TraceFilter {
  std::set<unsigned> tiles;                          // machine tiles; empty: every tile
  uint32_t contexts = ~0u;                           // bit c: context c (0: the supervisor)
  uint64_t cycle_from = 0, cycle_to = ~uint64_t{0};  // issue cycles in [from, to)
  uint32_t pc_from = 0, pc_to = ~0u;                 // pcs in [from, to)
  // The most lines printed (0: no bound); then one line says the rest is left out. About
  // 100 bytes a line: the default bounds a trace near 1 GB (64 tiles unfiltered wrote 1.79 GB
  // in 30 s).
  uint64_t limit = 10'000'000;
  bool traces_tile(unsigned tile) const { return tiles.empty() || tiles.count(tile) != 0; }
  bool accepts(const iss::Context& c, uint32_t pc) const {
    return (contexts >> c.id & 1) != 0 && c.issue_cycle >= cycle_from && c.issue_cycle < cycle_to &&
           pc >= pc_from && pc < pc_to;
  }
  // Whether anything narrows the trace.
  bool narrows() const {
    return !tiles.empty() || contexts != ~0u || cycle_from != 0 || cycle_to != ~uint64_t{0} ||
           pc_from != 0 || pc_to != ~0u;
  }
};

// --trace draws an arrow per send and receiver up to this many (a full-chip all-to-all phase
// has two million; Perfetto stays usable with about this many).
inline constexpr size_t kTraceFlows = 100'000;
// What --trace-workers keeps by default (PlatformOptions::worker_run_log): about 160 MB at most.
inline constexpr size_t kTraceWorkerRuns = 4'000'000;
inline constexpr size_t kLeastWorkerRuns = 256;

// What a platform runs and how: the run options (threads, interpreter, cycle limit, memory
// hash: run_options.h) and what the platform is hooked to.
struct PlatformOptions : RunOptions {
  MachineConfig machine;
  bool trace_instructions = false;  // runs every compute burst on the simulation thread
  TraceFilter trace_filter;         // what of it to print
  // Names the source of a pc in fault, stall and deadlock reports (sdk::Symbolizer); unset: the
  // reports name pcs alone.
  iss::Core::PcLocator locate_pc;
  // Names a data address (a firmware global: "out+8") in exchange schedule errors; unset: the
  // errors name the address alone.
  iss::Core::PcLocator locate_data;
  // A debugger (debug/gdb_server.h) hooked into every active tile's core; every compute burst
  // then runs on the simulation thread, so a stop holds the whole platform. Changes nothing but
  // the host time while it only watches.
  iss::DebugHook* debugger = nullptr;
  // Exchange flows to keep for the trace's arrows (Exchange::record_flows; 0: none).
  size_t trace_flows = 0;
  // Profile what every active tile's workers run (iss/worker_profile.h: each function's
  // runs and cycles, each joined batch), keeping up to worker_run_log runs themselves for the
  // trace's worker lanes, shared among the tiles (each keeps at least kLeastWorkerRuns). Changes
  // nothing but the host time (a little, at each worker start and exit).
  bool profile_workers = false;
  size_t worker_run_log = 0;
  // The MPI job whose ranks share the machine's chips (hw/parallel/ranks.h); null or one rank:
  // this process simulates every chip. Changes nothing but the host time.
  MpiJob* ranks = nullptr;
  // false: the platform neither loads the program nor starts the tiles; a host does both (the
  // SDK runtime, over the host link).
  bool load_and_start = true;
  // false: no per-superstep records (tile timelines, barriers, exchange phases) are kept, only
  // the counts the report needs, so a device that runs programs again and again without writing
  // statistics, a trace or a report does not grow with every run (Machine::keep_records).
  bool keep_records = true;
};

class Platform {
 public:
  // Throws std::invalid_argument when the program names a tile the machine does not have.
  Platform(const PlatformOptions& options, LoadedProgram program, std::ostream& console,
           std::ostream& trace);
  // Starts the tiles and simulates until they stop, or until a host pauses the simulation
  // (sc_pause); run() again then continues it. The counts are the totals since the start,
  // host_seconds this call's.
  RunReport run();
  uint64_t max_cycles() const {
    return options_.max_cycles == 0 ? ~uint64_t{0} : options_.max_cycles;
  }
  const LoadedProgram& program() const { return program_; }
  const Machine& machine() const { return *machine_; }
  Machine& machine() { return *machine_; }

 private:
  uint64_t memory_hash();

  PlatformOptions options_;
  LoadedProgram program_;
  std::unique_ptr<Machine> machine_;
  bool started_ = false;
  uint64_t traced_lines_ = 0;  // --trace-instructions lines printed so far
};

}  // namespace ipu::hw
