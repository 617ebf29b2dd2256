// A benchmark's --param NAME=VALUE options (the machine's parameters, as ipu-sim --config-dump
// lists them) as configure_machine's overrides.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace ipu::bench {

inline std::vector<std::pair<std::string, std::string>> param_overrides(
    const std::vector<std::string>& params) {
  std::vector<std::pair<std::string, std::string>> overrides;
  for (const std::string& p : params) {
    const size_t eq = p.find('=');
    if (eq == std::string::npos || eq == 0)
      throw std::invalid_argument("--param " + p + ": expected NAME=VALUE");
    overrides.emplace_back(p.substr(0, eq), p.substr(eq + 1));
  }
  return overrides;
}

}  // namespace ipu::bench
