// Which blocks compute with their verilated RTL (ipu-sim --rtl, DeviceOptions::rtl), and what
// each did in a run: plain data, free of SystemC and of the generated RTL headers, so the SDK's
// public headers can carry them.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace ipu::tlm_rtl {

struct RtlSelection {
  bool prng = false, sr = false, amp = false, sync = false, xmux = false;

  // A comma-separated list of prng, sr, amp, sync, xmux, all (every block) and none (no
  // block; "" too); throws std::invalid_argument naming an unknown block.
  static RtlSelection parse(const std::string& list);
  bool any() const { return prng || sr || amp || sync || xmux; }
  std::string text() const;  // "prng,sr,..." or "none", as parse() reads it
};

// Transactions and RTL clocks of one block in a run.
struct RtlBlockStats {
  std::string block;
  uint64_t transactions = 0;
  uint64_t clocks = 0;
  double host_seconds = 0;  // in the wrapper and the RTL
};

// "rtl blocks  prng 10 transactions in 12 clocks, ..." (and the waveform files) for the run
// reports.
void print_rtl_stats(std::ostream& out, const std::vector<RtlBlockStats>& stats,
                     const std::vector<std::string>& trace_files = {});

}  // namespace ipu::tlm_rtl
