// The TLM wrappers of the five RTL blocks (rtl/): each takes the transaction of its C++ model's
// interface (iss/datapaths.h, hw/sync, hw/exchange/receive_mux.h), runs it on the verilated
// block and checks the block's timing against the model's (docs/rtl.md).
#pragma once

#include <cstdint>
#include <systemc>
#include <utility>
#include <vector>

// verilated.h, when it sees SystemC, calls sc_time_stamp() unqualified.
using sc_core::sc_time_stamp;

#include "Vipu_amp_lane.h"
#include "Vipu_exchange_rx.h"
#include "Vipu_f32_to_f16.h"
#include "Vipu_prng.h"
#include "Vipu_sync_tree.h"
#include "hw/exchange/receive_mux.h"
#include "iss/datapaths.h"
#include "tlm/rtl_block.h"
#include "tlm/rtl_ports.h"

namespace ipu::tlm_rtl {

struct PrngTransaction {
  iss::Xoroshiro128aox state;  // in and out
  uint64_t out = 0;
};
// Seeds the RTL with the context's state (unless it holds it already), steps it once.
class PrngRtl : public RtlBlock<Vipu_prng, PrngTransaction> {
 public:
  using RtlBlock::RtlBlock;

 protected:
  void execute(PrngTransaction& t) override;
};

struct F32ToF16Transaction {
  uint32_t a = 0, rm = 0, random = 0;
  uint32_t y = 0, flags = 0;  // out
};
// One conversion through the 2-stage pipeline; its output must come exactly 2 clocks later.
class F32ToF16Rtl : public RtlBlock<Vipu_f32_to_f16, F32ToF16Transaction> {
 public:
  static constexpr unsigned kLatency = 2;
  using RtlBlock::RtlBlock;

 protected:
  void execute(F32ToF16Transaction& t) override;
};

struct AmpLaneTransaction {
  std::vector<iss::AmpLaneRow>* rows = nullptr;  // acc in and out
};
// The rows of one issue streamed through one lane, one per clock (the unit's lanes work in
// parallel; one instance stands for all of them); each result exactly kLaneLatency clocks on.
class AmpLaneRtl : public RtlBlock<Vipu_amp_lane, AmpLaneTransaction> {
 public:
  using RtlBlock::RtlBlock;

 protected:
  void execute(AmpLaneTransaction& t) override;
};

struct BarrierTransaction {
  const std::vector<unsigned>* members = nullptr;
  const std::vector<std::pair<unsigned, uint64_t>>* arrivals = nullptr;  // (tile, cycle)
  uint32_t latency = 0;
  uint64_t release = 0;  // out
};
// One barrier: the members' arrive signals in their arrival cycles (cycles where nothing
// arrives are skipped: the tree holds its state), then clocks until the release.
class SyncTreeRtl : public RtlBlock<Vipu_sync_tree, BarrierTransaction> {
 public:
  using RtlBlock::RtlBlock;

 protected:
  void execute(BarrierTransaction& t) override;
};

struct ExchangeRxTransaction {
  const hw::RxSchedule* schedule = nullptr;
  hw::RxDecisions* decisions = nullptr;  // out
};
// One receiver's exchange phase, one clock per cycle that has words or control writes.
class ExchangeRxRtl : public RtlBlock<Vipu_exchange_rx, ExchangeRxTransaction> {
 public:
  using RtlBlock::RtlBlock;

 protected:
  void execute(ExchangeRxTransaction& t) override;
};

}  // namespace ipu::tlm_rtl
