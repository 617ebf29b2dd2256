#include "sdk/runtime/superstep_labels.h"

#include <optional>

#include "firmware/include/ipu_program.h"
#include "hw/sync/sync_config.h"

namespace ipu::sdk {

namespace {

// Follows the control steps as firmware/runtime/bsp_runtime.c does, through the device's runs,
// from sync to sync.
class ControlWalk {
 public:
  ControlWalk(const Executable& exe, const std::vector<unsigned>& runs) : exe_(exe), runs_(runs) {}

  struct Sync {
    uint32_t step = 0;
    uint32_t group = 0;              // as the tiles name it to the sync network
    unsigned program = 0;            // the run's program (for a dispatch: the one it starts)
    std::vector<uint32_t> executed;  // the execute steps since the previous sync
  };

  // The next sync; none when the runs are over or the steps stop making sense (a jump out of
  // range, calls or repeats nested deeper than the firmware allows, a loop that never syncs).
  std::optional<Sync> next() {
    Sync sync;
    const std::vector<ControlStep>& steps = exe_.control;
    for (uint64_t walked = 0; walked < kMaxStepsBetweenSyncs; ++walked) {
      if (pc_ >= steps.size()) return std::nullopt;
      const ControlStep& s = steps[pc_];
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

 private:
  // The firmware's own limits (bsp_runtime.c), and a bound on the host's walk between two
  // syncs: a run that ended passed its syncs, so only steps that disagree with it reach it.
  static constexpr size_t kMaxCalls = 8, kMaxRepeats = 32;
  static constexpr uint64_t kMaxStepsBetweenSyncs = uint64_t{1} << 28;

  const Executable& exe_;
  const std::vector<unsigned>& runs_;
  uint32_t pc_ = 0;  // step 0 is the first dispatch
  size_t run_ = 0;
  unsigned program_ = 0;
  std::vector<uint32_t> repeats_, calls_;
};

}  // namespace

std::vector<report::SuperstepLabel> label_supersteps(
    const Executable& exe, const std::vector<unsigned>& runs,
    const std::vector<hw::BarrierRecord>& barriers) {
  std::vector<report::SuperstepLabel> labels(barriers.size());
  const unsigned per_chip = exe.machine.chip.tiles;
  if (exe.control.empty() || per_chip == 0) return labels;
  // Each chip's barriers in order: its own, and the syncs across chips it takes part in.
  std::vector<std::vector<size_t>> of_chip(exe.machine.chips);
  for (size_t i = 0; i < barriers.size(); ++i) {
    unsigned last = ~0u;
    for (unsigned tile : barriers[i].tiles) {  // ascending: each chip's tiles together
      const unsigned chip = tile / per_chip;
      if (chip != last && chip < of_chip.size()) of_chip[chip].push_back(i);
      last = chip;
    }
  }
  for (const std::vector<size_t>& chip_barriers : of_chip) {
    ControlWalk walk(exe, runs);
    for (size_t i : chip_barriers) {
      const std::optional<ControlWalk::Sync> sync = walk.next();
      if (!sync || sync->group != barriers[i].group) break;
      report::SuperstepLabel& label = labels[i];
      if (!label.step.empty()) continue;  // named by an earlier chip
      label.program = exe.programs[sync->program].name;
      label.step = exe.control[sync->step].label;
      for (uint32_t step : sync->executed) label.compute.push_back(exe.control[step].label);
    }
  }
  return labels;
}

}  // namespace ipu::sdk
