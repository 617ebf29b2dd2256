// The command line of every program that runs a device: ipu-sim, the examples and the
// benchmarks that take a machine. One binder, over Boost.Program_options, for what is declared
// once elsewhere: the machine (--preset, --config FILE and every configuration parameter,
// hw/machine/machine_config.h), the run options (hw/machine/run_options.h), the output options
// (report/output_options.h) and the debugging options (sdk/runtime/debug_options.h).
//
// Yes/no options are switches (--memory-hash); the others take a value, read as text and set
// by set_parameter, which checks it as the --config file's values are checked (Boost would wrap
// "-3" into a huge unsigned), so an error names the option and the text given.
#pragma once

#include <boost/program_options.hpp>
#include <string>

#include "hw/machine/machine_config.h"
#include "hw/machine/run_options.h"
#include "report/output_options.h"
#include "sdk/runtime/debug_options.h"
#include "sdk/runtime/device.h"

namespace ipu::sdk {

// A command line's error as Boost words it, with the nearest option names for an unknown one
// ("unrecognised option '--exchange.base-latncy' (did you mean --exchange.base-latency?)").
std::string describe_option_error(const boost::program_options::error& e,
                                  const boost::program_options::options_description& options);

class DeviceCommandLine {
 public:
  // `default_preset`: the machine without --preset (mk2 for ipu-sim).
  explicit DeviceCommandLine(const std::string& default_preset);

  // --preset, --config, --config-dump and the run, output and debugging options, for a
  // program's own group.
  void add_options(boost::program_options::options_description& group) const;
  // Every configuration parameter, each overriding the preset and the --config file.
  const boost::program_options::options_description& parameters() const { return parameters_; }

  // --config-dump: print machine()'s configuration and exit, running nothing (ipu-sim sweep
  // checks each point's configuration so before any point runs).
  static bool config_dump(const boost::program_options::variables_map& vm) {
    return vm.count("config-dump") != 0 && vm["config-dump"].as<bool>();
  }
  // After parsing. Each throws std::invalid_argument naming the option for a bad value.
  hw::MachineConfig machine(const boost::program_options::variables_map& vm) const;
  hw::RunOptions run_options(const boost::program_options::variables_map& vm) const;
  report::OutputOptions output_options(const boost::program_options::variables_map& vm) const;
  DebugOptions debug_options(const boost::program_options::variables_map& vm) const;
  // The three together, as a Device takes them (its `profile` stays off).
  DeviceOptions device_options(const boost::program_options::variables_map& vm) const;

 private:
  std::string default_preset_;
  boost::program_options::options_description parameters_;
};

}  // namespace ipu::sdk
