#include "receive_mux.h"

#include <cstddef>

namespace ipu::hw {

void ReceiveMux::run(const std::vector<RxCycle>& cycles, std::vector<RxResult>& results) {
  int listening = -1;
  bool has_buffer = false;
  uint32_t address = 0, words = 0, filled = 0;
  results.assign(cycles.size(), {});
  for (std::size_t i = 0; i < cycles.size(); ++i) {
    const RxCycle& c = cycles[i];
    RxResult& r = results[i];
    for (const RxWord& w : c.words) {
      RxOutcome outcome = RxOutcome::kWritten;
      uint32_t at = 0;
      if (c.late)
        outcome = RxOutcome::kLate;
      else if (listening != static_cast<int>(w.source))
        outcome = RxOutcome::kWrongSource;
      else if (!has_buffer)
        outcome = RxOutcome::kNoBuffer;
      else if (filled == words)
        outcome = RxOutcome::kOverrun;
      else
        at = address + 4 * filled++;
      r.outcomes.push_back(outcome);
      r.addresses.push_back(at);
    }
    if ((c.buffer_write || c.close) && has_buffer && filled != words)
      r = {r.outcomes, r.addresses, true, address, words, filled};
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
