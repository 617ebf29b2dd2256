// BERT pre-training's model on the operator library (docs/bert.md): embeddings, L encoder
// layers over packed rows, the masked-language-model head tied to the word embedding and the
// next-sentence head per packed sequence, their losses, and the backward pass to every
// parameter's gradient, each operation a labelled step (sdk/ops/steps.h). The same model runs on
// the host, operation for operation (bert_reference), so that the tiles' results can be checked
// bit for bit.
//
// Layout: a micro-batch is `rows` packed rows of `seq` tokens, T = rows x seq, token-major
// activations [T x H]. The embedding tables are stored feature-major ([H x entries], as
// ops::embedding_lookup takes them); the heads gather their tokens' rows of the last layer's
// output with the same lookup on its transpose, and scatter their gradients back with
// ops::embedding_grad.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "examples/bert/data.h"
#include "sdk/ops/transformer.h"

namespace ipu::examples::bert {

struct BertShape {
  size_t hidden = 64, layers = 2, heads = 2, ffn = 256, seq = 64, vocab = 512;
  size_t rows = 2;         // packed rows a micro-batch
  size_t max_per_row = 3;  // sequences a row: the next-sentence slots
  size_t max_predictions =
      0;  // masked words a row: the MLM slots (0: ceil(0.15 seq) + max_per_row)

  size_t tokens() const { return rows * seq; }
  // The parameters, and those of them the products take as f16 weights.
  uint64_t parameters() const;
  uint64_t f16_parameters() const;
  size_t predictions() const;  // the MLM slots of a micro-batch
  size_t sentences() const { return rows * max_per_row; }
  sdk::ops::EncoderShape encoder() const;
  // BERT-Large (24 layers, hidden 1024, 16 heads, FFN 4096, 512 tokens, 30,522 words) and a tiny
  // one for tests and the demo.
  static BertShape large();
  static BertShape tiny();
};

// What the host writes for each micro-batch (data.h's Rows, as device words).
struct BertInputs {
  sdk::Tensor tokens, positions, segments;  // u32 [T]
  sdk::Tensor sequence_ids;                 // f32 [rows x seq]: the packed attention mask
  sdk::Tensor mlm_positions, mlm_labels;    // u32 [rows x P]: token index r seq + p; word id
  sdk::Tensor nsp_positions, nsp_labels;    // u32 [rows x K]: each sequence's [CLS]; 0 or 1
};

struct BertWeights {
  sdk::Tensor word_t, position_t, segment_t;    // f16 [H x V], f32 [H x seq], [H x 2]
  sdk::Tensor embedding_gamma, embedding_beta;  // f32 [H]
  std::vector<sdk::ops::EncoderWeights> layers;
  sdk::Tensor mlm_dense, mlm_bias, mlm_gamma, mlm_beta, mlm_decoder_bias;  // f16 [H x H]; f32
  sdk::Tensor pooler, pooler_bias, nsp, nsp_bias;  // f16 [H x H], f32 [H], f16 [H x 2], f32 [2]
};

struct BertGrads {
  // The word embedding's gradient comes in two parts, added to its sum where each is made: the
  // lookup's (word_t, with the embedding's) and the MLM decoder's (word_t_tied, with the heads').
  sdk::Tensor word_t, word_t_tied, position_t, segment_t, embedding_gamma, embedding_beta;
  std::vector<sdk::ops::EncoderGrads> layers;
  sdk::Tensor mlm_dense, mlm_bias, mlm_gamma, mlm_beta, mlm_decoder_bias;
  sdk::Tensor pooler, pooler_bias, nsp, nsp_bias;
};

// A step range [begin, end) of BertModel::steps.
struct StepRange {
  size_t begin = 0, end = 0;
};

// One chip's part of the pipeline: its layers, the tensors its neighbours' copies fill and read,
// and its steps. Stage 0 also holds the embeddings; the heads run on chip 0 after the last
// stage (their weights are tied to the embedding's).
struct BertStage {
  unsigned chip = 0;
  size_t first_layer = 0, layers = 0;
  sdk::Tensor input;    // its first layer's x: stage 0's is the embeddings' output
  sdk::Tensor mask;     // its layers' sequence ids (stage 0: the inputs')
  sdk::Tensor output;   // its last layer's y
  sdk::Tensor doutput;  // its last layer's dy, a variable of its own (S > 1)
  sdk::Tensor dinput;   // its first layer's dx (stage 0: the embeddings' gradient, unused)
  StepRange forward, backward;
};

struct BertModel {
  BertInputs inputs;
  BertWeights weights;
  sdk::Tensor mlm_loss, nsp_loss;  // f32 per slot (0 for an unused one)
  BertGrads grads;
  std::vector<sdk::ops::LayerStep> steps;  // forward, losses, backward
  size_t forward_steps = 0;                // the first steps: the forward pass and the losses
  std::vector<BertStage> stages;
  sdk::Tensor heads_input;   // the last layer's y as the heads read it (on chip 0)
  sdk::Tensor heads_dinput;  // its gradient, which the last stage's backward pass takes
  StepRange heads;           // the heads' forward and backward, from heads_input to its gradient
  // The embeddings' forward pass (stage 0's first steps) and their gradients (its last).
  StepRange embeddings, embeddings_backward;
  // Per layer: its weights' gradients are complete after steps [0, this), the end of its
  // backward pass.
  std::vector<size_t> layer_grads_ready;
};

struct BertOptions {
  std::string name = "bert";
  // The layers on each chip of the replica (empty: every layer on one chip, the graph's only).
  std::vector<size_t> layers_per_chip;
  float epsilon = 1e-12f;
  // Each product's share of a tile's memory: one for every chip, or one a chip of a replica
  // (chip 0's also for the embeddings and the heads).
  std::vector<double> available_memory_proportion = {0.6};
  double memory_proportion(unsigned chip) const {
    return available_memory_proportion.size() == 1 ? available_memory_proportion[0]
                                                   : available_memory_proportion.at(chip);
  }
  // The heads' products' share (0: the first chip's). The tied decoder's weight gradient
  // ([H x V] f32, 85 KB a tile at BERT-Large's size) needs more than the layers beside it.
  double heads_memory_proportion = 0;
  double heads_proportion() const {
    return heads_memory_proportion > 0 ? heads_memory_proportion : memory_proportion(0);
  }
};

// Adds the model's inputs, weights and steps to a graph (every tensor named options.name +
// "..."); refused (GraphError) for shapes the model cannot take.
BertModel build_bert(sdk::Graph& graph, const BertShape& shape, const BertOptions& options = {});

// The host's run of the same steps.
struct BertInputValues {
  std::vector<uint32_t> tokens, positions, segments;
  std::vector<float> sequence_ids;
  std::vector<uint32_t> mlm_positions, mlm_labels, nsp_positions, nsp_labels;
};
struct BertWeightValues {
  std::vector<uint16_t> word_t;
  std::vector<float> position_t, segment_t, embedding_gamma, embedding_beta;
  std::vector<sdk::ops::reference::EncoderValues> layers;
  std::vector<uint16_t> mlm_dense;
  std::vector<float> mlm_bias, mlm_gamma, mlm_beta, mlm_decoder_bias;
  std::vector<uint16_t> pooler;
  std::vector<float> pooler_bias;
  std::vector<uint16_t> nsp;
  std::vector<float> nsp_bias;
};
struct BertGradValues {
  std::vector<float> word_t, word_t_tied, position_t, segment_t, embedding_gamma, embedding_beta;
  std::vector<sdk::ops::reference::EncoderGradValues> layers;
  std::vector<float> mlm_dense, mlm_bias, mlm_gamma, mlm_beta, mlm_decoder_bias;
  std::vector<float> pooler, pooler_bias, nsp, nsp_bias;
};
struct BertValues {
  std::vector<float> mlm_loss, nsp_loss;
  BertGradValues grads;
};
BertValues bert_reference(const BertModel& model, const BertShape& shape,
                          const BertInputValues& inputs, const BertWeightValues& weights,
                          const BertOptions& options = {});

// Every parameter in one fixed order (the embeddings, each layer's, the heads'): its name
// ("layer0.qkv_t"), the tensor the model reads, its gradient and the stage whose backward pass
// makes it (kHeadsStage: the heads'); and the host's values and gradients in the same order (an
// f16 weight's bits, else its f32 values). The word embedding's second part (word_t_tied) is
// not in the list: it comes from the heads.
constexpr unsigned kHeadsStage = ~0u;
struct ParameterRef {
  std::string name;
  sdk::Tensor weight, grad;
  unsigned stage = 0;
  size_t ready = 0;  // the gradient is complete after the model's steps [0, ready)
};
std::vector<ParameterRef> parameters(const BertModel& model);
struct ParameterValues {
  std::vector<float>* f32 = nullptr;
  std::vector<uint16_t>* f16 = nullptr;
};
std::vector<ParameterValues> parameter_values(BertWeightValues& weights);
std::vector<const std::vector<float>*> gradient_values(const BertGradValues& grads);

// A micro-batch of rows as the device's inputs: rows [first, first + shape.rows) of `rows`,
// unused MLM and NSP slots labelled ops::kIgnoredLabel.
BertInputValues input_values(const Rows& rows, size_t first, const BertShape& shape);

}  // namespace ipu::examples::bert
