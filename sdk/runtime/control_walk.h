// Follows a device's control steps (firmware/include/ipu_program.h) as the firmware runtime
// (firmware/runtime/bsp_runtime.c) does, through the device's runs, from sync to sync: control
// flow is fixed at compile time (a stream's buffer turns come from use counts that start at 0
// at load), so the host can tell which sync comes next without asking the tiles.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "sdk/compiler/compiler.h"

namespace ipu::sdk {

class ControlWalk {
 public:
  // `runs`: the programs the device runs (indices into exe.programs), in order. `chip`: the
  // chip whose walk it is, which steps over the exchanges it sits out
  // (ControlStep::idle_chips); without one, every exchange is walked.
  ControlWalk(const Executable& exe, const std::vector<unsigned>& runs,
              std::optional<unsigned> chip = std::nullopt)
      : exe_(exe), runs_(runs), chip_(chip) {}

  struct Sync {
    uint32_t step = 0;
    uint32_t group = 0;              // as the tiles name it to the sync network
    unsigned program = 0;            // the run's program (for a dispatch: the one it starts)
    std::vector<uint32_t> executed;  // the execute steps since the previous sync
  };

  // The next sync; none when the runs are over or the steps stop making sense (a jump out of
  // range, calls or repeats nested deeper than the firmware allows, a loop that never syncs).
  std::optional<Sync> next();

 private:
  // The firmware's own limits (bsp_runtime.c), and a bound on the host's walk between two
  // syncs: a run that ended passed its syncs, so only steps that disagree with it reach it.
  static constexpr size_t kMaxCalls = 8, kMaxRepeats = 32;
  static constexpr uint64_t kMaxStepsBetweenSyncs = uint64_t{1} << 28;

  const Executable& exe_;
  const std::vector<unsigned>& runs_;
  std::optional<unsigned> chip_;
  uint32_t pc_ = 0;  // step 0 is the first dispatch
  size_t run_ = 0;
  unsigned program_ = 0;
  std::vector<uint32_t> repeats_, calls_;
  std::map<uint32_t, uint32_t> stream_uses_;  // IPU_STEP_STREAM_SLOT's counters
};

// How many times one run of `program` makes each host transfer (by id): none if the walk gives
// up (more than `max_syncs` syncs, or steps that make no sense).
std::optional<std::map<unsigned, uint64_t>> host_syncs_per_run(const Executable& exe,
                                                               unsigned program,
                                                               uint64_t max_syncs);

}  // namespace ipu::sdk
