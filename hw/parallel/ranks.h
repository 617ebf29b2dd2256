// A machine simulated by the processes of an MPI job (`mpirun -np K ipu-sim run IMAGE ...`).
//
// Every process (rank) elaborates the whole machine and coordinates the same SystemC
// simulation: sync, exchange, IPU-Links and streaming memory are computed alike everywhere. The
// chips are dealt out in contiguous blocks, one block per rank, and a rank runs the compute
// bursts of its own chips' tiles only. At the end of each batch of bursts (the only points where
// one tile's work reaches another: a sync arrival, an exchange phase's sends, receives and
// streaming-memory transfers) the ranks swap what their bursts did, so each keeps a replica of
// the others' tiles: their cycles, stop and sync state, counters, sends and console lines, but
// not their registers or memory. A burst never waits on anything inside the batch, so the batch
// boundary is the lookahead: no rank can need another's result earlier. The same image gives the
// same bits, cycles and statistics on any number of ranks (docs/machine.md).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hw/parallel/compute_pool.h"

namespace ipu::hw {

class MpiJob : public BurstShare {
 public:
  // Joins the MPI job this process was started in by mpirun (MPI_Init), or stands alone as
  // rank 0 of 1 when it was not. Throws std::runtime_error when mpirun started several ranks
  // and this build has no MPI.
  static std::unique_ptr<MpiJob> join(int& argc, char**& argv);
  ~MpiJob() override;  // MPI_Finalize

  unsigned rank() const { return rank_; }
  unsigned size() const { return size_; }
  // Ranks on this host: each one's default share of the host's cores for tile compute.
  unsigned ranks_on_host() const { return local_size_; }
  bool spread() const { return size_ > 1; }
  // The job's size as mpirun announced it to this process (0: not started by mpirun).
  static unsigned launched_ranks();
  // Whether this build can run several ranks (Open MPI found when it was configured).
  static bool available();

  // Deals `chips` chips of `tiles_per_chip` tiles out to the ranks. Throws
  // std::invalid_argument when there are more ranks than chips (a chip is never split).
  void assign(unsigned chips, unsigned tiles_per_chip);
  // The ranks that run chip `chip` (after assign).
  unsigned rank_of_chip(unsigned chip) const;
  bool runs_here(unsigned tile) const override;
  // Every rank's bytes, in rank order. Waits without spinning (a stopped rank must not hold
  // the others' cores), and after timeout() seconds ends the job (abort), naming the ranks that
  // did not come (or saying the transfer itself did not end, when every rank came).
  std::vector<uint8_t> all_gather(const std::vector<uint8_t>& mine) override;
  void set_timeout(double seconds) { timeout_ = seconds; }
  double timeout() const { return timeout_; }
  // Ends every rank of the job with `status` (MPI_Abort): for an error one rank met alone,
  // which would otherwise leave the others waiting for it.
  [[noreturn]] void abort(int status);

  // Host seconds spent in all_gather and the calls made, for the benchmarks.
  double gather_seconds() const { return gather_seconds_; }
  uint64_t gathers() const { return gathers_; }

 private:
  MpiJob() = default;
  // Ends the job after a swap's timeout, saying `what` happened.
  [[noreturn]] void time_out(const std::string& what);
  bool initialised_ = false;
  unsigned rank_ = 0, size_ = 1, local_size_ = 1;
  unsigned chips_ = 1, tiles_per_chip_ = 1;
  double gather_seconds_ = 0;
  uint64_t gathers_ = 0;
  double timeout_ = 600;
};

}  // namespace ipu::hw
