#include "examples/bert/packing.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <stdexcept>

#include "base/input_file.h"

namespace ipu::examples::bert {

namespace {

constexpr unsigned kMaxLengths = 65536;
constexpr uint64_t kMaxFileBytes = 4u << 20;

// A decimal whole number filling `field`, or false.
bool parse_whole(std::string_view field, uint64_t& value) {
  const auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), value);
  return !field.empty() && ec == std::errc() && end == field.data() + field.size();
}

}  // namespace

uint64_t LengthHistogram::sequences() const {
  uint64_t n = 0;
  for (uint64_t c : count) n += c;
  return n;
}

uint64_t LengthHistogram::tokens() const {
  uint64_t n = 0;
  for (size_t l = 1; l <= count.size(); ++l) n += count[l - 1] * l;
  return n;
}

double LengthHistogram::padding_ratio() const {
  const uint64_t real = tokens();
  return real == 0 ? 1.0 : static_cast<double>(sequences()) * max_length() / real;
}

LengthHistogram parse_histogram(std::string_view text, const std::string& source) {
  LengthHistogram histogram;
  size_t line_number = 0;
  bool header = false;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    const auto fail = [&](const std::string& what) {
      return std::invalid_argument(fmt::format("{} line {}: {}", source, line_number, what));
    };
    if (!header) {
      if (line != "length,count")
        throw fail(fmt::format("'{}' is not the header 'length,count'", line));
      header = true;
      continue;
    }
    const size_t comma = line.find(',');
    uint64_t length = 0, count = 0;
    if (comma == std::string_view::npos || !parse_whole(line.substr(0, comma), length) ||
        !parse_whole(line.substr(comma + 1), count))
      throw fail(fmt::format("'{}' is not 'length,count' in whole numbers", line));
    if (length != histogram.count.size() + 1)
      throw fail(fmt::format("length {} where length {} was due (lengths run 1, 2, 3, ...)", length,
                             histogram.count.size() + 1));
    if (length > kMaxLengths)
      throw fail(fmt::format("length {}: more than {} lengths", length, kMaxLengths));
    histogram.count.push_back(count);
  }
  if (!header)
    throw std::invalid_argument(fmt::format("{}: empty (no 'length,count' header)", source));
  if (histogram.count.empty())
    throw std::invalid_argument(fmt::format("{}: no lengths after the header", source));
  uint64_t total = 0;
  for (uint64_t c : histogram.count)
    if (__builtin_add_overflow(total, c, &total))
      throw std::invalid_argument(fmt::format("{}: the counts overflow 64 bits", source));
  uint64_t tokens = 0;
  for (size_t l = 1; l <= histogram.count.size(); ++l) {
    uint64_t product = 0;
    if (__builtin_mul_overflow(histogram.count[l - 1], l, &product) ||
        __builtin_add_overflow(tokens, product, &tokens))
      throw std::invalid_argument(fmt::format("{}: the token count overflows 64 bits", source));
  }
  return histogram;
}

LengthHistogram read_histogram(const std::string& path) {
  const std::vector<uint8_t> bytes =
      base::read_input_file(path, kMaxFileBytes, "sequence-length histogram");
  return parse_histogram(
      std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), path);
}

LengthHistogram scale_histogram(const LengthHistogram& histogram, unsigned seq) {
  if (seq == 0) throw std::invalid_argument("scale_histogram: rows of 0 tokens");
  LengthHistogram scaled;
  scaled.count.assign(seq, 0);
  const uint64_t from = histogram.max_length();
  for (uint64_t l = 1; l <= from; ++l) {
    const uint64_t to = std::max<uint64_t>(1, (l * seq + from - 1) / from);
    scaled.count[to - 1] += histogram.count[l - 1];
  }
  return scaled;
}

unsigned PackStrategy::tokens() const {
  unsigned n = 0;
  for (unsigned l : lengths) n += l;
  return n;
}

double Packing::efficiency() const {
  return rows == 0 ? 1.0 : static_cast<double>(tokens) / (static_cast<double>(rows) * row_length);
}

double Packing::speedup() const {
  return rows == 0 ? 1.0 : static_cast<double>(sequences) / static_cast<double>(rows);
}

Packing pack_spfhp(const LengthHistogram& histogram, unsigned max_per_pack) {
  if (max_per_pack == 0) throw std::invalid_argument("SPFHP: at most 0 sequences a row");
  const unsigned row = histogram.max_length();
  struct Group {
    uint64_t rows;
    std::vector<unsigned> lengths;
  };
  std::map<unsigned, std::vector<Group>> open;  // space left -> groups, the newest last
  std::vector<std::pair<unsigned, Group>> closed;
  const auto add = [&](Group group, unsigned left) {
    if (left == 0 || group.lengths.size() == max_per_pack)
      closed.emplace_back(left, std::move(group));
    else
      open[left].push_back(std::move(group));
  };
  for (unsigned length = row; length >= 1; --length) {
    uint64_t unplaced = histogram.count[length - 1];
    while (unplaced > 0) {
      // The shortest open pack (the most space left), if this length fits it.
      if (open.empty() || open.rbegin()->first < length) {
        add(Group{unplaced, {length}}, row - length);
        break;
      }
      const auto shortest = std::prev(open.end());
      const unsigned left = shortest->first;
      Group group = std::move(shortest->second.back());
      shortest->second.pop_back();
      const uint64_t placed = std::min(group.rows, unplaced);
      if (group.rows > placed)
        shortest->second.push_back(Group{group.rows - placed, group.lengths});
      if (shortest->second.empty()) open.erase(shortest);
      unplaced -= placed;
      group.rows = placed;
      group.lengths.push_back(length);
      add(std::move(group), left - length);
    }
  }
  for (auto& [left, groups] : open)
    for (Group& group : groups) closed.emplace_back(left, std::move(group));

  Packing packing;
  packing.row_length = row;
  packing.max_per_pack = max_per_pack;
  for (auto& [left, group] : closed) {
    (void)left;
    packing.strategies.push_back(PackStrategy{std::move(group.lengths), group.rows});
  }
  // Strategies of the same lengths (made at different times) are one.
  std::sort(packing.strategies.begin(), packing.strategies.end(),
            [](const PackStrategy& a, const PackStrategy& b) {
              if (a.tokens() != b.tokens()) return a.tokens() > b.tokens();
              return a.lengths > b.lengths;
            });
  std::vector<PackStrategy> merged;
  for (PackStrategy& s : packing.strategies) {
    if (!merged.empty() && merged.back().lengths == s.lengths)
      merged.back().rows += s.rows;
    else
      merged.push_back(std::move(s));
  }
  packing.strategies = std::move(merged);
  for (const PackStrategy& s : packing.strategies) {
    packing.rows += s.rows;
    packing.sequences += s.rows * s.lengths.size();
    packing.tokens += s.rows * s.tokens();
  }
  return packing;
}

}  // namespace ipu::examples::bert
