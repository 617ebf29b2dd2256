// A transformer encoder layer (BERT's), forward and backward, built from the operator library
// (docs/ops.md): the planned AMP products and the elementwise and row operations, as a user
// would write it with poplin and popnn. Every operation of the layer is one labelled step, so
// that a benchmark can time each (bench/transformer_layer) and a program can run them all in
// one Sequence.
//
// Layout. The batch is `sequences` rows of `seq` tokens, token-major: x [T x H], T = sequences x
// seq. Attention works a sequence at a time, feature-major, so that each head is a contiguous
// view: the fused projection gives qkv^T [3H x S] per sequence (rows: queries, keys, values,
// each head's 64 features together), whose thirds are [heads x d x S] views for the grouped
// products of every head at once. Matmul operands are f16 (each product's f32 result cast with
// the hardware's rounding, or produced as f16 by the product); the rest is f32.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "sdk/ops/elementwise.h"
#include "sdk/ops/matmul.h"
#include "sdk/ops/steps.h"

namespace ipu::sdk::ops {

struct EncoderShape {
  size_t hidden = 1024, heads = 16, ffn = 4096, seq = 512, sequences = 2;
  size_t tokens() const { return seq * sequences; }
  size_t head_size() const { return hidden / heads; }
};

struct EncoderOptions {
  float epsilon = 1e-12f;                    // the layer norms'
  double available_memory_proportion = 0.6;  // each product's (MatmulOptions)
  std::string name = "layer";                // prefix of every tensor, step and error
  // The tiles the layer's tensors and operations use: first_tile .. first_tile + tiles - 1 (0:
  // every tile of the graph from first_tile), e.g. one chip of a pipeline's replica.
  unsigned first_tile = 0, tiles = 0;
  // The layer's vectors (biases, norms' scales and shifts) lie in pieces of up to
  // kEncoderVectorPiece elements, a tile each, from this tile of the layer's (counted from
  // first_tile): the layers of one chip start theirs one after another's
  // (encoder_vector_pieces), so that no tile holds every layer's.
  unsigned vector_tile = 0;
  // The weight matrices spread evenly over all the layer's tiles (whole f16 pairs a tile)
  // instead of by whole rows (create_matmul_input): a [1,024 x N] matrix by rows takes 1,024 of
  // a chip's 1,472 tiles, so a chip of many layers holds their weights and gradient sums on
  // those alone. Each product's gather moves pieces of rows instead.
  bool spread_weights = false;
  // Packed rows (several sequences in each of the batch's rows): the mask holds each token's
  // sequence id in its row instead, and a token attends only within its own sequence
  // (softmax_rows_packed).
  bool packed = false;
};

constexpr size_t kEncoderVectorPiece = 1024;
// The layer's vectors' name suffixes, in the order their pieces are laid out.
inline constexpr const char* kEncoderVectors[] = {
    ".out_bias", ".ffn_in_bias", ".ffn_out_bias", ".gamma1", ".beta1", ".gamma2", ".beta2"};
// The tiles a layer's vectors take, a piece each (BERT-Large's: 10).
size_t encoder_vector_pieces(const EncoderShape& shape);

// The layer's parameters: f16 matrices laid out for the forward products, f32 vectors.
struct EncoderWeights {
  Tensor qkv_t;                  // [3H x H]: W^T of the query, key and value projections, stacked
  Tensor out, out_bias;          // [H x H], [H]: attention's output projection
  Tensor ffn_in, ffn_in_bias;    // [H x F], [F]
  Tensor ffn_out, ffn_out_bias;  // [F x H], [H]
  Tensor gamma1, beta1, gamma2, beta2;  // [H]: the two layer norms
};
// Adds the parameters to a graph, mapped over its tiles (named options.name + ".qkv_t", ...).
EncoderWeights add_encoder_weights(Graph& graph, const EncoderShape& shape,
                                   const EncoderOptions& options = {});

// What the forward pass gives and keeps for the backward pass (all scratch but y).
struct EncoderForward {
  Tensor y;                     // [T x H] f32: the layer's output
  Tensor x16;                   // x as f16
  std::vector<Tensor> qkv_t;    // a sequence's [3H x S] f16
  std::vector<Tensor> probs;    // a sequence's attention weights [heads x S x S] f32 ...
  std::vector<Tensor> probs16;  // ... and as f16
  Tensor context_t;             // [H x T] f16: every head's output, each sequence's S in turn
  Tensor residual1;             // [T x H] f32: attention's output + x, into the first norm
  LayerNorm norm1;
  Tensor norm1_16;   // its output as f16
  Tensor hidden;     // [T x F] f32: the first feed-forward product + bias
  Tensor act16;      // GeLU of it, f16
  Tensor residual2;  // [T x H] f32: into the second norm
  LayerNorm norm2;
};
// The forward pass of x (f32 [T x H], mapped) with an additive attention mask (f32 [sequences x
// seq]: 0 to attend, a large negative value to ignore a key, for each sequence; with
// options.packed, each token's sequence id within its row). Refused
// (GraphError naming the tensor) for other shapes or types, or a hidden size the heads do not
// divide.
EncoderForward encoder_forward(Graph& graph, std::vector<LayerStep>& steps,
                               const EncoderShape& shape, const EncoderWeights& weights, Tensor x,
                               Tensor mask, const EncoderOptions& options = {});

// Gradients: of the input, and of every parameter (f32, shaped as the parameter).
struct EncoderGrads {
  Tensor dx;
  Tensor qkv_t, out, out_bias, ffn_in, ffn_in_bias, ffn_out, ffn_out_bias;
  Tensor gamma1, beta1, gamma2, beta2;
};
// The backward pass from dy (f32 [T x H]), from what the forward pass kept.
EncoderGrads encoder_backward(Graph& graph, std::vector<LayerStep>& steps,
                              const EncoderShape& shape, const EncoderWeights& weights,
                              const EncoderForward& forward, Tensor dy,
                              const EncoderOptions& options = {});

namespace reference {

// The layer on the host, in the same operations and the same order as the tiles (each from
// elementwise.h's and matmul.h's references), so that its results equal theirs bit for bit.
// The steps are those the graph's layer made (each product's plan, each column sum's partials).
// f16 tensors are their bits.
struct EncoderValues {
  std::vector<uint16_t> qkv_t, out, ffn_in, ffn_out;
  std::vector<float> out_bias, ffn_in_bias, ffn_out_bias, gamma1, beta1, gamma2, beta2;
};
struct LayerNormValues {
  std::vector<float> y, mean, inv_std;
};
struct EncoderForwardValues {
  std::vector<float> y;
  std::vector<uint16_t> x16;
  std::vector<std::vector<uint16_t>> qkv_t, probs16;
  std::vector<uint16_t> context_t;  // [H x T]
  std::vector<std::vector<float>> probs;
  std::vector<float> residual1;
  LayerNormValues norm1;
  std::vector<uint16_t> norm1_16;
  std::vector<float> hidden;
  std::vector<uint16_t> act16;
  std::vector<float> residual2;
  LayerNormValues norm2;
};
struct EncoderGradValues {
  std::vector<float> dx, qkv_t, out, out_bias, ffn_in, ffn_in_bias, ffn_out, ffn_out_bias;
  std::vector<float> gamma1, beta1, gamma2, beta2;
};
EncoderForwardValues encoder_forward(const std::vector<LayerStep>& steps, const EncoderShape& shape,
                                     const EncoderValues& weights, const std::vector<float>& x,
                                     const std::vector<float>& mask,
                                     const EncoderOptions& options = {});
EncoderGradValues encoder_backward(const std::vector<LayerStep>& steps, const EncoderShape& shape,
                                   const EncoderValues& weights,
                                   const EncoderForwardValues& forward,
                                   const std::vector<float>& dy,
                                   const EncoderOptions& options = {});

}  // namespace reference

}  // namespace ipu::sdk::ops
