// Elementwise operations and operations along a matrix's rows (docs/ops.md), as popops and popnn
// offered them: each adds its vertices and programs to `program` (a Sequence) and returns its
// result, laid out as its first operand is. Arithmetic is f32, one rounding per operation in a
// fixed order; the `reference` functions compute the same on the host, bit for bit.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "sdk/graph/graph.h"

namespace ipu::sdk::ops {

enum class BinaryOp : uint8_t {
  kAdd,
  kSub,
  kMul,
  kMulGeluGrad,  // a x GeLU'(b): GeLU's backward pass, a the gradient and b its input
  kMulTanhGrad,  // a x (1 - b b): tanh's backward pass, a the gradient and b tanh's output
};
enum class UnaryOp : uint8_t { kRelu, kGelu, kScale, kExp, kTanh };
enum class ReduceOp : uint8_t { kSum, kMax, kMean, kSumSquares };

// out = a op b, f32. `b` has a's shape, or is a vector of a's last dimension (a bias: added to
// every row). Refused (GraphError naming the tensors): other types or shapes, unmapped tensors.
Tensor binary(Graph& graph, Program& program, BinaryOp op, Tensor a, Tensor b,
              const std::string& name);
// a = a op b, as binary without a tensor for the result: a gradient's sum over micro-batches
// takes no second copy of itself.
void binary_in_place(Graph& graph, Program& program, BinaryOp op, Tensor a, Tensor b,
                     const std::string& name);
// A feed-forward block's bias and GeLU in one pass: sum = a + bias (f32; bias a vector of a's
// last dimension, added to every row) and gelu16 = GeLU(sum) rounded to f16 (nearest even), the
// bits of binary's kAdd, unary's kGelu and cast to f16 one after the other, each laid out as
// a with its pieces moved to even starts (as cast's f16 result). The sum is what GeLU's
// backward pass takes (kMulGeluGrad). Refused (GraphError naming the tensors): a bias that is
// not a vector of a's last dimension, types other than f32, unmapped tensors.
struct BiasGelu {
  Tensor sum, gelu16;
};
BiasGelu bias_gelu(Graph& graph, Program& program, Tensor a, Tensor bias, const std::string& name);
// A bias added to a product's rows and the residual after it, in one pass: out = (a + bias) + x
// (f32; bias a vector of a's last dimension, x of a's shape), the bits of binary's kAdd twice,
// laid out as x (a and bias brought beside each of x's pieces as binary brings its b). Refused
// (GraphError naming the tensors): a bias that is not a vector of a's last dimension, x not of
// a's shape, types other than f32, unmapped tensors.
Tensor bias_residual(Graph& graph, Program& program, Tensor a, Tensor bias, Tensor x,
                     const std::string& name);
// GeLU's backward pass with the f16 copy the next products take, in one pass: dx = grad x
// gelu'(x) (f32, what the bias's gradient sums) and dx16 = dx rounded to f16 (nearest even),
// the bits of binary's kMulGeluGrad and cast to f16 one after the other, both laid out as grad
// with its pieces moved to even starts. x is read where grad's elements lie (a copy of it so
// laid out first, when its mapping differs). Refused (GraphError naming the tensors): x not of
// grad's shape, types other than f32, unmapped tensors.
struct GeluGrad {
  Tensor dx, dx16;
};
GeluGrad gelu_grad(Graph& graph, Program& program, Tensor grad, Tensor x, const std::string& name);
// out = f(a), f32; `k` is the factor of kScale.
Tensor unary(Graph& graph, Program& program, UnaryOp op, Tensor a, const std::string& name,
             float k = 1.0f);
// a = f(a), as unary without a tensor for the result (a gradient's sum cleared, kScale by 0).
void unary_in_place(Graph& graph, Program& program, UnaryOp op, Tensor a, const std::string& name,
                    float k = 1.0f);
// f32 -> f16 (the hardware's conversion, nearest even, or with `stochastic` its stochastic
// rounding, the random bits from the tiles' PRNG seeded for each of the result's element
// ranges, element_ranges(result, 2), from `seed`) or f16 -> f32 (exact). An f16 result is laid
// out as `a`, with each tile's piece starting at an even element.
struct CastOptions {
  bool stochastic = false;
  uint64_t seed = 0;
  // Stochastic rounding only: a u32 [1] tensor (a step counter) salting each range's PRNG state
  // when the cast runs (ipu_ops_salt_state), so that one compiled cast draws new bits each step;
  // or its copies on tiles (copies_on_tiles) covering the result's.
  std::optional<Tensor> step;
};
Tensor cast(Graph& graph, Program& program, Tensor a, DType to, const std::string& name,
            const CastOptions& options = {});

// Along the rows of an f32 matrix x [R x C]: each row on one tile (a row split over tiles is
// first gathered to one, by an exchange), reduced from left to right.
Tensor reduce_rows(Graph& graph, Program& program, ReduceOp op, Tensor x, const std::string& name);
// The sum of each column of an f32 matrix x [R x C] (a bias's gradient): each tile's ranges of
// whole rows summed in order (partial_rows rows each), then those partials added across tiles
// by a tree of kPartialFanIn a group, in order within each group (reference::sum_partials).
// Rows laid out in slices (cross_entropy) are each a partial of one row.
constexpr size_t kPartialFanIn = 32;
struct ColumnSums {
  Tensor sum;  // [C]
  std::vector<size_t> partial_rows;
};
ColumnSums reduce_columns(Graph& graph, Program& program, Tensor x, const std::string& name);
// Softmax of each row of x + mask (mask: [C], added to every row; the attention mask's large
// negative values for padding), with the row's max subtracted before e^x: [R x C]. With a scale
// other than 1, of x x scale + mask (attention's 1 / sqrt(d)): the product rounded, then the sum,
// as a scaling step before it would round them, in the same pass over the row. With `rounded`,
// also the result rounded to f16 (nearest even, as cast): *rounded [R x C], laid out as the
// result, written in the division's pass (a cast after it where C is odd).
Tensor softmax_rows(Graph& graph, Program& program, Tensor x, std::optional<Tensor> mask,
                    const std::string& name, float scale = 1.0f, Tensor* rounded = nullptr);
// Softmax of the attention scores of packed sequences (several sequences in a row of C tokens):
// row r of x [R x C] is the query of token r mod C, and sequence_ids [C] (f32 whole numbers)
// says which of the row's sequences each token is in. Key c is seen where its id equals the
// query's, and kMaskedOut is added to the score elsewhere: packed BERT's block-diagonal mask,
// without a [C x C] tensor. The same arithmetic as softmax_rows with that row's mask.
constexpr float kMaskedOut = -10000.0f;
Tensor softmax_rows_packed(Graph& graph, Program& program, Tensor x, Tensor sequence_ids,
                           const std::string& name, float scale = 1.0f, Tensor* rounded = nullptr);
struct LayerNorm {
  Tensor y;        // [R x C]
  Tensor mean;     // [R]
  Tensor inv_std;  // [R]: 1 / sqrt(var + eps), for the backward pass
};
// Layer norm of each row: ((x - mean) / sqrt(var + eps)) x gamma + beta; gamma, beta: [C].
LayerNorm layer_norm(Graph& graph, Program& program, Tensor x, Tensor gamma, Tensor beta, float eps,
                     const std::string& name);

// The backward passes. Softmax: dx = y (dy - sum(dy y)) per row, y the forward's result. With a
// scale other than 1, dx x scale (rounded); with out = kF16, that rounded to f16 (nearest even,
// as cast rounds it): attention's scaling step and cast in the same pass over the row.
Tensor softmax_grad_rows(Graph& graph, Program& program, Tensor y, Tensor dy,
                         const std::string& name, float scale = 1.0f, DType out = DType::kF32);
struct LayerNormGrad {
  Tensor dx;      // [R x C]
  Tensor dgamma;  // [C]: over the rows, each tile's partial sums (rows in order, from 0), then
  Tensor dbeta;   //      the partials added across tiles as reduce_columns adds them (a tree);
                  //      partial_rows says how many rows each partial had
  std::vector<size_t> partial_rows;
};
LayerNormGrad layer_norm_grad(Graph& graph, Program& program, Tensor x, Tensor dy, Tensor gamma,
                              const LayerNorm& forward, const std::string& name);

// Dropout: each element kept with probability 1 - rate and scaled by 1 / (1 - rate), else 0;
// the random bits are the tiles' PRNG, seeded for each of the operation's element ranges
// (element_ranges) from `seed` and the range's first element. The same seed on a tensor of the
// same mapping (the gradient) drops the same elements.
Tensor dropout(Graph& graph, Program& program, Tensor x, float rate, uint64_t seed,
               const std::string& name);
// The element ranges, in order, that the elementwise operations give one vertex each (of whole
// words of f16, grain 2, for a cast's f16 result).
std::vector<std::pair<size_t, size_t>> element_ranges(const Graph& graph, Tensor x,
                                                      size_t grain = 1);

// Cross-entropy of each row of logits [R x C] with its label (u32 [R]): loss [R] =
// logsumexp(row) - row[label], and dlogits = (softmax(row) - onehot(label)) x grad_scale. The
// label kIgnoredLabel gives loss 0 and a zero gradient (a padding slot, as PyTorch's
// ignore_index); any other label outside the row gives a NaN loss. Logits laid out in row
// slices (each row cut at the same columns over tiles of its own, as a product's result of
// rows over 32 KB is) stay so: each slice's max and sum of e^(x - m) go to the row's first tile
// and its max and total come back, so no tile holds a whole row. Each slice is cut over the
// tile's six workers, and `slices` lists every row's slices' first columns ({0} for rows taken
// whole): the host reference adds the slices' sums in that order.
constexpr uint32_t kIgnoredLabel = 0xffffffffu;
struct CrossEntropy {
  Tensor loss, dlogits;
  std::vector<size_t> slices;
};
CrossEntropy cross_entropy(Graph& graph, Program& program, Tensor logits, Tensor labels,
                           float grad_scale, const std::string& name);

// A copy of the vector v on each listed tile: [tiles x n], row i on tiles[i] (not scratch), for
// operations that read a step's scalars on every tile (adam's corrections, a cast's step):
// given such a tensor, they read each tile's row instead of multicasting v again. Sent in two
// exchange phases beyond 64 tiles (to a tile of each group of 64, then from each to the rest
// of its group), so that no tile holds a destination list of every tile.
Tensor copies_on_tiles(Graph& graph, Program& program, Tensor v, const std::vector<unsigned>& tiles,
                       const std::string& name);

// Optimizers, updating w in place from its gradient g (f32 tensors of one shape; g, m and v are
// copied beside w first when laid out otherwise). Adam: m = b1 m + (1 - b1) g, v = b2 v +
// (1 - b2) g^2, u = (m c1) / (sqrt(v c2) + eps) + weight_decay w, w -= lr u, with the bias
// corrections c1 = 1 / (1 - b1^t), c2 = 1 / (1 - b2^t) read from `corrections` (f32 [2], which
// the host or the program sets each step, or a copy a tile from copies_on_tiles). LAMB also scales
// the step by the tensor's trust ratio ||w|| / ||u|| (1 when either is 0): each element range's
// sums of squares, then the ranges' in order.
struct AdamOptions {
  float learning_rate = 1e-3f, beta1 = 0.9f, beta2 = 0.999f, epsilon = 1e-6f;
  float weight_decay = 0.0f;
  bool lamb = false;
  // LAMB on a shard of the tensor, each replica holding one (replicated tensor sharding): the
  // two sums of squares are added over the replicas (AllReduce, on the IPU-Links) before the
  // trust ratio, so that every shard takes the whole tensor's.
  bool norms_across_replicas = false;
};
void adam(Graph& graph, Program& program, Tensor w, Tensor g, Tensor m, Tensor v,
          Tensor corrections, const AdamOptions& options, const std::string& name);

// A gradient added to its sum over micro-batches, in place: sum += grad, grad f32 of sum's
// shape (copied beside sum first when laid out otherwise). An f32 sum adds as binary_in_place
// does. An f16 sum (Graphcore's BERT accumulates its gradients in f16: half the bytes of f32
// sums on every tile) is widened exactly, added in f32 and rounded once to f16: to nearest
// even, or with `stochastic` by the hardware's stochastic rounding, its random bits from the
// PRNG seeded for each of the sum's element ranges (element_ranges(sum, 2)) from `seed` and
// salted with that range's count of earlier calls (ipu_ops_salt_state): each micro-batch's
// addition draws new bits. The counts live in a u32 tensor "<name>.draws" ([ranges], each on
// its range's tile), zero at load.
struct AccumulateOptions {
  bool stochastic = false;
  uint64_t seed = 0;
};
void accumulate(Graph& graph, Program& program, Tensor sum, Tensor grad, const std::string& name,
                const AccumulateOptions& options = {});
// A gradient's sum cleared after the update, in place: an f16 or f32 tensor set to +0, whatever
// it held (a sum that overflowed to infinity or NaN starts the next step clean; scaling by 0
// kept NaN and made -0 of a negative sum).
void zero(Graph& graph, Program& program, Tensor t, const std::string& name);

// y = x^T for an f32 matrix x [R x C]: y [C x R], its rows spread over the tiles x uses (whole
// rows each). Each tile gathers its columns of every row of x and writes them as its rows of y.
// With x's rows whole on 64 tiles or more and y on as many, the gather goes in two phases
// through tiles that regroup a group of rows by destination, each tile taking part in about
// 4 sqrt(tiles) actions; otherwise each tile receives a run of every row (R runs, about R x 120
// cycles, the runtime's action gap).
Tensor transpose(Graph& graph, Program& program, Tensor x, const std::string& name);

// Embedding lookup and its gradient, feature-major: the table is stored transposed, [H x V]
// (row h holds feature h of every entry), so that each tile owns whole features and looks up
// every index on its own, with no exchange of data-dependent rows. The lookup gives out^T
// [H x R] (out[r] = table[indices[r]]; an index >= V gives NaNs), f32 from an f32 or an f16
// table (an f16 entry widened, exactly), which a matmul takes with transpose_a; the gradient
// gives dtable^T [H x V] from dout^T [H x R]: each entry's sum, from 0, of the rows r (in
// order) that looked it up.
Tensor embedding_lookup(Graph& graph, Program& program, Tensor table_t, Tensor indices,
                        const std::string& name);
// With `like` (a tensor [H x V], e.g. the sum the gradient is added to) the gradient is laid out
// as it is, each tile computing its own entries from its features' rows of dout^T: no tile then
// holds a whole feature row (BERT-Large's are 122 KB) nor a second copy beside the sum.
Tensor embedding_grad(Graph& graph, Program& program, Tensor dout_t, Tensor indices, size_t entries,
                      const std::string& name, std::optional<Tensor> like = std::nullopt);

// The same computations on the host, in the same order: the tests' references.
namespace reference {
std::vector<float> binary(BinaryOp op, const std::vector<float>& a, const std::vector<float>& b);
std::vector<float> unary(UnaryOp op, const std::vector<float>& a, float k = 1.0f);
std::vector<uint16_t> cast_to_f16(const std::vector<float>& a);
// f16 bits widened to f32, exactly (a NaN to the canonical one), as the tiles widen them.
std::vector<float> widen_f16(const std::vector<uint16_t>& a);
// Stochastic rounding as docs/xipu-model.md defines it, the random bits as the tiles draw them.
std::vector<uint16_t> cast_to_f16_stochastic(const std::vector<float>& a,
                                             const std::vector<std::pair<size_t, size_t>>& ranges,
                                             uint64_t seed,
                                             std::optional<uint32_t> step = std::nullopt);
// accumulate's f16 sum after its `draw`-th call (from 0): sum + grad in f32, rounded to f16 to
// nearest even, or with `stochastic` as cast_to_f16_stochastic rounds with `draw` as the step.
std::vector<uint16_t> accumulate_f16(const std::vector<uint16_t>& sum,
                                     const std::vector<float>& grad,
                                     const std::vector<std::pair<size_t, size_t>>& ranges,
                                     bool stochastic, uint64_t seed, uint32_t draw);
std::vector<float> reduce_rows(ReduceOp op, const std::vector<float>& x, size_t columns);
// Rows of `columns` added in groups of kPartialFanIn, in order, then the groups' sums so, to one.
std::vector<float> sum_partials(std::vector<float> parts, size_t columns);
std::vector<float> reduce_columns(const std::vector<float>& x, size_t columns,
                                  const std::vector<size_t>& partial_rows);
std::vector<float> softmax_rows(const std::vector<float>& x, const std::vector<float>* mask,
                                size_t columns, float scale = 1.0f);
std::vector<float> softmax_rows_packed(const std::vector<float>& x,
                                       const std::vector<float>& sequence_ids, size_t columns,
                                       float scale = 1.0f);
// y, then mean and inv_std per row, appended.
std::vector<float> layer_norm(const std::vector<float>& x, const std::vector<float>& gamma,
                              const std::vector<float>& beta, float eps, size_t columns,
                              std::vector<float>* mean, std::vector<float>* inv_std);
std::vector<float> softmax_grad_rows(const std::vector<float>& y, const std::vector<float>& dy,
                                     size_t columns, float scale = 1.0f);
// dx; and dgamma, dbeta over partials of partial_rows rows each.
std::vector<float> layer_norm_grad(const std::vector<float>& x, const std::vector<float>& dy,
                                   const std::vector<float>& gamma, const std::vector<float>& mean,
                                   const std::vector<float>& inv_std, size_t columns,
                                   const std::vector<size_t>& partial_rows,
                                   std::vector<float>* dgamma, std::vector<float>* dbeta);
std::vector<float> dropout(const std::vector<float>& x,
                           const std::vector<std::pair<size_t, size_t>>& ranges, float rate,
                           uint64_t seed);
// dlogits; loss per row appended to `loss`. Each row in slices from the columns `slices` lists:
// the max of the slices' maxes; the slices' sums of e^(x - m), each from 0, added from 0 in
// order, as the label's value is (0 from the slices without it).
std::vector<float> cross_entropy(const std::vector<float>& logits,
                                 const std::vector<uint32_t>& labels, size_t columns,
                                 float grad_scale, std::vector<float>* loss,
                                 const std::vector<size_t>& slices = {0});
// table_t [H x V], out^T [H x R].
std::vector<float> embedding_lookup(const std::vector<float>& table_t, size_t entries,
                                    const std::vector<uint32_t>& indices);
std::vector<float> embedding_grad(const std::vector<float>& dout_t,
                                  const std::vector<uint32_t>& indices, size_t entries);
// w, m and v updated in place over the element ranges (element_ranges of w).
void adam(std::vector<float>& w, const std::vector<float>& g, std::vector<float>& m,
          std::vector<float>& v, const float corrections[2], const AdamOptions& options,
          const std::vector<std::pair<size_t, size_t>>& ranges);
// LAMB in its two halves, for shards whose sums of squares are added over replicas in between
// (AdamOptions::norms_across_replicas): the moments and the direction u, giving the shard's two
// sums (||w||^2, ||u||^2; each range's, then the ranges' in order); then w -= lr ratio u with the
// ratio of the totals.
std::vector<float> lamb_direction(const std::vector<float>& w, const std::vector<float>& g,
                                  std::vector<float>& m, std::vector<float>& v,
                                  std::vector<float>& u, const float corrections[2],
                                  const AdamOptions& options,
                                  const std::vector<std::pair<size_t, size_t>>& ranges);
void lamb_apply(std::vector<float>& w, const std::vector<float>& u,
                const std::vector<float>& totals, const AdamOptions& options);
}  // namespace reference

}  // namespace ipu::sdk::ops
