// The encoder layer on the host (sdk/ops/transformer.h, namespace reference): transformer.cpp's
// operations, one for one and in its order, each computed by its own host reference.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "sdk/ops/transformer.h"

namespace ipu::sdk::ops::reference {

namespace {

// A sequence's columns b S .. (b + 1) S of a [rows x T] matrix, as its own [rows x S] ...
std::vector<uint16_t> sequence_columns(const std::vector<uint16_t>& all, size_t b, size_t rows,
                                       size_t S, size_t T) {
  std::vector<uint16_t> out(rows * S);
  for (size_t row = 0; row < rows; ++row)
    std::copy_n(all.begin() + row * T + b * S, S, out.begin() + row * S);
  return out;
}

// ... and put back there.
void stack_columns(const std::vector<uint16_t>& part, std::vector<uint16_t>& all, size_t b,
                   size_t rows, size_t S, size_t T) {
  for (size_t row = 0; row < rows; ++row)
    std::copy_n(part.begin() + row * S, S, all.begin() + row * T + b * S);
}

}  // namespace

EncoderForwardValues encoder_forward(const std::vector<LayerStep>& steps, const EncoderShape& s,
                                     const EncoderValues& w, const std::vector<float>& x,
                                     const std::vector<float>& mask, const EncoderOptions& o) {
  const size_t H = s.hidden, S = s.seq, heads = s.heads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(s.head_size()));
  const RecordedSteps st(steps, o.name);
  EncoderForwardValues f;
  f.x16 = cast_to_f16(x);
  const size_t T = s.tokens();
  const std::vector<uint16_t> qkv_all = st.product16("qkv", w.qkv_t, f.x16);  // [3H x T]
  f.context_t.resize(H * T);
  for (size_t b = 0; b < s.sequences; ++b) {
    const std::string sb = fmt::format(".s{}", b);
    f.qkv_t.push_back(sequence_columns(qkv_all, b, 3 * H, S, T));
    const std::vector<uint16_t>& qkv = f.qkv_t.back();
    const auto q = part(qkv, 0, H * S), k = part(qkv, H * S, 2 * H * S),
               v = part(qkv, 2 * H * S, 3 * H * S);
    const std::vector<float> scores = st.product("scores" + sb, q, k, heads);
    const std::vector<float> mask_b = part(mask, b * S, (b + 1) * S);
    f.probs.push_back(o.packed ? softmax_rows_packed(scores, mask_b, S, scale)
                               : softmax_rows(scores, &mask_b, S, scale));
    f.probs16.push_back(cast_to_f16(f.probs.back()));
    const std::vector<uint16_t> context = st.product16("context" + sb, v, f.probs16.back(), heads);
    stack_columns(context, f.context_t, b, H, S, T);
  }
  const std::vector<float> attention = st.product("project", f.context_t, w.out);
  const std::vector<float> biased = binary(BinaryOp::kAdd, attention, w.out_bias);
  f.residual1 = binary(BinaryOp::kAdd, biased, x);
  f.norm1.y =
      layer_norm(f.residual1, w.gamma1, w.beta1, o.epsilon, H, &f.norm1.mean, &f.norm1.inv_std);
  f.norm1_16 = cast_to_f16(f.norm1.y);
  f.hidden = binary(BinaryOp::kAdd, st.product("ffn_in", f.norm1_16, w.ffn_in), w.ffn_in_bias);
  f.act16 = cast_to_f16(unary(UnaryOp::kGelu, f.hidden));
  const std::vector<float> ffn2b =
      binary(BinaryOp::kAdd, st.product("ffn_out", f.act16, w.ffn_out), w.ffn_out_bias);
  f.residual2 = binary(BinaryOp::kAdd, f.norm1.y, ffn2b);
  f.norm2.y =
      layer_norm(f.residual2, w.gamma2, w.beta2, o.epsilon, H, &f.norm2.mean, &f.norm2.inv_std);
  f.y = f.norm2.y;
  return f;
}

EncoderGradValues encoder_backward(const std::vector<LayerStep>& steps, const EncoderShape& s,
                                   const EncoderValues& w, const EncoderForwardValues& f,
                                   const std::vector<float>& dy, const EncoderOptions& o) {
  const size_t H = s.hidden, S = s.seq, heads = s.heads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(s.head_size()));
  const RecordedSteps st(steps, o.name + ".grad");
  EncoderGradValues d;
  // A norm's gradients, and the column sums of its input's gradient (the bias before it).
  const auto norm_back =
      [&](const char* label, const std::vector<float>& input, const std::vector<float>& grad,
          const std::vector<float>& gamma, const LayerNormValues& norm, const char* bias_label,
          std::vector<float>& dgamma, std::vector<float>& dbeta, std::vector<float>& dbias) {
        const std::vector<float> dx = layer_norm_grad(input, grad, gamma, norm.mean, norm.inv_std,
                                                      H, st[label].partial_rows, &dgamma, &dbeta);
        dbias = st.column_sums(bias_label, dx, H);
        return dx;
      };
  const std::vector<float> n2dx = norm_back("norm2", f.residual2, dy, w.gamma2, f.norm2,
                                            "ffn_out_bias", d.gamma2, d.beta2, d.ffn_out_bias);
  const std::vector<uint16_t> d2 = cast_to_f16(n2dx);
  d.ffn_out = st.product("ffn_out_weights", f.act16, d2);
  const std::vector<float> dhidden =
      binary(BinaryOp::kMulGeluGrad, st.product("ffn_out_input", d2, w.ffn_out), f.hidden);
  d.ffn_in_bias = st.column_sums("ffn_in_bias", dhidden, s.ffn);
  const std::vector<uint16_t> dh16 = cast_to_f16(dhidden);
  d.ffn_in = st.product("ffn_in_weights", f.norm1_16, dh16);
  const std::vector<float> dn1 =
      binary(BinaryOp::kAdd, n2dx, st.product("ffn_in_input", dh16, w.ffn_in));
  const std::vector<float> n1dx = norm_back("norm1", f.residual1, dn1, w.gamma1, f.norm1,
                                            "out_bias", d.gamma1, d.beta1, d.out_bias);
  const std::vector<uint16_t> da16 = cast_to_f16(n1dx);
  const size_t T = s.tokens();
  std::vector<uint16_t> dqkv(3 * H * T);  // [3H x T]: row f, each sequence's S tokens in turn
  const std::vector<uint16_t> dctx_all = st.product16("project_input", w.out, da16);  // [H x T]
  for (size_t b = 0; b < s.sequences; ++b) {
    const std::string sb = fmt::format(".s{}", b);
    const std::vector<uint16_t> dctx = sequence_columns(dctx_all, b, H, S, T);
    const std::vector<uint16_t>& qkv = f.qkv_t[b];
    const auto q = part(qkv, 0, H * S), k = part(qkv, H * S, 2 * H * S),
               v = part(qkv, 2 * H * S, 3 * H * S);
    const std::vector<float> dprobs = st.product("context_probs" + sb, dctx, v, heads);
    const std::vector<uint16_t> dv = st.product16("context_values" + sb, dctx, f.probs16[b], heads);
    const std::vector<uint16_t> ds16 = cast_to_f16(softmax_grad_rows(f.probs[b], dprobs, S, scale));
    std::vector<uint16_t> dqkv_b = st.product16("scores_queries" + sb, k, ds16, heads);
    append(dqkv_b, st.product16("scores_keys" + sb, q, ds16, heads));
    append(dqkv_b, dv);
    stack_columns(dqkv_b, dqkv, b, 3 * H, S, T);
  }
  d.out = st.product("project_weights", f.context_t, da16);
  const std::vector<float> dx_attention = st.product("qkv_input", dqkv, w.qkv_t);
  d.qkv_t = st.product("qkv_weights", dqkv, f.x16);
  d.dx = binary(BinaryOp::kAdd, dx_attention, n1dx);
  return d;
}

}  // namespace ipu::sdk::ops::reference
