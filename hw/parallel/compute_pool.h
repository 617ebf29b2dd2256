// Runs tiles' compute bursts on a pool of host threads. A tile computes only on its own SRAM
// between syncs, so the bursts that tiles request in one delta cycle are independent: the pool
// collects them, runs them together (oneTBB, at most `threads` at once), then lets each tile
// commit what its burst did to the rest of the machine (buffered sends, console lines) on the
// simulation thread, in machine-tile order. SystemC stays the single-threaded coordinator, and
// the outcome does not depend on the thread count: one thread runs the same batches in order.
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <systemc>
#include <vector>

namespace ipu::base {
class ByteWriter;
class ByteReader;
}  // namespace ipu::base

namespace ipu::hw {

// One tile's burst, as the pool sees it.
class ComputeBurst {
 public:
  virtual ~ComputeBurst() = default;
  // On a host thread: touches only the tile's own state, and must not throw (keep an
  // exception for the tile's own thread to rethrow).
  virtual void run_burst() noexcept = 0;
  // On the simulation thread, in machine-tile order, after every burst of the batch has run.
  virtual void commit_burst() = 0;
  // What the burst did that the rest of the machine sees, as written by the simulator process
  // that ran it, and read into the tile's replica by every other process (BurstShare).
  virtual void save_burst(base::ByteWriter& out) const = 0;
  virtual void load_burst(base::ByteReader& in) = 0;
  // After commit_burst: how long after the batch the tile resumes, its burst's length in
  // simulated time. The pool wakes it then, which saves the tile a timed wait of its own.
  virtual sc_core::sc_time resume_delay() const { return sc_core::SC_ZERO_TIME; }
};

// The simulator processes of an MPI job that simulate one machine together (hw/parallel/ranks.h):
// each runs the bursts of its own tiles and keeps a replica of the others, so that every
// process coordinates the same simulation and sees the same results.
class BurstShare {
 public:
  virtual ~BurstShare() = default;
  // Whether this process runs the bursts of machine tile `tile`.
  virtual bool runs_here(unsigned tile) const = 0;
  // Every process calls this at the same points with its own bytes; returns every process's
  // bytes, concatenated in process order.
  virtual std::vector<uint8_t> all_gather(const std::vector<uint8_t>& mine) = 0;
};

class ComputePool : public sc_core::sc_module {
 public:
  ComputePool(const sc_core::sc_module_name& name, unsigned threads);
  ~ComputePool() override;

  // Host threads (1: every burst on the simulation thread). Before simulation starts.
  void set_threads(unsigned threads);
  unsigned threads() const { return threads_; }
  // Every burst on the simulation thread, whatever `threads` says: an instruction trace is
  // written as the instructions run.
  void set_serial(bool serial) { serial_ = serial; }
  // Runs only the bursts of this process's tiles, and takes the others' results from `share`
  // (null: every burst runs here). Before simulation starts.
  void set_share(BurstShare* share) { share_ = share; }

  // Asks for tile `tile`'s burst to run in the batch of this delta cycle; `done` (the tile's
  // own event) fires once it has run and been committed, resume_delay() after the batch.
  void submit(unsigned tile, ComputeBurst& burst, sc_core::sc_event& done);
  // The same from an SC_THREAD: returns when `done` fires.
  void run(unsigned tile, ComputeBurst& burst, sc_core::sc_event& done);

  // Calls fn(0) .. fn(n - 1) on the pool's threads (in order on the simulation thread when the
  // pool has one or runs serially) and returns when all are done. For work on the simulation
  // thread that splits into independent parts, such as an exchange phase's receivers.
  void for_each(size_t n, const std::function<void(size_t)>& fn);

  // Batches run, bursts in them and the host seconds spent running them, for the benchmarks.
  uint64_t batches() const { return batches_; }
  uint64_t bursts() const { return bursts_; }
  double burst_seconds() const { return burst_seconds_; }
  // Host seconds spent waiting for and reading the other processes' burst results.
  double share_seconds() const { return share_seconds_; }

 private:
  SC_HAS_PROCESS(ComputePool);
  struct Request {
    unsigned tile;
    ComputeBurst* burst;
    sc_core::sc_event* done;
  };
  void dispatch();
  void run_bursts(const std::vector<ComputeBurst*>& bursts);
  // Sends this process's burst results of the batch to the others and loads theirs.
  void share_results(const std::vector<bool>& ran_here);

  struct Arena;  // oneTBB stays out of this header
  unsigned threads_ = 1;
  bool serial_ = false;
  BurstShare* share_ = nullptr;
  std::unique_ptr<Arena> arena_;
  std::vector<Request> pending_;
  std::vector<Request> batch_;
  sc_core::sc_event requested_;
  uint64_t batches_ = 0, bursts_ = 0;
  double burst_seconds_ = 0, share_seconds_ = 0;
};

// The host's cores, or 1 when it cannot tell: the default of --threads.
unsigned host_cores();

}  // namespace ipu::hw
