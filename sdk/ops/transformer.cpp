// The encoder layer (sdk/ops/transformer.h): each operation a labelled step.
#include "sdk/ops/transformer.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <iterator>
#include <utility>

namespace ipu::sdk::ops {

namespace {

// The layer's tiles: [first, first + count).
struct TileRange {
  unsigned first, count;
};
TileRange layer_tiles(const Graph& g, const EncoderOptions& o) {
  if (o.first_tile >= g.tiles() || o.first_tile + o.tiles > g.tiles())
    throw GraphError(fmt::format("{}: tiles {} to {} of a graph of {} tiles", o.name, o.first_tile,
                                 o.first_tile + std::max(o.tiles, 1u) - 1, g.tiles()));
  return {o.first_tile, o.tiles ? o.tiles : g.tiles() - o.first_tile};
}

// A token-major activation [rows x columns], whole rows spread over the layer's tiles.
Tensor rows_tensor(Graph& g, DType type, size_t rows, size_t columns, const std::string& name,
                   TileRange tiles) {
  const Tensor t = g.add_variable(type, {rows, columns}, name);
  g.map_evenly(t, tiles.first, static_cast<unsigned>(std::min<size_t>(tiles.count, rows)),
               columns % 2 ? 2 * columns : columns);
  return t;
}

void check_shape(const EncoderShape& s, const std::string& name) {
  if (s.hidden == 0 || s.heads == 0 || s.ffn == 0 || s.seq == 0 || s.sequences == 0 ||
      s.hidden % s.heads != 0)
    throw GraphError(fmt::format(
        "{}: hidden {}, heads {}, ffn {}, seq {}, sequences {}: every size must be positive and "
        "the heads must divide the hidden size",
        name, s.hidden, s.heads, s.ffn, s.seq, s.sequences));
}

void check_operand(const Graph& g, Tensor t, std::vector<size_t> shape, const std::string& op,
                   const char* which) {
  const TensorInfo& i = g.tensor(t);
  if (i.type != DType::kF32 || i.shape != shape || i.mapping.empty())
    throw GraphError(fmt::format("{}: {} '{}' must be a mapped f32 tensor of shape {{{}}}", op,
                                 which, i.name, fmt::join(shape, ", ")));
}

// [rows x S] feature-major as the heads see it: [heads x rows / heads x S].
Tensor heads_of(Graph& g, Tensor t, size_t begin_row, const EncoderShape& s, const char* what) {
  const size_t d = s.head_size(), S = s.seq;
  return g.slice(t, begin_row * S, (begin_row + s.hidden) * S, {s.heads, d, S},
                 fmt::format("{}.{}", g.tensor(t).name, what));
}

// Copy pairs between a sequence's [rows x S] (row-major, `part`) and its columns b S .. (b + 1)
// S of a [... x T] tensor (`all`, from its row `first`), a row of S elements each: into `all`
// with `into_all`, else out of it.
std::vector<std::pair<Region, Region>> sequence_columns(Graph& g, Tensor all, Tensor part, size_t b,
                                                        size_t rows, size_t S, size_t T,
                                                        bool into_all, size_t first = 0) {
  std::vector<std::pair<Region, Region>> pairs;
  for (size_t row = 0; row < rows; ++row) {
    const size_t at = (first + row) * T + b * S;
    const Region whole = g.region(all, at, at + S), piece = g.region(part, row * S, (row + 1) * S);
    pairs.emplace_back(into_all ? piece : whole, into_all ? whole : piece);
  }
  return pairs;
}

}  // namespace

size_t encoder_vector_pieces(const EncoderShape& s) {
  const auto pieces = [](size_t n) { return (n + kEncoderVectorPiece - 1) / kEncoderVectorPiece; };
  // kEncoderVectors: the feed-forward input's bias has F elements, the others H.
  return (std::size(kEncoderVectors) - 1) * pieces(s.hidden) + pieces(s.ffn);
}

EncoderWeights add_encoder_weights(Graph& g, const EncoderShape& s, const EncoderOptions& o) {
  check_shape(s, o.name);
  const size_t H = s.hidden, F = s.ffn, S = s.seq, T = s.tokens();
  const TileRange tiles = layer_tiles(g, o);
  MatmulOptions mo;
  mo.available_memory_proportion = o.available_memory_proportion;
  mo.first_tile = o.first_tile;
  mo.tiles = o.tiles;
  EncoderWeights w;
  MatmulOptions ta = mo;
  ta.transpose_a = true;
  const bool spread = o.spread_weights;
  w.qkv_t = create_matmul_input(g, {3 * H, H, S}, true, o.name + ".qkv_t", mo, spread);
  w.out = create_matmul_input(g, {S, H, H}, false, o.name + ".out", ta, spread);
  w.ffn_in = create_matmul_input(g, {T, H, F}, false, o.name + ".ffn_in", mo, spread);
  w.ffn_out = create_matmul_input(g, {T, F, H}, false, o.name + ".ffn_out", mo, spread);
  // A vector in pieces of up to kVectorPiece elements, each on a tile of its own (the next
  // ones): the operations that use it multicast each piece to their tiles, one send, where a
  // vector spread element by element would make every tile receive a piece from each of its
  // tiles, an action gap (120 cycles) apart. BERT-Large's 4,096-element feed-forward bias whole
  // on one tile was 16 KB, and 16 KB more its gradient's sum, and that tile received the
  // gradient's 1,025 pieces to add them (16 KB of exchange actions).
  unsigned next_tile = o.vector_tile;
  const auto vector = [&](size_t n, const char* what) {
    const Tensor t = g.add_variable(DType::kF32, {n}, o.name + what);
    std::vector<Interval> mapping;
    for (size_t at = 0; at < n; at += kEncoderVectorPiece)
      mapping.push_back(
          {at, std::min(n, at + kEncoderVectorPiece), tiles.first + next_tile++ % tiles.count});
    g.set_tile_mapping(t, mapping);
    return t;
  };
  Tensor* const vectors[] = {&w.out_bias, &w.ffn_in_bias, &w.ffn_out_bias, &w.gamma1,
                             &w.beta1,    &w.gamma2,      &w.beta2};
  static_assert(std::size(vectors) == std::size(kEncoderVectors));
  for (size_t i = 0; i < std::size(vectors); ++i)
    *vectors[i] = vector(vectors[i] == &w.ffn_in_bias ? F : H, kEncoderVectors[i]);
  return w;
}

EncoderForward encoder_forward(Graph& g, std::vector<LayerStep>& steps, const EncoderShape& s,
                               const EncoderWeights& w, Tensor x, Tensor mask,
                               const EncoderOptions& o) {
  check_shape(s, o.name);
  const size_t H = s.hidden, S = s.seq, T = s.tokens();
  check_operand(g, x, {T, H}, o.name, "input");
  check_operand(g, mask, {s.sequences, S}, o.name, "mask");
  const float scale = 1.0f / std::sqrt(static_cast<float>(s.head_size()));
  StepList st(g, steps, o.name, o.available_memory_proportion, o.first_tile, o.tiles);
  EncoderForward f;
  f.x16 = st.op("x_f16",
                [&](Program& p, const std::string& n) { return cast(g, p, x, DType::kF16, n); });
  // The fused projection over every token at once, [3H x T], then each sequence's [3H x S]
  // copied out for its heads (a view cannot take a sequence's columns): one product of N = T
  // where a sequence's each were a third as efficient.
  const Tensor qkv_all = st.matmul("qkv", w.qkv_t, f.x16, false, true, DType::kF16);
  // Every head's output, each sequence's S tokens in turn ([H x T]), for one output projection
  // over every token (and one weight gradient of K = T in the backward pass).
  f.context_t = rows_tensor(g, DType::kF16, H, T, o.name + ".context", layer_tiles(g, o));
  g.set_scratch(f.context_t);
  for (size_t b = 0; b < s.sequences; ++b) {
    const std::string sb = fmt::format(".s{}", b);
    const Tensor qkv = rows_tensor(g, DType::kF16, 3 * H, S, fmt::format("{}.qkv{}", o.name, sb),
                                   layer_tiles(g, o));
    g.set_scratch(qkv);
    st.add("unstack" + sb, 0.0, [&](Program& p, const std::string&) {
      p.body.push_back(Copy(sequence_columns(g, qkv_all, qkv, b, 3 * H, S, T, false)));
      return 0;
    });
    f.qkv_t.push_back(qkv);
    const Tensor q = heads_of(g, qkv, 0, s, "q"), k = heads_of(g, qkv, H, s, "k"),
                 v = heads_of(g, qkv, 2 * H, s, "v");
    const Tensor scores = st.matmul("scores" + sb, q, k, true, false, DType::kF32);
    const Tensor mask_b =
        g.slice(mask, b * S, (b + 1) * S, {S}, fmt::format("{}.mask{}", o.name, b));
    // The scores scaled by 1 / sqrt(d) in the softmax's first pass over them; the
    // probabilities rounded to f16 for the context's product in its last.
    Tensor probs16;
    f.probs.push_back(st.op("softmax" + sb, [&](Program& p, const std::string& n) {
      return o.packed ? softmax_rows_packed(g, p, scores, mask_b, n, scale, &probs16)
                      : softmax_rows(g, p, scores, mask_b, n, scale, &probs16);
    }));
    g.set_scratch(probs16);
    f.probs16.push_back(probs16);
    const Tensor context = st.matmul("context" + sb, v, f.probs16.back(), false, true, DType::kF16);
    st.add("stack" + sb, 0.0, [&](Program& p, const std::string&) {
      p.body.push_back(Copy(sequence_columns(g, f.context_t, context, b, H, S, T, true)));
      return 0;
    });
  }
  const Tensor attention = st.matmul("project", f.context_t, w.out, true, false, DType::kF32);
  // Each bias and the residual after it in one pass (bias_residual): two passes over [T x H]
  // took 10.4k cycles of BERT-Large's layer, each with its own vertices and sync.
  f.residual1 = st.op("residual1", [&](Program& p, const std::string& n) {
    return bias_residual(g, p, attention, w.out_bias, x, n);
  });
  f.norm1 = st.add("norm1", 0.0, [&](Program& p, const std::string& n) {
    return layer_norm(g, p, f.residual1, w.gamma1, w.beta1, o.epsilon, n);
  });
  for (const Tensor t : {f.norm1.y, f.norm1.mean, f.norm1.inv_std}) g.set_scratch(t);
  f.norm1_16 = st.op("norm1_f16", [&](Program& p, const std::string& n) {
    return cast(g, p, f.norm1.y, DType::kF16, n);
  });
  // The feed-forward block's [T x F] in row blocks (map_row_blocks): with fewer tokens than
  // tiles, whole rows left tiles idle in the bias, GeLU and the casts (448 of 1,472 for
  // BERT-Large); its gradient's column sums add each tile's rows of a slice first.
  const Tensor ffn1 =
      st.matmul("ffn_in", f.norm1_16, w.ffn_in, false, false, DType::kF32, false, false, true);
  // The bias, GeLU and the f16 copy for ffn_out in one pass (bias_gelu): three passes over
  // [T x F] took 58.7k cycles of BERT-Large's layer, each with its own vertices and sync.
  const BiasGelu act = st.add("bias_gelu", 0.0, [&](Program& p, const std::string& n) {
    return bias_gelu(g, p, ffn1, w.ffn_in_bias, n);
  });
  g.set_scratch(act.sum);
  g.set_scratch(act.gelu16);
  f.hidden = act.sum;
  f.act16 = act.gelu16;
  const Tensor ffn2 = st.matmul("ffn_out", f.act16, w.ffn_out, false, false, DType::kF32);
  f.residual2 = st.op("residual2", [&](Program& p, const std::string& n) {
    return bias_residual(g, p, ffn2, w.ffn_out_bias, f.norm1.y, n);  // by rows, as norm1.y
  });
  f.norm2 = st.add("norm2", 0.0, [&](Program& p, const std::string& n) {
    return layer_norm(g, p, f.residual2, w.gamma2, w.beta2, o.epsilon, n);
  });
  g.set_scratch(f.norm2.mean);
  g.set_scratch(f.norm2.inv_std);
  f.y = f.norm2.y;
  return f;
}

EncoderGrads encoder_backward(Graph& g, std::vector<LayerStep>& steps, const EncoderShape& s,
                              const EncoderWeights& w, const EncoderForward& f, Tensor dy,
                              const EncoderOptions& o) {
  check_shape(s, o.name);
  const size_t H = s.hidden, S = s.seq, T = s.tokens();
  check_operand(g, dy, {T, H}, o.name, "gradient");
  const float scale = 1.0f / std::sqrt(static_cast<float>(s.head_size()));
  StepList st(g, steps, o.name + ".grad", o.available_memory_proportion, o.first_tile, o.tiles);
  EncoderGrads d;
  // A norm's backward pass: its gradients, the gradient of the bias before it (the column sums
  // of the norm's input gradient), and that gradient as f16 for the products.
  struct NormBack {
    Tensor dx, dx16;
  };
  const auto norm_back = [&](const char* label, Tensor input, Tensor grad, Tensor gamma,
                             const LayerNorm& norm, const char* bias_label, Tensor& dgamma,
                             Tensor& dbeta, Tensor& dbias) {
    const LayerNormGrad n = st.add(label, 0.0, [&](Program& p, const std::string& name) {
      return layer_norm_grad(g, p, input, grad, gamma, norm, name);
    });
    st.partial_rows(n.partial_rows);
    g.set_scratch(n.dx);
    dgamma = n.dgamma, dbeta = n.dbeta;
    dbias = st.column_sums(bias_label, n.dx);
    const Tensor dx16 = st.op(
        std::string(bias_label) + "_f16",
        [&](Program& p, const std::string& name) { return cast(g, p, n.dx, DType::kF16, name); });
    return NormBack{n.dx, dx16};
  };
  // The second norm and the feed-forward block.
  const NormBack n2 = norm_back("norm2", f.residual2, dy, w.gamma2, f.norm2, "ffn_out_bias",
                                d.gamma2, d.beta2, d.ffn_out_bias);
  const Tensor d2 = n2.dx16;
  // Spread weights' gradients stay in the products' blocks: their sums are laid out as the
  // weights, so a relayout by rows first would be an exchange and a buffer more.
  const bool grads_in_blocks = o.spread_weights;
  d.ffn_out =
      st.matmul("ffn_out_weights", f.act16, d2, true, false, DType::kF32, true, grads_in_blocks);
  const Tensor dact = st.matmul("ffn_out_input", d2, w.ffn_out, false, true, DType::kF32, false,
                                false, true);  // laid out as f.hidden, for GeLU's gradient
  // GeLU's gradient with its f16 copy for the two products in one pass (gelu_grad): the two
  // passes over [T x F] took 56.6k cycles of BERT-Large's layer.
  const GeluGrad dgelu = st.add("gelu", 0.0, [&](Program& p, const std::string& n) {
    return gelu_grad(g, p, dact, f.hidden, n);
  });
  g.set_scratch(dgelu.dx);
  g.set_scratch(dgelu.dx16);
  const Tensor dhidden = dgelu.dx, dh16 = dgelu.dx16;
  d.ffn_in_bias = st.column_sums("ffn_in_bias", dhidden);
  d.ffn_in = st.matmul("ffn_in_weights", f.norm1_16, dh16, true, false, DType::kF32, true,
                       grads_in_blocks);
  const Tensor dn1_ffn = st.matmul("ffn_in_input", dh16, w.ffn_in, false, true, DType::kF32);
  const Tensor dn1 = st.op("residual2", [&](Program& p, const std::string& n) {
    return binary(g, p, BinaryOp::kAdd, n2.dx, dn1_ffn, n);  // by rows, for the norm's gradient
  });
  // The first norm and the attention block, a sequence at a time.
  const NormBack n1 = norm_back("norm1", f.residual1, dn1, w.gamma1, f.norm1, "out_bias", d.gamma1,
                                d.beta1, d.out_bias);
  const Tensor da16 = n1.dx16;
  // The sequences' query, key and value gradients side by side, [3H x T] (row f: each
  // sequence's S tokens in turn), so that the fused projection's two gradient products run
  // once over every token: one product of K = T for the weights (no sum of the sequences'
  // after) and one of M = T for the input, where a sequence's each were a third as efficient.
  const Tensor dqkv =
      rows_tensor(g, DType::kF16, 3 * H, T, o.name + ".grad.qkv", layer_tiles(g, o));
  g.set_scratch(dqkv);
  // The output projection's input gradient over every token at once ([H x T]), each
  // sequence's [H x S] copied out for its heads.
  const Tensor dctx_all = st.matmul("project_input", w.out, da16, false, true, DType::kF16);
  for (size_t b = 0; b < s.sequences; ++b) {
    const std::string sb = fmt::format(".s{}", b);
    const Tensor dctx = rows_tensor(
        g, DType::kF16, H, S, fmt::format("{}.grad.context{}", o.name, sb), layer_tiles(g, o));
    g.set_scratch(dctx);
    st.add("unstack" + sb, 0.0, [&](Program& p, const std::string&) {
      p.body.push_back(Copy(sequence_columns(g, dctx_all, dctx, b, H, S, T, false)));
      return 0;
    });
    const Tensor dctx_heads = heads_of(g, dctx, 0, s, "heads");
    const Tensor q = heads_of(g, f.qkv_t[b], 0, s, "q_again"),
                 k = heads_of(g, f.qkv_t[b], H, s, "k_again"),
                 v = heads_of(g, f.qkv_t[b], 2 * H, s, "v_again");
    const Tensor dprobs = st.matmul("context_probs" + sb, dctx_heads, v, true, false, DType::kF32);
    const Tensor dv =
        st.matmul("context_values" + sb, dctx_heads, f.probs16[b], false, false, DType::kF16);
    // The scores' gradient scaled by 1 / sqrt(d) and rounded to f16 in the same pass.
    const Tensor ds16 = st.op("softmax" + sb, [&](Program& p, const std::string& n) {
      return softmax_grad_rows(g, p, f.probs[b], dprobs, n, scale, DType::kF16);
    });
    const Tensor dq = st.matmul("scores_queries" + sb, k, ds16, false, true, DType::kF16);
    const Tensor dk = st.matmul("scores_keys" + sb, q, ds16, false, false, DType::kF16);
    st.add("stack" + sb, 0.0, [&](Program& p, const std::string&) {
      std::vector<std::pair<Region, Region>> pairs;
      size_t first = 0;  // dq's rows, then dk's, then dv's
      for (const Tensor part : {dq, dk, dv}) {
        for (auto& pair : sequence_columns(g, dqkv, part, b, H, S, T, true, first))
          pairs.push_back(pair);
        first += H;
      }
      p.body.push_back(Copy(std::move(pairs)));
      return 0;
    });
  }
  const Tensor dx_attention = st.matmul("qkv_input", dqkv, w.qkv_t, true, false, DType::kF32);
  d.qkv_t = st.matmul("qkv_weights", dqkv, f.x16, false, false, DType::kF32, true);
  d.out = st.matmul("project_weights", f.context_t, da16, false, false, DType::kF32, true);
  // The input's gradient through both paths.
  d.dx = st.add("residual1", 0.0, [&](Program& p, const std::string& n) {
    return binary(g, p, BinaryOp::kAdd, dx_attention, n1.dx, n);
  });
  return d;
}

}  // namespace ipu::sdk::ops
