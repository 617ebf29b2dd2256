// Command-line options of the SDK examples, on the binder ipu-sim uses
// (sdk/tools/device_command_line.h): every example takes the machine as ipu-sim does (--preset,
// --config FILE and every configuration parameter, e.g. --exchange.base-latency 32), the run
// options (--max-cycles N, --threads N, --interpreter fast|general, --memory-hash), the output
// options (--stats FILE with the example's flops, --trace FILE, --trace-workers, --report
// FILE.html), the debugging options (--gdb PORT, --rtl BLOCKS, --rtl-trace FILE.fst), --profile
// (where the workers' cycles went by compute set and codelet), --config-dump (print the machine's
// configuration and exit) and --help, beside its own. Bad
// input (an unknown option, a missing value, a count that is not a whole number in range) is an
// OptionError that names the option and the text given; run_example() gives every example the
// same handling and exit statuses.
#pragma once

#include <fmt/format.h>

#include <boost/program_options.hpp>
#include <functional>
#include <iostream>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "hw/machine/machine_config.h"
#include "sdk/runtime/device.h"
#include "sdk/tools/device_command_line.h"
#include "sdk/tools/parse_count.h"
#include "sdk/tools/standard_streams.h"

namespace ipu::examples {

struct OptionError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// An example's own options: those that take a value, with its default ("": none), and the
// switches (off unless given).
// One of an example's own options, as --help lists it.
struct ExampleOption {
  std::string name;           // without "--"
  std::string default_value;  // of an option with a value ("": none)
  std::string help;           // what it does
};

struct ExampleOptionTable {
  std::string preset;                   // the machine without --preset
  std::vector<ExampleOption> values;    // options that take a value, in --help's order
  std::vector<ExampleOption> switches;  // options that take none
};

class ExampleOptions {
 public:
  ExampleOptions(int argc, char** argv, const ExampleOptionTable& table)
      : command_line_(table.preset), general_("Options") {
    namespace po = boost::program_options;
    general_.add_options()("help,h", "print this help and exit");
    for (const ExampleOption& o : table.values)
      general_.add_options()(
          o.name.c_str(), po::value<std::string>()->default_value(o.default_value), o.help.c_str());
    for (const ExampleOption& o : table.switches)
      general_.add_options()(o.name.c_str(), po::bool_switch(), o.help.c_str());
    general_.add_options()("profile", po::bool_switch(),
                           "print where the workers' cycles went, by compute set and codelet");
    command_line_.add_options(general_);
    // Words that are no option's value are collected, so that the first can be named.
    po::options_description stray;
    stray.add_options()("stray", po::value<std::vector<std::string>>());
    po::positional_options_description words;
    words.add("stray", -1);
    po::options_description all;
    all.add(general_).add(command_line_.parameters()).add(stray);
    try {
      po::store(po::command_line_parser(argc, argv).options(all).positional(words).run(), vm_);
      po::notify(vm_);
    } catch (const po::error& e) {
      throw OptionError(sdk::describe_option_error(e, all));
    }
    if (vm_.count("stray"))
      throw OptionError(fmt::format(
          "unexpected word '{}': every option is --name value, and a switch takes no value",
          vm_["stray"].as<std::vector<std::string>>().front()));
  }

  bool help() const { return vm_.count("help") != 0; }
  // --config-dump: print the machine's configuration and exit (ipu-sim sweep's check).
  bool config_dump() const { return sdk::DeviceCommandLine::config_dump(vm_); }
  // Every option with its meaning and default, as --help prints them.
  void print_options(std::ostream& out) const {
    out << general_ << "\n" << command_line_.parameters() << "\n";
  }

  const std::string& text(const std::string& name) const { return vm_[name].as<std::string>(); }
  // A switch.
  bool yes(const std::string& name) const { return vm_[name].as<bool>(); }

  // A whole number in [min, max].
  unsigned long count(const std::string& name, unsigned long min, unsigned long max) const {
    try {
      return sdk::parse_count("--" + name, text(name), min, max);
    } catch (const std::invalid_argument& e) {
      throw OptionError(e.what());
    }
  }

  // A real number in (min, max].
  double share(const std::string& name, double min, double max) const {
    try {
      return sdk::parse_real("--" + name, text(name), min, max, true);
    } catch (const std::invalid_argument& e) {
      throw OptionError(e.what());
    }
  }

  // The machine: --preset, then --config, then each configuration parameter given.
  hw::MachineConfig machine() const {
    try {
      return command_line_.machine(vm_);
    } catch (const std::invalid_argument& e) {
      throw OptionError(e.what());
    }
  }

  // The run, output and debugging options, and --profile.
  sdk::DeviceOptions device() const {
    try {
      sdk::DeviceOptions d = command_line_.device_options(vm_);
      d.profile = yes("profile");
      return d;
    } catch (const std::invalid_argument& e) {
      throw OptionError(e.what());
    }
  }

 private:
  sdk::DeviceCommandLine command_line_;
  boost::program_options::options_description general_;
  boost::program_options::variables_map vm_;
};

// With --profile: the compute-set and codelet tables of the example's runs.
inline void print_profile(const ExampleOptions& options, const sdk::Profile& profile,
                          const hw::MachineConfig& machine) {
  if (!options.yes("profile")) return;
  fmt::print("== profile (worker cycles by compute set and codelet) ==\n");
  sdk::print_profile(std::cout, profile, machine.chip.tiles, machine.chips);
}

// Adds the example's own count of its model's arithmetic to its --stats file (nothing without
// one): summary.model_flops, and summary.model_tflops, those flops over the simulated time of
// every run. The summary's flops and tflops are the platform's count of what the tiles executed,
// for any program (RunReport::flops): padding, reductions and updates included.
void record_model_flops(const std::string& stats, double flops);

// Parses the command line and runs `body` with it. --help prints the usage and every option
// with its default (exit 0); a bad option prints what is wrong and the usage on stderr (exit
// 2); any other error prints it (exit 1); otherwise the body's status.
inline int run_example(const std::string& name, const std::string& usage, int argc, char** argv,
                       const ExampleOptionTable& table,
                       const std::function<int(const ExampleOptions&)>& body) {
  sdk::open_closed_standard_streams();
  try {
    const ExampleOptions options(argc, argv, table);
    if (options.help()) {
      fmt::print("usage: {} {}\n\n", name, usage);
      options.print_options(std::cout);
      return 0;
    }
    if (options.config_dump()) {
      hw::write_machine_config(std::cout, options.machine());
      return 0;
    }
    return body(options);
  } catch (const OptionError& e) {
    fmt::print(stderr, "{}: {}\nusage: {} {}\n", name, e.what(), name, usage);
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}: {}\n", name, e.what());
    return 1;
  }
}

}  // namespace ipu::examples
