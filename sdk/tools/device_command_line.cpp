#include "sdk/tools/device_command_line.h"

#include <fmt/format.h>

#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

namespace ipu::sdk {
namespace po = boost::program_options;

namespace {

// Binds the options a struct declares (its visit_parameters): switches for yes/no, text for
// the rest.
template <typename Options>
void add_declared(po::options_description& group, const Options& defaults) {
  visit_parameters(defaults, [&group](const base::Parameter& p, const auto& member) {
    if constexpr (std::is_same_v<std::decay_t<decltype(member)>, bool>)
      group.add_options()(p.name, po::bool_switch(), p.meaning);
    else
      group.add_options()(p.name, po::value<std::string>()->default_value(base::value_text(member)),
                          p.meaning);
  });
}

// The declared options the command line gives, over the defaults, validated.
template <typename Options>
Options declared_of(const po::variables_map& vm) {
  Options options;
  std::vector<std::pair<std::string, std::string>> given;  // (name, text), switches as yes
  visit_parameters(options, [&](const base::Parameter& p, const auto& member) {
    if (!vm.count(p.name) || vm[p.name].defaulted()) return;
    if constexpr (std::is_same_v<std::decay_t<decltype(member)>, bool>)
      given.emplace_back(p.name, vm[p.name].as<bool>() ? "yes" : "no");
    else
      given.emplace_back(p.name, vm[p.name].as<std::string>());
  });
  base::set_options(options, given);
  validate(options);
  return options;
}

}  // namespace

std::string describe_option_error(const po::error& e, const po::options_description& options) {
  const auto* unknown = dynamic_cast<const po::unknown_option*>(&e);
  const std::string name = unknown != nullptr ? unknown->get_option_name() : "";
  if (name.rfind("--", 0) != 0) return e.what();
  std::vector<std::string> names;
  for (const auto& option : options.options()) names.push_back(option->long_name());
  return e.what() + base::did_you_mean(base::nearest_names(name.substr(2), names), "--");
}

DeviceCommandLine::DeviceCommandLine(const std::string& default_preset)
    : default_preset_(default_preset),
      parameters_("Configuration parameters (override the preset and --config)") {
  const hw::MachineConfig defaults;
  visit_parameters(defaults, [this](const base::Parameter& p, const auto& member) {
    parameters_.add_options()(p.name,
                              po::value<std::string>()->default_value(base::value_text(member)),
                              base::parameter_help(p).c_str());
  });
}

void DeviceCommandLine::add_options(po::options_description& group) const {
  group.add_options()("preset", po::value<std::string>()->default_value(default_preset_),
                      "machine preset: mk2 or bow (one chip), m2000 or bow2000 (an IPU-Machine, 4 "
                      "chips), pod16, bow-pod16, pod64, bow-pod64")(
      "config", po::value<std::string>()->default_value(""),
      "configuration file of 'name = value' lines (after the preset)")(
      "config-dump", po::bool_switch(),
      "print the effective configuration (a file --config reads back) and exit: nothing runs");
  add_declared(group, hw::RunOptions{});
  add_declared(group, report::OutputOptions{});
  add_declared(group, DebugOptions{});
}

hw::MachineConfig DeviceCommandLine::machine(const po::variables_map& vm) const {
  // Parameters given explicitly override the preset and the file.
  std::vector<std::pair<std::string, std::string>> given;
  const hw::MachineConfig any_machine;
  visit_parameters(any_machine, [&](const base::Parameter& p, const auto&) {
    if (vm.count(p.name) && !vm[p.name].defaulted())
      given.emplace_back(p.name, vm[p.name].as<std::string>());
  });
  return hw::configure_machine(vm["preset"].as<std::string>(), vm["config"].as<std::string>(),
                               given);
}

hw::RunOptions DeviceCommandLine::run_options(const po::variables_map& vm) const {
  return declared_of<hw::RunOptions>(vm);
}

report::OutputOptions DeviceCommandLine::output_options(const po::variables_map& vm) const {
  return declared_of<report::OutputOptions>(vm);
}

DebugOptions DeviceCommandLine::debug_options(const po::variables_map& vm) const {
  return declared_of<DebugOptions>(vm);
}

DeviceOptions DeviceCommandLine::device_options(const po::variables_map& vm) const {
  DeviceOptions device;
  static_cast<hw::RunOptions&>(device) = run_options(vm);
  static_cast<report::OutputOptions&>(device) = output_options(vm);
  static_cast<DebugOptions&>(device) = debug_options(vm);
  return device;
}

}  // namespace ipu::sdk
