// Command-line options of the SDK examples: "--name value" pairs over a table of known options
// with defaults. Bad input (an unknown option, a missing value, a count that is not a whole
// number in range) is an OptionError that names the option and the text given. Every example
// also takes the device options --rtl BLOCKS, --rtl-trace FILE.fst and --memory-hash yes|no,
// and --help. run_example() gives them all the same handling and exit statuses.
#pragma once

#include <fmt/format.h>

#include <functional>
#include <map>
#include <stdexcept>
#include <string>

#include "sdk/runtime/device.h"
#include "sdk/tools/parse_count.h"

namespace ipu::examples {

struct OptionError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class ExampleOptions {
 public:
  // `defaults`: every option the example knows (without "--"), with its default value.
  ExampleOptions(int argc, char** argv, std::map<std::string, std::string> defaults)
      : values_(std::move(defaults)) {
    values_.insert({{"rtl", "none"}, {"rtl-trace", ""}, {"memory-hash", "no"}});
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

  sdk::DeviceOptions device() const {
    sdk::DeviceOptions d;
    try {
      d.rtl = tlm_rtl::RtlSelection::parse(text("rtl"));
    } catch (const std::invalid_argument& e) {
      throw OptionError(e.what());
    }
    d.rtl_trace = text("rtl-trace");
    if (!d.rtl_trace.empty() && !d.rtl.any())
      throw OptionError("--rtl-trace needs --rtl: it traces the RTL blocks in use");
    d.memory_hash = yes("memory-hash");
    return d;
  }

 private:
  std::map<std::string, std::string> values_;
  bool help_ = false;
};

// Parses the command line and runs `body` with it. --help prints the usage and every option
// with its default (exit 0); a bad option prints what is wrong and the usage on stderr (exit
// 2); any other error prints it (exit 1); otherwise the body's status.
inline int run_example(const std::string& name, const std::string& usage, int argc, char** argv,
                       std::map<std::string, std::string> defaults,
                       const std::function<int(const ExampleOptions&)>& body) {
  try {
    const ExampleOptions options(argc, argv, std::move(defaults));
    if (options.help()) {
      fmt::print("usage: {} {}\n\noptions (default):\n", name, usage);
      for (const auto& [option, value] : options.values())
        fmt::print("  --{:<16} {}\n", option, value.empty() ? "(none)" : value);
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
