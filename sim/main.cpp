// ipu-sim: runs programs on the virtual IPU and prints what happened. This file binds the
// command line and dispatches to the commands (sim/commands.h; sweep: sim/sweep.h).
//
//   ipu-sim demo                       the embedded demo program on one tile
//   ipu-sim run-elf FILE [options]     a bare-metal RV32IMF ELF on one tile
//   ipu-sim run IMAGE [options]        a multi-tile image on a chip or a machine of chips
//                                      (docs/chip.md, docs/machine.md)
//
// Exit status: the program's own status when it exits; 2 for bad usage or configuration, 3 for
// an image the loader refuses, 4 for a fault on a tile (or an exchange/sync error), 5 when
// --max-cycles is reached, 6 for a deadlock, 7 when an --rtl block departs from its C++ model.
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <new>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "debug/gdb_server.h"
#include "hw/machine/machine_config.h"
#include "hw/machine/platform.h"
#include "report/html_report.h"
#include "sdk/compiler/executable_io.h"
#include "sdk/image/elf_reader.h"
#include "sdk/image/elf_writer.h"
#include "sdk/image/program.h"
#include "sdk/image/symbolizer.h"
#include "sdk/tools/device_command_line.h"
#include "sdk/tools/standard_streams.h"
#include "sim/commands.h"
#include "sim/demo_image.h"
#include "sim/exit_status.h"
#include "sim/sdk_image.h"
#include "sim/sweep.h"
#include "sim/trace_filter.h"
#include "tlm/rtl_platform.h"

namespace po = boost::program_options;

namespace {

using ipu::sim::kExitImage, ipu::sim::kExitRtlMismatch, ipu::sim::kExitUsage;
using ipu::sim::Outputs, ipu::sim::open_gdb_server, ipu::sim::print_info, ipu::sim::run_machine;

// An error that ends the run: every rank of an MPI job may not have met it, so it ends them all
// rather than leave the others waiting for this one.
int fail(ipu::hw::MpiJob& job, int status, const std::string& message) {
  if (job.spread()) {
    fmt::print(stderr, "ipu-sim: rank {} of {}: {}\n", job.rank(), job.size(), message);
    std::fflush(stderr);
    job.abort(status);
  }
  fmt::print(stderr, "ipu-sim: {}\n", message);
  return status;
}

}  // namespace

// SystemC prints its banner while starting up, before sc_main; silence it so that the output
// is the program's and the report's only.
int main(int argc, char** argv) {
  ipu::sdk::open_closed_standard_streams();
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
  return sc_core::sc_elab_and_sim(argc, argv);
}

int sc_main(int argc, char** argv) {
  if (argc >= 2 && std::string(argv[1]) == "sweep") {
    // A sweep runs each point as a process of its own (a point may itself be an mpirun job):
    // started by mpirun, every rank would run the whole sweep.
    if (const unsigned ranks = ipu::hw::MpiJob::launched_ranks(); ranks > 1) {
      fmt::print(stderr,
                 "ipu-sim: sweep runs each point as a process of its own and is not started by "
                 "mpirun (started as one of {} MPI ranks); to split each point over ranks, sweep "
                 "'-- mpirun -np K ipu-sim run ...'\n",
                 ranks);
      return kExitUsage;
    }
    return ipu::sim::run_sweep(argc - 1, argv + 1);
  }
  std::string command, file;
  ipu::hw::RunOptions run_options;
  bool trace_instructions = false, config_dump = false;
  Outputs outputs;
  ipu::sdk::DebugOptions debug;
  ipu::sim::TraceFilterText trace_text;
  ipu::sim::SdkImageRun sdk_run;

  // The machine and the declared run, output and debugging options
  // (sdk/tools/device_command_line.h).
  const ipu::sdk::DeviceCommandLine device_command_line("mk2");
  po::options_description general("Options");
  general.add_options()("help,h", "print this help and exit");
  device_command_line.add_options(general);
  general.add_options()(
      "trace-instructions", po::bool_switch(&trace_instructions),
      "print every executed instruction (tile, context, cycle, pc, disassembly) to stderr, or "
      "those the --trace-* filters below let through")(
      "trace-tiles", po::value<std::string>(&trace_text.tiles),
      "with --trace-instructions: only these tiles (machine tile numbers: 0,3-5)")(
      "trace-contexts", po::value<std::string>(&trace_text.contexts),
      "with --trace-instructions: only these contexts (0 the supervisor, 1-6 the workers)")(
      "trace-cycles", po::value<std::string>(&trace_text.cycles),
      "with --trace-instructions: only instructions issued in cycles FROM:TO (TO excluded; "
      "either may be left out)")(
      "trace-instructions-limit", po::value<std::string>(&trace_text.limit),
      "with --trace-instructions: print at most this many lines, then say the rest is left out "
      "(0: no bound; default 10000000, about 1 GB)")(
      "trace-pc", po::value<std::string>(&trace_text.pc),
      "with --trace-instructions: only pcs in LOW:HIGH (HIGH excluded; 0x for hex) or in the "
      "named function")(
      "stream", po::value<std::vector<std::string>>(&sdk_run.streams)->composing(),
      "run, of an image the SDK saved: NAME=FILE feeds host stream NAME from FILE (raw "
      "little-endian elements, replica after replica; one batch for every run, or a batch for "
      "each run in turn), or writes what the device sends on it to FILE (a batch from each "
      "run); repeat for each stream its programs use")(
      "write-tensor", po::value<std::vector<std::string>>(&sdk_run.write_tensors)->composing(),
      "run, of an image the SDK saved: NAME=FILE writes tensor NAME from FILE (every replica's, "
      "replica after replica) before the first program; NAME@PROGRAM=FILE before PROGRAM's "
      "first run")(
      "read-tensor", po::value<std::vector<std::string>>(&sdk_run.read_tensors)->composing(),
      "run, of an image the SDK saved: NAME=FILE writes tensor NAME to FILE after the last "
      "program; NAME@PROGRAM=FILE after PROGRAM's last run")(
      "program", po::value<std::vector<std::string>>(&sdk_run.programs)->composing(),
      "run, of an image the SDK saved: run this program (repeat to run several, in order; "
      "NAME:N runs it N times; default: the image's only one)");
  po::options_description hidden;
  hidden.add_options()("command", po::value<std::string>(&command))("file",
                                                                    po::value<std::string>(&file));
  po::positional_options_description positional;
  positional.add("command", 1).add("file", 1);

  po::options_description all;
  all.add(general).add(device_command_line.parameters()).add(hidden);
  po::variables_map vm;
  ipu::hw::MachineConfig config;
  try {
    po::store(po::command_line_parser(argc, argv).options(all).positional(positional).run(), vm);
    po::notify(vm);
    config = device_command_line.machine(vm);
    run_options = device_command_line.run_options(vm);
    static_cast<ipu::report::OutputOptions&>(outputs) = device_command_line.output_options(vm);
    outputs.trace_options.tiles_per_track = outputs.trace_tiles_per_track;
    outputs.trace_options.worker_lanes = outputs.trace_workers;
    debug = device_command_line.debug_options(vm);
    config_dump = ipu::sdk::DeviceCommandLine::config_dump(vm);
  } catch (const po::error& e) {
    fmt::print(stderr, "ipu-sim: {}\nTry 'ipu-sim --help'.\n",
               ipu::sdk::describe_option_error(e, all));
    return kExitUsage;
  } catch (const std::invalid_argument& e) {
    fmt::print(stderr, "ipu-sim: {}\n", e.what());
    return kExitUsage;
  }

  if (vm.count("help") || (command.empty() && !config_dump)) {
    fmt::print(
        "Usage: ipu-sim demo [options]\n"
        "       ipu-sim info IMAGE\n"
        "       ipu-sim run-elf FILE [options]\n"
        "       ipu-sim run IMAGE [options]\n"
        "       ipu-sim sweep --vary NAME=V1,V2,... IMAGE [options] | -- COMMAND [ARGS]\n\n"
        "Commands:\n"
        "  demo       run the embedded demo program on one tile and print its report\n"
        "  run-elf    load a bare-metal RV32IMF ELF (linked inside the tile's SRAM window)\n"
        "             into a machine of one tile, run it and exit with its status\n"
        "  run        load a multi-tile image (tile number in each segment's physical address,\n"
        "             chip number in its flags) onto a chip or a machine, run it to the end\n"
        "             and print the BSP report\n"
        "  info       summarise an image: target, tiles used, memory per tile, manifest\n"
        "  sweep      run an image or an example over values of one or two parameters and\n"
        "             tabulate cycles, time, TFLOP/s, exchange and link bytes (sweep --help)\n\n");
    std::cout << general << "\n" << device_command_line.parameters() << "\n";
    return vm.count("help") ? 0 : kExitUsage;
  }
  if (config_dump) {
    ipu::hw::write_machine_config(std::cout, config);
    return 0;
  }
  for (const char* name :
       {"trace-tiles", "trace-contexts", "trace-cycles", "trace-pc", "trace-instructions-limit"})
    if (vm.count(name) && !trace_instructions) {
      fmt::print(stderr, "ipu-sim: --{} filters --trace-instructions, which is not given\n", name);
      return kExitUsage;
    }
  if (command == "run-elf" || command == "demo") {  // a bare ELF: no SDK program to feed
    for (const char* name : {"stream", "program", "write-tensor", "read-tensor"})
      if (vm.count(name) && !vm[name].defaulted()) {
        fmt::print(stderr,
                   "ipu-sim: --{} is for 'ipu-sim run' of an SDK image; '{}' runs a bare ELF\n",
                   name, command);
        return kExitUsage;
      }
  }
  // Started by mpirun: join the job (its ranks share the machine's chips, hw/parallel/ranks.h).
  std::unique_ptr<ipu::hw::MpiJob> job;
  try {
    job = ipu::hw::MpiJob::join(argc, argv);
    job->set_timeout(run_options.rank_timeout);
  } catch (const std::exception& e) {
    fmt::print(stderr, "ipu-sim: {}\n", e.what());
    return kExitUsage;
  }
  // Far more threads than the host has cores give the same results, slower (they take turns);
  // a few more (the tests' 4 on 2 cores) are a choice, not a slip.
  if (!vm["threads"].defaulted() && job->rank() == 0 &&
      run_options.threads * job->ranks_on_host() > 4 * ipu::hw::host_cores())
    fmt::print(
        stderr,
        "ipu-sim: warning: --threads {}{} is more than four times this host's {} core{}: "
        "the results are the same, the run slower\n",
        run_options.threads,
        job->ranks_on_host() > 1 ? fmt::format(" on each of {} ranks", job->ranks_on_host()) : "",
        ipu::hw::host_cores(), ipu::hw::host_cores() == 1 ? "" : "s");
  if (job->spread()) {
    // Ranks on one host share its cores, unless --threads says otherwise.
    if (vm["threads"].defaulted())
      run_options.threads = std::max(1u, ipu::hw::host_cores() / job->ranks_on_host());
    std::string alone =
        command != "run"     ? "only 'ipu-sim run' splits a machine over MPI ranks"
        : debug.gdb_port     ? "--gdb needs the whole machine in one process"
        : trace_instructions ? "--trace-instructions needs the whole machine in one process"
        : debug.rtl.any()    ? "--rtl blocks need the whole machine in one process"
        : job->size() > config.chips
            ? fmt::format("each rank simulates whole chips, and the machine has {} chip{}",
                          config.chips, config.chips == 1 ? "" : "s")
            : "";
    if (!alone.empty()) {  // every rank finds the same: each exits alone
      if (job->rank() == 0)
        fmt::print(stderr, "ipu-sim: {}; started as one of {} MPI ranks\n", alone, job->size());
      return kExitUsage;
    }
  }

  try {
    ipu::sdk::ElfImage image;
    if (command == "demo") {
      if (!file.empty()) {
        fmt::print(stderr, "ipu-sim: 'demo' takes no file\n");
        return kExitUsage;
      }
      image = ipu::sdk::parse_elf("<embedded demo>", ipu::sim::demo_image());
    } else if (command == "info") {
      if (file.empty()) {
        fmt::print(stderr, "ipu-sim: info needs an IMAGE\n");
        return kExitUsage;
      }
      return print_info(ipu::sdk::read_elf(file), config);
    } else if (command == "run-elf" || command == "run") {
      if (file.empty()) {
        fmt::print(stderr, "ipu-sim: {} needs a FILE\nTry 'ipu-sim --help'.\n", command);
        return kExitUsage;
      }
      image = ipu::sdk::read_elf(file);
    } else {
      fmt::print(stderr, "ipu-sim: unknown command '{}' (known: demo, run-elf, run)\n", command);
      return kExitUsage;
    }
    if (command == "run" && ipu::sdk::has_runtime_section(image)) {
      // An SDK image: its host is the SDK runtime, with the streams' data in files.
      std::string alone = job->spread() ? "the SDK runtime drives a machine from one process"
                          : trace_instructions
                              ? "--trace-instructions is for images run without the runtime"
                              : "";
      if (!alone.empty()) {  // every rank finds the same: each exits alone
        if (job->rank() == 0)
          fmt::print(stderr,
                     "ipu-sim: {}: {} is an image the SDK saved, which the SDK runtime runs\n",
                     alone, file);
        return kExitUsage;
      }
      ipu::sdk::DeviceOptions& device = sdk_run.device;
      static_cast<ipu::hw::RunOptions&>(device) = run_options;
      static_cast<ipu::report::OutputOptions&>(device) = outputs;
      static_cast<ipu::sdk::DebugOptions&>(device) = debug;
      sdk_run.image_path = file;
      return ipu::sim::run_sdk_image(image, config, sdk_run, std::cout);
    }
    if (!sdk_run.streams.empty() || !sdk_run.programs.empty() || !sdk_run.write_tensors.empty() ||
        !sdk_run.read_tensors.empty()) {
      fmt::print(stderr,
                 "ipu-sim: --stream, --program, --write-tensor and --read-tensor are for images "
                 "the SDK saved (with a {} section); {} has none\n",
                 ipu::sdk::kRuntimeSection, file);
      return kExitUsage;
    }
    const unsigned contexts = config.chip.tile.worker_contexts + 1;
    ipu::hw::TraceFilter trace_filter;
    try {
      trace_filter = ipu::sim::parse_trace_filter(
          trace_text, image, command == "run" ? config.chips * config.chip.tiles : 1, contexts);
    } catch (const std::invalid_argument& e) {
      fmt::print(stderr, "ipu-sim: {}\n", e.what());
      return kExitUsage;
    }
    sc_core::sc_set_time_resolution(1, sc_core::SC_FS);
    // Reports name the function and source line of the pcs they mention.
    std::shared_ptr<const ipu::sdk::Symbolizer> symbolizer;
    ipu::iss::Core::PcLocator locate_pc, function_name, locate_data;
    if (command != "demo") {
      symbolizer = std::make_shared<const ipu::sdk::Symbolizer>(file);
      locate_pc = [symbolizer](uint32_t pc) { return symbolizer->locate(pc); };
      function_name = [symbolizer](uint32_t pc) { return symbolizer->function(pc); };
      locate_data = [symbolizer](uint32_t address) { return symbolizer->data(address); };
    }
    // run-elf and demo are `run` of a bare ELF on a machine of one tile: the same platform,
    // report and files.
    ipu::hw::PlatformOptions options;
    static_cast<ipu::hw::RunOptions&>(options) = run_options;
    options.machine = command == "run" ? config : ipu::sim::one_tile(config);
    options.trace_instructions = trace_instructions;
    options.trace_filter = trace_filter;
    if (!outputs.trace.empty()) options.trace_flows = ipu::hw::kTraceFlows;
    options.locate_pc = locate_pc;
    options.locate_data = locate_data;
    options.ranks = job.get();
    outputs.source.image = command == "demo" ? "<embedded demo>" : file;
    outputs.source.image_checksum = ipu::sdk::image_checksum(image);
    outputs.source.function_name = function_name;
    outputs.trace_options.function_name = function_name;
    const auto gdb = open_gdb_server(debug.gdb_port, image);
    return run_machine(options, debug, image, outputs, gdb.get());
  } catch (const ipu::sdk::ImageError& e) {
    return fail(*job, kExitImage, e.what());
  } catch (const ipu::tlm_rtl::RtlMismatch& e) {
    return fail(*job, kExitRtlMismatch, fmt::format("RTL mismatch: {}", e.what()));
  } catch (const std::bad_alloc&) {
    return fail(
        *job, kExitUsage,
        fmt::format("out of host memory simulating {} ({} chip{} x {} tiles): the run "
                    "needs more than this process may have (ulimit -v, or the host's "
                    "memory); run fewer chips or tiles, or split the machine over MPI "
                    "ranks",
                    config.preset, config.chips, config.chips == 1 ? "" : "s", config.chip.tiles));
  } catch (const std::exception& e) {
    return fail(*job, kExitUsage, e.what());
  }
}
