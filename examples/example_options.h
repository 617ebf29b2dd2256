// Command-line options of the SDK examples: "--name value" pairs over a table of known options
// with defaults. Bad input (an unknown option, a missing value, a count that is not a whole
// number in range) is an OptionError that names the option and the text given. Every example
// also takes the device options --rtl BLOCKS, --rtl-trace FILE.fst and --memory-hash yes|no.
#pragma once

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
      const auto it = arg.rfind("--", 0) == 0 ? values_.find(arg.substr(2)) : values_.end();
      if (it == values_.end()) throw OptionError("unknown option '" + arg + "'");
      if (i + 1 >= argc) throw OptionError("option '" + arg + "' needs a value");
      it->second = argv[i + 1];
    }
  }

  const std::string& text(const std::string& name) const { return values_.at(name); }

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
};

}  // namespace ipu::examples
