// Packed BERT's model on the tiles against its host run of the same operations: the losses and
// every parameter's gradient equal bit for bit, on packed rows of the data pipeline.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>

#include "examples/bert/model.h"
#include "sdk/compiler/compiler.h"
#include "sdk/runtime/device.h"

namespace ipu::examples::bert {
namespace {

using namespace ipu::sdk;
namespace ref = sdk::ops::reference;

BertShape small_shape() {
  BertShape s;
  s.hidden = 32, s.layers = 2, s.heads = 2, s.ffn = 64, s.seq = 32, s.vocab = 96;
  s.rows = 2, s.max_per_row = 3;
  return s;
}

// One step of `shape` on a chip of 64 tiles: the losses and every gradient equal the host's run
// of the same operations, bit for bit.
void expect_the_hosts_losses_and_gradients(const BertShape& shape) {
  Graph g(Target::preset("mk2", 64));
  const BertModel model = build_bert(g, shape);
  const Executable exe = compile(g, ops::sequence_of(model.steps));
  Device device(exe);

  // Two packed rows of sequences drawn from the Wikipedia lengths, rescaled to 32 tokens.
  const LengthHistogram lengths =
      scale_histogram(read_histogram(IPU_BERT_DATA_DIR "/wikipedia_512.csv"), shape.seq);
  RowOptions ro;
  ro.seq = static_cast<unsigned>(shape.seq);
  ro.max_per_row = static_cast<unsigned>(shape.max_per_row);
  ro.vocab = static_cast<unsigned>(shape.vocab);
  const Rows rows = make_rows(synthetic_sequences(lengths, 12, ro.vocab, 5), ro);
  ASSERT_GE(rows.count, shape.rows);
  const BertInputValues in = input_values(rows, 0, shape);
  const auto write_u32 = [&](Tensor t, const std::vector<uint32_t>& v) {
    device.write_tensor(g.tensor(t).name, v.data(), v.size() * 4);
  };
  write_u32(model.inputs.tokens, in.tokens);
  write_u32(model.inputs.positions, in.positions);
  write_u32(model.inputs.segments, in.segments);
  device.write_tensor(g.tensor(model.inputs.sequence_ids).name, in.sequence_ids.data(),
                      in.sequence_ids.size() * 4);
  write_u32(model.inputs.mlm_positions, in.mlm_positions);
  write_u32(model.inputs.mlm_labels, in.mlm_labels);
  write_u32(model.inputs.nsp_positions, in.nsp_positions);
  write_u32(model.inputs.nsp_labels, in.nsp_labels);

  std::mt19937 rng(3);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  const auto f32 = [&](Tensor t, float offset, float range, std::vector<float>& host) {
    host.resize(g.tensor(t).elements);
    for (float& e : host) e = offset + range * uniform(rng);
    device.write_tensor(g.tensor(t).name, host.data(), host.size() * 4);
  };
  const auto f16 = [&](Tensor t, float range, std::vector<uint16_t>& host) {
    std::vector<float> v(g.tensor(t).elements);
    for (float& e : v) e = range * uniform(rng);
    host = ref::cast_to_f16(v);
    device.write_tensor(g.tensor(t).name, host.data(), host.size() * 2);
  };
  BertWeightValues w;
  const BertWeights& mw = model.weights;
  f16(mw.word_t, 0.1f, w.word_t);  // small: logits near 0, the MLM loss near ln V
  f32(mw.position_t, 0, 0.2f, w.position_t);
  f32(mw.segment_t, 0, 0.2f, w.segment_t);
  f32(mw.embedding_gamma, 1, 0.1f, w.embedding_gamma);
  f32(mw.embedding_beta, 0, 0.1f, w.embedding_beta);
  for (const ops::EncoderWeights& lw : mw.layers) {
    ref::EncoderValues v;
    f16(lw.qkv_t, 0.3f, v.qkv_t);
    f16(lw.out, 0.2f, v.out);
    f16(lw.ffn_in, 0.2f, v.ffn_in);
    f16(lw.ffn_out, 0.15f, v.ffn_out);
    f32(lw.out_bias, 0, 0.1f, v.out_bias);
    f32(lw.ffn_in_bias, 0, 0.1f, v.ffn_in_bias);
    f32(lw.ffn_out_bias, 0, 0.1f, v.ffn_out_bias);
    f32(lw.gamma1, 1, 0.1f, v.gamma1);
    f32(lw.beta1, 0, 0.1f, v.beta1);
    f32(lw.gamma2, 1, 0.1f, v.gamma2);
    f32(lw.beta2, 0, 0.1f, v.beta2);
    w.layers.push_back(v);
  }
  f16(mw.mlm_dense, 0.2f, w.mlm_dense);
  f32(mw.mlm_bias, 0, 0.1f, w.mlm_bias);
  f32(mw.mlm_gamma, 1, 0.1f, w.mlm_gamma);
  f32(mw.mlm_beta, 0, 0.1f, w.mlm_beta);
  f32(mw.mlm_decoder_bias, 0, 0.1f, w.mlm_decoder_bias);
  f16(mw.pooler, 0.2f, w.pooler);
  f32(mw.pooler_bias, 0, 0.1f, w.pooler_bias);
  f16(mw.nsp, 0.3f, w.nsp);
  f32(mw.nsp_bias, 0, 0.1f, w.nsp_bias);
  device.run();

  const BertValues want = bert_reference(model, shape, in, w);
  const auto read = [&](Tensor t) {
    std::vector<float> v(g.tensor(t).elements);
    device.read_tensor(g.tensor(t).name, v.data(), v.size() * 4);
    return v;
  };
  const auto same = [&](const char* what, Tensor t, const std::vector<float>& host) {
    const std::vector<float> got = read(t);
    ASSERT_EQ(got.size(), host.size()) << what;
    EXPECT_EQ(std::memcmp(got.data(), host.data(), got.size() * 4), 0)
        << what << ": the tiles' and the host's runs differ";
  };
  same("mlm_loss", model.mlm_loss, want.mlm_loss);
  same("nsp_loss", model.nsp_loss, want.nsp_loss);
  // Every parameter's gradient.
  const std::vector<ParameterRef> refs = parameters(model);
  const std::vector<const std::vector<float>*> grads = gradient_values(want.grads);
  ASSERT_EQ(refs.size(), grads.size());
  for (size_t i = 0; i < refs.size(); ++i) same(refs[i].name.c_str(), refs[i].grad, *grads[i]);
  same("word_t_tied", model.grads.word_t_tied, want.grads.word_t_tied);

  // The losses are those of an untrained model: each used MLM slot near ln(vocabulary), each
  // used NSP slot near ln 2, the unused ones 0.
  double mlm = 0, nsp = 0;
  size_t predictions = 0, sentences = 0;
  for (size_t i = 0; i < want.mlm_loss.size(); ++i)
    if (in.mlm_labels[i] != ops::kIgnoredLabel) {
      mlm += want.mlm_loss[i];
      ++predictions;
    } else {
      EXPECT_EQ(want.mlm_loss[i], 0.0f);
    }
  for (size_t i = 0; i < want.nsp_loss.size(); ++i)
    if (in.nsp_labels[i] != ops::kIgnoredLabel) {
      nsp += want.nsp_loss[i];
      ++sentences;
    }
  ASSERT_GT(predictions, 0u);
  ASSERT_GT(sentences, 1u);
  EXPECT_NEAR(mlm / static_cast<double>(predictions), std::log(static_cast<double>(shape.vocab)),
              0.5);
  EXPECT_NEAR(nsp / static_cast<double>(sentences), std::log(2.0), 0.5);
}

TEST(BertModel, LossesAndGradientsEqualTheHostsBitForBit) {
  expect_the_hosts_losses_and_gradients(small_shape());
}

// A vocabulary of 8,200 words, as BERT-Large's is laid out: the f16 word table (16,400 bytes a
// feature) spread over every tile with its gradient laid out as it is, and the 16 rows of
// 32,800-byte logits cut into four slices each, their cross-entropy and column sums over slices.
TEST(BertModel, ALargeVocabularysSlicedLogitsEqualTheHostsBitForBit) {
  BertShape shape = small_shape();
  shape.vocab = 8200;
  Graph g(Target::preset("mk2", 64));
  const BertModel model = build_bert(g, shape);
  const ops::LayerStep& loss = ops::reference::RecordedSteps(model.steps, "bert")["mlm_loss"];
  EXPECT_EQ(loss.row_slices.size(), 4u * 6u);  // four tiles a row, six workers a tile
  EXPECT_EQ(g.tensor(model.weights.word_t).mapping.size(), 64u);
  expect_the_hosts_losses_and_gradients(shape);
}

// The shape's count of parameters (which refuses a model too big for the chip before building
// it) is the model's: every parameter tensor's elements, f16 ones apart.
TEST(BertModel, TheShapeCountsTheModelsParameters) {
  Graph g(Target::preset("mk2", 16));
  const BertShape shape = small_shape();
  const BertModel model = build_bert(g, shape);
  uint64_t all = 0, f16 = 0;
  for (const ParameterRef& p : parameters(model)) {
    all += g.tensor(p.weight).elements;
    if (g.tensor(p.weight).type == DType::kF16) f16 += g.tensor(p.weight).elements;
  }
  EXPECT_EQ(shape.parameters(), all);
  EXPECT_EQ(shape.f16_parameters(), f16);
  // BERT-Large for pre-training has 336,226,108 (Hugging Face's BertForPreTraining, vocabulary
  // 30,522); this model leaves out the query, key and value biases, 3 x 1024 in each of 24 layers.
  EXPECT_EQ(BertShape::large().parameters(), 336226108u - 24 * 3 * 1024);
}

TEST(BertModel, ShapesTheModelCannotTakeAreRefused) {
  Graph g(Target::preset("mk2", 16));
  BertShape s = small_shape();
  s.heads = 3;
  EXPECT_THROW(build_bert(g, s), GraphError);
  s = small_shape();
  s.vocab = 4;
  EXPECT_THROW(build_bert(g, s), GraphError);
  // Rows of another length than the model's are refused by name.
  RowOptions ro;
  ro.seq = 16;
  ro.vocab = 96;
  const Rows rows = make_rows(
      synthetic_sequences(
          scale_histogram(read_histogram(IPU_BERT_DATA_DIR "/wikipedia_512.csv"), 16), 4, 96, 1),
      ro);
  EXPECT_THROW(input_values(rows, 0, small_shape()), std::invalid_argument);
}

}  // namespace
}  // namespace ipu::examples::bert

namespace ipu::examples::bert {
namespace {

// The host run's gradients against central differences of its loss (sum of the MLM slots' losses
// / P + sum of the NSP slots' / K, as the gradient scales say), for a sample of the f32
// parameters: the model's backward pass is the derivative of its forward pass. Within 15 %: the
// forward pass rounds activations to f16, which the derivative does not see (measured: the
// heads' and embeddings' within 2 %, a first-layer bias behind two f16 roundings 13 %).
TEST(BertModel, GradientsMatchFiniteDifferencesOfTheLoss) {
  const BertShape shape = small_shape();
  Graph g(Target::preset("mk2", 64));
  const BertModel model = build_bert(g, shape);
  RowOptions ro;
  ro.seq = static_cast<unsigned>(shape.seq);
  ro.vocab = static_cast<unsigned>(shape.vocab);
  const Rows rows = make_rows(
      synthetic_sequences(
          scale_histogram(read_histogram(IPU_BERT_DATA_DIR "/wikipedia_512.csv"), shape.seq), 12,
          ro.vocab, 5),
      ro);
  const BertInputValues in = input_values(rows, 0, shape);
  std::mt19937 rng(4);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  const auto f32 = [&](Tensor t, float offset, float range) {
    std::vector<float> v(g.tensor(t).elements);
    for (float& e : v) e = offset + range * uniform(rng);
    return v;
  };
  const auto f16 = [&](Tensor t, float range) { return ref::cast_to_f16(f32(t, 0, range)); };
  BertWeightValues w;
  const BertWeights& mw = model.weights;
  w.word_t = f16(mw.word_t, 0.3f);
  w.position_t = f32(mw.position_t, 0, 0.2f);
  w.segment_t = f32(mw.segment_t, 0, 0.2f);
  w.embedding_gamma = f32(mw.embedding_gamma, 1, 0.1f);
  w.embedding_beta = f32(mw.embedding_beta, 0, 0.1f);
  for (const ops::EncoderWeights& lw : mw.layers) {
    ref::EncoderValues v;
    v.qkv_t = f16(lw.qkv_t, 0.3f), v.out = f16(lw.out, 0.2f), v.ffn_in = f16(lw.ffn_in, 0.2f);
    v.ffn_out = f16(lw.ffn_out, 0.15f), v.out_bias = f32(lw.out_bias, 0, 0.1f);
    v.ffn_in_bias = f32(lw.ffn_in_bias, 0, 0.1f), v.ffn_out_bias = f32(lw.ffn_out_bias, 0, 0.1f);
    v.gamma1 = f32(lw.gamma1, 1, 0.1f), v.beta1 = f32(lw.beta1, 0, 0.1f);
    v.gamma2 = f32(lw.gamma2, 1, 0.1f), v.beta2 = f32(lw.beta2, 0, 0.1f);
    w.layers.push_back(v);
  }
  w.mlm_dense = f16(mw.mlm_dense, 0.2f), w.mlm_bias = f32(mw.mlm_bias, 0, 0.1f);
  w.mlm_gamma = f32(mw.mlm_gamma, 1, 0.1f), w.mlm_beta = f32(mw.mlm_beta, 0, 0.1f);
  w.mlm_decoder_bias = f32(mw.mlm_decoder_bias, 0, 0.1f);
  w.pooler = f16(mw.pooler, 0.2f), w.pooler_bias = f32(mw.pooler_bias, 0, 0.1f);
  w.nsp = f16(mw.nsp, 0.3f), w.nsp_bias = f32(mw.nsp_bias, 0, 0.1f);

  const double P = static_cast<double>(shape.predictions()),
               K = static_cast<double>(shape.sentences());
  const auto loss = [&](const BertWeightValues& weights) {
    const BertValues v = bert_reference(model, shape, in, weights);
    double l = 0;
    for (float x : v.mlm_loss) l += x / P;
    for (float x : v.nsp_loss) l += x / K;
    return l;
  };
  const BertValues base = bert_reference(model, shape, in, w);
  // A weight's element, and setting it to a value: the value it holds then (an f16 weight's,
  // rounded to nearest).
  struct Weight {
    std::function<float(size_t)> get;
    std::function<float(size_t, float)> set;
  };
  struct Probe {
    const char* what;
    Weight weight;
    const std::vector<float>* grad;
  };
  const auto f32_weight = [](std::vector<float>& v) {
    return Weight{[&v](size_t at) { return v[at]; },
                  [&v](size_t at, float x) { return v[at] = x; }};
  };
  const auto f16_weight = [](std::vector<uint16_t>& v) {
    return Weight{[&v](size_t at) { return ref::widen_f16({v[at]})[0]; },
                  [&v](size_t at, float x) {
                    v[at] = ref::cast_to_f16({x})[0];
                    return ref::widen_f16({v[at]})[0];
                  }};
  };
  const BertGradValues& d = base.grads;
  const std::vector<float> word_t = ref::binary(ops::BinaryOp::kAdd, d.word_t, d.word_t_tied);
  const Probe probes[] = {
      {"mlm_decoder_bias", f32_weight(w.mlm_decoder_bias), &d.mlm_decoder_bias},
      {"word_t", f16_weight(w.word_t), &word_t},
      {"embedding_gamma", f32_weight(w.embedding_gamma), &d.embedding_gamma},
      {"mlm_gamma", f32_weight(w.mlm_gamma), &d.mlm_gamma},
      {"pooler_bias", f32_weight(w.pooler_bias), &d.pooler_bias},
      {"nsp_bias", f32_weight(w.nsp_bias), &d.nsp_bias},
      {"layer0.ffn_in_bias", f32_weight(w.layers[0].ffn_in_bias), &d.layers[0].ffn_in_bias},
      {"layer1.gamma1", f32_weight(w.layers[1].gamma1), &d.layers[1].gamma1},
  };
  for (const Probe& p : probes) {
    // The element with the largest gradient, so that the difference stands above f32 noise.
    size_t at = 0;
    for (size_t i = 1; i < p.grad->size(); ++i)
      if (std::fabs((*p.grad)[i]) > std::fabs((*p.grad)[at])) at = i;
    const float original = p.weight.get(at);
    // The products' inputs are f16, so the loss moves in steps: a step of 0.04 spans enough of
    // them (measured: at 0.01 the feed-forward bias's difference was 23 % off, at 0.04 under 3 %).
    const float h = 4e-2f;
    const float above = p.weight.set(at, original + h);
    const double up = loss(w);
    const float below = p.weight.set(at, original - h);
    const double down = loss(w);
    EXPECT_EQ(p.weight.set(at, original), original) << p.what;
    const double numeric = (up - down) / (above - below);
    EXPECT_NEAR(numeric, (*p.grad)[at], 0.15 * std::fabs(numeric) + 2e-4)
        << p.what << "[" << at << "]";
  }
}

}  // namespace
}  // namespace ipu::examples::bert
