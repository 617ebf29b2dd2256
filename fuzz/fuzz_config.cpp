// libFuzzer target: machine configuration as the command line and --config files give it. The
// input's first line is a list of "name=value" options (separated by ';'), the rest a
// configuration file; both are applied to a preset as configure_machine does, then validated.
// Refusals are std::invalid_argument; anything else is a finding.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "hw/machine/machine_config.h"

// SystemC's library (linked for the configuration checks) refers to sc_main; libFuzzer owns main.
extern "C" int sc_main(int, char**) { return 0; }

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const size_t newline = input.find('\n');
  const std::string options = input.substr(0, newline);
  const std::string file = newline == std::string::npos ? "" : input.substr(newline + 1);
  try {
    ipu::hw::MachineConfig config = ipu::hw::machine_preset("mk2");
    ipu::base::apply_config_text(file, "<fuzz>", config, [&config](const std::string& name) {
      config = ipu::hw::machine_preset(name);
    });
    for (size_t begin = 0; begin <= options.size();) {
      const size_t end = std::min(options.find(';', begin), options.size());
      const std::string option = options.substr(begin, end - begin);
      const size_t eq = option.find('=');
      if (eq != std::string::npos)
        ipu::base::set_parameter(config, option.substr(0, eq), option.substr(eq + 1));
      begin = end + 1;
    }
    ipu::hw::validate(config);
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
