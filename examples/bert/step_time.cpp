#include "examples/bert/step_time.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace ipu::examples::bert {

std::vector<PipelineSlot> pipeline_slots(unsigned stages, unsigned accumulate) {
  const int S = static_cast<int>(stages), A = static_cast<int>(accumulate);
  const auto valid = [A](int m) { return m >= 0 && m < A ? m : -1; };
  std::vector<PipelineSlot> slots;
  if (S == 1) {
    for (int m = 0; m < A; ++m) slots.push_back({{m}, {m}, m});
    return slots;
  }
  // Micro-batch m's forward pass runs on stage k in slot m + k, its heads in slot m + S and its
  // backward pass on stage k in slot m + 2S - k.
  for (int t = 0; t < A + 2 * S; ++t) {
    PipelineSlot slot;
    for (int k = 0; k < S; ++k) {
      slot.backward.push_back(valid(t - (2 * S - k)));
      slot.forward.push_back(valid(t - k));
    }
    slot.heads = valid(t - S);
    slots.push_back(slot);
  }
  return slots;
}

std::string slot_sends(const PipelineSlot& slot) {
  const size_t S = slot.forward.size();
  if (S == 1) return {};
  std::string key;
  for (size_t k = 0; k < S; ++k) {
    if (k > 0 && slot.backward[k] >= 0) key += fmt::format("d{}", k);
    if (slot.forward[k] >= 0) key += fmt::format("f{}", k);
  }
  if (slot.heads >= 0) key += "h";
  return key;
}

PipelineTime compose_pipeline(const PipelineParts& parts, unsigned stages, unsigned accumulate) {
  if (parts.forward.size() != stages || parts.backward.size() != stages)
    throw std::invalid_argument(fmt::format(
        "the parts have {} stages' forward and {} stages' backward passes, the schedule {} stages",
        parts.forward.size(), parts.backward.size(), stages));
  PipelineTime out;
  out.host_io = parts.host_io;
  // Each chip's work in a slot; the chips' total is kept in S times its mean, so that the
  // compute (the mean) and the bubble (the busiest less the mean) add up exactly.
  uint64_t busiest_total = 0, all_chips_total = 0;
  for (const PipelineSlot& slot : pipeline_slots(stages, accumulate)) {
    uint64_t busiest = 0;
    for (unsigned k = 0; k < stages; ++k) {
      uint64_t work = 0;
      if (slot.backward[k] >= 0)
        work += parts.backward[k] + (stages > 1 ? parts.forward[k] : 0);  // recomputed
      if (slot.forward[k] >= 0) work += parts.forward[k];
      if (k == 0 && slot.heads >= 0) work += parts.heads;
      busiest = std::max(busiest, work);
      all_chips_total += work;
    }
    busiest_total += busiest;
    const std::string key = slot_sends(slot);
    if (!key.empty()) {
      const auto found = parts.sends.find(key);
      if (found == parts.sends.end())
        throw std::invalid_argument(fmt::format(
            "slot {} of the schedule copies '{}', a set of copies not measured", out.slots, key));
      out.sends += found->second;
    }
    ++out.slots;
  }
  out.compute = all_chips_total / stages;
  out.bubble = busiest_total - out.compute;
  out.cycles = out.compute + out.bubble + out.sends + out.host_io;
  return out;
}

}  // namespace ipu::examples::bert
