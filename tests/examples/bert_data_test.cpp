// Packed BERT's host data pipeline: SPFHP against packings worked out by hand, the histogram
// parser's refusals, and the rows' positions, masks and labels against their definitions.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <set>

#include "examples/bert/data.h"
#include "examples/bert/packing.h"

namespace ipu::examples::bert {
namespace {

LengthHistogram histogram_of(unsigned max_length,
                             std::vector<std::pair<unsigned, uint64_t>> counts) {
  LengthHistogram h;
  h.count.assign(max_length, 0);
  for (auto [length, n] : counts) h.count[length - 1] = n;
  return h;
}

using Strategies = std::vector<std::pair<std::vector<unsigned>, uint64_t>>;
Strategies strategies_of(const Packing& p) {
  Strategies s;
  for (const PackStrategy& x : p.strategies) s.emplace_back(x.lengths, x.rows);
  return s;
}

// Rows of 8, at most 3 a row; one 8, two 6s, three 2s, one 1. By hand: the 8 fills a row; the 6s
// open a group of two packs with 2 left; two of the 2s fill it ([6 2] x 2); the third 2 finds no
// pack and opens [2] with 6 left, which the 1 joins ([2 1]).
TEST(BertPacking, SpfhpMatchesAPackingWorkedByHand) {
  const Packing p = pack_spfhp(histogram_of(8, {{8, 1}, {6, 2}, {2, 3}, {1, 1}}), 3);
  EXPECT_EQ(strategies_of(p), (Strategies{{{8}, 1}, {{6, 2}, 2}, {{2, 1}, 1}}));
  EXPECT_EQ(p.rows, 4u);
  EXPECT_EQ(p.sequences, 7u);
  EXPECT_EQ(p.tokens, 27u);
  EXPECT_DOUBLE_EQ(p.efficiency(), 27.0 / 32.0);
  EXPECT_DOUBLE_EQ(p.speedup(), 7.0 / 4.0);
}

// Rows of 10: three 6s make a group of three packs with 4 left. The one 4 splits it: [6 4] once
// (full, closed) and [6] twice, which the two 3s join ([6 3] x 2, 1 left each).
TEST(BertPacking, SpfhpSplitsAGroupWhenFewerSequencesArrive) {
  const Packing p = pack_spfhp(histogram_of(10, {{6, 3}, {4, 1}, {3, 2}}), 3);
  EXPECT_EQ(strategies_of(p), (Strategies{{{6, 4}, 1}, {{6, 3}, 2}}));
  EXPECT_EQ(p.rows, 3u);
  EXPECT_DOUBLE_EQ(p.efficiency(), 28.0 / 30.0);
}

// The shortest pack first: with packs of 7 ([7], 3 left) and 5 ([5], 5 left), a 3 goes into the
// 5's pack, the one with more room, not the tighter fit.
TEST(BertPacking, SpfhpFillsTheShortestPackFirst) {
  const Packing p = pack_spfhp(histogram_of(10, {{7, 1}, {5, 1}, {3, 1}}), 3);
  EXPECT_EQ(strategies_of(p), (Strategies{{{5, 3}, 1}, {{7}, 1}}));
}

// The limit on sequences a row closes a pack that still has room: [4 3] closes at two, so the 2
// opens a row of its own; with three allowed, it joins [4 3].
TEST(BertPacking, SpfhpClosesAPackAtTheSequenceLimit) {
  const LengthHistogram h = histogram_of(10, {{4, 1}, {3, 1}, {2, 1}});
  EXPECT_EQ(strategies_of(pack_spfhp(h, 2)), (Strategies{{{4, 3}, 1}, {{2}, 1}}));
  EXPECT_EQ(strategies_of(pack_spfhp(h, 3)), (Strategies{{{4, 3, 2}, 1}}));
  EXPECT_EQ(strategies_of(pack_spfhp(h, 1)), (Strategies{{{4}, 1}, {{3}, 1}, {{2}, 1}}));
  EXPECT_THROW(pack_spfhp(h, 0), std::invalid_argument);
}

// Sequences of one length never share a row among themselves: a length's sequences that find
// no open pack each open their own (the published algorithm's behaviour).
TEST(BertPacking, SpfhpOpensOwnPacksForALengthThatFindsNone) {
  const Packing p = pack_spfhp(histogram_of(8, {{2, 4}}), 3);
  EXPECT_EQ(strategies_of(p), (Strategies{{{2}, 4}}));
}

// The published Wikipedia histogram: every sequence placed once, no row over 512 tokens or 3
// sequences, and packing within the theoretical limit (padded over real tokens, 2.0013).
TEST(BertPacking, WikipediaHistogramPacksEverySequenceWithinTheLimits) {
  const LengthHistogram h = read_histogram(IPU_BERT_DATA_DIR "/wikipedia_512.csv");
  ASSERT_EQ(h.sequences(), 16279552u);
  EXPECT_NEAR(h.padding_ratio(), 2.0013, 1e-4);
  const Packing p = pack_spfhp(h, 3);
  std::vector<uint64_t> placed(512, 0);
  for (const PackStrategy& s : p.strategies) {
    EXPECT_LE(s.tokens(), 512u);
    EXPECT_LE(s.lengths.size(), 3u);
    for (unsigned l : s.lengths) placed[l - 1] += s.rows;
  }
  EXPECT_EQ(placed, h.count);
  EXPECT_EQ(p.tokens, h.tokens());
  EXPECT_LE(p.speedup(), h.padding_ratio());
  // A row of the longest length holds nothing else, so packing can do no better than that.
  EXPECT_GE(p.rows, h.count[511]);
}

TEST(BertPacking, ScalingMapsLengthsToTheirShareOfTheRow) {
  // Rows of 8 to rows of 4: lengths 1 and 2 to 1, 3 and 4 to 2, ..., 8 to 4.
  const LengthHistogram h = scale_histogram(histogram_of(8, {{1, 1}, {2, 2}, {3, 3}, {8, 4}}), 4);
  EXPECT_EQ(h.count, (std::vector<uint64_t>{3, 3, 0, 4}));
  EXPECT_THROW(scale_histogram(h, 0), std::invalid_argument);
}

void expect_refused(const std::string& text, const std::string& what) {
  try {
    parse_histogram(text, "h.csv");
    ADD_FAILURE() << "accepted: " << text;
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

TEST(BertPacking, BadHistogramsAreRefusedNamingTheLine) {
  EXPECT_EQ(parse_histogram("length,count\r\n1,5\r\n2,0\r\n", "h.csv").count,
            (std::vector<uint64_t>{5, 0}));
  expect_refused("", "h.csv: empty");
  expect_refused("len,count\n1,2\n", "h.csv line 1: 'len,count' is not the header");
  expect_refused("length,count\n", "h.csv: no lengths after the header");
  expect_refused("length,count\n1,2\n3,4\n", "h.csv line 3: length 3 where length 2 was due");
  expect_refused("length,count\n1,-2\n", "h.csv line 2: '1,-2' is not 'length,count'");
  expect_refused("length,count\n1,2,3\n", "h.csv line 2");
  expect_refused("length,count\n1 ,2\n", "h.csv line 2");
  expect_refused("length,count\n1,99999999999999999999\n", "h.csv line 2");
  expect_refused("length,count\n1,18446744073709551615\n2,1\n", "h.csv: the counts overflow");
  expect_refused("length,count\n1,0\n2,9223372036854775808\n", "h.csv: the token count overflows");
  EXPECT_THROW(read_histogram("/nonexistent/h.csv"), std::invalid_argument);
  EXPECT_THROW(read_histogram("/dev/zero"), std::invalid_argument);
}

Rows rows_of(const std::vector<Sequence>& sequences, unsigned seq, unsigned per_row) {
  RowOptions o;
  o.seq = seq;
  o.max_per_row = per_row;
  o.vocab = 64;
  return make_rows(sequences, o);
}

TEST(BertData, SequencesFollowTheHistogramAndBertsLayout) {
  const LengthHistogram h = histogram_of(16, {{2, 1}, {9, 1}, {16, 2}});
  const auto sequences = synthetic_sequences(h, 400, 64, 7);
  std::vector<uint64_t> seen(16, 0);
  for (const Sequence& s : sequences) {
    ++seen[s.tokens.size() - 1];
    ASSERT_EQ(s.segments.size(), s.tokens.size());
    EXPECT_EQ(s.tokens.front(), kCls);
    if (s.tokens.size() >= 5) {
      // [CLS] A [SEP] B [SEP]: two separators, the last at the end, segment 1 after the first.
      EXPECT_EQ(s.tokens.back(), kSep);
      EXPECT_EQ(std::count(s.tokens.begin(), s.tokens.end(), kSep), 2);
      const size_t first_sep = std::find(s.tokens.begin(), s.tokens.end(), kSep) - s.tokens.begin();
      for (size_t i = 0; i < s.tokens.size(); ++i) EXPECT_EQ(s.segments[i], i > first_sep ? 1 : 0);
    }
    for (int32_t t : s.tokens) EXPECT_TRUE(t == kCls || t == kSep || (t >= kFirstWord && t < 64));
  }
  // Only the histogram's lengths, in about its proportions (1 : 1 : 2 of 400).
  EXPECT_EQ(seen[0] + seen[2] + seen[14], 0u);
  EXPECT_NEAR(static_cast<double>(seen[15]) / 400, 0.5, 0.1);
  EXPECT_NEAR(static_cast<double>(seen[1]) / 400, 0.25, 0.1);
  // The same seed, the same sequences; another, others.
  const auto again = synthetic_sequences(h, 400, 64, 7);
  const auto other = synthetic_sequences(h, 400, 64, 8);
  EXPECT_TRUE(std::equal(sequences.begin(), sequences.end(), again.begin(), [](auto& a, auto& b) {
    return a.tokens == b.tokens && a.is_next == b.is_next;
  }));
  EXPECT_FALSE(std::equal(sequences.begin(), sequences.end(), other.begin(),
                          [](auto& a, auto& b) { return a.tokens == b.tokens; }));
}

TEST(BertData, PackedRowsKeepEachSequenceApart) {
  const LengthHistogram h =
      scale_histogram(read_histogram(IPU_BERT_DATA_DIR "/wikipedia_512.csv"), 64);
  const auto sequences = synthetic_sequences(h, 300, 64, 11);
  const Rows packed = rows_of(sequences, 64, 3);
  const Rows padded = rows_of(sequences, 64, 1);
  EXPECT_EQ(padded.count, 300u);
  EXPECT_EQ(packed.sequences, 300u);
  EXPECT_EQ(packed.real_tokens, padded.real_tokens);
  EXPECT_LT(packed.count, padded.count);
  EXPECT_GT(packed.efficiency(), padded.efficiency());

  // Every sequence's tokens are found again in the rows, the masked words restored.
  std::multiset<std::vector<int32_t>> in_rows, given;
  for (const Sequence& s : sequences) given.insert(s.tokens);
  for (size_t r = 0; r < packed.count; ++r) {
    const int32_t* ids = &packed.sequence_ids[r * 64];
    const int32_t* pos = &packed.positions[r * 64];
    std::vector<int32_t> tokens(&packed.tokens[r * 64], &packed.tokens[r * 64] + 64);
    for (unsigned p = 0; p < packed.max_predictions; ++p)
      if (packed.mlm_weights[r * packed.max_predictions + p] == 1.0f)
        tokens[packed.mlm_positions[r * packed.max_predictions + p]] =
            packed.mlm_labels[r * packed.max_predictions + p];
    // Sequences lie end to end from the row's start, each starting at position 0 with [CLS]
    // where its next-sentence slot points.
    int32_t current = 0, in_row = 0;
    for (unsigned i = 0; i < 64; ++i) {
      in_row = std::max(in_row, ids[i]);
      if (ids[i] != current) {
        ASSERT_EQ(ids[i], ids[i] == 0 ? 0 : current + 1) << "row " << r << " token " << i;
        if (ids[i] != 0) {
          EXPECT_EQ(pos[i], 0);
          EXPECT_EQ(tokens[i], kCls);
          EXPECT_EQ(packed.nsp_positions[r * 3 + ids[i] - 1], static_cast<int32_t>(i));
          EXPECT_EQ(packed.nsp_weights[r * 3 + ids[i] - 1], 1.0f);
        }
        current = ids[i];
      } else if (ids[i] != 0) {
        EXPECT_EQ(pos[i], pos[i - 1] + 1);
      }
      if (ids[i] == 0) {
        EXPECT_EQ(tokens[i], kPad);
      }
    }
    for (int32_t id = 1; id <= in_row; ++id) {
      std::vector<int32_t> sequence;
      for (unsigned i = 0; i < 64; ++i)
        if (ids[i] == id) sequence.push_back(tokens[i]);
      in_rows.insert(sequence);
    }
    for (int32_t slot = in_row; slot < 3; ++slot) EXPECT_EQ(packed.nsp_weights[r * 3 + slot], 0.0f);
    // The mask: 0 within a sequence, kMaskedOut across sequences.
    const std::vector<float> mask = packed.attention_mask(r);
    for (unsigned q = 0; q < 64; ++q)
      for (unsigned k = 0; k < 64; ++k)
        ASSERT_EQ(mask[q * 64 + k], ids[q] == ids[k] ? 0.0f : kMaskedOut);
  }
  EXPECT_EQ(in_rows, given);
}

TEST(BertData, MaskedWordsAreAboutFifteenPercentOfTheWords) {
  const LengthHistogram h = histogram_of(128, {{100, 1}, {128, 1}});
  const Rows rows = rows_of(synthetic_sequences(h, 200, 512, 3), 128, 1);
  size_t words = 0, masked = 0, as_mask = 0;
  for (size_t r = 0; r < rows.count; ++r) {
    for (unsigned p = 0; p < rows.max_predictions; ++p) {
      const size_t i = r * rows.max_predictions + p;
      if (rows.mlm_weights[i] == 0) continue;
      ++masked;
      EXPECT_GE(rows.mlm_labels[i], kFirstWord);
      if (rows.tokens[r * 128 + rows.mlm_positions[i]] == kMask) ++as_mask;
    }
    for (unsigned i = 0; i < 128; ++i)
      words += rows.tokens[r * 128 + i] >= kFirstWord || rows.tokens[r * 128 + i] == kMask;
  }
  EXPECT_NEAR(static_cast<double>(masked) / static_cast<double>(words), 0.15, 0.01);
  EXPECT_NEAR(static_cast<double>(as_mask) / static_cast<double>(masked), 0.8, 0.05);
}

TEST(BertData, BadRowsAreRefused) {
  const auto sequences = synthetic_sequences(histogram_of(16, {{16, 1}}), 4, 64, 1);
  try {
    rows_of(sequences, 8, 3);
    ADD_FAILURE();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "rows: sequence 0 has 16 tokens, and a row holds 1 to 8");
  }
  EXPECT_THROW(rows_of(sequences, 8, 1), std::invalid_argument);
  EXPECT_THROW(rows_of(sequences, 16, 0), std::invalid_argument);
  EXPECT_THROW(synthetic_sequences(histogram_of(16, {}), 4, 64, 1), std::invalid_argument);
  EXPECT_THROW(synthetic_sequences(histogram_of(16, {{3, 1}}), 4, 5, 1), std::invalid_argument);
}

}  // namespace
}  // namespace ipu::examples::bert
