// The compute pool (hw/tile/compute_pool.h): bursts requested in one delta cycle run as one
// batch, on several host threads when the pool has them and on the simulation thread when it
// has one or runs serially, and are committed in machine-tile order whatever order the tiles
// asked in. SystemC elaborates one design per process: ctest runs each test in its own.
#define SC_INCLUDE_DYNAMIC_PROCESSES  // sc_spawn
#include "hw/tile/compute_pool.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <set>
#include <systemc>
#include <thread>
#include <vector>

namespace ipu::test {
namespace {

// Tiles that each ask the pool for one burst at cycle 0, in descending tile order, and record
// the host thread their burst ran on and the order of the commits.
struct Requesters : sc_core::sc_module {
  struct Asker : hw::ComputeBurst {
    unsigned tile = 0;
    Requesters* owner = nullptr;
    std::thread::id ran_on;
    sc_core::sc_event done;
    void run_burst() noexcept override {
      ran_on = std::this_thread::get_id();
      // Long enough that every pool thread takes part in a batch of several bursts.
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    void commit_burst() override { owner->commits.push_back(tile); }
  };

  SC_HAS_PROCESS(Requesters);
  Requesters(const sc_core::sc_module_name& name, hw::ComputePool& pool, unsigned tiles)
      : sc_module(name), pool(pool), askers(tiles) {
    for (unsigned i = 0; i < tiles; ++i) {
      askers[i].tile = tiles - 1 - i;  // processes start in creation order: highest tile first
      askers[i].owner = this;
      sc_core::sc_spawn([this, i] { this->pool.run(askers[i].tile, askers[i], askers[i].done); });
    }
  }
  hw::ComputePool& pool;
  std::vector<Asker> askers;
  std::vector<unsigned> commits;
};

std::set<std::thread::id> threads_used(const Requesters& r) {
  std::set<std::thread::id> ids;
  for (const auto& a : r.askers) ids.insert(a.ran_on);
  return ids;
}

TEST(ComputePool, RunsOneDeltaCyclesBurstsTogetherOnSeveralThreads) {
  hw::ComputePool pool("pool", 2);
  Requesters r("tiles", pool, 8);
  sc_core::sc_start();
  EXPECT_EQ(pool.batches(), 1u);
  EXPECT_EQ(pool.bursts(), 8u);
  EXPECT_EQ(threads_used(r).size(), 2u);
  EXPECT_EQ(r.commits, (std::vector<unsigned>{0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST(ComputePool, OneThreadRunsEveryBurstOnTheSimulationThread) {
  hw::ComputePool pool("pool", 1);
  Requesters r("tiles", pool, 4);
  sc_core::sc_start();
  EXPECT_EQ(threads_used(r), std::set<std::thread::id>{std::this_thread::get_id()});
  EXPECT_EQ(r.commits, (std::vector<unsigned>{0, 1, 2, 3}));
}

TEST(ComputePool, SerialRunsOnTheSimulationThreadWhateverItsThreads) {
  hw::ComputePool pool("pool", 4);
  pool.set_serial(true);  // an instruction trace, or one verilated datapath for every tile
  Requesters r("tiles", pool, 4);
  sc_core::sc_start();
  EXPECT_EQ(threads_used(r), std::set<std::thread::id>{std::this_thread::get_id()});
}

TEST(ComputePool, RefusesZeroThreads) {
  EXPECT_THROW(hw::ComputePool("pool", 0), std::invalid_argument);
}

TEST(ComputePool, HostCoresIsAtLeastOne) { EXPECT_GE(hw::host_cores(), 1u); }

}  // namespace
}  // namespace ipu::test
