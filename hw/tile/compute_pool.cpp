#include "compute_pool.h"

#include <sched.h>
#include <tbb/blocked_range.h>
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <thread>

namespace ipu::hw {

struct ComputePool::Arena {
  explicit Arena(unsigned threads)
      : parallelism(tbb::global_control::max_allowed_parallelism, threads),
        arena(static_cast<int>(threads)) {}
  // oneTBB caps its workers at the host's cores unless told otherwise: --threads may ask for
  // more (to test a wide host's path on a small one).
  tbb::global_control parallelism;
  tbb::task_arena arena;
};

ComputePool::ComputePool(const sc_core::sc_module_name& name, unsigned threads) : sc_module(name) {
  set_threads(threads);
  SC_METHOD(dispatch);
  sensitive << requested_;
  dont_initialize();
}

ComputePool::~ComputePool() = default;

void ComputePool::set_threads(unsigned threads) {
  if (threads == 0) throw std::invalid_argument("--threads must be at least 1");
  threads_ = threads;
  arena_ = threads > 1 ? std::make_unique<Arena>(threads) : nullptr;
}

void ComputePool::run(unsigned tile, ComputeBurst& burst, sc_core::sc_event& done) {
  pending_.push_back({tile, &burst, &done});
  requested_.notify(sc_core::SC_ZERO_TIME);
  sc_core::wait(done);
}

void ComputePool::dispatch() {
  batch_.swap(pending_);
  pending_.clear();
  // Machine-tile order: the order tiles asked in must not decide what is committed first.
  std::sort(batch_.begin(), batch_.end(),
            [](const Request& a, const Request& b) { return a.tile < b.tile; });
  ++batches_;
  bursts_ += batch_.size();
  const auto t0 = std::chrono::steady_clock::now();
  if (arena_ == nullptr || serial_ || batch_.size() == 1) {
    for (const Request& r : batch_) r.burst->run_burst();
  } else {
    arena_->arena.execute([this] {
      // One tile per task: bursts are long (thousands of cycles) and of unequal length, and
      // work stealing evens them out.
      tbb::parallel_for(tbb::blocked_range<size_t>(0, batch_.size(), 1),
                        [this](const tbb::blocked_range<size_t>& range) {
                          for (size_t i = range.begin(); i != range.end(); ++i)
                            batch_[i].burst->run_burst();
                        });
    });
  }
  burst_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (const Request& r : batch_) {
    r.burst->commit_burst();
    r.done->notify();
  }
  batch_.clear();
}

void ComputePool::for_each(size_t n, const std::function<void(size_t)>& fn) {
  if (arena_ == nullptr || serial_ || n < 2) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  arena_->arena.execute([n, &fn] { tbb::parallel_for(size_t{0}, n, [&fn](size_t i) { fn(i); }); });
}

unsigned host_cores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
    return static_cast<unsigned>(CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

}  // namespace ipu::hw
