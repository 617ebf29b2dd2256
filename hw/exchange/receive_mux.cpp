#include "receive_mux.h"

namespace ipu::hw {

void ReceiveMux::run(const RxSchedule& schedule, RxDecisions& decisions) {
  int listening = -1;
  bool has_buffer = false;
  uint32_t address = 0, words = 0, filled = 0;
  decisions.clear();
  for (std::size_t i = 0; i < schedule.cycles.size(); ++i) {
    const RxCycle& c = schedule.cycles[i];
    for (uint32_t k = c.first_word; k < c.first_word + c.word_count; ++k) {
      RxOutcome outcome = RxOutcome::kWritten;
      uint32_t at = 0;
      if (c.late)
        outcome = RxOutcome::kLate;
      else if (listening != static_cast<int>(schedule.words[k].source))
        outcome = RxOutcome::kWrongSource;
      else if (!has_buffer)
        outcome = RxOutcome::kNoBuffer;
      else if (filled == words)
        outcome = RxOutcome::kOverrun;
      else
        at = address + 4 * filled++;
      decisions.outcomes.push_back(outcome);
      decisions.addresses.push_back(at);
    }
    if ((c.buffer_write || c.close) && has_buffer && filled != words)
      decisions.short_buffers.push_back({i, address, words, filled});
    if (c.select_write) listening = c.select;
    if (c.buffer_write) {
      has_buffer = true;
      address = c.buffer_address;
      words = c.buffer_words;
      filled = 0;
    } else if (c.close) {
      has_buffer = false;
    }
  }
}

}  // namespace ipu::hw
