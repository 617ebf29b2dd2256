// BERT's data pipeline on the host: synthetic pre-training sequences whose lengths follow a
// published histogram, packed into rows of `seq` tokens by SPFHP (packing.h) or padded one to a
// row, with what packed BERT needs beside the tokens: positions restarting at each sequence, the
// block-diagonal attention mask (a token sees only its own sequence), the masked-language-model
// positions and labels, and one next-sentence label per sequence.
//
// A sequence is [CLS] A [SEP] B [SEP] (shorter ones keep what fits: [CLS] A, [CLS] A [SEP]):
// segment 0 up to the first [SEP], 1 after. Its words are a learnable synthetic language: a
// sequence has a topic t, drawn with a skew (a few topics common, many rare, as words are in a
// language), and its i-th word of A is word(t + i); B continues A (is_next) or starts from
// another topic, so that both the masked words and the next-sentence labels can be learned.
// Everything is drawn from a SplitMix64 stream of the seed, so the same options give the same rows
// on any host.
#pragma once

#include <cstdint>
#include <vector>

#include "examples/bert/packing.h"
#include "sdk/ops/elementwise.h"

namespace ipu::examples::bert {

// Token ids below kFirstWord are BERT's special tokens.
constexpr int32_t kPad = 0, kCls = 1, kSep = 2, kMask = 3, kFirstWord = 4;
// The attention mask's value for a key a query may not see (added before the softmax), as the
// tiles' packed softmax adds it.
constexpr float kMaskedOut = sdk::ops::kMaskedOut;

struct Sequence {
  std::vector<int32_t> tokens;    // its length's worth, starting with kCls
  std::vector<int32_t> segments;  // 0 or 1 a token
  bool is_next = false;           // the next-sentence label
};

// `count` sequences with lengths drawn from `histogram` (lengths up to its max_length()), words
// from a vocabulary of `vocab` ids (> kFirstWord + 1).
std::vector<Sequence> synthetic_sequences(const LengthHistogram& histogram, uint64_t count,
                                          unsigned vocab, uint64_t seed);

struct RowOptions {
  unsigned seq = 128;        // tokens a row
  unsigned max_per_row = 3;  // sequences a row (1: padding, no packing)
  double mask_rate = 0.15;   // the share of a sequence's words the MLM predicts
  unsigned vocab = 1024;     // for the random replacements of masked words
  uint64_t seed = 2026;
};

struct Rows {
  unsigned seq = 0, max_per_row = 0, max_predictions = 0;
  size_t count = 0;  // rows
  // [count x seq]: the input ids (masked words replaced), positions within each sequence,
  // segments, and which sequence of the row a token belongs to (1, 2, ...; 0: padding).
  std::vector<int32_t> tokens, positions, segments, sequence_ids;
  // [count x max_predictions]: the masked words' positions in the row and their true ids; weight
  // 1 for a prediction, 0 for an unused slot (position 0, label kPad).
  std::vector<int32_t> mlm_positions, mlm_labels;
  std::vector<float> mlm_weights;
  // [count x max_per_row]: each sequence's [CLS] position and next-sentence label (1: B follows
  // A), weight 0 for an unused slot.
  std::vector<int32_t> nsp_positions, nsp_labels;
  std::vector<float> nsp_weights;
  uint64_t sequences = 0, real_tokens = 0;

  double efficiency() const;  // real tokens over row tokens
  // Row r's additive attention mask, [seq x seq]: 0 where query and key are in the same
  // sequence (padding sees padding), kMaskedOut elsewhere.
  std::vector<float> attention_mask(size_t row) const;
};

// The sequences (each no longer than options.seq) in rows: with max_per_row > 1 SPFHP of their
// lengths' histogram decides which share a row, and the rows come in the packing's order;
// with 1, a row each, in order. Masked words: of each sequence's words, round(mask_rate x
// words) (at least one when it has words), chosen at random, become [MASK] (80 %), a random word
// (10 %) or stay (10 %), as BERT does. Throws std::invalid_argument for a sequence longer than a
// row or an empty one.
Rows make_rows(const std::vector<Sequence>& sequences, const RowOptions& options);

}  // namespace ipu::examples::bert
