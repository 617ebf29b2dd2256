// Tile simulator speed: runs a compute-bound C kernel (CRC-32 + f32 dot product) on one tile
// through the SystemC platform and prints millions of simulated instructions per host second
// beside the target (150 MIPS on one core of the 2-core reference machine). The kernel runs on
// the supervisor alone (the target's case), and as six copies on the six workers (reported for
// information: every instruction then goes through the slot arbitration).
//
//   tile_mips            both runs (one process each: SystemC elaborates once per process)
//   tile_mips KERNEL.elf one run
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>

#include "bench/bench_help.h"
#include "sim/single_tile.h"

int main(int argc, char** argv) {
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
  if (ipu::bench::print_help(argc, argv, "",
                             "Tile simulator speed: a compute-bound kernel on one tile "
                             "(supervisor, then six workers), in simulated MIPS."))
    return 0;
  if (argc > 1) return sc_core::sc_elab_and_sim(argc, argv);
  int failures = 0;
  for (const char* kernel : {MIPS_KERNEL_ELF, MIPS_KERNEL_WORKERS_ELF}) {
    const pid_t child = fork();
    if (child == 0) {
      execl("/proc/self/exe", argv[0], kernel, static_cast<char*>(nullptr));
      _exit(127);
    }
    int status = 0;
    waitpid(child, &status, 0);
    failures += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  return failures == 0 ? 0 : 1;
}

int sc_main(int argc, char** argv) {
  constexpr double kTargetMips = 150.0;
  const std::string kernel = argv[argc - 1];
  const bool workers = kernel == MIPS_KERNEL_WORKERS_ELF;
  ipu::sim::RunOptions options;
  options.max_cycles = 0;
  std::ostringstream console;
  ipu::sim::SingleTilePlatform platform("platform", options, console, console);
  platform.load(ipu::sdk::read_elf(kernel));
  const ipu::sim::RunReport r = platform.run();
  if (r.outcome.reason != ipu::hw::StopReason::kExited || r.outcome.exit_status != 0) {
    fmt::print(stderr, "tile_mips: the kernel failed: {}{}\n", console.str(), r.outcome.message);
    return 1;
  }
  const double mips = static_cast<double>(r.instructions) / r.host_seconds / 1e6;
  const char* what = workers ? "six workers" : "supervisor";
  fmt::print("tile_mips ({}): {} instructions, {} tile cycles, {:.3f} s host\n", what,
             r.instructions, r.cycles, r.host_seconds);
  if (workers) {
    fmt::print("tile_mips ({}): {:.1f} MIPS\n", what, mips);
  } else {
    fmt::print("tile_mips ({}): {:.1f} MIPS (target >= {:.0f} MIPS) {}\n", what, mips, kTargetMips,
               mips >= kTargetMips ? "MET" : "NOT MET");
  }
  return 0;
}
