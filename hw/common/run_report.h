// What a run of a chip or machine did: how it ended and its counts. Plain data, free of
// SystemC, so the SDK's public headers can carry it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ipu::hw {

struct ChipOutcome {
  enum class Result { kExited, kFault, kCycleLimit, kDeadlock };
  Result result = Result::kExited;
  int exit_status = 0;  // the first non-zero exit status in tile order, else 0
  std::string message;  // the report for anything but a normal exit
};

// One context's counts on one tile, for the per-context table of ipu-sim's report.
struct ContextCounts {
  uint64_t instructions = 0;
  uint64_t issue_slots = 0;    // retired, stalled and trapped issues
  uint64_t runs = 0;           // times started (the supervisor: 1)
  uint64_t active_cycles = 0;  // from each start to its exit, or to the end of the run
  ContextCounts& operator+=(const ContextCounts& o) {
    instructions += o.instructions, issue_slots += o.issue_slots, runs += o.runs;
    active_cycles += o.active_cycles;
    return *this;
  }
};

// One active tile's contexts (supervisor first) and how it ended.
struct TileCounts {
  unsigned tile = 0;  // machine tile number
  bool exited = false;
  int exit_status = 0;
  std::vector<ContextCounts> contexts;
};

struct RunReport {
  ChipOutcome outcome;
  unsigned chips = 1;
  unsigned tiles = 0;
  uint64_t cycles = 0;
  uint64_t instructions = 0;
  size_t supersteps = 0;
  uint64_t exchange_words = 0;
  uint64_t inter_chip_words = 0;  // of those, words delivered to another chip
  uint64_t ipulink_bytes = 0;     // bytes carried by IPU-Links (a word counts on every hop)
  unsigned gateways = 0;
  uint64_t streaming_bytes_written = 0, streaming_bytes_read = 0;  // by tiles
  double clock_hz = 0;
  double host_seconds = 0;
  // Over MPI ranks (hw/parallel/ranks.h): how many, and this rank's host seconds running its
  // tiles' bursts and swapping their results with the other ranks. A swap waits for every
  // rank's whole batch: the slowest rank's burst seconds beside this rank's tell waiting for
  // slower bursts from waiting for another rank's serial work.
  unsigned ranks = 1;
  uint64_t shares = 0;  // times the ranks swapped results (once per batch of bursts)
  double burst_seconds = 0, share_seconds = 0;
  double slowest_burst_seconds = 0;
  unsigned slowest_rank = 0;
  std::optional<uint64_t> memory_hash;  // FNV-1a over the active tiles' SRAM, in tile order
  unsigned tiles_per_chip = 1;
  std::vector<TileCounts> per_tile;  // every active tile, in machine-tile order
};

}  // namespace ipu::hw
