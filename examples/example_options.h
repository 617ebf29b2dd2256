// Command-line options of the SDK examples: "--name value" pairs over a table of known options
// with defaults. Bad input (an unknown option, a missing value, a count that is not a whole
// number in range) is an OptionError that names the option and the text given.
#pragma once

#include <charconv>
#include <map>
#include <stdexcept>
#include <string>

namespace ipu::examples {

struct OptionError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class ExampleOptions {
 public:
  // `defaults`: every option the example knows (without "--"), with its default value.
  ExampleOptions(int argc, char** argv, std::map<std::string, std::string> defaults)
      : values_(std::move(defaults)) {
    for (int i = 1; i < argc; i += 2) {
      const std::string arg = argv[i];
      const auto it = arg.rfind("--", 0) == 0 ? values_.find(arg.substr(2)) : values_.end();
      if (it == values_.end()) throw OptionError("unknown option '" + arg + "'");
      if (i + 1 >= argc) throw OptionError("option '" + arg + "' needs a value");
      it->second = argv[i + 1];
    }
  }

  const std::string& text(const std::string& name) const { return values_.at(name); }

  // A whole number in [min, max]; no sign, no trailing characters.
  unsigned long count(const std::string& name, unsigned long min, unsigned long max) const {
    const std::string& s = text(name);
    unsigned long value = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
    if (s.empty() || ec != std::errc() || end != s.data() + s.size() || value < min || value > max)
      throw OptionError("--" + name + " '" + s + "' is not a whole number from " +
                        std::to_string(min) + " to " + std::to_string(max));
    return value;
  }

 private:
  std::map<std::string, std::string> values_;
};

}  // namespace ipu::examples
