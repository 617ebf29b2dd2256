// A run of a firmware image in a child process. SystemC lets a process elaborate and simulate
// once, and a Python session runs many machines: each run forks, simulates in the child, and
// hands back what it found over a pipe. A run that crashes takes only its child with it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "hw/machine/machine_config.h"
#include "hw/machine/run_options.h"

namespace ipu::python {

struct RunRequest {
  hw::MachineConfig machine;
  hw::RunOptions options;
  std::string image;  // a firmware image's path (ipu-sim run's IMAGE)
  // Keep every superstep's records and profile the workers, as ipu-sim run --stats does; off,
  // the statistics hold the run's totals only and the run is a little faster.
  bool records = true;
};

// Runs `request` in a child process and returns the JSON document the child wrote:
//   {"error": "image"|"value"|"runtime", "message": ...}    when the run could not start, or
//   {"result": "exited"|"fault"|"cycle-limit"|"deadlock", "exit_status", "message",
//    "console", "report", "stats"}                         (stats: the --stats JSON, as text).
// While the child runs, `check_interrupt` is called about every 50 ms; when it throws, the child is
// killed and the exception goes on (Python's Ctrl-C). Throws std::runtime_error when the child dies
// without an answer, naming its signal or status.
std::string run_in_child(const RunRequest& request, const std::function<void()>& check_interrupt);

// What the child does: the run itself, in this process (the tests' way in too).
std::string run_here(const RunRequest& request);

}  // namespace ipu::python
