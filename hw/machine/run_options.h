// How one run of the platform goes, whoever starts it: ipu-sim run, the SDK's Device, the
// examples. Declared once, here, with each option's command-line name, unit, meaning and range:
// ipu-sim and the examples bind their options from this list (sdk/tools/device_command_line.h),
// PlatformOptions and sdk::DeviceOptions embed the struct, and nothing resolves a default a
// second time. Only max-cycles changes what a run does; the others change host time.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "base/parameters.h"

namespace ipu::hw {

struct RunOptions {
  uint64_t max_cycles = 2'000'000'000;  // per tile, over the whole run; 0: no limit
  unsigned threads = 0;                 // host threads for the tiles' compute; 0: the host's cores
  // "fast", or "general": every instruction through the interpreter's general loop, the
  // reference its fast loops must match exactly (Core::set_fast_path).
  std::string interpreter = "fast";
  bool memory_hash = false;  // hash every active tile's SRAM after the run (touches all of it)
  // Over MPI ranks: how long a rank waits at a result swap for the others before it ends the
  // job, naming those that did not come (a rank stopped or hung).
  double rank_timeout = 600;

  bool fast_interpreter() const { return interpreter != "general"; }
  // The host threads the run uses: `threads`, or the host's cores for 0.
  unsigned host_threads() const;
};

template <typename C, typename Visitor, base::if_config_t<C, RunOptions> = 0>
void visit_parameters(C& o, Visitor&& v) {
  v(base::Parameter{"max-cycles", "cycles",
                    "stop with a report when a tile reaches this many cycles (0: no limit)", 0,
                    1e18},
    o.max_cycles);
  v(
      base::Parameter{
          "threads", "threads",
          "host threads for the tiles' compute (0: this host's cores); results, cycles and "
          "statistics are the same for every count",
          0, 1024},
      o.threads);
  v(
      base::Parameter{
          "interpreter", "fast|general",
          "the tile interpreter: fast, or general (every instruction through the reference "
          "loop the fast one must match; slower, same results, cycles and statistics)"},
      o.interpreter);
  v(
      base::Parameter{
          "memory-hash", "yes/no",
          "print a hash of every active tile's SRAM after the run (for determinism checks)"},
      o.memory_hash);
  v(
      base::Parameter{
          "rank-timeout", "seconds",
          "over MPI ranks: how long a rank waits for the others at a swap of tile results "
          "before it ends the job, naming the ranks that did not come (stopped or hung)",
          0.001, 1e9},
      o.rank_timeout);
}

// Throws std::invalid_argument naming the option.
inline void validate(const RunOptions& o) {
  base::check_ranges(o, "--");
  if (o.interpreter != "fast" && o.interpreter != "general")
    throw std::invalid_argument("--interpreter must be fast or general, not '" + o.interpreter +
                                "'");
}

}  // namespace ipu::hw
