// What a run of a chip or machine did: how it ended and its counts. Plain data, free of
// SystemC, so the SDK's public headers can carry it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "iss/insn_class.h"

namespace ipu::hw {

struct ChipOutcome {
  enum class Result { kExited, kFault, kCycleLimit, kDeadlock };
  Result result = Result::kExited;
  int exit_status = 0;  // the first non-zero exit status in tile order, else 0
  std::string message;  // the report for anything but a normal exit
};

// How a run ended, as the statistics ("result") and the Python package name it.
inline const char* outcome_name(ChipOutcome::Result result) {
  static const char* const kNames[] = {"exited", "fault", "cycle limit", "deadlock"};
  return kNames[static_cast<int>(result)];
}

// One context's counts on one tile, for the per-context table of ipu-sim's report.
struct ContextCounts {
  uint64_t instructions = 0;
  uint64_t issue_slots = 0;    // retired, stalled and trapped issues
  uint64_t runs = 0;           // times started (the supervisor: 1)
  uint64_t active_cycles = 0;  // from each start to its exit, or to the end of the run
  ContextCounts& operator+=(const ContextCounts& o) {
    instructions += o.instructions, issue_slots += o.issue_slots, runs += o.runs;
    active_cycles += o.active_cycles;
    return *this;
  }
  ContextCounts& operator-=(const ContextCounts& o) {
    instructions -= o.instructions, issue_slots -= o.issue_slots, runs -= o.runs;
    active_cycles -= o.active_cycles;
    return *this;
  }
};

// One active tile's contexts (supervisor first) and how it ended.
struct TileCounts {
  unsigned tile = 0;  // machine tile number
  bool exited = false;
  int exit_status = 0;
  std::vector<ContextCounts> contexts;
};

// What the energy model prices (hw/energy/energy.h) on one chip: its tiles' retired
// instructions by class (InsnClass order) and SRAM bytes, the exchange words delivered to its
// tiles, its tiles' arrivals at internal barriers, the external barriers it took part in, and
// the bytes its PCIe endpoint moved.
struct ChipActions {
  std::array<uint64_t, iss::kInsnClasses> instructions{};
  uint64_t sram_read_bytes = 0, sram_written_bytes = 0;
  uint64_t exchange_bytes = 0;
  uint64_t exchange_column_bytes = 0;  // of those within the chip, each x the columns crossed
  uint64_t sync_arrivals = 0;
  uint64_t external_syncs = 0;
  uint64_t pcie_bytes = 0;
  uint64_t flops = 0;  // its tiles' floating-point operations (iss/insn_class.h, InsnCost)
  ChipActions& operator-=(const ChipActions& o);
};

// The same for one IPU-Gateway: the bytes its DIMMs moved (tiles' and hosts' reads and writes),
// its chips' PCIe links and its RoCE host ports.
struct GatewayActions {
  uint64_t ddr_bytes = 0;
  uint64_t chip_link_bytes = 0;
  uint64_t host_port_bytes = 0;
  GatewayActions& operator-=(const GatewayActions& o);
};

struct RunReport {
  ChipOutcome outcome;
  unsigned chips = 1;
  unsigned tiles = 0;
  uint64_t cycles = 0;
  uint64_t instructions = 0;
  // Floating-point operations the tiles executed, as the instructions count them
  // (iss/insn_class.h: the AMP's 2 a multiply-accumulate, a vector's a lane, an FMA's 2): every
  // program's, whatever it computes (an example's own count of its model's flops is another
  // figure, "model_flops").
  uint64_t flops = 0;
  size_t supersteps = 0;
  uint64_t exchange_words = 0;
  uint64_t inter_chip_words = 0;  // of those, words delivered to another chip
  uint64_t ipulink_bytes = 0;     // bytes carried by IPU-Links (a word counts on every hop)
  unsigned gateways = 0;
  uint64_t streaming_bytes_written = 0, streaming_bytes_read = 0;  // by tiles
  // The run's time in exchange phases off the chips (Exchange::streaming_phase_cycles): those
  // that streamed, and the others with words between chips (collectives, inter-chip copies).
  uint64_t streaming_phase_cycles = 0, cross_chip_phase_cycles = 0;
  double clock_hz = 0;
  double host_seconds = 0;
  // Over MPI ranks (hw/parallel/ranks.h): how many, and this rank's host seconds running its
  // tiles' bursts and swapping their results with the other ranks. A swap waits for every
  // rank's whole batch: the slowest rank's burst seconds beside this rank's tell waiting for
  // slower bursts from waiting for another rank's serial work.
  unsigned ranks = 1;
  uint64_t shares = 0;  // times the ranks swapped results (once per batch of bursts)
  double burst_seconds = 0, share_seconds = 0;
  double slowest_burst_seconds = 0;
  unsigned slowest_rank = 0;
  std::optional<uint64_t> memory_hash;  // FNV-1a over the active tiles' SRAM, in tile order
  unsigned tiles_per_chip = 1;
  std::vector<TileCounts> per_tile;  // every active tile, in machine-tile order
  // For the energy model: every chip's and gateway's actions, and the machine's IPU-Links.
  std::vector<ChipActions> chip_actions;
  std::vector<GatewayActions> gateway_actions;
  unsigned ipulinks = 0;
};

// The run's flops a second over the AMP's f16 peak on every tile of its chips (64
// multiply-accumulates, 128 flops, a tile and cycle): the fraction of peak every report shows.
inline double flops_per_second(const RunReport& r) {
  return r.cycles > 0 ? static_cast<double>(r.flops) * r.clock_hz / static_cast<double>(r.cycles)
                      : 0;
}
inline double amp_peak_flops_per_second(const RunReport& r) {
  return 2.0 * iss::kAmpF16Macs * r.tiles_per_chip * r.chips * r.clock_hz;
}

inline ChipActions& ChipActions::operator-=(const ChipActions& o) {
  for (size_t i = 0; i < iss::kInsnClasses; ++i) instructions[i] -= o.instructions[i];
  sram_read_bytes -= o.sram_read_bytes, sram_written_bytes -= o.sram_written_bytes;
  exchange_bytes -= o.exchange_bytes, sync_arrivals -= o.sync_arrivals;
  exchange_column_bytes -= o.exchange_column_bytes;
  external_syncs -= o.external_syncs, pcie_bytes -= o.pcie_bytes;
  flops -= o.flops;
  return *this;
}

inline GatewayActions& GatewayActions::operator-=(const GatewayActions& o) {
  ddr_bytes -= o.ddr_bytes;
  chip_link_bytes -= o.chip_link_bytes, host_port_bytes -= o.host_port_bytes;
  return *this;
}

}  // namespace ipu::hw
