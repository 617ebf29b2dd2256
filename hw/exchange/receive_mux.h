// The receive side of one tile's exchange phase, cycle by cycle: what the tile's receive mux
// sees (the words arriving, the tile's select and buffer writes, its boundary) and what it
// decides for each word. The C++ model below and the RTL (rtl/exchange/ipu_exchange_rx.v,
// through tlm/) take the same cycles and give the same decisions; Exchange::resolve turns them
// into deliveries and error reports. Schedules and decisions are flat arrays, reused from one
// receiver to the next: a full-chip exchange resolves millions of words.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ipu::hw {

struct RxWord {
  unsigned source;
  uint32_t data;
};

struct RxCycle {
  uint64_t cycle = 0;
  uint32_t first_word = 0, word_count = 0;  // its words: RxSchedule::words[first, first+count)
  bool late = false;                        // the cycle is at or after the tile's boundary
  // Written in this cycle, in effect from the next one:
  bool select_write = false;
  int select = -1;  // the tile listened to; -1: none
  bool buffer_write = false;
  uint32_t buffer_address = 0, buffer_words = 0;
  bool close = false;  // the tile's boundary: its current buffer ends
};

struct RxSchedule {
  std::vector<RxCycle> cycles;
  std::vector<RxWord> words;  // arriving, cycle by cycle, in source order within a cycle
  void clear() {
    cycles.clear();
    words.clear();
  }
};

enum class RxOutcome : uint8_t { kWritten, kLate, kWrongSource, kNoBuffer, kOverrun };

// A buffer that a buffer write or close ended short.
struct RxShortBuffer {
  std::size_t cycle;  // index into RxSchedule::cycles
  uint32_t buffer_address, buffer_words, filled;
};

struct RxDecisions {
  std::vector<RxOutcome> outcomes;  // per word of the schedule
  std::vector<uint32_t> addresses;  // per word: where a written word lands
  std::vector<RxShortBuffer> short_buffers;
  void clear() {
    outcomes.clear();
    addresses.clear();
    short_buffers.clear();
  }
};

class ReceiveMuxIf {
 public:
  virtual ~ReceiveMuxIf() = default;
  // One receiver's phase, from its reset state.
  virtual void run(const RxSchedule& schedule, RxDecisions& decisions) = 0;
};

// The C++ model. Each word in order: late, else from a tile other than the selected one, else
// with no buffer or a full one, else written at the buffer's next place.
class ReceiveMux : public ReceiveMuxIf {
 public:
  void run(const RxSchedule& schedule, RxDecisions& decisions) override;
};

}  // namespace ipu::hw
