// ipu-sim: runs programs on the virtual IPU and prints what happened.
//
//   ipu-sim demo                       the embedded demo program on one tile
//   ipu-sim run-elf FILE [options]     a bare-metal RV32IMF ELF on one tile
//
// Exit status: the program's own status when it exits; 2 for bad usage, 3 for an image the
// loader refuses, 4 for a fault on the tile, 5 when --max-cycles is reached.
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <boost/program_options.hpp>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "hw/tile/tile_config.h"
#include "sdk/image/elf_reader.h"
#include "sim/demo_image.h"
#include "sim/single_tile.h"

namespace po = boost::program_options;

namespace {

constexpr int kExitUsage = 2;
constexpr int kExitImage = 3;
constexpr int kExitFault = 4;
constexpr int kExitCycleLimit = 5;

// Presets set the figures that differ between chips; explicit options override them.
bool apply_preset(const std::string& name, ipu::hw::TileConfig& tile) {
  if (name == "mk2")
    tile.clock_hz = 1.325e9;
  else if (name == "bow")
    tile.clock_hz = 1.85e9;
  else
    return false;
  return true;
}

void add_parameter_options(po::options_description& desc, ipu::hw::TileConfig& tile) {
  ipu::hw::visit_parameters(
      tile, [&desc](const char* name, auto& member, const char* unit, const char* meaning) {
        using T = std::remove_reference_t<decltype(member)>;
        desc.add_options()(name, po::value<T>()->default_value(member),
                           fmt::format("{} [{}]", meaning, unit).c_str());
      });
}

void dump_config(std::ostream& out, ipu::hw::TileConfig& tile) {
  ipu::hw::visit_parameters(tile,
                            [&out](const char* name, auto& member, const char* unit, const char*) {
                              fmt::print(out, "{} = {} {}\n", name, member, unit);
                            });
}

}  // namespace

// SystemC prints its banner while starting up, before sc_main; silence it so that the output
// is the program's and the report's only.
int main(int argc, char** argv) {
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
  return sc_core::sc_elab_and_sim(argc, argv);
}

int sc_main(int argc, char** argv) {
  ipu::sim::RunOptions options;
  std::string command, file, preset = "mk2";
  bool config_dump = false;

  po::options_description general("Options");
  general.add_options()("help,h", "print this help and exit")(
      "preset", po::value<std::string>(&preset)->default_value(preset), "chip preset: mk2 or bow")(
      "max-cycles", po::value<uint64_t>(&options.max_cycles)->default_value(options.max_cycles),
      "stop with a report when the tile reaches this many cycles (0: no limit)")(
      "trace-instructions", po::bool_switch(&options.trace_instructions),
      "print every executed instruction (context, cycle, pc, disassembly) to stderr")(
      "config-dump", po::bool_switch(&config_dump), "print the effective configuration and exit");
  po::options_description parameters("Configuration parameters (override the preset)");
  ipu::hw::TileConfig defaults;
  add_parameter_options(parameters, defaults);
  po::options_description hidden;
  hidden.add_options()("command", po::value<std::string>(&command))("file",
                                                                    po::value<std::string>(&file));
  po::positional_options_description positional;
  positional.add("command", 1).add("file", 1);

  po::options_description all;
  all.add(general).add(parameters).add(hidden);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(all).positional(positional).run(), vm);
    po::notify(vm);
    if (!apply_preset(preset, options.tile)) {
      fmt::print(stderr, "ipu-sim: unknown preset '{}' (known: mk2, bow)\n", preset);
      return kExitUsage;
    }
    // Parameters given explicitly override the preset.
    ipu::hw::visit_parameters(options.tile,
                              [&vm](const char* name, auto& member, const char*, const char*) {
                                using T = std::remove_reference_t<decltype(member)>;
                                if (vm.count(name) && !vm[name].defaulted())
                                  member = vm[name].as<T>();
                              });
  } catch (const po::error& e) {
    fmt::print(stderr, "ipu-sim: {}\nTry 'ipu-sim --help'.\n", e.what());
    return kExitUsage;
  }

  if (vm.count("help") || (command.empty() && !config_dump)) {
    fmt::print(
        "Usage: ipu-sim demo [options]\n"
        "       ipu-sim run-elf FILE [options]\n\n"
        "Commands:\n"
        "  demo       run the embedded demo program on one tile and print its report\n"
        "  run-elf    load a bare-metal RV32IMF ELF (linked inside the tile's SRAM window)\n"
        "             into tile 0, run it and exit with its status\n\n");
    std::cout << general << "\n" << parameters << "\n";
    return vm.count("help") ? 0 : kExitUsage;
  }
  if (config_dump) {
    fmt::print("preset = {}\n", preset);
    dump_config(std::cout, options.tile);
    return 0;
  }

  ipu::sdk::ElfImage image;
  try {
    if (command == "demo") {
      if (!file.empty()) {
        fmt::print(stderr, "ipu-sim: 'demo' takes no file\n");
        return kExitUsage;
      }
      image = ipu::sdk::parse_elf("<embedded demo>", ipu::sim::demo_image());
    } else if (command == "run-elf") {
      if (file.empty()) {
        fmt::print(stderr, "ipu-sim: run-elf needs a FILE\nTry 'ipu-sim --help'.\n");
        return kExitUsage;
      }
      image = ipu::sdk::read_elf(file);
    } else {
      fmt::print(stderr, "ipu-sim: unknown command '{}' (known: demo, run-elf)\n", command);
      return kExitUsage;
    }
  } catch (const ipu::sdk::ImageError& e) {
    fmt::print(stderr, "ipu-sim: {}\n", e.what());
    return kExitImage;
  }

  try {
    sc_core::sc_set_time_resolution(1, sc_core::SC_FS);
    ipu::sim::SingleTilePlatform platform("platform", options, std::cout, std::cerr);
    platform.load(image);
    const ipu::sim::RunReport report = platform.run();
    std::cout.flush();
    ipu::sim::print_report(std::cout, report);
    switch (report.outcome.reason) {
      case ipu::hw::StopReason::kExited: return report.outcome.exit_status & 0xff;
      case ipu::hw::StopReason::kFault:
        fmt::print(stderr, "ipu-sim: {}\n", report.outcome.message);
        return kExitFault;
      default: fmt::print(stderr, "ipu-sim: {}", report.outcome.message); return kExitCycleLimit;
    }
  } catch (const ipu::sdk::ImageError& e) {
    fmt::print(stderr, "ipu-sim: {}\n", e.what());
    return kExitImage;
  } catch (const std::exception& e) {
    fmt::print(stderr, "ipu-sim: {}\n", e.what());
    return kExitUsage;
  }
}
