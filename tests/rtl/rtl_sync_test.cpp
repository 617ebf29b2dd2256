// The sync barrier tree in Verilog (rtl/sync/ipu_sync_tree.v), verilated, against the C++ sync
// model's rule (hw/sync/sync_network.h: release = last member's arrival + latency), driven
// cycle by cycle (idle cycles included) over random barriers: group masks of every shape (a
// prefix of the tiles as group 0, GSP ranges, sparse subsets), arrivals spread over windows
// where many collide, latencies from 0 up to the Mk2's 150. `released` must be high in exactly
// the model's release cycle and no other; `stray` must flag an arrival outside the mask.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <vector>

#include "Vipu_sync_tree.h"
#include "tests/support/random_stimulus.h"
#include "tests/support/stimulus_budget.h"
#include "tlm/rtl_ports.h"
#include "verilated.h"

namespace ipu::test {
namespace {

using tlm_rtl::kRtlMaxTiles;
constexpr unsigned kWords = kRtlMaxTiles / 32;

class SyncTree {
 public:
  SyncTree() : rtl_(std::make_unique<Vipu_sync_tree>(&context_)) {}

  // Runs one barrier cycle by cycle; returns the cycles simulated. Checks `released` against
  // the model's release cycle.
  uint64_t run(const Barrier& b) {
    auto& r = *rtl_;
    tlm_rtl::clear_bits(r.mask, kWords);
    tlm_rtl::clear_bits(r.arrive, kWords);
    for (unsigned t : b.members) tlm_rtl::set_bit(r.mask, t, true);
    r.latency = b.latency;
    r.start = 1;
    clock();
    r.start = 0;
    const uint64_t last = *std::max_element(b.arrivals.begin(), b.arrivals.end());
    const uint64_t release = last + b.latency;  // the C++ model
    for (uint64_t cycle = 0; cycle <= release + 2; ++cycle) {
      for (size_t i = 0; i < b.members.size(); ++i)
        if (b.arrivals[i] == cycle) tlm_rtl::set_bit(r.arrive, b.members[i], true);
      r.clk = 0;
      r.eval();
      EXPECT_EQ(static_cast<bool>(r.released), cycle == release)
          << "cycle " << cycle << ": " << b.members.size() << " members, last arrival " << last
          << ", latency " << b.latency << ", first member " << b.members.front();
      if (static_cast<bool>(r.released) != (cycle == release)) return cycle;
      clock();
      tlm_rtl::clear_bits(r.arrive, kWords);
    }
    EXPECT_FALSE(r.stray) << "stray arrival flagged for members only";
    return release + 3;
  }

  Vipu_sync_tree& rtl() { return *rtl_; }
  void clock() {
    rtl_->clk = 0;
    rtl_->eval();
    rtl_->clk = 1;
    rtl_->eval();
  }

 private:
  VerilatedContext context_;
  std::unique_ptr<Vipu_sync_tree> rtl_;
};

TEST(RtlSyncTree, ReleasesExactlyWhenTheModelDoesOnRandomBarriers) {
  std::mt19937 rng(20261122);
  SyncTree tree;
  uint64_t cycles = 0, barriers = 0;
  while (cycles < test::stimulus_budget(1'000'000) && !HasFailure()) {
    cycles += tree.run(random_barrier(rng));
    ++barriers;
  }
  EXPECT_GE(cycles, test::stimulus_budget(1'000'000));
  RecordProperty("barriers", static_cast<int>(barriers));
}

TEST(RtlSyncTree, Corners) {
  SyncTree tree;
  // One tile, latency 0: released in its arrival cycle. Every tile at once. The last tile of
  // the last node late. A node boundary (63/64) and the last tile (4095) as the only members.
  tree.run({{0}, {0}, 0});
  tree.run({{5}, {7}, 0});
  std::vector<unsigned> all(kRtlMaxTiles);
  for (unsigned t = 0; t < kRtlMaxTiles; ++t) all[t] = t;
  tree.run({all, std::vector<uint64_t>(kRtlMaxTiles, 3), 150});
  std::vector<uint64_t> late_last(kRtlMaxTiles, 0);
  late_last.back() = 40;
  tree.run({all, late_last, 1});
  tree.run({{63, 64}, {9, 2}, 5});
  tree.run({{kRtlMaxTiles - 1}, {1}, 0});
}

TEST(RtlSyncTree, FlagsAnArrivalOutsideTheMaskAndStartClearsIt) {
  SyncTree tree;
  auto& r = tree.rtl();
  tlm_rtl::clear_bits(r.mask, kWords);
  tlm_rtl::set_bit(r.mask, 10, true);
  r.latency = 2;
  r.start = 1;
  tree.clock();
  r.start = 0;
  tlm_rtl::set_bit(r.arrive, 11, true);  // not a member
  tree.clock();
  tlm_rtl::clear_bits(r.arrive, kWords);
  EXPECT_TRUE(r.stray);
  r.clk = 0;
  r.eval();
  EXPECT_FALSE(r.released) << "a stray arrival completed the barrier";
  r.start = 1;
  tree.clock();
  r.start = 0;
  EXPECT_FALSE(r.stray);
}

}  // namespace
}  // namespace ipu::test
