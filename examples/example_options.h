// Command-line options of the SDK examples: "--name value" pairs over a table of known options
// with defaults. Bad input (an unknown option, a missing value, a count that is not a whole
// number in range) is an OptionError that names the option and the text given. Every example
// also takes the machine as ipu-sim does (--preset, --config FILE and every configuration
// parameter, e.g. --exchange.base-latency 32), the debugging options (sdk/runtime/debug_options.h:
// --gdb PORT, --rtl BLOCKS, --rtl-trace FILE.fst), the run options (hw/machine/run_options.h:
// --max-cycles N, --threads N (0: the host's cores), --interpreter fast|general, --memory-hash
// yes|no), --stats FILE (ipu-sim's statistics JSON, with the example's flops), --trace FILE (the
// BSP trace as ipu-sim run --trace writes it; --trace-workers yes adds a lane per worker), --report
// FILE.html (the run report as ipu-sim run --report writes it), --profile yes (prints where the
// workers' cycles went by compute set and codelet), and --help. run_example() gives them all the
// same handling and exit statuses.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <iostream>
#include <map>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "hw/machine/machine_config.h"
#include "hw/machine/run_options.h"
#include "report/output_options.h"
#include "sdk/runtime/device.h"
#include "sdk/tools/parse_count.h"
#include "sdk/tools/standard_streams.h"

namespace ipu::examples {

struct OptionError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class ExampleOptions {
 public:
  // `defaults`: every option the example knows (without "--"), with its default value.
  ExampleOptions(int argc, char** argv, std::map<std::string, std::string> defaults)
      : values_(std::move(defaults)) {
    values_.insert({"profile", "no"});
    // The run, output and debugging options, from their one declaration each
    // (hw/machine/run_options.h, report/output_options.h, sdk/runtime/debug_options.h).
    declare(hw::RunOptions{}, run_options_);
    declare(report::OutputOptions{}, output_options_);
    declare(sdk::DebugOptions{}, debug_options_);
    values_.insert({"config", ""});
    hw::MachineConfig any_machine;
    hw::visit_parameters(any_machine, [this](const base::Parameter& p, const auto&) {
      parameters_.emplace_back(p.name);
      values_.insert({p.name, ""});  // "": the preset's (or the --config file's) value
    });
    for (int i = 1; i < argc; i += 2) {
      const std::string arg = argv[i];
      if (arg == "--help" || arg == "-h") {
        help_ = true;
        --i;  // takes no value
        continue;
      }
      const auto it = arg.rfind("--", 0) == 0 ? values_.find(arg.substr(2)) : values_.end();
      if (it == values_.end()) throw OptionError("unknown option '" + arg + "'");
      if (i + 1 >= argc) throw OptionError("option '" + arg + "' needs a value");
      it->second = argv[i + 1];
    }
  }

  const std::string& text(const std::string& name) const { return values_.at(name); }
  bool help() const { return help_; }
  const std::map<std::string, std::string>& values() const { return values_; }

  // A whole number in [min, max].
  unsigned long count(const std::string& name, unsigned long min, unsigned long max) const {
    try {
      return sdk::parse_count("--" + name, text(name), min, max);
    } catch (const std::invalid_argument& e) {
      throw OptionError(e.what());
    }
  }

  bool yes(const std::string& name) const {
    if (text(name) != "yes" && text(name) != "no")
      throw OptionError("option --" + name + ": '" + text(name) + "' is not yes or no");
    return text(name) == "yes";
  }

  // The machine: --preset, then --config, then each configuration parameter given.
  hw::MachineConfig machine() const {
    std::vector<std::pair<std::string, std::string>> overrides;
    for (const std::string& name : parameters_)
      if (!text(name).empty()) overrides.emplace_back(name, text(name));
    try {
      return hw::configure_machine(text("preset"), text("config"), overrides);
    } catch (const std::invalid_argument& e) {
      throw OptionError(e.what());
    }
  }
  bool is_parameter(const std::string& name) const {
    return std::find(parameters_.begin(), parameters_.end(), name) != parameters_.end();
  }

  sdk::DeviceOptions device() const {
    sdk::DeviceOptions d;
    d.profile = yes("profile");
    set_declared(static_cast<hw::RunOptions&>(d), run_options_);
    set_declared(static_cast<report::OutputOptions&>(d), output_options_);
    set_declared(static_cast<sdk::DebugOptions&>(d), debug_options_);
    return d;
  }

 private:
  std::map<std::string, std::string> values_;
  std::vector<std::string> parameters_;      // the machine's configuration parameters
  std::vector<std::string> run_options_;     // hw::RunOptions's
  std::vector<std::string> output_options_;  // report::OutputOptions's
  std::vector<std::string> debug_options_;   // sdk::DebugOptions's

  // Adds the options a struct declares (visit_parameters), with its defaults, to the table.
  template <typename Options>
  void declare(const Options& defaults, std::vector<std::string>& names) {
    visit_parameters(defaults, [&](const base::Parameter& p, const auto& member) {
      names.emplace_back(p.name);
      values_.insert({p.name, base::value_text(member)});
    });
  }
  // Sets each declared option from its text and validates the struct.
  template <typename Options>
  void set_declared(Options& options, const std::vector<std::string>& names) const {
    for (const std::string& name : names) {
      try {
        base::set_parameter(options, name, text(name));
      } catch (const std::invalid_argument& e) {
        throw OptionError("option --" + name + ": " + e.what());
      }
    }
    try {
      validate(options);
    } catch (const std::invalid_argument& e) {
      throw OptionError(e.what());
    }
  }
  bool help_ = false;
};

// With --profile yes: the compute-set and codelet tables of the example's runs.
inline void print_profile(const ExampleOptions& options, const sdk::Profile& profile,
                          const hw::MachineConfig& machine) {
  if (!options.yes("profile")) return;
  fmt::print("== profile (worker cycles by compute set and codelet) ==\n");
  sdk::print_profile(std::cout, profile, machine.chip.tiles, machine.chips);
}

// Adds the example's arithmetic to its --stats file (nothing without one): summary.flops and
// summary.tflops, the flops over the simulated time of every run.
void record_flops(const std::string& stats, double flops);

// Parses the command line and runs `body` with it. --help prints the usage and every option
// with its default (exit 0); a bad option prints what is wrong and the usage on stderr (exit
// 2); any other error prints it (exit 1); otherwise the body's status.
inline int run_example(const std::string& name, const std::string& usage, int argc, char** argv,
                       std::map<std::string, std::string> defaults,
                       const std::function<int(const ExampleOptions&)>& body) {
  sdk::open_closed_standard_streams();
  try {
    const ExampleOptions options(argc, argv, std::move(defaults));
    if (options.help()) {
      fmt::print("usage: {} {}\n\noptions (default):\n", name, usage);
      for (const auto& [option, value] : options.values())
        if (!options.is_parameter(option))
          fmt::print("  --{:<16} {}\n", option, value.empty() ? "(none)" : value);
      fmt::print(
          "\nconfiguration parameters, each --NAME VALUE (default: the preset's; ipu-sim --help "
          "says what each means):\n");
      for (const auto& [option, value] : options.values())
        if (options.is_parameter(option)) fmt::print("  --{}\n", option);
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
