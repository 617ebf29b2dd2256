// What a tile's workers ran, for profiles (ipu-sim --stats and --trace, the SDK's codelet
// tables): each function started on a worker with its argument (an SDK vertex's state), how
// often and for how many cycles, and each batch of runs the supervisor joined. The core calls it
// only at a worker's start and exit and at ipu.join, never per instruction.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

namespace ipu::base {
class ByteWriter;
class ByteReader;
}  // namespace ipu::base

namespace ipu::iss {

// One run of a worker, from its first issue to its exit.
struct WorkerRun {
  uint64_t start = 0;         // tile cycle of its first issue
  uint64_t end = 0;           // one past its last issue (the exit, or the end of the run)
  uint64_t instructions = 0;  // retired
  uint64_t flops = 0;         // floating-point operations (iss/insn_class.h)
  uint32_t function = 0, argument = 0;
  uint32_t batch = 0;   // ipu.join completions on the tile before it started
  uint32_t worker = 0;  // context 1..N
};

// Totals over several runs (or batches) of the same kind.
struct RunTotals {
  uint64_t runs = 0, cycles = 0, instructions = 0, flops = 0;
  uint64_t min_cycles = ~uint64_t{0}, max_cycles = 0;
  void add(uint64_t run_cycles, uint64_t run_instructions, uint64_t run_flops);
  RunTotals& operator+=(const RunTotals& o);
};

class WorkerProfile {
 public:
  using Key = std::pair<uint32_t, uint32_t>;  // function, argument

  // Profiles from now on, keeping the first `log_limit` runs themselves (for the trace's
  // worker lanes; the totals count every run).
  void enable(size_t log_limit) { enabled_ = true, log_limit_ = log_limit; }
  bool enabled() const { return enabled_; }
  void clear();

  // `instret` and `flops` are the worker's counts so far (a run's are the differences).
  void started(unsigned worker, uint64_t cycle, uint64_t instret, uint64_t flops, uint32_t function,
               uint32_t argument);
  void finished(unsigned worker, uint64_t end, uint64_t instret, uint64_t flops);
  void joined();  // the supervisor's ipu.join completed: the batch of runs before it ends

  // Every run that ended, by function and argument.
  const std::map<Key, RunTotals>& runs() const { return runs_; }
  // Every joined batch by its first run's function and argument: `runs` counts batches, and
  // their cycles run from the batch's first start to its last end.
  const std::map<Key, RunTotals>& batches() const { return batches_; }
  // The first runs that ended, in order, and how many more the log limit dropped.
  const std::vector<WorkerRun>& log() const { return log_; }
  uint64_t dropped() const { return dropped_; }
  // Worker `worker`'s run in progress up to `issue_end` (one past its last issue), given its
  // instructions retired and flops so far; nullopt when it is not running.
  std::optional<WorkerRun> open_run(unsigned worker, uint64_t issue_end, uint64_t instret,
                                    uint64_t flops) const;

  // For the replicas of other simulator processes (hw/parallel/ranks.h): everything, but only
  // the log entries added since the last save.
  void save(base::ByteWriter& out) const;
  void load(base::ByteReader& in);

 private:
  static constexpr unsigned kWorkers = 16;
  bool enabled_ = false;
  size_t log_limit_ = 0;
  std::array<std::optional<WorkerRun>, kWorkers> open_{};
  std::map<Key, RunTotals> runs_, batches_;
  std::vector<WorkerRun> log_;
  uint64_t dropped_ = 0;
  mutable size_t log_sent_ = 0;
  uint32_t joins_ = 0;
  // The batch in progress: its first run and its extent so far.
  std::optional<Key> batch_first_;
  uint64_t batch_start_ = 0, batch_end_ = 0, batch_instructions_ = 0, batch_flops_ = 0;
};

}  // namespace ipu::iss
