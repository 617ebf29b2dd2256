#include "ranks.h"

#include <fmt/format.h>

#include <chrono>
#include <climits>
#include <cstdlib>
#include <stdexcept>
#include <string>

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
  const int count = static_cast<int>(mine.size());
  std::vector<int> counts(size_), offsets(size_);
  check(MPI_Allgather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, MPI_COMM_WORLD),
        "MPI_Allgather");
  size_t total = 0;
  for (unsigned r = 0; r < size_; ++r) {
    if (total > static_cast<size_t>(INT_MAX))
      throw std::runtime_error("one batch of tile results exceeds what MPI takes at once");
    offsets[r] = static_cast<int>(total);
    total += static_cast<size_t>(counts[r]);
  }
  std::vector<uint8_t> all(total);
  check(MPI_Allgatherv(mine.data(), count, MPI_BYTE, all.data(), counts.data(), offsets.data(),
                       MPI_BYTE, MPI_COMM_WORLD),
        "MPI_Allgatherv");
  gather_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ++gathers_;
  return all;
#else
  return mine;
#endif
}

}  // namespace ipu::hw
