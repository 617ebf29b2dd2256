#include "ranks.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#ifdef IPU_HAVE_MPI
// The C API only: the deprecated C++ bindings would need libmpi_cxx.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

namespace ipu::hw {
namespace {

#ifdef IPU_HAVE_MPI
void check(int code, const char* what) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw std::runtime_error(fmt::format("{} failed: {}", what, std::string(text, length)));
}
#endif

}  // namespace

unsigned MpiJob::launched_ranks() {
  // Open MPI's mpirun, or a PMI launcher such as MPICH's hydra.
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"})
    if (const char* v = std::getenv(name))
      return static_cast<unsigned>(std::strtoul(v, nullptr, 10));
  return 0;
}

bool MpiJob::available() {
#ifdef IPU_HAVE_MPI
  return true;
#else
  return false;
#endif
}

std::unique_ptr<MpiJob> MpiJob::join(int& argc, char**& argv) {
  std::unique_ptr<MpiJob> job(new MpiJob);
  const unsigned launched = launched_ranks();
  if (launched == 0) return job;
#ifdef IPU_HAVE_MPI
  check(MPI_Init(&argc, &argv), "MPI_Init");
  job->initialised_ = true;
  int rank = 0, size = 1, local = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm host;
  check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &host),
        "MPI_Comm_split_type");
  MPI_Comm_size(host, &local);
  MPI_Comm_free(&host);
  job->rank_ = static_cast<unsigned>(rank);
  job->size_ = static_cast<unsigned>(size);
  job->local_size_ = static_cast<unsigned>(local);
#else
  (void)argc, (void)argv;
  if (launched > 1)
    throw std::runtime_error(fmt::format(
        "started as one of {} MPI ranks, but this ipu-sim was built without MPI (install "
        "libopenmpi-dev and rebuild: scripts/setup.sh does both)",
        launched));
#endif
  return job;
}

MpiJob::~MpiJob() {
#ifdef IPU_HAVE_MPI
  if (initialised_) MPI_Finalize();
#endif
}

void MpiJob::abort(int status) {
#ifdef IPU_HAVE_MPI
  if (initialised_ && size_ > 1) MPI_Abort(MPI_COMM_WORLD, status);
#endif
  std::exit(status);
}

void MpiJob::assign(unsigned chips, unsigned tiles_per_chip) {
  if (size_ > chips)
    throw std::invalid_argument(fmt::format(
        "{} MPI ranks for a machine of {} chip{}: each rank simulates whole chips, so run at most "
        "{} rank{}",
        size_, chips, chips == 1 ? "" : "s", chips, chips == 1 ? "" : "s"));
  chips_ = chips;
  tiles_per_chip_ = tiles_per_chip;
}

unsigned MpiJob::rank_of_chip(unsigned chip) const {
  // Contiguous blocks as even as they come: chips [r * C / R, (r + 1) * C / R) on rank r, so the
  // rungs of the ladder (chips 2k, 2k + 1) stay together whenever the counts allow.
  return static_cast<unsigned>(((uint64_t{chip} + 1) * size_ - 1) / chips_);
}

bool MpiJob::runs_here(unsigned tile) const {
  return rank_of_chip(tile / tiles_per_chip_) == rank_;
}

std::vector<uint8_t> MpiJob::all_gather(const std::vector<uint8_t>& mine) {
  if (size_ == 1) return mine;
#ifdef IPU_HAVE_MPI
  const auto t0 = std::chrono::steady_clock::now();
  if (mine.size() > static_cast<size_t>(INT_MAX))
    throw std::runtime_error(fmt::format(
        "rank {} has {} bytes of tile results for one batch, more than MPI takes at once", rank_,
        mine.size()));
  // Point to point rather than MPI_Allgatherv, whose wait spins on a core for as long as a
  // rank is missing (for ever, for a rank stopped by a debugger or SIGSTOP): each rank sends
  // its bytes to every other, then polls for theirs, sleeping between polls. A swap's tag is its
  // number, so swaps never mix (a rank is at most one swap ahead of another).
  const int tag = static_cast<int>(gathers_ % 32768);  // MPI guarantees tags up to 32767
  const int count = static_cast<int>(mine.size());
  std::vector<MPI_Request> sends(size_, MPI_REQUEST_NULL);
  for (unsigned r = 0; r < size_; ++r)
    if (r != rank_)
      check(MPI_Isend(mine.data(), count, MPI_BYTE, static_cast<int>(r), tag, MPI_COMM_WORLD,
                      &sends[r]),
            "MPI_Isend");
  std::vector<std::vector<uint8_t>> parts(size_);
  std::vector<MPI_Request> receives(size_, MPI_REQUEST_NULL);
  // A rank is done once its bytes are here and it has taken ours.
  std::vector<bool> have(size_), taken(size_);
  have[rank_] = taken[rank_] = true;
  unsigned missing = size_ - 1, untaken = size_ - 1;
  std::chrono::microseconds pause{0};
  for (;;) {
    bool progress = false;
    for (unsigned r = 0; r < size_; ++r) {
      if (have[r]) continue;
      if (receives[r] == MPI_REQUEST_NULL) {
        // Its size first (the message's envelope), then a receive that completes as the bytes
        // come: a blocking one would wait, spinning, on a sender that stopped half way.
        int arrived = 0;
        MPI_Status status;
        check(MPI_Iprobe(static_cast<int>(r), tag, MPI_COMM_WORLD, &arrived, &status),
              "MPI_Iprobe");
        if (!arrived) continue;
        int bytes = 0;
        MPI_Get_count(&status, MPI_BYTE, &bytes);
        parts[r].resize(static_cast<size_t>(bytes));
        check(MPI_Irecv(parts[r].data(), bytes, MPI_BYTE, static_cast<int>(r), tag, MPI_COMM_WORLD,
                        &receives[r]),
              "MPI_Irecv");
        progress = true;
      }
      int done = 0;
      check(MPI_Test(&receives[r], &done, MPI_STATUS_IGNORE), "MPI_Test");
      if (done) have[r] = true, --missing, progress = true;
    }
    for (unsigned r = 0; r < size_; ++r) {
      if (taken[r]) continue;
      int done = 0;
      check(MPI_Test(&sends[r], &done, MPI_STATUS_IGNORE), "MPI_Test");
      if (done) taken[r] = true, --untaken, progress = true;
    }
    if (missing == 0 && untaken == 0) break;
    if (progress) {
      pause = std::chrono::microseconds{0};
      continue;
    }
    const double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (waited > timeout_) {
      std::vector<std::string> absent;
      for (unsigned r = 0; r < size_; ++r)
        if (!have[r] || !taken[r]) absent.push_back(std::to_string(r));
      fmt::print(stderr,
                 "ipu-sim: MPI rank {}: rank{} {} did not reach result swap {} within {} s "
                 "(--rank-timeout): stopped or hung; ending the job\n",
                 rank_, absent.size() == 1 ? "" : "s", fmt::join(absent, ", "), gathers_ + 1,
                 timeout_);
      std::fflush(stderr);
      abort(1);
    }
    // Polls at once at first (a swap usually completes in tens of microseconds), then sleeps
    // longer and longer, up to a millisecond.
    if (pause.count() > 0) std::this_thread::sleep_for(pause);
    pause = std::min(std::chrono::microseconds{1000},
                     std::max(std::chrono::microseconds{10}, pause * 2));
  }
  std::vector<uint8_t> all;
  parts[rank_] = mine;
  for (const std::vector<uint8_t>& part : parts) all.insert(all.end(), part.begin(), part.end());
  gather_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ++gathers_;
  return all;
#else
  return mine;
#endif
}

}  // namespace ipu::hw
