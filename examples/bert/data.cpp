#include "examples/bert/data.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

namespace ipu::examples::bert {

namespace {

// SplitMix64: a fixed, portable stream (the standard library's distributions are not).
class Stream {
 public:
  explicit Stream(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n) (n > 0), by rejection so that no value is favoured.
  uint64_t below(uint64_t n) {
    const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x = next();
    while (x >= limit) x = next();
    return x % n;
  }
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

 private:
  uint64_t state_;
};

int32_t word(uint64_t topic, uint64_t i, unsigned vocab) {
  return kFirstWord + static_cast<int32_t>((topic * 7 + i) % (vocab - kFirstWord));
}

}  // namespace

std::vector<Sequence> synthetic_sequences(const LengthHistogram& histogram, uint64_t count,
                                          unsigned vocab, uint64_t seed) {
  if (vocab < static_cast<unsigned>(kFirstWord) + 2)
    throw std::invalid_argument(fmt::format(
        "synthetic sequences: a vocabulary of {} ids leaves fewer than 2 words after the {} "
        "special tokens",
        vocab, kFirstWord));
  const uint64_t total = histogram.sequences();
  if (total == 0) throw std::invalid_argument("synthetic sequences: the histogram is empty");
  Stream stream(seed);
  std::vector<Sequence> sequences(count);
  for (Sequence& s : sequences) {
    // The length by the histogram's cumulative counts.
    uint64_t pick = stream.below(total);
    unsigned length = 1;
    while (pick >= histogram.count[length - 1]) pick -= histogram.count[length++ - 1];
    // Topics as skewed as a language's words are (a few common, many rare): u^4 of a uniform u.
    const double u = stream.unit();
    const uint64_t topic = static_cast<uint64_t>(static_cast<double>(vocab) * u * u * u * u);
    s.is_next = (stream.next() & 1) != 0;
    const uint64_t b_topic = s.is_next ? topic : topic + 1 + stream.below(vocab - 1);
    s.tokens.push_back(kCls);
    s.segments.push_back(0);
    // A takes half the words; [SEP] after A and at the end when the length allows.
    const unsigned a_words = length >= 5 ? (length - 3) / 2 : length - 1;
    for (unsigned i = 0; i < a_words; ++i) {
      s.tokens.push_back(word(topic, i, vocab));
      s.segments.push_back(0);
    }
    if (s.tokens.size() < length) {
      s.tokens.push_back(kSep);
      s.segments.push_back(0);
    }
    // B continues A's words from where A stopped, or another topic's from its start.
    for (uint64_t i = 0; s.tokens.size() + (length >= 5 ? 1 : 0) < length; ++i) {
      s.tokens.push_back(word(b_topic, s.is_next ? a_words + i : i, vocab));
      s.segments.push_back(1);
    }
    if (s.tokens.size() < length) {
      s.tokens.push_back(kSep);
      s.segments.push_back(1);
    }
  }
  return sequences;
}

double Rows::efficiency() const {
  return count == 0 ? 1.0 : static_cast<double>(real_tokens) / (static_cast<double>(count) * seq);
}

std::vector<float> Rows::attention_mask(size_t row) const {
  std::vector<float> mask(static_cast<size_t>(seq) * seq);
  const int32_t* ids = &sequence_ids[row * seq];
  for (unsigned q = 0; q < seq; ++q)
    for (unsigned k = 0; k < seq; ++k)
      mask[static_cast<size_t>(q) * seq + k] = ids[q] == ids[k] ? 0.0f : kMaskedOut;
  return mask;
}

Rows make_rows(const std::vector<Sequence>& sequences, const RowOptions& options) {
  if (options.seq == 0 || options.max_per_row == 0)
    throw std::invalid_argument("rows: 0 tokens or 0 sequences a row");
  if (options.vocab <= static_cast<unsigned>(kFirstWord))
    throw std::invalid_argument(
        fmt::format("rows: a vocabulary of {} ids has no words", options.vocab));
  // Which sequences share each row: by SPFHP's strategies over their lengths, or one each.
  std::vector<std::vector<size_t>> row_members;
  if (options.max_per_row == 1) {
    for (size_t i = 0; i < sequences.size(); ++i) row_members.push_back({i});
  } else {
    LengthHistogram histogram;
    histogram.count.assign(options.seq, 0);
    std::map<unsigned, std::vector<size_t>> by_length;  // each length's sequences, last first
    for (size_t i = sequences.size(); i-- > 0;)
      by_length[static_cast<unsigned>(sequences[i].tokens.size())].push_back(i);
    for (size_t i = 0; i < sequences.size(); ++i) {
      const size_t length = sequences[i].tokens.size();
      if (length == 0 || length > options.seq)
        throw std::invalid_argument(fmt::format(
            "rows: sequence {} has {} tokens, and a row holds 1 to {}", i, length, options.seq));
      ++histogram.count[length - 1];
    }
    const Packing packing = pack_spfhp(histogram, options.max_per_row);
    for (const PackStrategy& strategy : packing.strategies)
      for (uint64_t r = 0; r < strategy.rows; ++r) {
        std::vector<size_t> members;
        for (unsigned length : strategy.lengths) {
          members.push_back(by_length[length].back());
          by_length[length].pop_back();
        }
        // In the dataset's order within a row.
        std::sort(members.begin(), members.end());
        row_members.push_back(std::move(members));
      }
  }

  Rows rows;
  rows.seq = options.seq;
  rows.max_per_row = options.max_per_row;
  rows.max_predictions =
      static_cast<unsigned>(std::ceil(options.mask_rate * options.seq)) + options.max_per_row;
  rows.count = row_members.size();
  const size_t cells = rows.count * rows.seq;
  rows.tokens.assign(cells, kPad);
  rows.positions.assign(cells, 0);
  rows.segments.assign(cells, 0);
  rows.sequence_ids.assign(cells, 0);
  rows.mlm_positions.assign(rows.count * rows.max_predictions, 0);
  rows.mlm_labels.assign(rows.count * rows.max_predictions, kPad);
  rows.mlm_weights.assign(rows.count * rows.max_predictions, 0.0f);
  rows.nsp_positions.assign(rows.count * rows.max_per_row, 0);
  rows.nsp_labels.assign(rows.count * rows.max_per_row, 0);
  rows.nsp_weights.assign(rows.count * rows.max_per_row, 0.0f);

  Stream stream(options.seed ^ 0x6d61736b696e67ull);  // "masking"
  for (size_t r = 0; r < rows.count; ++r) {
    unsigned at = 0, predictions = 0;
    for (size_t slot = 0; slot < row_members[r].size(); ++slot) {
      const Sequence& s = sequences[row_members[r][slot]];
      if (s.tokens.empty() || s.tokens.size() > options.seq - at)
        throw std::invalid_argument(
            fmt::format("rows: sequence {} has {} tokens, and a row holds 1 to {}",
                        row_members[r][slot], s.tokens.size(), options.seq));
      const size_t base = r * rows.seq + at;
      std::vector<unsigned> words;  // positions of the sequence's words
      for (size_t i = 0; i < s.tokens.size(); ++i) {
        rows.tokens[base + i] = s.tokens[i];
        rows.positions[base + i] = static_cast<int32_t>(i);
        rows.segments[base + i] = s.segments[i];
        rows.sequence_ids[base + i] = static_cast<int32_t>(slot + 1);
        if (s.tokens[i] >= kFirstWord) words.push_back(static_cast<unsigned>(i));
      }
      rows.nsp_positions[r * rows.max_per_row + slot] = static_cast<int32_t>(at);
      rows.nsp_labels[r * rows.max_per_row + slot] = s.is_next ? 1 : 0;
      rows.nsp_weights[r * rows.max_per_row + slot] = 1.0f;
      // The masked words: a partial Fisher-Yates shuffle picks them, in position order after.
      size_t masked = words.empty() ? 0
                                    : std::max<size_t>(1, static_cast<size_t>(std::lround(
                                                              options.mask_rate * words.size())));
      for (size_t i = 0; i < masked; ++i)
        std::swap(words[i], words[i + stream.below(words.size() - i)]);
      std::sort(words.begin(), words.begin() + static_cast<std::ptrdiff_t>(masked));
      for (size_t i = 0; i < masked; ++i) {
        const size_t cell = base + words[i];
        if (predictions == rows.max_predictions)
          throw std::logic_error(
              fmt::format("rows: row {} has more than {} masked words", r, rows.max_predictions));
        const size_t p = r * rows.max_predictions + predictions++;
        rows.mlm_positions[p] = static_cast<int32_t>(at + words[i]);
        rows.mlm_labels[p] = rows.tokens[cell];
        rows.mlm_weights[p] = 1.0f;
        const double choice = stream.unit();
        if (choice < 0.8)
          rows.tokens[cell] = kMask;
        else if (choice < 0.9)
          rows.tokens[cell] =
              kFirstWord + static_cast<int32_t>(stream.below(options.vocab - kFirstWord));
      }
      at += static_cast<unsigned>(s.tokens.size());
      rows.real_tokens += s.tokens.size();
      ++rows.sequences;
    }
  }
  return rows;
}

}  // namespace ipu::examples::bert
