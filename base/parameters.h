// Configuration parameters: each block's configuration struct lists its fields once, in a
// visit_parameters(config, visitor) beside the struct, as Parameter descriptions (name, unit,
// meaning, range) paired with the member. Everything else comes from that one list: setting a
// parameter from text (the command line, configuration files, sweeps, Python), writing a
// configuration file, --help, and the range checks. Configurations that compose others
// (ChipConfig, MachineConfig) visit their parts' lists in turn.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <limits>
#include <optional>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "base/input_file.h"

namespace ipu::base {

// One parameter: its name on the command line and in files, its unit, what it means, and the
// values it may take (numbers only; strings and yes/no parameters have no range).
struct Parameter {
  const char* name;
  const char* unit;
  const char* meaning;
  double low = -std::numeric_limits<double>::infinity();
  double high = std::numeric_limits<double>::infinity();
};

// visit_parameters overloads take `Config&` and `const Config&` alike (a const visit reads).
template <typename C, typename Config>
using if_config_t = std::enable_if_t<std::is_same_v<std::remove_const_t<C>, Config>, int>;

// A value with a text form of its own (a list of blocks, say): `T::parse(text)` reads it,
// throwing std::invalid_argument naming what is wrong, and `value.text()` writes it back.
template <typename T, typename = void>
struct has_text_form : std::false_type {};
template <typename T>
struct has_text_form<
    T, std::void_t<decltype(T::parse(std::string())), decltype(std::declval<const T&>().text())>>
    : std::true_type {};

template <typename T>
struct is_optional : std::false_type {};
template <typename T>
struct is_optional<std::optional<T>> : std::true_type {};

// Parses one value: strings as they are (quotes removed), booleans as true/false/yes/no/1/0,
// integers whole and non-negative in decimal, hex (0x4c000) or 1e9 form, reals as numbers,
// optional values as "none" (or nothing) or their value, and values with a text form of their
// own by their parse() (which throws its own message).
template <typename T>
bool parse_parameter_value(const std::string& text, T& out) {
  if constexpr (has_text_form<T>::value) {
    out = T::parse(text);
    return true;
  } else if constexpr (is_optional<T>::value) {
    if (text.empty() || text == "none") return out.reset(), true;
    typename T::value_type value{};
    if (!parse_parameter_value(text, value)) return false;
    return out = value, true;
  } else if constexpr (std::is_same_v<T, std::string>) {
    out = text.size() >= 2 && text.front() == '"' && text.back() == '"'
              ? text.substr(1, text.size() - 2)
              : text;
    return true;
  } else if constexpr (std::is_same_v<T, bool>) {
    if (text == "true" || text == "yes" || text == "1") return out = true, true;
    if (text == "false" || text == "no" || text == "0") return out = false, true;
    return false;
  } else {
    std::istringstream in(text);
    if constexpr (std::is_floating_point_v<T>) {
      in >> out;
    } else {
      double d = 0;
      if (text.rfind("0x", 0) == 0) {
        unsigned long long v = 0;
        std::istringstream hex(text.substr(2));
        hex >> std::hex >> v;
        if (hex.fail() || !hex.eof() || v != static_cast<unsigned long long>(static_cast<T>(v)))
          return false;  // a value the parameter cannot hold is refused, never truncated
        out = static_cast<T>(v);
        return true;
      }
      in >> d;
      // The range check comes first: converting a double beyond T's range is undefined.
      if (!(d >= 0) || d >= 0x1p64 ||
          static_cast<unsigned long long>(d) > static_cast<unsigned long long>(~T{0}) ||
          d != static_cast<double>(static_cast<T>(d)))
        return false;
      out = static_cast<T>(d);
    }
    return !in.fail() && in.eof();
  }
}

// "bad value 'TEXT' for NAME (what it takes)": the error for text a parameter cannot hold.
template <typename T>
std::string bad_value_message(const Parameter& p, const std::string& text) {
  if constexpr (is_optional<T>::value) return bad_value_message<typename T::value_type>(p, text);
  std::string takes;
  if constexpr (std::is_same_v<T, bool>)
    takes = "yes or no";
  else if constexpr (std::is_integral_v<T>)
    takes = fmt::format("a whole number from {} to {}", std::max(p.low, 0.0),
                        std::min(p.high, static_cast<double>(std::numeric_limits<T>::max())));
  else if constexpr (std::is_floating_point_v<T>)
    takes = fmt::format("a number from {} to {}", p.low, p.high);
  return takes.empty() ? fmt::format("bad value '{}' for {}", text, p.name)
                       : fmt::format("bad value '{}' for {} ({})", text, p.name, takes);
}

// Levenshtein distance: single-character insertions, deletions and substitutions.
inline size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// The names nearest `name`, closest first, at most 3: those within an edit distance of a third
// of its length (at least 2), for "did you mean".
inline std::vector<std::string> nearest_names(const std::string& name,
                                              const std::vector<std::string>& names) {
  const size_t reach = std::max<size_t>(2, name.size() / 3);
  std::vector<std::pair<size_t, std::string>> near;
  for (const std::string& n : names)
    if (const size_t d = edit_distance(name, n); d <= reach) near.emplace_back(d, n);
  std::sort(near.begin(), near.end());
  std::vector<std::string> out;
  for (size_t i = 0; i < near.size() && i < 3; ++i) out.push_back(near[i].second);
  return out;
}

// " (did you mean A, B or C?)", each name after `prefix`; empty for no name.
inline std::string did_you_mean(const std::vector<std::string>& names,
                                const std::string& prefix = "") {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i)
    out += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + prefix + names[i];
  return out.empty() ? out : " (did you mean " + out + "?)";
}

// "unknown parameter 'NAME'", with the nearest known names when some are close.
inline std::string unknown_parameter_message(const std::string& name,
                                             const std::vector<std::string>& names) {
  return fmt::format("unknown parameter '{}'{}", name, did_you_mean(nearest_names(name, names)));
}

// Sets one parameter from its text; throws std::invalid_argument naming the parameter and the
// text for an unknown name (with the nearest names) or a malformed value.
template <typename Config>
void set_parameter(Config& config, const std::string& name, const std::string& value) {
  bool known = false;
  std::string error;
  std::vector<std::string> names;
  visit_parameters(config, [&](const Parameter& p, auto& member) {
    names.emplace_back(p.name);
    if (name != p.name) return;
    known = true;
    if (!parse_parameter_value(value, member))
      error = bad_value_message<std::decay_t<decltype(member)>>(p, value);
  });
  if (!known) throw std::invalid_argument(unknown_parameter_message(name, names));
  if (!error.empty()) throw std::invalid_argument(error);
}

// Applies "name = value" lines (# starts a comment) to `config`; throws std::invalid_argument
// naming the file, line and parameter for an unknown name or a malformed value. A "preset =
// NAME" line, allowed only before every parameter, is handed to on_preset (which may throw
// std::invalid_argument too): it starts the file from that preset, as --config-dump writes it.
template <typename Config, typename OnPreset>
void apply_config_text(const std::string& text_of_file, const std::string& path, Config& config,
                       OnPreset&& on_preset) {
  auto trim = [](const std::string& s) {
    const size_t b = s.find_first_not_of(" \t\r"), e = s.find_last_not_of(" \t\r");
    return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
  };
  // A UTF-8 byte-order mark (some editors write one) is invisible: skip it rather than refuse
  // the first line's name.
  const bool bom = text_of_file.rfind("\xef\xbb\xbf", 0) == 0;
  std::istringstream in(bom ? text_of_file.substr(3) : text_of_file);
  std::string line;
  bool any_parameter = false;
  for (unsigned number = 1; std::getline(in, line); ++number) {
    const std::string text = trim(line.substr(0, line.find('#')));
    if (text.empty()) continue;
    const size_t eq = text.find('=');
    if (eq == std::string::npos)
      throw std::invalid_argument(
          fmt::format("{}:{}: expected 'name = value', got '{}'", path, number, text));
    const std::string name = trim(text.substr(0, eq)), value = trim(text.substr(eq + 1));
    try {
      if (name == "preset") {
        if (any_parameter) throw std::invalid_argument("'preset' must come before every parameter");
        std::string preset;
        parse_parameter_value(value, preset);  // quotes removed
        on_preset(preset);
      } else {
        set_parameter(config, name, value);
      }
      any_parameter = true;
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(fmt::format("{}:{}: {}", path, number, e.what()));
    }
  }
}

// The same for the text of a file named `path`, read by the caller (the fuzzer's way in).
template <typename Config, typename OnPreset>
void apply_config_file(const std::string& path, Config& config, OnPreset&& on_preset) {
  const std::vector<uint8_t> bytes = read_input_file(path, 1 << 20, "configuration file");
  apply_config_text(std::string(bytes.begin(), bytes.end()), path, config, on_preset);
}

template <typename Config>
void apply_config_file(const std::string& path, Config& config) {
  apply_config_file(path, config, [](const std::string&) {
    throw std::invalid_argument("unknown parameter 'preset'");
  });
}

// Sets each (name, text) a command line gives; throws std::invalid_argument "option --NAME:
// ..." for the first one refused.
template <typename Config>
void set_options(Config& config, const std::vector<std::pair<std::string, std::string>>& given) {
  for (const auto& [name, text] : given) {
    try {
      set_parameter(config, name, text);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(fmt::format("option --{}: {}", name, e.what()));
    }
  }
}

// A value as the command line takes it: strings as they are, yes/no, numbers, "none" for an
// optional value without one, and a value's own text form.
template <typename T>
std::string value_text(const T& value) {
  if constexpr (has_text_form<T>::value)
    return value.text();
  else if constexpr (is_optional<T>::value)
    return value ? value_text(*value) : "none";
  else if constexpr (std::is_same_v<T, std::string>)
    return value;
  else if constexpr (std::is_same_v<T, bool>)
    return value ? "yes" : "no";
  else
    return fmt::format("{}", value);
}

// A value as configuration files write it: as the command line takes it, strings quoted.
template <typename T>
std::string parameter_text(const T& value) {
  if constexpr (std::is_same_v<T, std::string>)
    return fmt::format("\"{}\"", value);
  else
    return value_text(value);
}

// "meaning [unit; LOW to HIGH]": a parameter's line in --help.
inline std::string parameter_help(const Parameter& p) {
  if (p.low == -std::numeric_limits<double>::infinity() &&
      p.high == std::numeric_limits<double>::infinity())
    return fmt::format("{} [{}]", p.meaning, p.unit);
  return fmt::format("{} [{}; {} to {}]", p.meaning, p.unit, p.low, p.high);
}

// Writes every parameter as a configuration file that apply_config_file reads back to the
// same figures: "name = value  # unit", strings quoted.
template <typename Config>
void write_config_file(std::ostream& out, const Config& config) {
  visit_parameters(config, [&out](const Parameter& p, const auto& member) {
    out << fmt::format("{} = {}  # {}\n", p.name, parameter_text(member), p.unit);
  });
}

// Checks every numeric parameter of `config` against its range; throws std::invalid_argument
// "NAME must be LOW to HIGH, not VALUE" for the first outside it (`prefix` before NAME: "--" for
// command-line options). Each block's validate() calls this, then checks what its fields must
// satisfy together.
template <typename Config>
void check_ranges(const Config& config, const char* prefix = "") {
  visit_parameters(config, [prefix](const Parameter& p, const auto& member) {
    auto check = [&](const auto& value) {
      using T = std::remove_cv_t<std::remove_reference_t<decltype(value)>>;
      if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
        if (!(static_cast<double>(value) >= p.low && static_cast<double>(value) <= p.high))
          throw std::invalid_argument(
              fmt::format("{}{} must be {} to {}, not {}", prefix, p.name, p.low, p.high, value));
      }
    };
    using T = std::remove_cv_t<std::remove_reference_t<decltype(member)>>;
    if constexpr (is_optional<T>::value) {
      if (member) check(*member);
    } else {
      check(member);
    }
  });
}

}  // namespace ipu::base
