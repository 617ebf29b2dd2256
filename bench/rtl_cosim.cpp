// Cost of co-simulation (issue 6): the matmul example on the C++ models and with every block
// as verilated RTL (--rtl all), each in a process of its own (SystemC elaborates once per
// process). Prints the host-time slowdown of --rtl all, checks that both runs give the same
// result bits, cycles and memory hash (the requirement: MET or NOT MET), and prints each RTL
// block's clock rate (RTL clocks per host second inside the block's wrapper). The PRNG and the
// f32->f16 converter, which matmul does not use, are timed on a stream of draws/conversions, and
// the sync tree, which matmul uses 4 times, on 2000 full-chip barriers.
// DESIGN.md sets no slowdown target: the figures are for the record.
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <systemc>
#include <utility>
#include <vector>

#include "bench/bench_help.h"
#include "examples/matmul_app.h"
#include "iss/fpu.h"
#include "tlm/rtl_platform.h"

namespace {

constexpr unsigned kTiles = 64;
constexpr size_t kN = 256, kK = 64;

struct RunFigures {
  double host_seconds = 0;
  uint64_t cycles = 0, hash = 0, mismatches = 0;
  double rate[5] = {};  // amp, sync, xmux clocks per host second; prng, sr
  uint64_t clocks[5] = {};
};

auto rate(const ipu::tlm_rtl::RtlBlockStats& s) {
  return s.host_seconds > 0 ? static_cast<double>(s.clocks) / s.host_seconds : 0;
}

// Child: runs matmul (C++ models or --rtl all) or the PRNG and converter streams; writes its
// figures to `fd`.
int child(const std::string& mode, int fd) {
  RunFigures f;
  if (mode == "--child-streams") {  // the blocks matmul leaves idle
    ipu::tlm_rtl::RtlPlatform streams("streams", ipu::hw::chip_preset("mk2"),
                                      ipu::tlm_rtl::RtlSelection::parse("prng,sr,sync"), "");
    ipu::iss::Xoroshiro128aox state = ipu::iss::Xoroshiro128aox::reset_state(0, 1);
    uint32_t flags = 0;
    for (uint32_t i = 0; i < 1'000'000; ++i) {
      const uint64_t random = streams.next(state);
      streams.convert(static_cast<uint32_t>(random >> 32) ^ i, ipu::iss::fpu::kStochastic, flags,
                      static_cast<uint32_t>(random));
    }
    // Full-chip barriers: 1472 tiles arriving over 100 cycles, released 150 cycles later.
    std::vector<unsigned> members(1472);
    std::vector<std::pair<unsigned, uint64_t>> arrivals(1472);
    for (unsigned t = 0; t < 1472; ++t) members[t] = t;
    for (unsigned b = 0; b < 2000; ++b) {
      for (unsigned t = 0; t < 1472; ++t) arrivals[t] = {t, (t * 7919u + b) % 100};
      streams.release(members, arrivals, 150);
    }
    for (const auto& s : streams.stats()) {
      const int i = s.block == "prng" ? 3 : s.block == "sr" ? 4 : 1;
      f.rate[i] = rate(s), f.clocks[i] = s.clocks;
    }
  } else {
    ipu::sdk::DeviceOptions device;
    device.memory_hash = true;
    if (mode == "--child-rtl") device.rtl = ipu::tlm_rtl::RtlSelection::parse("all");
    const auto r =
        ipu::examples::run_matmul(ipu::hw::machine_preset("mk2"), kTiles, kN, kK, 2026, device);
    f.host_seconds = r.report.run.host_seconds;
    f.cycles = r.report.run.cycles;
    f.hash = r.report.run.memory_hash.value_or(0);
    f.mismatches = r.mismatches;
    for (const auto& s : r.report.rtl) {
      const int i = s.block == "amp" ? 0 : s.block == "sync" ? 1 : s.block == "xmux" ? 2 : -1;
      if (i >= 0) f.rate[i] = rate(s), f.clocks[i] = s.clocks;
    }
  }
  return write(fd, &f, sizeof f) == static_cast<ssize_t>(sizeof f) ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
  if (ipu::bench::print_help(argc, argv, "",
                             "Host cost of co-simulation: the matmul example on the C++ models and "
                             "with every block as verilated RTL."))
    return 0;
  if (argc == 3) return sc_core::sc_elab_and_sim(argc, argv);
  RunFigures models, rtl, streams;
  if (!ipu::bench::run_self_in_child("--child-models", models) ||
      !ipu::bench::run_self_in_child("--child-rtl", rtl) ||
      !ipu::bench::run_self_in_child("--child-streams", streams)) {
    fmt::print(stderr, "rtl_cosim: a run failed\n");
    return 1;
  }
  const bool same = models.cycles == rtl.cycles && models.hash == rtl.hash &&
                    models.mismatches == 0 && rtl.mismatches == 0;
  fmt::print(
      "rtl_cosim matmul (mk2, {} tiles, C {}x{} = A {}x{} . B {}x{}): C++ models {:.2f} s, --rtl "
      "all {:.2f} s host: slowdown {:.1f}x (no target in DESIGN.md)\n",
      kTiles, 16 * kTiles, kN, 16 * kTiles, kK, kK, kN, models.host_seconds, rtl.host_seconds,
      rtl.host_seconds / models.host_seconds);
  fmt::print(
      "rtl_cosim same result bits, {} cycles and memory hash {:016x} with --rtl all (target: "
      "identical) {}\n",
      models.cycles, models.hash, same ? "MET" : "NOT MET");
  const char* names[] = {"amp lane", "sync tree", "exchange rx", "prng", "f32->f16"};
  for (int i : {1, 3, 4}) rtl.rate[i] = streams.rate[i], rtl.clocks[i] = streams.clocks[i];
  for (int i = 0; i < 5; ++i)
    fmt::print("rtl_cosim RTL clock rate {:<12} {:8.2f} M clocks/s ({} clocks{})\n", names[i],
               rtl.rate[i] / 1e6, rtl.clocks[i],
               i == 1  ? ", 2000 full-chip barriers"
               : i < 3 ? " in matmul"
                       : ", 1M-item stream");
  return same ? 0 : 1;
}

int sc_main(int, char** argv) { return child(argv[1], std::atoi(argv[2])); }
