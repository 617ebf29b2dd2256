#include "chip_config.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <type_traits>

#include "hw/sync/sync_network.h"

namespace ipu::hw {

ChipConfig chip_preset(const std::string& name) {
  ChipConfig c;
  c.preset = name;
  if (name == "mk2") {
    c.tile.clock_hz = 1.325e9;
  } else if (name == "bow") {
    c.tile.clock_hz = 1.85e9;
  } else {
    throw std::invalid_argument(fmt::format("unknown preset '{}' (known: mk2, bow)", name));
  }
  return c;
}

namespace {

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r"), e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

template <typename T>
bool parse_value(const std::string& text, T& out) {
  if constexpr (std::is_same_v<T, std::string>) {
    out = text.size() >= 2 && text.front() == '"' && text.back() == '"'
              ? text.substr(1, text.size() - 2)
              : text;
    return true;
  } else {
    std::istringstream in(text);
    if constexpr (std::is_floating_point_v<T>) {
      in >> out;
    } else {
      // Integers may be written in hex (0x4c000) or as a double (1e9).
      double d = 0;
      if (text.rfind("0x", 0) == 0) {
        unsigned long long v = 0;
        std::istringstream hex(text.substr(2));
        hex >> std::hex >> v;
        if (hex.fail() || !hex.eof()) return false;
        out = static_cast<T>(v);
        return true;
      }
      in >> d;
      if (d < 0 || d != static_cast<double>(static_cast<T>(d))) return false;
      out = static_cast<T>(d);
    }
    return !in.fail() && in.eof();
  }
}

}  // namespace

void apply_config_file(const std::string& path, ChipConfig& config) {
  std::ifstream in(path);
  if (!in) throw std::invalid_argument(fmt::format("{}: cannot open configuration file", path));
  std::string line;
  for (unsigned number = 1; std::getline(in, line); ++number) {
    const std::string text = trim(line.substr(0, line.find('#')));
    if (text.empty()) continue;
    const size_t eq = text.find('=');
    if (eq == std::string::npos)
      throw std::invalid_argument(
          fmt::format("{}:{}: expected 'name = value', got '{}'", path, number, text));
    try {
      set_parameter(config, trim(text.substr(0, eq)), trim(text.substr(eq + 1)));
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(fmt::format("{}:{}: {}", path, number, e.what()));
    }
  }
}

void set_parameter(ChipConfig& config, const std::string& name, const std::string& value) {
  bool known = false, ok = true;
  visit_parameters(config, [&](const char* n, auto& member, const char*, const char*) {
    if (name != n) return;
    known = true;
    ok = parse_value(value, member);
  });
  if (!known) throw std::invalid_argument(fmt::format("unknown parameter '{}'", name));
  if (!ok) throw std::invalid_argument(fmt::format("bad value '{}' for {}", value, name));
}

void validate(const ChipConfig& c) {
  auto fail = [](const std::string& what) { throw std::invalid_argument(what); };
  if (c.tiles < 1 || c.tiles > 4096)
    fail(fmt::format("chip.tiles must be 1..4096, not {}", c.tiles));
  if (c.tile.sram_base + uint64_t{c.tile.sram_bytes} > (1u << 20))
    fail(
        "tile SRAM must end below 1 MiB: images carry the tile number above bit 20 of each "
        "address");
  if (c.exchange.words_per_cycle < 1) fail("exchange.words-per-cycle must be at least 1");
  if (c.exchange.tiles_per_column < 1) fail("exchange.tiles-per-column must be at least 1");
  if (!(c.tile.clock_hz > 0)) fail("tile.clock-hz must be positive");
  parse_sync_groups(c.sync.groups, c.tiles);  // throws naming the bad entry
}

}  // namespace ipu::hw
