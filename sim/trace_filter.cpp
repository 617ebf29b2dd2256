#include "trace_filter.h"

#include <fmt/format.h>

#include <charconv>
#include <stdexcept>

#include "sdk/tools/parse_count.h"

namespace ipu::sim {
namespace {

// "A,B-C,...": each number in [0, limit), as a set.
std::set<unsigned> parse_list(const std::string& option, const std::string& text, unsigned limit,
                              const char* what) {
  std::set<unsigned> out;
  size_t begin = 0;
  while (begin <= text.size()) {
    const size_t comma = std::min(text.find(',', begin), text.size());
    const std::string item = text.substr(begin, comma - begin);
    const size_t dash = item.find('-');
    const uint64_t lo = sdk::parse_count(option, item.substr(0, dash));
    const uint64_t hi =
        dash == std::string::npos ? lo : sdk::parse_count(option, item.substr(dash + 1));
    if (hi < lo)
      throw std::invalid_argument(fmt::format("option {}: '{}' is an empty range", option, item));
    if (hi >= limit)
      throw std::invalid_argument(
          fmt::format("option {}: {} {} does not exist (there are {})", option, what, hi, limit));
    for (uint64_t v = lo; v <= hi; ++v) out.insert(static_cast<unsigned>(v));
    begin = comma + 1;
  }
  return out;
}

// A pc: hex with 0x, else decimal.
uint32_t parse_address(const std::string& option, const std::string& text) {
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    uint32_t value = 0;
    const char* first = text.data() + 2;
    const char* last = text.data() + text.size();
    const auto [end, ec] = std::from_chars(first, last, value, 16);
    if (ec == std::errc() && end == last) return value;
    throw std::invalid_argument(
        fmt::format("option {}: '{}' is not a 32-bit address", option, text));
  }
  return static_cast<uint32_t>(sdk::parse_count(option, text, 0, 0xffffffffu));
}

}  // namespace

hw::TraceFilter parse_trace_filter(const TraceFilterText& text, const sdk::ElfImage& image,
                                   unsigned tiles, unsigned contexts) {
  hw::TraceFilter f;
  if (!text.limit.empty()) f.limit = sdk::parse_count("--trace-instructions-limit", text.limit);
  if (!text.tiles.empty()) f.tiles = parse_list("--trace-tiles", text.tiles, tiles, "tile");
  if (!text.contexts.empty()) {
    f.contexts = 0;
    for (unsigned c : parse_list("--trace-contexts", text.contexts, contexts, "context"))
      f.contexts |= 1u << c;
  }
  if (!text.cycles.empty()) {
    const size_t colon = text.cycles.find(':');
    if (colon == std::string::npos)
      throw std::invalid_argument(fmt::format(
          "option --trace-cycles: '{}' is not FROM:TO (either may be left out)", text.cycles));
    const std::string from = text.cycles.substr(0, colon), to = text.cycles.substr(colon + 1);
    if (!from.empty()) f.cycle_from = sdk::parse_count("--trace-cycles", from);
    if (!to.empty()) f.cycle_to = sdk::parse_count("--trace-cycles", to);
    if (f.cycle_to <= f.cycle_from)
      throw std::invalid_argument(
          fmt::format("option --trace-cycles: '{}' is an empty window", text.cycles));
  }
  if (!text.pc.empty()) {
    const size_t colon = text.pc.find(':');
    if (colon != std::string::npos) {
      f.pc_from = parse_address("--trace-pc", text.pc.substr(0, colon));
      f.pc_to = parse_address("--trace-pc", text.pc.substr(colon + 1));
      if (f.pc_to <= f.pc_from)
        throw std::invalid_argument(
            fmt::format("option --trace-pc: '{}' is an empty range", text.pc));
    } else {
      const auto symbol = image.symbols.find(text.pc);
      const auto size = image.function_sizes.find(text.pc);
      if (symbol == image.symbols.end() || size == image.function_sizes.end())
        throw std::invalid_argument(fmt::format(
            "option --trace-pc: {} has no function '{}' (give LOW:HIGH, or a function of its "
            "symbol table)",
            image.path, text.pc));
      f.pc_from = symbol->second;
      f.pc_to = symbol->second + size->second;
    }
  }
  return f;
}

}  // namespace ipu::sim
