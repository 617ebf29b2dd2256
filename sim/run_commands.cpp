// ipu-sim's run commands: a machine runs the image (run-elf and demo: a bare ELF on a machine
// of one tile), then the report and the output files.
#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include "hw/machine/host_footprint.h"
#include "report/html_report.h"
#include "report/text_report.h"
#include "sdk/image/program.h"
#include "sdk/tools/parse_count.h"
#include "sim/commands.h"
#include "sim/exit_status.h"
#include "tlm/rtl_platform.h"

namespace ipu::sim {

std::unique_ptr<debug::GdbServer> open_gdb_server(const std::optional<unsigned>& port,
                                                  const sdk::ElfImage& image) {
  if (!port) return nullptr;
  auto server = std::make_unique<debug::GdbServer>(static_cast<uint16_t>(*port), "ipu-sim");
  server->set_worker_entry_from(image.symbols);
  return server;
}

hw::MachineConfig one_tile(hw::MachineConfig config) {
  config.chips = 1;
  config.chip.tiles = 1;
  config.chip.sync.groups.clear();
  config.chip.sync.gs1.clear();
  config.chip.sync.gs2.clear();
  return config;
}

int run_machine(hw::PlatformOptions options, const sdk::DebugOptions& debug,
                const sdk::ElfImage& image, const Outputs& outputs, debug::GdbServer* gdb) {
  options.debugger = gdb;
  // --stats, --trace and --report show what the workers ran: every function's runs, and with
  // --trace-workers each run.
  if (outputs.any()) {
    options.profile_workers = true;
    if (outputs.trace_options.worker_lanes) options.worker_run_log = hw::kTraceWorkerRuns;
  }
  hw::LoadedProgram program = sdk::load_program(image, options.machine);
  // Over MPI ranks every rank simulates the same run; rank 0 alone prints it and writes files.
  const bool leader = options.ranks == nullptr || options.ranks->rank() == 0;
  // The host memory the run needs, before it runs: refused when it cannot fit, a warning when
  // it may not. Ranks on one host share its memory.
  uint64_t tiles_here = program.tiles.size();
  if (options.ranks != nullptr && options.ranks->spread())
    tiles_here = (tiles_here * options.ranks->ranks_on_host() + options.ranks->size() - 1) /
                 options.ranks->size();
  const hw::MachineConfig& m = options.machine;
  const std::optional<std::string> memory_warning = hw::check_host_footprint(
      hw::estimate_host_footprint(m, program, tiles_here), hw::host_capacity(),
      fmt::format("{} ({} chip{} x {} tiles)", m.preset, m.chips, m.chips == 1 ? "" : "s",
                  m.chip.tiles));
  if (memory_warning && leader) fmt::print(stderr, "ipu-sim: warning: {}\n", *memory_warning);
  std::ostream null_stream(nullptr);
  std::ostream& out = leader ? std::cout : null_stream;
  if (options.trace_instructions && !options.trace_filter.narrows() && program.tiles.size() > 1)
    fmt::print(stderr,
               "ipu-sim: warning: --trace-instructions prints every instruction of all {} tiles "
               "(a 64-tile run can write hundreds of MB); narrow it with --trace-tiles, "
               "--trace-contexts, --trace-cycles or --trace-pc\n",
               program.tiles.size());
  hw::Platform platform(options, std::move(program), out, std::cerr);
  if (gdb != nullptr)
    for (const unsigned tile : platform.machine().active_tiles())
      gdb->add_core(platform.machine().tile(tile).core());
  std::unique_ptr<tlm_rtl::RtlPlatform> rtl;
  if (debug.rtl.any())
    rtl = std::make_unique<tlm_rtl::RtlPlatform>("rtl", options.machine.chip, debug.rtl,
                                                 debug.rtl_trace);
  const hw::RunReport report = tlm_rtl::run_platform(platform, rtl.get());
  std::cout.flush();
  if (gdb != nullptr) gdb->finish(report.outcome);
  report::print_report(out, report, hw::price_energy(options.machine, report));
  if (rtl) tlm_rtl::print_rtl_stats(std::cout, rtl->stats(), rtl->trace_files());
  // The outcome first, then the files: a path that cannot be written must not hide the report.
  const int status = [&] {
    using Result = hw::ChipOutcome::Result;
    if (rtl && !rtl->mismatch().empty()) {  // a tile stopped on it: its report names where
      fmt::print(stderr, "ipu-sim: {}\n", report.outcome.message);
      return kExitRtlMismatch;
    }
    if (report.outcome.result != Result::kExited && leader)
      fmt::print(stderr, "ipu-sim: {}\n", report.outcome.message);
    return exit_status(report.outcome);
  }();
  std::cerr.flush();
  auto write = [leader](const std::string& path, auto&& writer) {
    if (path.empty() || !leader) return true;
    std::ofstream file(path);
    writer(file);
    if (!file) fmt::print(stderr, "ipu-sim: cannot write {}\n", path);
    return static_cast<bool>(file);
  };
  report::StatsSource source = outputs.source;
  source.program = &platform.program();
  source.outcome = report.outcome;
  const bool stats_ok = write(outputs.stats, [&](std::ostream& o) {
    report::write_stats_json(o, platform.machine(), source);
  });
  const bool trace_ok = write(outputs.trace, [&](std::ostream& o) {
    report::write_trace_json(o, platform.machine(), outputs.trace_options);
  });
  const bool report_ok = write(outputs.report, [&](std::ostream& o) {
    std::ostringstream stats;
    report::write_stats_json(stats, platform.machine(), source);
    report::write_html_report(o, stats.str(), "ipu-sim run " + source.image);
  });
  // The run's own status stands; a clean run whose files could not be written is a usage error.
  return status == 0 && !(stats_ok && trace_ok && report_ok) ? kExitUsage : status;
}

}  // namespace ipu::sim
