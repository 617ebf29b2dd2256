// BERT's model on the tiles and its host run (examples/bert/model.h). The two functions below
// are written side by side, step for step: each step of build_bert has its twin, under the same
// label, in bert_reference.
#include "examples/bert/model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace ipu::examples::bert {

using sdk::DType;
using sdk::Graph;
using sdk::GraphError;
using sdk::Program;
using sdk::Tensor;
using sdk::ops::BinaryOp;
using sdk::ops::StepList;
using sdk::ops::UnaryOp;
namespace ops = sdk::ops;
namespace ref = sdk::ops::reference;

size_t BertShape::predictions() const {
  const size_t per_row =
      max_predictions
          ? max_predictions
          : static_cast<size_t>(std::ceil(0.15 * static_cast<double>(seq))) + max_per_row;
  return rows * per_row;
}

uint64_t BertShape::f16_parameters() const {
  const uint64_t H = hidden, F = ffn;
  return layers * (4 * H * H + 2 * H * F) + 2 * H * H + 2 * H  // layers; MLM dense, pooler, NSP
         + H * vocab;                                          // the word embedding
}

uint64_t BertShape::parameters() const {
  const uint64_t H = hidden, F = ffn;
  return f16_parameters() + H * (seq + 2) + 2 * H  // the other embeddings and their norm
         + layers * (2 * H + F + 4 * H)            // the layers' biases and norms
         + 3 * H + vocab + H + 2;                  // the heads' biases and norm
}

sdk::ops::EncoderShape BertShape::encoder() const {
  sdk::ops::EncoderShape e;
  e.hidden = hidden, e.heads = heads, e.ffn = ffn, e.seq = seq, e.sequences = rows;
  return e;
}

BertShape BertShape::large() {
  BertShape s;
  s.hidden = 1024, s.layers = 24, s.heads = 16, s.ffn = 4096, s.seq = 512, s.vocab = 30522;
  s.rows = 2, s.max_per_row = 3;
  return s;
}

BertShape BertShape::tiny() { return BertShape{}; }

namespace {

ops::EncoderOptions layer_options(const BertOptions& o, size_t l, unsigned chip,
                                  unsigned first_tile = 0, unsigned tiles = 0) {
  ops::EncoderOptions e;
  e.epsilon = o.epsilon;
  e.available_memory_proportion = o.memory_proportion(chip);
  e.name = fmt::format("{}.layer{}", o.name, l);
  e.packed = true;
  e.spread_weights = true;  // a chip of 7 BERT-Large layers holds 7 layers' weights and sums
  e.first_tile = first_tile;
  e.tiles = tiles;
  return e;
}

// The layers on each chip: the options' split, checked against the model and the graph.
std::vector<size_t> stage_layers(const Graph& g, const BertShape& s, const BertOptions& o) {
  if (o.layers_per_chip.empty()) return {s.layers};
  size_t sum = 0;
  bool empty_stage = false;
  for (size_t n : o.layers_per_chip) sum += n, empty_stage |= n == 0;
  const auto split = [&] {
    std::string text;
    for (size_t n : o.layers_per_chip) text += fmt::format("{}{}", text.empty() ? "" : ",", n);
    return text;
  };
  if (sum != s.layers || empty_stage)
    throw GraphError(
        fmt::format("layers per chip {} for a model of {} layers: every chip takes "
                    "at least one layer and the layers add up to the model's",
                    split(), s.layers));
  if (o.layers_per_chip.size() > 1 && o.layers_per_chip.size() != g.target().replica_chips())
    throw GraphError(
        fmt::format("{}: layers per chip {} name {} chips; a replica of the target has {}", o.name,
                    split(), o.layers_per_chip.size(), g.target().replica_chips()));
  return o.layers_per_chip;
}

void check_shape(const BertShape& s, const std::string& name) {
  if (s.hidden == 0 || s.layers == 0 || s.heads == 0 || s.ffn == 0 || s.seq == 0 || s.rows == 0 ||
      s.max_per_row == 0 || s.vocab <= static_cast<size_t>(kFirstWord) + 1 || s.vocab % 2 != 0 ||
      s.hidden % s.heads != 0)
    throw GraphError(fmt::format(
        "{}: hidden {}, layers {}, heads {}, ffn {}, seq {}, vocabulary {}, rows {}, {} a row: "
        "every size must be positive, the heads must divide the hidden size and the vocabulary "
        "must have words beyond the {} special tokens and be even (the f16 word embedding's "
        "rows are whole words, as the exchange moves them)",
        name, s.hidden, s.layers, s.heads, s.ffn, s.seq, s.vocab, s.rows, s.max_per_row,
        kFirstWord));
}

}  // namespace

BertModel build_bert(Graph& g, const BertShape& s, const BertOptions& o) {
  check_shape(s, o.name);
  const size_t H = s.hidden, T = s.tokens(), P = s.predictions(), K = s.sentences(), V = s.vocab;
  const std::vector<size_t> per_chip = stage_layers(g, s, o);
  const auto S = static_cast<unsigned>(per_chip.size());
  if (o.available_memory_proportion.size() != 1 && o.available_memory_proportion.size() != S)
    throw GraphError(fmt::format(
        "{}: {} shares of a tile's memory for {} chip{} a replica: give one, or one a chip", o.name,
        o.available_memory_proportion.size(), S, S == 1 ? "" : "s"));
  const unsigned tiles = g.tiles() / S;  // a stage's: the embeddings and heads take chip 0's
  BertModel m;
  // A variable laid out on `chip` as `like` is on its own chip: the copies between stages go
  // from each tile to its twin on the next chip.
  const auto on_chip = [&](Tensor like, unsigned chip, const std::string& what) {
    const sdk::TensorInfo li = g.tensor(like);
    const Tensor t = g.add_variable(li.type, li.shape, o.name + "." + what);
    std::vector<sdk::Interval> mapping = li.mapping;
    for (sdk::Interval& i : mapping) i.tile = chip * tiles + i.tile % tiles;
    g.set_tile_mapping(t, mapping);
    return t;
  };
  unsigned next_tile = 0;
  // Vectors whole on one tile each (as add_encoder_weights places them); the rest spread.
  const auto add = [&](DType type, std::vector<size_t> shape, const std::string& what) {
    const Tensor t = g.add_variable(type, shape, o.name + "." + what);
    if (shape.size() == 1 && shape[0] <= 4096)
      g.set_tile_mapping(t, next_tile++ % tiles);
    else
      g.map_evenly(t, 0, static_cast<unsigned>(std::min<size_t>(tiles, shape[0])),
                   shape.size() == 1 ? 2 : shape.back());
    return t;
  };
  BertInputs& in = m.inputs;
  in.tokens = add(DType::kU32, {T}, "tokens");
  in.positions = add(DType::kU32, {T}, "positions");
  in.segments = add(DType::kU32, {T}, "segments");
  in.sequence_ids = add(DType::kF32, {s.rows, s.seq}, "sequence_ids");
  in.mlm_positions = add(DType::kU32, {P}, "mlm_positions");
  in.mlm_labels = add(DType::kU32, {P}, "mlm_labels");
  in.nsp_positions = add(DType::kU32, {K}, "nsp_positions");
  in.nsp_labels = add(DType::kU32, {K}, "nsp_labels");

  BertWeights& w = m.weights;
  // The word embedding in f16, as Graphcore's BERT keeps it (its f32 master with LAMB's state):
  // half the memory of the largest tensor of the first chip, and the tied decoder reads it as
  // it is.
  w.word_t = g.add_variable(DType::kF16, {H, V}, o.name + ".word_t");
  // A feature row a tile, unless the rows are large and fewer than the tiles: then spread over
  // every tile of the first chip in word pairs. With its f32 gradient sum (laid out as the
  // weight) it is then the largest thing on the chip, and BERT-Large has 1,024 features of
  // 61 KB for 1,472 tiles: 183 KB on each of 1,024 tiles becomes 127 KB on each of 1,472. The
  // lookup then gathers the table into whole rows, scratch, at each use (a 42 KB relayout a
  // tile), and its gradient reaches the sum so: the tiny model's step took 7 % longer so, for
  // a kilobyte a tile.
  constexpr size_t kSpreadRowBytes = 16384;
  const bool word_spread = 2 * V >= kSpreadRowBytes && H < tiles;
  if (word_spread)
    g.map_evenly(w.word_t, 0, tiles, 2);
  else
    g.map_evenly(w.word_t, 0, static_cast<unsigned>(std::min<size_t>(tiles, H)), V);
  w.position_t = add(DType::kF32, {H, s.seq}, "position_t");
  w.segment_t = add(DType::kF32, {H, 2}, "segment_t");
  w.embedding_gamma = add(DType::kF32, {H}, "embedding_gamma");
  w.embedding_beta = add(DType::kF32, {H}, "embedding_beta");
  std::vector<unsigned> chip_of_layer;
  for (unsigned c = 0; c < S; ++c) chip_of_layer.insert(chip_of_layer.end(), per_chip[c], c);
  const auto placed = [&](size_t l) {
    ops::EncoderOptions e =
        layer_options(o, l, chip_of_layer[l], chip_of_layer[l] * tiles, S > 1 ? tiles : 0);
    // The chip's layers' vectors one after another's (its first layer's from tile 0).
    const size_t first = static_cast<size_t>(
        std::find(chip_of_layer.begin(), chip_of_layer.end(), chip_of_layer[l]) -
        chip_of_layer.begin());
    e.vector_tile = static_cast<unsigned>((l - first) * ops::encoder_vector_pieces(s.encoder()));
    return e;
  };
  for (size_t l = 0; l < s.layers; ++l)
    w.layers.push_back(ops::add_encoder_weights(g, s.encoder(), placed(l)));
  ops::MatmulOptions ta;
  ta.transpose_a = true;
  ta.available_memory_proportion = o.heads_proportion();
  ta.tiles = S > 1 ? tiles : 0;
  w.mlm_dense = ops::create_matmul_input(g, {P, H, H}, false, o.name + ".mlm_dense", ta);
  w.mlm_bias = add(DType::kF32, {H}, "mlm_bias");
  w.mlm_gamma = add(DType::kF32, {H}, "mlm_gamma");
  w.mlm_beta = add(DType::kF32, {H}, "mlm_beta");
  w.mlm_decoder_bias = add(DType::kF32, {V}, "mlm_decoder_bias");
  w.pooler = ops::create_matmul_input(g, {K, H, H}, false, o.name + ".pooler", ta);
  w.pooler_bias = add(DType::kF32, {H}, "pooler_bias");
  ops::MatmulOptions plain;
  plain.available_memory_proportion = o.heads_proportion();
  plain.tiles = ta.tiles;
  w.nsp = ops::create_matmul_input(g, {K, H, 2}, false, o.name + ".nsp", plain);
  w.nsp_bias = add(DType::kF32, {2}, "nsp_bias");

  // The forward pass: embeddings, the layers, the heads and their losses.
  StepList st(g, m.steps, o.name, o.heads_proportion(), 0, ta.tiles);
  const auto lookup = [&](const char* label, Tensor table, Tensor indices) {
    return st.op(label, [&](Program& p, const std::string& n) {
      return ops::embedding_lookup(g, p, table, indices, n);
    });
  };
  const auto binary = [&](StepList& list, const std::string& label, BinaryOp op, Tensor a,
                          Tensor b) {
    return list.op(
        label, [&](Program& p, const std::string& n) { return ops::binary(g, p, op, a, b, n); });
  };
  const auto unary = [&](StepList& list, const std::string& label, UnaryOp op, Tensor a) {
    return list.op(label,
                   [&](Program& p, const std::string& n) { return ops::unary(g, p, op, a, n); });
  };
  const auto half = [&](StepList& list, const std::string& label, Tensor a) {
    return list.op(label, [&](Program& p, const std::string& n) {
      return ops::cast(g, p, a, DType::kF16, n);
    });
  };
  const auto transpose = [&](StepList& list, const std::string& label, Tensor a) {
    return list.op(label,
                   [&](Program& p, const std::string& n) { return ops::transpose(g, p, a, n); });
  };
  const Tensor words = lookup("embed_words", w.word_t, in.tokens);
  const Tensor places = lookup("embed_positions", w.position_t, in.positions);
  const Tensor segments = lookup("embed_segments", w.segment_t, in.segments);
  const Tensor embedded =
      binary(st, "embed_sum", BinaryOp::kAdd,
             binary(st, "embed_sum_places", BinaryOp::kAdd, words, places), segments);
  const Tensor embedded_rows = transpose(st, "embed_rows", embedded);  // [T x H]
  const ops::LayerNorm embed_norm =
      st.add("embed_norm", 0.0, [&](Program& p, const std::string& n) {
        return ops::layer_norm(g, p, embedded_rows, w.embedding_gamma, w.embedding_beta, o.epsilon,
                               n);
      });
  m.embeddings = {0, m.steps.size()};
  std::vector<ops::EncoderForward> forward;
  Tensor x = embed_norm.y;
  m.stages.resize(S);
  size_t layer = 0;
  for (unsigned c = 0; c < S; ++c) {
    BertStage& stage = m.stages[c];
    stage.chip = c;
    stage.first_layer = layer;
    stage.layers = per_chip[c];
    if (c > 0) {
      x = on_chip(x, c, fmt::format("stage{}.input", c));
      stage.mask = on_chip(in.sequence_ids, c, fmt::format("stage{}.sequence_ids", c));
    } else {
      stage.mask = in.sequence_ids;
      stage.forward.begin = 0;  // the embeddings are stage 0's
    }
    if (c > 0) stage.forward.begin = m.steps.size();
    stage.input = x;
    for (; layer < stage.first_layer + stage.layers; ++layer) {
      forward.push_back(ops::encoder_forward(g, m.steps, s.encoder(), w.layers[layer], x,
                                             stage.mask, placed(layer)));
      x = forward.back().y;
    }
    stage.output = x;
    stage.forward.end = m.steps.size();
  }
  m.heads_input = S > 1 ? on_chip(x, 0, "heads.input") : x;
  m.heads.begin = m.steps.size();
  const Tensor output_t = transpose(st, "output_t", m.heads_input);  // [H x T]
  // The masked-language-model head, its decoder the word embedding.
  const Tensor gathered16 =
      half(st, "mlm_gather_f16", lookup("mlm_gather", output_t, in.mlm_positions));
  const Tensor mlm_hidden =
      binary(st, "mlm_add_bias", BinaryOp::kAdd,
             st.matmul("mlm_dense", gathered16, w.mlm_dense, true, false, DType::kF32), w.mlm_bias);
  const Tensor mlm_act = unary(st, "mlm_gelu", UnaryOp::kGelu, mlm_hidden);
  const ops::LayerNorm mlm_norm = st.add("mlm_norm", 0.0, [&](Program& p, const std::string& n) {
    return ops::layer_norm(g, p, mlm_act, w.mlm_gamma, w.mlm_beta, o.epsilon, n);
  });
  const Tensor mlm_norm16 = half(st, "mlm_norm_f16", mlm_norm.y);
  const Tensor word16 = w.word_t;
  const Tensor logits = binary(
      st, "mlm_add_decoder_bias", BinaryOp::kAdd,
      st.matmul("mlm_decoder", mlm_norm16, word16, false, false, DType::kF32), w.mlm_decoder_bias);
  const ops::CrossEntropy mlm =
      st.cross_entropy("mlm_loss", logits, in.mlm_labels, 1.0f / static_cast<float>(P));
  // The loss gradient, [P x V] f32 (a row of BERT-Large's 30,522 words a tile), is read only by
  // the heads' backward pass that follows.
  g.set_scratch(mlm.dlogits);
  // The next-sentence head on each sequence's [CLS].
  const Tensor cls16 = half(st, "nsp_gather_f16", lookup("nsp_gather", output_t, in.nsp_positions));
  const Tensor pooled =
      unary(st, "pooler_tanh", UnaryOp::kTanh,
            binary(st, "pooler_add_bias", BinaryOp::kAdd,
                   st.matmul("pooler", cls16, w.pooler, true, false, DType::kF32), w.pooler_bias));
  const Tensor pooled16 = half(st, "pooler_f16", pooled);
  const Tensor nsp_logits =
      binary(st, "nsp_add_bias", BinaryOp::kAdd,
             st.matmul("nsp", pooled16, w.nsp, false, false, DType::kF32), w.nsp_bias);
  const ops::CrossEntropy nsp =
      st.cross_entropy("nsp_loss", nsp_logits, in.nsp_labels, 1.0f / static_cast<float>(K));
  m.mlm_loss = mlm.loss;
  m.nsp_loss = nsp.loss;
  m.forward_steps = m.steps.size();

  // The backward pass, from the heads to the embeddings.
  StepList bt(g, m.steps, o.name + ".grad", o.heads_proportion(), 0, ta.tiles);
  BertGrads& d = m.grads;
  d.nsp_bias = bt.column_sums("nsp_bias", nsp.dlogits);
  const Tensor dnsp16 = half(bt, "nsp_f16", nsp.dlogits);
  d.nsp = bt.matmul("nsp_weights", pooled16, dnsp16, true, false, DType::kF32, true);
  const Tensor dpooled =
      binary(bt, "pooler_tanh", BinaryOp::kMulTanhGrad,
             bt.matmul("nsp_input", dnsp16, w.nsp, false, true, DType::kF32), pooled);
  d.pooler_bias = bt.column_sums("pooler_bias", dpooled);
  const Tensor dpooled16 = half(bt, "pooler_f16", dpooled);
  d.pooler = bt.matmul("pooler_weights", cls16, dpooled16, false, false, DType::kF32, true);
  const Tensor dcls_t = bt.matmul("pooler_input", w.pooler, dpooled16, false, true, DType::kF32);
  d.mlm_decoder_bias = bt.column_sums("mlm_decoder_bias", mlm.dlogits);
  const Tensor dlogits16 = half(bt, "mlm_decoder_f16", mlm.dlogits);
  const Tensor dmlm_norm =
      bt.matmul("mlm_decoder_input", dlogits16, word16, false, true, DType::kF32);
  // The tied decoder's part of the word embedding's gradient, [H x V] f32 (BERT-Large's largest
  // tensor of the heads): after the input's product, so that the two products' buffers are
  // never live together, and left in the product's blocks, spread over every tile, for its sum.
  d.word_t_tied =
      bt.matmul("mlm_decoder_weights", mlm_norm16, dlogits16, true, false, DType::kF32, true, true);
  const ops::LayerNormGrad mlm_norm_grad =
      bt.add("mlm_norm", 0.0, [&](Program& p, const std::string& n) {
        return ops::layer_norm_grad(g, p, mlm_act, dmlm_norm, w.mlm_gamma, mlm_norm, n);
      });
  bt.partial_rows(mlm_norm_grad.partial_rows);
  d.mlm_gamma = mlm_norm_grad.dgamma, d.mlm_beta = mlm_norm_grad.dbeta;
  const Tensor dmlm_hidden =
      binary(bt, "mlm_gelu", BinaryOp::kMulGeluGrad, mlm_norm_grad.dx, mlm_hidden);
  d.mlm_bias = bt.column_sums("mlm_bias", dmlm_hidden);
  const Tensor dmlm16 = half(bt, "mlm_f16", dmlm_hidden);
  d.mlm_dense = bt.matmul("mlm_dense_weights", gathered16, dmlm16, false, false, DType::kF32, true);
  const Tensor dgathered_t =
      bt.matmul("mlm_dense_input", w.mlm_dense, dmlm16, false, true, DType::kF32);
  // The heads' gradients back to their tokens' rows.
  const auto scatter = [&](const char* label, Tensor dout_t, Tensor indices) {
    return bt.op(label, [&](Program& p, const std::string& n) {
      return ops::embedding_grad(g, p, dout_t, indices, T, n);
    });
  };
  const Tensor doutput_t =
      binary(bt, "heads_sum", BinaryOp::kAdd, scatter("mlm_scatter", dgathered_t, in.mlm_positions),
             scatter("nsp_scatter", dcls_t, in.nsp_positions));
  Tensor dy = transpose(bt, "output_rows", doutput_t);
  m.heads_dinput = dy;
  m.heads.end = m.steps.size();
  d.layers.resize(s.layers);
  m.layer_grads_ready.resize(s.layers);
  for (unsigned c = S; c-- > 0;) {
    BertStage& stage = m.stages[c];
    if (S > 1) dy = on_chip(dy, c, fmt::format("stage{}.doutput", c));
    stage.doutput = dy;
    stage.backward.begin = m.steps.size();
    for (size_t l = stage.first_layer + stage.layers; l-- > stage.first_layer;) {
      d.layers[l] =
          ops::encoder_backward(g, m.steps, s.encoder(), w.layers[l], forward[l], dy, placed(l));
      m.layer_grads_ready[l] = m.steps.size();
      dy = d.layers[l].dx;
    }
    stage.dinput = dy;
    if (c > 0) stage.backward.end = m.steps.size();
  }
  m.embeddings_backward.begin = m.steps.size();
  const ops::LayerNormGrad embed_grad =
      bt.add("embed_norm", 0.0, [&](Program& p, const std::string& n) {
        return ops::layer_norm_grad(g, p, embedded_rows, dy, w.embedding_gamma, embed_norm, n);
      });
  bt.partial_rows(embed_grad.partial_rows);
  d.embedding_gamma = embed_grad.dgamma, d.embedding_beta = embed_grad.dbeta;
  const Tensor dembedded_t = transpose(bt, "embed_t", embed_grad.dx);  // [H x T]
  const auto table_grad = [&](const char* label, Tensor indices, size_t entries,
                              std::optional<Tensor> like = std::nullopt) {
    return bt.add(label, 0.0, [&](Program& p, const std::string& n) {
      return ops::embedding_grad(g, p, dembedded_t, indices, entries, n, like);
    });
  };
  // A spread word table's gradient is laid out as the table (and its sum) is.
  d.word_t = table_grad("embed_words", in.tokens, V,
                        word_spread ? std::optional<Tensor>(w.word_t) : std::nullopt);
  d.position_t = table_grad("embed_positions", in.positions, s.seq);
  d.segment_t = table_grad("embed_segments", in.segments, 2);
  m.stages[0].backward.end = m.embeddings_backward.end = m.steps.size();
  return m;
}

namespace {

std::vector<float> transposed(const std::vector<float>& x, size_t rows, size_t columns) {
  std::vector<float> y(x.size());
  for (size_t r = 0; r < rows; ++r)
    for (size_t c = 0; c < columns; ++c) y[c * rows + r] = x[r * columns + c];
  return y;
}

}  // namespace

BertValues bert_reference(const BertModel& model, const BertShape& s, const BertInputValues& in,
                          const BertWeightValues& w, const BertOptions& o) {
  const size_t H = s.hidden, T = s.tokens(), P = s.predictions(), K = s.sentences(), V = s.vocab;
  const ref::RecordedSteps st(model.steps, o.name), bt(model.steps, o.name + ".grad");
  using ref::binary;
  using ref::cast_to_f16;
  using ref::embedding_grad;
  using ref::embedding_lookup;
  using ref::unary;
  BertValues out;
  const auto options_of = [&](size_t l) {
    unsigned chip = 0;
    for (const BertStage& stage : model.stages)
      if (l >= stage.first_layer && l < stage.first_layer + stage.layers) chip = stage.chip;
    return layer_options(o, l, chip);
  };
  const std::vector<float> embedded =
      binary(BinaryOp::kAdd,
             binary(BinaryOp::kAdd, embedding_lookup(ref::widen_f16(w.word_t), V, in.tokens),
                    embedding_lookup(w.position_t, s.seq, in.positions)),
             embedding_lookup(w.segment_t, 2, in.segments));
  const std::vector<float> embedded_rows = transposed(embedded, H, T);
  ref::LayerNormValues embed_norm;
  embed_norm.y = ref::layer_norm(embedded_rows, w.embedding_gamma, w.embedding_beta, o.epsilon, H,
                                 &embed_norm.mean, &embed_norm.inv_std);
  std::vector<ref::EncoderForwardValues> forward;
  std::vector<float> x = embed_norm.y;
  for (size_t l = 0; l < s.layers; ++l) {
    forward.push_back(ref::encoder_forward(model.steps, s.encoder(), w.layers[l], x,
                                           in.sequence_ids, options_of(l)));
    x = forward.back().y;
  }
  const std::vector<float> output_t = transposed(x, T, H);
  const std::vector<uint16_t> gathered16 =
      cast_to_f16(embedding_lookup(output_t, T, in.mlm_positions));
  const std::vector<float> mlm_hidden =
      binary(BinaryOp::kAdd, st.product("mlm_dense", gathered16, w.mlm_dense), w.mlm_bias);
  const std::vector<float> mlm_act = unary(UnaryOp::kGelu, mlm_hidden);
  ref::LayerNormValues mlm_norm;
  mlm_norm.y = ref::layer_norm(mlm_act, w.mlm_gamma, w.mlm_beta, o.epsilon, H, &mlm_norm.mean,
                               &mlm_norm.inv_std);
  const std::vector<uint16_t> mlm_norm16 = cast_to_f16(mlm_norm.y);
  const std::vector<uint16_t>& word16 = w.word_t;
  const std::vector<float> logits =
      binary(BinaryOp::kAdd, st.product("mlm_decoder", mlm_norm16, word16), w.mlm_decoder_bias);
  const std::vector<float> dlogits = st.cross_entropy("mlm_loss", logits, in.mlm_labels, V,
                                                      1.0f / static_cast<float>(P), &out.mlm_loss);
  const std::vector<uint16_t> cls16 = cast_to_f16(embedding_lookup(output_t, T, in.nsp_positions));
  const std::vector<float> pooled = unary(
      UnaryOp::kTanh, binary(BinaryOp::kAdd, st.product("pooler", cls16, w.pooler), w.pooler_bias));
  const std::vector<uint16_t> pooled16 = cast_to_f16(pooled);
  const std::vector<float> nsp_logits =
      binary(BinaryOp::kAdd, st.product("nsp", pooled16, w.nsp), w.nsp_bias);
  const std::vector<float> dnsp = st.cross_entropy("nsp_loss", nsp_logits, in.nsp_labels, 2,
                                                   1.0f / static_cast<float>(K), &out.nsp_loss);

  BertGradValues& d = out.grads;
  d.nsp_bias = bt.column_sums("nsp_bias", dnsp, 2);
  const std::vector<uint16_t> dnsp16 = cast_to_f16(dnsp);
  d.nsp = bt.product("nsp_weights", pooled16, dnsp16);
  const std::vector<float> dpooled =
      binary(BinaryOp::kMulTanhGrad, bt.product("nsp_input", dnsp16, w.nsp), pooled);
  d.pooler_bias = bt.column_sums("pooler_bias", dpooled, H);
  const std::vector<uint16_t> dpooled16 = cast_to_f16(dpooled);
  d.pooler = bt.product("pooler_weights", cls16, dpooled16);
  const std::vector<float> dcls_t = bt.product("pooler_input", w.pooler, dpooled16);
  d.mlm_decoder_bias = bt.column_sums("mlm_decoder_bias", dlogits, V);
  const std::vector<uint16_t> dlogits16 = cast_to_f16(dlogits);
  d.word_t_tied = bt.product("mlm_decoder_weights", mlm_norm16, dlogits16);
  const std::vector<float> dmlm_norm = bt.product("mlm_decoder_input", dlogits16, word16);
  const std::vector<float> dmlm_act =
      ref::layer_norm_grad(mlm_act, dmlm_norm, w.mlm_gamma, mlm_norm.mean, mlm_norm.inv_std, H,
                           bt["mlm_norm"].partial_rows, &d.mlm_gamma, &d.mlm_beta);
  const std::vector<float> dmlm_hidden = binary(BinaryOp::kMulGeluGrad, dmlm_act, mlm_hidden);
  d.mlm_bias = bt.column_sums("mlm_bias", dmlm_hidden, H);
  const std::vector<uint16_t> dmlm16 = cast_to_f16(dmlm_hidden);
  d.mlm_dense = bt.product("mlm_dense_weights", gathered16, dmlm16);
  const std::vector<float> dgathered_t = bt.product("mlm_dense_input", w.mlm_dense, dmlm16);
  const std::vector<float> doutput_t =
      binary(BinaryOp::kAdd, embedding_grad(dgathered_t, in.mlm_positions, T),
             embedding_grad(dcls_t, in.nsp_positions, T));
  std::vector<float> dy = transposed(doutput_t, H, T);
  d.layers.resize(s.layers);
  for (size_t l = s.layers; l-- > 0;) {
    d.layers[l] =
        ref::encoder_backward(model.steps, s.encoder(), w.layers[l], forward[l], dy, options_of(l));
    dy = d.layers[l].dx;
  }
  const std::vector<float> dembedded_rows = ref::layer_norm_grad(
      embedded_rows, dy, w.embedding_gamma, embed_norm.mean, embed_norm.inv_std, H,
      bt["embed_norm"].partial_rows, &d.embedding_gamma, &d.embedding_beta);
  const std::vector<float> dembedded_t = transposed(dembedded_rows, T, H);
  d.word_t = embedding_grad(dembedded_t, in.tokens, V);
  d.position_t = embedding_grad(dembedded_t, in.positions, s.seq);
  d.segment_t = embedding_grad(dembedded_t, in.segments, 2);
  return out;
}

std::vector<ParameterRef> parameters(const BertModel& m) {
  const BertWeights& w = m.weights;
  const BertGrads& d = m.grads;
  const size_t embeddings = m.embeddings_backward.end;
  std::vector<ParameterRef> p = {
      {"word_t", w.word_t, d.word_t, 0, embeddings},
      {"position_t", w.position_t, d.position_t, 0, embeddings},
      {"segment_t", w.segment_t, d.segment_t, 0, embeddings},
      {"embedding_gamma", w.embedding_gamma, d.embedding_gamma, 0, embeddings},
      {"embedding_beta", w.embedding_beta, d.embedding_beta, 0, embeddings}};
  for (size_t l = 0; l < w.layers.size(); ++l) {
    const ops::EncoderWeights& lw = w.layers[l];
    const ops::EncoderGrads& ld = d.layers[l];
    unsigned stage = 0;
    while (stage + 1 < m.stages.size() && l >= m.stages[stage + 1].first_layer) ++stage;
    // A weight gradient made by one product is added to its sum right after it: it would
    // otherwise stay live through the rest of the layer's backward pass (BERT-Large's
    // feed-forward two, 28 KB a tile at the stage's busiest). The others after the layer.
    const auto ready_after = [&](const std::string& product) {
      const std::string suffix = fmt::format(".layer{}.grad.{}", l, product);
      for (size_t i = m.layer_grads_ready[l]; i-- > 0;) {
        const std::string& label = m.steps[i].label;
        if (label.size() >= suffix.size() &&
            label.compare(label.size() - suffix.size(), suffix.size(), suffix) == 0)
          return i + 1;
      }
      return m.layer_grads_ready[l];
    };
    const auto add = [&](const char* what, Tensor weight, Tensor grad) {
      const std::string name = what;
      const size_t ready = name == "ffn_in"    ? ready_after("ffn_in_weights")
                           : name == "ffn_out" ? ready_after("ffn_out_weights")
                                               : m.layer_grads_ready[l];
      p.push_back({fmt::format("layer{}.{}", l, what), weight, grad, stage, ready});
    };
    add("qkv_t", lw.qkv_t, ld.qkv_t);
    add("out", lw.out, ld.out);
    add("out_bias", lw.out_bias, ld.out_bias);
    add("ffn_in", lw.ffn_in, ld.ffn_in);
    add("ffn_in_bias", lw.ffn_in_bias, ld.ffn_in_bias);
    add("ffn_out", lw.ffn_out, ld.ffn_out);
    add("ffn_out_bias", lw.ffn_out_bias, ld.ffn_out_bias);
    add("gamma1", lw.gamma1, ld.gamma1);
    add("beta1", lw.beta1, ld.beta1);
    add("gamma2", lw.gamma2, ld.gamma2);
    add("beta2", lw.beta2, ld.beta2);
  }
  const unsigned h = kHeadsStage;
  const size_t e = m.heads.end;
  for (const ParameterRef& r :
       std::vector<ParameterRef>{{"mlm_dense", w.mlm_dense, d.mlm_dense, h, e},
                                 {"mlm_bias", w.mlm_bias, d.mlm_bias, h, e},
                                 {"mlm_gamma", w.mlm_gamma, d.mlm_gamma, h, e},
                                 {"mlm_beta", w.mlm_beta, d.mlm_beta, h, e},
                                 {"mlm_decoder_bias", w.mlm_decoder_bias, d.mlm_decoder_bias, h, e},
                                 {"pooler", w.pooler, d.pooler, h, e},
                                 {"pooler_bias", w.pooler_bias, d.pooler_bias, h, e},
                                 {"nsp", w.nsp, d.nsp, h, e},
                                 {"nsp_bias", w.nsp_bias, d.nsp_bias, h, e}})
    p.push_back(r);
  return p;
}

std::vector<ParameterValues> parameter_values(BertWeightValues& w) {
  const auto f = [](std::vector<float>& v) { return ParameterValues{&v, nullptr}; };
  const auto h = [](std::vector<uint16_t>& v) { return ParameterValues{nullptr, &v}; };
  std::vector<ParameterValues> p = {h(w.word_t), f(w.position_t), f(w.segment_t),
                                    f(w.embedding_gamma), f(w.embedding_beta)};
  for (ref::EncoderValues& e : w.layers)
    for (const ParameterValues& v :
         {h(e.qkv_t), h(e.out), f(e.out_bias), h(e.ffn_in), f(e.ffn_in_bias), h(e.ffn_out),
          f(e.ffn_out_bias), f(e.gamma1), f(e.beta1), f(e.gamma2), f(e.beta2)})
      p.push_back(v);
  for (const ParameterValues& v :
       {h(w.mlm_dense), f(w.mlm_bias), f(w.mlm_gamma), f(w.mlm_beta), f(w.mlm_decoder_bias),
        h(w.pooler), f(w.pooler_bias), h(w.nsp), f(w.nsp_bias)})
    p.push_back(v);
  return p;
}

std::vector<const std::vector<float>*> gradient_values(const BertGradValues& d) {
  std::vector<const std::vector<float>*> p = {&d.word_t, &d.position_t, &d.segment_t,
                                              &d.embedding_gamma, &d.embedding_beta};
  for (const ref::EncoderGradValues& e : d.layers)
    for (const std::vector<float>* v :
         {&e.qkv_t, &e.out, &e.out_bias, &e.ffn_in, &e.ffn_in_bias, &e.ffn_out, &e.ffn_out_bias,
          &e.gamma1, &e.beta1, &e.gamma2, &e.beta2})
      p.push_back(v);
  for (const std::vector<float>* v :
       {&d.mlm_dense, &d.mlm_bias, &d.mlm_gamma, &d.mlm_beta, &d.mlm_decoder_bias, &d.pooler,
        &d.pooler_bias, &d.nsp, &d.nsp_bias})
    p.push_back(v);
  return p;
}

BertInputValues input_values(const Rows& rows, size_t first, const BertShape& s) {
  if (rows.seq != s.seq || rows.max_per_row != s.max_per_row ||
      static_cast<size_t>(rows.max_predictions) * s.rows != s.predictions() ||
      first + s.rows > rows.count)
    throw std::invalid_argument(fmt::format(
        "BERT inputs: rows {} to {} of {} rows of {} tokens ({} sequences, {} predictions a row) "
        "for a model of {} rows of {} tokens ({} sequences, {} predictions a row)",
        first, first + s.rows, rows.count, rows.seq, rows.max_per_row, rows.max_predictions, s.rows,
        s.seq, s.max_per_row, s.predictions() / s.rows));
  BertInputValues v;
  const size_t S = s.seq, P = rows.max_predictions, K = rows.max_per_row;
  for (size_t r = 0; r < s.rows; ++r) {
    const size_t row = first + r;
    for (size_t i = 0; i < S; ++i) {
      v.tokens.push_back(static_cast<uint32_t>(rows.tokens[row * S + i]));
      v.positions.push_back(static_cast<uint32_t>(rows.positions[row * S + i]));
      v.segments.push_back(static_cast<uint32_t>(rows.segments[row * S + i]));
      v.sequence_ids.push_back(static_cast<float>(rows.sequence_ids[row * S + i]));
    }
    for (size_t p = 0; p < P; ++p) {
      const bool used = rows.mlm_weights[row * P + p] != 0.0f;
      v.mlm_positions.push_back(static_cast<uint32_t>(r * S + rows.mlm_positions[row * P + p]));
      v.mlm_labels.push_back(used ? static_cast<uint32_t>(rows.mlm_labels[row * P + p])
                                  : ops::kIgnoredLabel);
    }
    for (size_t k = 0; k < K; ++k) {
      const bool used = rows.nsp_weights[row * K + k] != 0.0f;
      v.nsp_positions.push_back(static_cast<uint32_t>(r * S + rows.nsp_positions[row * K + k]));
      v.nsp_labels.push_back(used ? static_cast<uint32_t>(rows.nsp_labels[row * K + k])
                                  : ops::kIgnoredLabel);
    }
  }
  return v;
}

}  // namespace ipu::examples::bert
