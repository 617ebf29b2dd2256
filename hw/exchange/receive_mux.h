// The receive side of one tile's exchange phase, cycle by cycle: what the tile's receive mux
// sees (the words arriving, the tile's select and buffer writes, its boundary) and what it
// decides for each word. The C++ model below and the RTL (rtl/exchange/ipu_exchange_rx.v,
// through tlm/) take the same cycles and give the same decisions; Exchange::resolve turns them
// into deliveries and error reports.
#pragma once

#include <cstdint>
#include <vector>

namespace ipu::hw {

struct RxWord {
  unsigned source;
  uint32_t data;
};

struct RxCycle {
  uint64_t cycle = 0;
  std::vector<RxWord> words;  // arriving in this cycle, in source order
  bool late = false;          // the cycle is at or after the tile's boundary
  // Written in this cycle, in effect from the next one:
  bool select_write = false;
  int select = -1;  // the tile listened to; -1: none
  bool buffer_write = false;
  uint32_t buffer_address = 0, buffer_words = 0;
  bool close = false;  // the tile's boundary: its current buffer ends
};

enum class RxOutcome : uint8_t { kWritten, kLate, kWrongSource, kNoBuffer, kOverrun };

struct RxResult {
  std::vector<RxOutcome> outcomes;  // per word of the cycle
  std::vector<uint32_t> addresses;  // per word: where a written word lands
  // The buffer a buffer write or close ended was short: its figures.
  bool short_buffer = false;
  uint32_t buffer_address = 0, buffer_words = 0, filled = 0;
};

class ReceiveMuxIf {
 public:
  virtual ~ReceiveMuxIf() = default;
  // One receiver's phase, from its reset state: results[i] for cycles[i].
  virtual void run(const std::vector<RxCycle>& cycles, std::vector<RxResult>& results) = 0;
};

// The C++ model. Each word in order: late, else from a tile other than the selected one, else
// with no buffer or a full one, else written at the buffer's next place.
class ReceiveMux : public ReceiveMuxIf {
 public:
  void run(const std::vector<RxCycle>& cycles, std::vector<RxResult>& results) override;
};

}  // namespace ipu::hw
