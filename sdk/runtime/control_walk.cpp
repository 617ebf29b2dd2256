#include "sdk/runtime/control_walk.h"

#include <algorithm>

#include "firmware/include/ipu_program.h"
#include "hw/sync/sync_config.h"

namespace ipu::sdk {

std::optional<ControlWalk::Sync> ControlWalk::next() {
  Sync sync;
  const std::vector<ControlStep>& steps = exe_.control;
  for (uint64_t walked = 0; walked < kMaxStepsBetweenSyncs; ++walked) {
    if (pc_ >= steps.size()) return std::nullopt;
    const ControlStep& s = steps[pc_];
    if (chip_ && std::binary_search(s.idle_chips.begin(), s.idle_chips.end(), *chip_)) {
      ++pc_;  // this chip's tiles step over it
      continue;
    }
    sync.step = pc_;
    switch (s.op) {
      case IPU_STEP_EXECUTE: sync.executed.push_back(pc_++); continue;
      case IPU_STEP_SYNC: sync.group = s.a; break;
      case IPU_STEP_EXCHANGE: sync.group = 0; break;
      case IPU_STEP_EXCHANGE_EXTERNAL: sync.group = hw::sync_group::kExternal; break;
      case IPU_STEP_HOST_SYNC: sync.group = hw::sync_group::kHost | s.a; break;
      case IPU_STEP_DISPATCH: {
        // The dispatch that starts the next run; after the last, the tiles wait at it.
        if (run_ >= runs_.size() || runs_[run_] >= exe_.programs.size()) return std::nullopt;
        program_ = runs_[run_++];
        sync.group = hw::sync_group::kHost | hw::sync_group::kHostCommand;
        sync.program = program_;
        pc_ = exe_.programs[program_].first_step;
        repeats_.clear();
        calls_.clear();
        return sync;
      }
      case IPU_STEP_GOTO: pc_ = s.a; continue;
      case IPU_STEP_CALL:
        if (calls_.size() == kMaxCalls) return std::nullopt;
        calls_.push_back(pc_ + 1);
        pc_ = s.a;
        continue;
      case IPU_STEP_RETURN:
        if (calls_.empty()) return std::nullopt;
        pc_ = calls_.back();
        calls_.pop_back();
        continue;
      case IPU_STEP_STREAM_SLOT: pc_ = (stream_uses_[s.a]++ & 1) != 0 ? s.b : pc_ + 1; continue;
      case IPU_STEP_REPEAT:
        if (s.a == 0) {
          pc_ = s.b;
        } else {
          if (repeats_.size() == kMaxRepeats) return std::nullopt;
          repeats_.push_back(s.a);
          ++pc_;
        }
        continue;
      case IPU_STEP_REPEAT_END:
        if (repeats_.empty()) return std::nullopt;
        if (--repeats_.back() == 0) {
          repeats_.pop_back();
          ++pc_;
        } else {
          pc_ = s.a + 1;
        }
        continue;
      default: return std::nullopt;  // IPU_STEP_END: the tiles stop
    }
    sync.program = program_;
    ++pc_;
    return sync;
  }
  return std::nullopt;
}

std::optional<std::map<unsigned, uint64_t>> host_syncs_per_run(const Executable& exe,
                                                               unsigned program,
                                                               uint64_t max_syncs) {
  // Two runs, so that the first one's end shows as the second one's dispatch.
  const std::vector<unsigned> runs{program, program};
  ControlWalk walk(exe, runs);
  std::map<unsigned, uint64_t> count;
  const uint32_t host = hw::sync_group::kHost;
  const uint32_t dispatch = host | hw::sync_group::kHostCommand;
  if (!walk.next()) return std::nullopt;  // the dispatch that starts the run
  for (uint64_t syncs = 0; syncs < max_syncs; ++syncs) {
    const std::optional<ControlWalk::Sync> sync = walk.next();
    if (!sync) return std::nullopt;
    if (sync->group == dispatch) return count;  // the run is over
    if ((sync->group & host) != 0) ++count[sync->group & ~host];
  }
  return std::nullopt;
}

}  // namespace ipu::sdk
