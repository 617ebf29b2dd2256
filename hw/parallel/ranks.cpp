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

// Polls `requests` until every one is done (done[i]), without spinning once nothing has moved
// for half a second. false: `timeout` seconds passed since `since` first.
bool wait_all(std::vector<MPI_Request>& requests, std::chrono::steady_clock::time_point since,
              double timeout, std::vector<bool>& done) {
  done.assign(requests.size(), false);
  size_t pending = requests.size();
  auto last_progress = since;
  while (pending > 0) {
    bool progress = false;
    for (size_t i = 0; i < requests.size(); ++i) {
      if (done[i]) continue;
      int finished = 0;
      check(MPI_Test(&requests[i], &finished, MPI_STATUS_IGNORE), "MPI_Test");
      if (finished) done[i] = true, --pending, progress = true;
    }
    if (pending == 0) break;
    const auto now = std::chrono::steady_clock::now();
    if (progress) {
      last_progress = now;
      continue;
    }
    if (std::chrono::duration<double>(now - since).count() > timeout) return false;
    // Within half a second of the last progress it polls without pause, giving the core up to
    // any other process (ranks' batches differ by fractions of a second, a swap takes tens of
    // microseconds, and a transfer moves only while it is polled); after that the others are
    // late (stopped, hung or far slower), and it polls every millisecond, leaving the core idle.
    if (now - last_progress < std::chrono::milliseconds(500))
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
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

void MpiJob::time_out(const std::string& what) {
  fmt::print(stderr, "ipu-sim: MPI rank {}: {}; ending the job\n", rank_, what);
  std::fflush(stderr);
  abort(1);
}

std::vector<uint8_t> MpiJob::all_gather(const std::vector<uint8_t>& mine) {
  if (size_ == 1) return mine;
#ifdef IPU_HAVE_MPI
  const auto t0 = std::chrono::steady_clock::now();
  if (mine.size() > static_cast<size_t>(INT_MAX))
    throw std::runtime_error(fmt::format(
        "rank {} has {} bytes of tile results for one batch, more than MPI takes at once", rank_,
        mine.size()));
  // First each rank's byte count, point to point: the wait for a late rank happens here, where
  // it does not spin (Open MPI's blocking collectives hold a core for as long as a rank is
  // missing: for ever, for a rank stopped by a debugger or SIGSTOP) and can name who is late.
  // The bytes then go in one MPI_Iallgatherv, every rank being there, polled the same way.
  const int count = static_cast<int>(mine.size());
  const int tag = static_cast<int>(gathers_ % 32768);  // MPI guarantees tags up to 32767
  std::vector<int> counts(size_);
  counts[rank_] = count;
  std::vector<MPI_Request> requests;  // the receives, one a rank in order, then the sends
  std::vector<unsigned> from;
  for (unsigned r = 0; r < size_; ++r)
    if (r != rank_) {
      requests.emplace_back();
      from.push_back(r);
      check(MPI_Irecv(&counts[r], 1, MPI_INT, static_cast<int>(r), tag, MPI_COMM_WORLD,
                      &requests.back()),
            "MPI_Irecv");
    }
  for (unsigned r = 0; r < size_; ++r)
    if (r != rank_) {
      requests.emplace_back();
      check(
          MPI_Isend(&count, 1, MPI_INT, static_cast<int>(r), tag, MPI_COMM_WORLD, &requests.back()),
          "MPI_Isend");
    }
  std::vector<bool> done;
  if (!wait_all(requests, t0, timeout_, done)) {
    std::vector<unsigned> late;
    for (size_t i = 0; i < from.size(); ++i)
      if (!done[i]) late.push_back(from[i]);
    time_out(fmt::format(
        "rank{} {} did not reach result swap {} within {} s (--rank-timeout): stopped or hung",
        late.size() == 1 ? "" : "s", fmt::join(late, ", "), gathers_ + 1, timeout_));
  }
  std::vector<int> offsets(size_);
  size_t total = 0;
  for (unsigned r = 0; r < size_; ++r) {
    if (total > static_cast<size_t>(INT_MAX))
      throw std::runtime_error("one batch of tile results exceeds what MPI takes at once");
    offsets[r] = static_cast<int>(total);
    total += static_cast<size_t>(counts[r]);
  }
  std::vector<uint8_t> all(total);
  std::vector<MPI_Request> gather(1);
  check(MPI_Iallgatherv(mine.data(), count, MPI_BYTE, all.data(), counts.data(), offsets.data(),
                        MPI_BYTE, MPI_COMM_WORLD, gather.data()),
        "MPI_Iallgatherv");
  if (!wait_all(gather, std::chrono::steady_clock::now(), timeout_, done))
    time_out(fmt::format(
        "result swap {}, which every rank reached, did not end within {} s (--rank-timeout): a "
        "rank stopped or hung during the transfer",
        gathers_ + 1, timeout_));
  gather_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ++gathers_;
  return all;
#else
  return mine;
#endif
}

}  // namespace ipu::hw
