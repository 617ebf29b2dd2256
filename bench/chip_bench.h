// Shared driver of the chip benchmarks: runs the benchmark body once per preset (mk2, bow, or
// the runs a benchmark lists in BENCH_RUNS before including this header), each in a child
// process of its own because SystemC elaborates one design per process. A benchmark defines
// `int bench_body(const std::string& run)` and includes this header.
#pragma once

#include <fmt/format.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "bench/bench_help.h"
#include "bench/run_image.h"
#include "hw/energy/energy.h"
#include "hw/machine/platform.h"
#include "sdk/image/program.h"

int bench_body(const std::string& preset);

namespace ipu::bench {

// Runs `elf` on `config` after writing each machine tile's plan at the image's symbol `plan`
// (the image keeps it in .data) and calling `prepare` (may be empty); fails loudly unless the
// program exits with status 0. The platform stays alive in `platform` for the counters.
template <typename Plan>
hw::RunReport run_with_plans(const std::string& what, const sdk::ElfImage& elf,
                             const hw::MachineConfig& config, const std::map<unsigned, Plan>& plans,
                             std::unique_ptr<hw::Platform>& platform,
                             const std::function<void(hw::Machine&)>& prepare = {}) {
  hw::PlatformOptions options;
  options.machine = config;
  options.max_cycles = 0;
  sc_core::sc_set_time_resolution(1, sc_core::SC_FS);
  static std::ostringstream console;
  platform =
      std::make_unique<hw::Platform>(options, sdk::load_program(elf, config), console, console);
  const uint32_t address = elf.symbols.at("plan");
  for (const auto& [tile, plan] : plans)
    platform->machine().tile(tile).load(address, reinterpret_cast<const uint8_t*>(&plan),
                                        sizeof plan);
  if (prepare) prepare(platform->machine());
  hw::RunReport r = platform->run();
  if (r.outcome.result != hw::ChipOutcome::Result::kExited || r.outcome.exit_status != 0) {
    fmt::print(stderr, "{}: the program failed: {}\n{}\n", what, r.outcome.message, console.str());
    std::exit(1);
  }
  return r;
}

// The joules of one priced action over every block of its kind (hw/energy/energy.h).
inline double action_joules(const std::vector<hw::BlockEnergy>& blocks, const std::string& action) {
  double j = 0;
  for (const hw::BlockEnergy& b : blocks)
    for (const hw::EnergyLine& l : b.lines)
      if (l.action == action) j += l.joules;
  return j;
}

// Peak resident memory of this process, in MiB.
inline double peak_rss_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

// What simulating a run cost the host: aggregate simulated MIPS, host seconds per superstep and
// this process's peak resident memory.
struct HostCost {
  double mips, seconds_per_superstep, peak_rss_mib;
};
inline HostCost host_cost(const hw::RunReport& r) {
  return {static_cast<double>(r.instructions) / r.host_seconds / 1e6,
          r.host_seconds / static_cast<double>(r.supersteps), peak_rss_mib()};
}

inline const char* verdict(bool met) { return met ? "MET" : "NOT MET"; }

// Runs `measure` in a child process (SystemC elaborates one design per process; each run also
// gets its own peak RSS) and returns the figure it measured, or exits when the child fails.
inline double in_child(const std::function<double()>& measure) {
  int fds[2];
  if (pipe(fds) != 0) std::exit(1);
  const pid_t child = fork();
  if (child == 0) {
    close(fds[0]);
    const double figure = measure();
    const bool sent = write(fds[1], &figure, sizeof figure) == sizeof figure;
    _exit(sent ? 0 : 1);
  }
  close(fds[1]);
  double figure = 0;
  const bool got = read(fds[0], &figure, sizeof figure) == sizeof figure;
  close(fds[0]);
  int status = 0;
  waitpid(child, &status, 0);
  if (!got || !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) std::exit(1);
  return figure;
}

// Runs `measure(threads)` (which prints its run and returns its MIPS) in a child process for 1,
// 2 and, on a wider host, all its cores' threads, `rounds` times over with the thread counts
// interleaved (this host's speed drifts from one minute to the next, so each round compares runs
// made close together), and prints each count's speed-up over one thread: best run against best
// run, and the range of the rounds' own ratios, beside the target (>= 1.8 on 2 threads) when
// `judged` (a run too small to share is shown for information).
inline void compare_thread_counts(const std::string& label,
                                  const std::function<double(unsigned threads)>& measure,
                                  unsigned rounds = 3, bool judged = true) {
  std::vector<unsigned> counts{1, 2};
  if (hw::host_cores() > 2) counts.push_back(hw::host_cores());
  std::vector<std::vector<double>> mips(counts.size());
  for (unsigned round = 0; round < rounds; ++round)
    for (size_t c = 0; c < counts.size(); ++c)
      mips[c].push_back(in_child([&] {
        const double m = measure(counts[c]);
        std::fflush(stdout);
        return m;
      }));
  const auto best = [](const std::vector<double>& v) {
    return *std::max_element(v.begin(), v.end());
  };
  for (size_t c = 1; c < counts.size(); ++c) {
    std::vector<double> ratios;
    for (unsigned round = 0; round < rounds; ++round)
      ratios.push_back(mips[c][round] / mips[0][round]);
    const double speedup = best(mips[c]) / best(mips[0]);
    fmt::print(
        "{}: {} threads {:.2f}x the speed of 1 (best of {} runs each: {:.1f} against {:.1f} MIPS; "
        "each round's ratio {:.2f}-{:.2f}){}\n",
        label, counts[c], speedup, rounds, best(mips[c]), best(mips[0]),
        *std::min_element(ratios.begin(), ratios.end()), best(ratios),
        counts[c] != 2 ? ""
        : judged       ? fmt::format(" (target >= 1.8) {}", verdict(speedup >= 1.8))
                       : std::string(" (information: too little compute a batch to share)"));
    std::fflush(stdout);
  }
}

}  // namespace ipu::bench

int main(int argc, char** argv) {
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
  if (argc == 3 && std::strcmp(argv[1], "--preset") == 0)
    return sc_core::sc_elab_and_sim(argc, argv);
  int failures = 0;
#ifndef BENCH_RUNS
#define BENCH_RUNS {"mk2", "bow"}
#endif
  std::string runs;
  for (const char* preset : BENCH_RUNS) runs += std::string(runs.empty() ? "" : ", ") + preset;
  if (ipu::bench::print_help(argc, argv, "[RUN]",
                             ("Runs each of its runs (" + runs +
                              "), or only RUN, and prints each figure beside its target.")
                                 .c_str()))
    return 0;
  const auto is_run = [&runs](const char* arg) {
    return (", " + runs + ", ").find(", " + std::string(arg) + ", ") != std::string::npos;
  };
  if (argc > 2 || (argc == 2 && !is_run(argv[1]))) {
    // Name what was refused: the first argument when it is not a run (an option such as
    // --run), else the second run given.
    if (is_run(argv[1]))
      fmt::print(stderr, "{}: one RUN at most, not '{}' after '{}' (runs: {})\n", argv[0], argv[2],
                 argv[1], runs);
    else
      fmt::print(stderr, "{}: unknown run '{}' (runs: {})\n", argv[0], argv[1], runs);
    return 2;
  }
  for (const char* preset : BENCH_RUNS) {
    if (argc == 2 && std::strcmp(argv[1], preset) != 0) continue;  // `bench mk2` runs one preset
    const pid_t child = fork();
    if (child == 0) {
      execl("/proc/self/exe", argv[0], "--preset", preset, static_cast<char*>(nullptr));
      _exit(127);
    }
    int status = 0;
    waitpid(child, &status, 0);
    failures += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  return failures == 0 ? 0 : 1;
}

int sc_main(int, char** argv) { return bench_body(argv[2]); }
