#include "compute_pool.h"

#include <fmt/format.h>
#include <sched.h>
#include <tbb/blocked_range.h>
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "base/byte_stream.h"

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
  if (threads == 0) throw std::invalid_argument("a compute pool needs at least one host thread");
  threads_ = threads;
  arena_ = threads > 1 ? std::make_unique<Arena>(threads) : nullptr;
}

void ComputePool::submit(unsigned tile, ComputeBurst& burst, sc_core::sc_event& done) {
  pending_.push_back({tile, &burst, &done});
  requested_.notify(sc_core::SC_ZERO_TIME);
}

void ComputePool::run(unsigned tile, ComputeBurst& burst, sc_core::sc_event& done) {
  submit(tile, burst, done);
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
  std::vector<ComputeBurst*> here;
  here.reserve(batch_.size());
  std::vector<bool> ran_here(batch_.size());
  for (size_t i = 0; i < batch_.size(); ++i) {
    ran_here[i] = share_ == nullptr || share_->runs_here(batch_[i].tile);
    if (ran_here[i]) here.push_back(batch_[i].burst);
  }
  const auto t0 = std::chrono::steady_clock::now();
  run_bursts(here);
  const auto t1 = std::chrono::steady_clock::now();
  burst_seconds_ += std::chrono::duration<double>(t1 - t0).count();
  if (share_ != nullptr) {
    share_results(ran_here);
    share_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  }
  for (const Request& r : batch_) {
    r.burst->commit_burst();
    const sc_core::sc_time delay = r.burst->resume_delay();
    if (delay == sc_core::SC_ZERO_TIME)
      r.done->notify();
    else
      r.done->notify(delay);
  }
  batch_.clear();
}

void ComputePool::run_bursts(const std::vector<ComputeBurst*>& bursts) {
  if (arena_ == nullptr || serial_ || bursts.size() < 2) {
    for (ComputeBurst* b : bursts) b->run_burst();
    return;
  }
  arena_->arena.execute([&bursts] {
    // One tile per task: bursts are long (thousands of cycles) and of unequal length, and
    // work stealing evens them out.
    tbb::parallel_for(tbb::blocked_range<size_t>(0, bursts.size(), 1),
                      [&bursts](const tbb::blocked_range<size_t>& range) {
                        for (size_t i = range.begin(); i != range.end(); ++i)
                          bursts[i]->run_burst();
                      });
  });
}

void ComputePool::share_results(const std::vector<bool>& ran_here) {
  // Each record: the machine tile, then what its burst did.
  std::vector<uint8_t> mine, record;
  base::ByteWriter out(mine);
  for (size_t i = 0; i < batch_.size(); ++i) {
    if (!ran_here[i]) continue;
    record.clear();
    base::ByteWriter r(record);
    batch_[i].burst->save_burst(r);
    out.put(batch_[i].tile);
    out.put(record);
  }
  // Every process's records, this one's among them: each tile of the batch exactly once.
  const std::vector<uint8_t> all = share_->all_gather(mine);
  std::vector<bool> seen(batch_.size());
  base::ByteReader in(all.data(), all.size());
  while (!in.done()) {
    const auto tile = in.get<unsigned>();
    in.get(record);
    const auto it = std::lower_bound(batch_.begin(), batch_.end(), tile,
                                     [](const Request& r, unsigned t) { return r.tile < t; });
    const size_t i = static_cast<size_t>(it - batch_.begin());
    if (it == batch_.end() || it->tile != tile || seen[i])
      throw std::logic_error(fmt::format(
          "a simulator process sent a burst of machine tile {}, which this one did not expect: "
          "the processes no longer simulate the same run",
          tile));
    seen[i] = true;
    if (ran_here[i]) continue;
    base::ByteReader r(record.data(), record.size());
    it->burst->load_burst(r);
    if (!r.done())
      throw std::logic_error(
          fmt::format("machine tile {}'s burst record has {} bytes left over", tile, r.left()));
  }
  for (size_t i = 0; i < batch_.size(); ++i)
    if (!seen[i])
      throw std::logic_error(fmt::format(
          "no simulator process ran machine tile {}'s burst (each tile needs exactly one)",
          batch_[i].tile));
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
