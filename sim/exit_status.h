// ipu-sim's exit statuses (README, "Exit status"), and the one a run's outcome gives: the
// program's own status when every tile exited, else the kind of stop.
#pragma once

#include "debug/gdb_server.h"
#include "hw/common/run_report.h"

namespace ipu::sim {

constexpr int kExitUsage = 2;
constexpr int kExitImage = 3;
constexpr int kExitFault = 4;
constexpr int kExitCycleLimit = 5;
constexpr int kExitDeadlock = 6;
constexpr int kExitRtlMismatch = 7;
constexpr int kExitKilled = debug::kKilledExitStatus;  // GDB's kill ended the run
static_assert(kExitKilled == 8, "README and docs/debugging.md give 8");

inline int exit_status(const hw::ChipOutcome& outcome) {
  switch (outcome.result) {
    case hw::ChipOutcome::Result::kExited: return outcome.exit_status & 0xff;
    case hw::ChipOutcome::Result::kCycleLimit: return kExitCycleLimit;
    case hw::ChipOutcome::Result::kDeadlock: return kExitDeadlock;
    case hw::ChipOutcome::Result::kFault: break;
  }
  return kExitFault;
}

}  // namespace ipu::sim
