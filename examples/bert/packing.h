// Sequence packing for BERT (arXiv 2107.02027, "Efficient Sequence Packing without
// Cross-contamination"): several short sequences share a row of `seq` tokens, so that a batch
// carries real tokens instead of padding. This file packs a histogram of sequence lengths with
// shortest-pack-first histogram packing (SPFHP) and reports what packing buys; data.h packs a
// dataset's sequences into rows with it.
//
// SPFHP, as the paper's published code does it: walk the lengths from the longest to the
// shortest; keep the open packs grouped by the space they have left, as (count, lengths) groups;
// put each length's sequences into the shortest open pack (the most space left) that fits,
// splitting a group when it has more packs than there are sequences to place, and the rest into
// new packs of their own. A pack is closed when it is full or holds `max_per_pack` sequences.
// It works on counts, not on sequences, so 16 M sequences pack in milliseconds.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ipu::examples::bert {

// count[l - 1] sequences of l tokens, for l = 1 .. max_length().
struct LengthHistogram {
  std::vector<uint64_t> count;

  unsigned max_length() const { return static_cast<unsigned>(count.size()); }
  uint64_t sequences() const;
  uint64_t tokens() const;
  // Padding every sequence to max_length(): padded tokens over real tokens.
  double padding_ratio() const;
};

// A histogram file: the line "length,count", then one "L,N" line for each length from 1 up
// (decimal whole numbers, at most 65,536 lengths). Throws std::invalid_argument naming the
// source and the line for anything else.
LengthHistogram parse_histogram(std::string_view text, const std::string& source);
LengthHistogram read_histogram(const std::string& path);

// The same sequences in rows of `seq` tokens: a sequence of l tokens becomes one of
// ceil(l seq / max_length()) (at least 1).
LengthHistogram scale_histogram(const LengthHistogram& histogram, unsigned seq);

// `rows` rows each holding sequences of these lengths (longest first).
struct PackStrategy {
  std::vector<unsigned> lengths;
  uint64_t rows = 0;
  unsigned tokens() const;
};

struct Packing {
  unsigned row_length = 0, max_per_pack = 0;
  std::vector<PackStrategy> strategies;  // by tokens left (fewest first), then lengths
  uint64_t rows = 0, sequences = 0, tokens = 0;

  // Real tokens over row tokens.
  double efficiency() const;
  // Rows with padding (one a sequence) over rows with packing.
  double speedup() const;
};

// SPFHP of `histogram` into rows of histogram.max_length() tokens, at most max_per_pack
// sequences a row (>= 1; throws std::invalid_argument otherwise).
Packing pack_spfhp(const LengthHistogram& histogram, unsigned max_per_pack);

}  // namespace ipu::examples::bert
