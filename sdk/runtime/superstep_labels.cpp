#include "sdk/runtime/superstep_labels.h"

#include <optional>

#include "sdk/runtime/control_walk.h"

namespace ipu::sdk {

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
  for (unsigned chip = 0; chip < of_chip.size(); ++chip) {
    const std::vector<size_t>& chip_barriers = of_chip[chip];
    ControlWalk walk(exe, runs, chip);
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
