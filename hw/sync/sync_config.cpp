#include "sync_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>
#include <stdexcept>

namespace ipu::hw {
namespace {

// "0-3,5" -> {0, 1, 2, 3, 5}, each below `limit`; `what` names the parameter in errors.
std::vector<unsigned> parse_ranges(const std::string& what, const std::string& text, unsigned limit,
                                   const char* unit) {
  std::vector<unsigned> out;
  std::istringstream in(text);
  std::string range;
  while (std::getline(in, range, ',')) {
    unsigned first = 0, last = 0;
    char dash = 0;
    std::istringstream r(range);
    if (!(r >> first)) throw std::invalid_argument(fmt::format("{}: bad range '{}'", what, range));
    last = first;
    if (r >> dash && !(dash == '-' && r >> last))
      throw std::invalid_argument(fmt::format("{}: bad range '{}'", what, range));
    if (!(r >> std::ws).eof())
      throw std::invalid_argument(fmt::format("{}: bad range '{}'", what, range));
    if (last < first || last >= limit)
      throw std::invalid_argument(
          fmt::format("{}: range {} is outside {}s 0-{}", what, range, unit, limit - 1));
    for (unsigned t = first; t <= last; ++t) out.push_back(t);
  }
  std::vector<unsigned> sorted(out);
  std::sort(sorted.begin(), sorted.end());
  const auto twice = std::adjacent_find(sorted.begin(), sorted.end());
  if (twice != sorted.end())
    throw std::invalid_argument(
        fmt::format("{}: {} {} is listed twice in '{}'", what, unit, *twice, text));
  if (sorted.empty())
    throw std::invalid_argument(fmt::format("{}: no {}s in '{}'", what, unit, text));
  return sorted;
}

}  // namespace

std::map<unsigned, std::vector<unsigned>> parse_sync_groups(const std::string& text,
                                                            unsigned tiles) {
  std::map<unsigned, std::vector<unsigned>> groups;
  std::istringstream in(text);
  std::string item;
  while (std::getline(in, item, ';')) {
    if (item.find_first_not_of(' ') == std::string::npos) {
      if (!text.empty() && text.find_first_not_of(" ;") == std::string::npos)
        throw std::invalid_argument(fmt::format("sync.groups: '{}' declares no group", text));
      continue;
    }
    unsigned id = 0;
    char colon = 0;
    std::istringstream entry(item);
    if (!(entry >> id >> colon) || colon != ':' || id == 0 || id >= sync_group::kExternal)
      throw std::invalid_argument(
          fmt::format("sync.groups: '{}' is not 'group:tiles' with group 1..{}", item,
                      sync_group::kExternal - 1));
    if (groups.count(id))
      throw std::invalid_argument(fmt::format("sync.groups: group {} is declared twice", id));
    std::string ranges;
    std::getline(entry, ranges);
    groups[id] = parse_ranges(fmt::format("sync.groups group {}", id), ranges, tiles, "tile");
  }
  return groups;
}

std::vector<std::vector<unsigned>> parse_chip_groups(const std::string& name,
                                                     const std::string& text, unsigned chips) {
  std::vector<std::vector<unsigned>> parts;
  if (text.find_first_not_of(' ') == std::string::npos) {
    parts.emplace_back();
    for (unsigned c = 0; c < chips; ++c) parts.back().push_back(c);
    return parts;
  }
  std::set<unsigned> seen;
  std::istringstream in(text);
  std::string item;
  while (std::getline(in, item, ';')) {
    parts.push_back(parse_ranges(name, item, chips, "chip"));
    for (unsigned c : parts.back())
      if (!seen.insert(c).second)
        throw std::invalid_argument(
            fmt::format("{}: chip {} is in two parts of '{}'", name, c, text));
  }
  return parts;
}

uint64_t external_sync_cycles(const SyncConfig& config, double clock_hz, unsigned chips) {
  const unsigned hops = 1 + (chips / 2) / 2;
  return static_cast<uint64_t>(
      std::ceil(2.0 * hops * config.external_ns_per_hop * 1e-9 * clock_hz - 1e-9));
}

void validate(const SyncConfig& c, const MachineShape& shape) {
  base::check_ranges(c);
  parse_sync_groups(c.groups, shape.tiles_per_chip);  // each throws naming the bad entry
  parse_chip_groups("sync.gs1", c.gs1, shape.chips);
  parse_chip_groups("sync.gs2", c.gs2, shape.chips);
}

}  // namespace ipu::hw
