// A model built as a list of labelled steps, one operation each (the encoder layer,
// transformer.h; BERT, examples/bert): each step's program can be timed on its own
// (bench/transformer_layer), and each records what decides its arithmetic beyond its operands,
// so that a host run of the same operations (RecordedSteps) equals the tiles' bit for bit.
#pragma once

#include <fmt/format.h>

#include <optional>
#include <string>
#include <vector>

#include "sdk/ops/elementwise.h"
#include "sdk/ops/matmul.h"

namespace ipu::sdk::ops {

// One operation: its label ("layer.qkv.s0"), its program, and its flops (a product's 2 m n k; 0
// for the other operations); a product's plan (one group's, for grouped products), how many
// rows each partial sum of a column sum had, and the slices a cross-entropy cut its rows into.
struct LayerStep {
  std::string label;
  Program program;
  double flops = 0;
  std::optional<MatmulPlan> plan;
  std::vector<size_t> partial_rows;
  std::vector<size_t> row_slices;
};
// The steps in one Sequence.
Program sequence_of(const std::vector<LayerStep>& steps);
double flops_of(const std::vector<LayerStep>& steps);

// Builds one step at a time: each operation's program, label and flops.
class StepList {
 public:
  // Steps are labelled name.label; products may take `memory` of a tile
  // (available_memory_proportion) and run on tiles first_tile .. first_tile + tiles - 1 (0:
  // every tile of the graph from first_tile).
  StepList(Graph& g, std::vector<LayerStep>& steps, std::string name, double memory,
           unsigned first_tile = 0, unsigned tiles = 0)
      : g_(g),
        steps_(steps),
        name_(std::move(name)),
        memory_(memory),
        first_tile_(first_tile),
        tiles_(tiles) {}

  // Runs `build(program, label)` into a new step labelled name.label; returns what it returns.
  template <typename Build>
  auto add(const std::string& label, double flops, Build&& build) {
    LayerStep step{fmt::format("{}.{}", name_, label), Sequence({}), flops, std::nullopt, {}, {}};
    auto result = build(step.program, step.label);
    steps_.push_back(std::move(step));
    return result;
  }

  // A product C = op(A) op(B) as its own step (grouped for three-dimensional operands), its
  // result laid out by rows (MatmulOptions::rows_output), or with `in_blocks` where the
  // reduction leaves it (a gradient added to a sum laid out otherwise); C is scratch unless
  // `kept`.
  // `row_blocks`: the result in row blocks where they keep more tiles busy (MatmulOptions).
  Tensor matmul(const std::string& label, Tensor a, Tensor b, bool ta, bool tb, DType output,
                bool kept = false, bool in_blocks = false, bool row_blocks = false);

  // Records the partial sums' rows of the last step's column sums.
  void partial_rows(const std::vector<size_t>& rows) { steps_.back().partial_rows = rows; }

  // A cross-entropy as its own step, the slices of its rows recorded.
  CrossEntropy cross_entropy(const std::string& label, Tensor logits, Tensor labels,
                             float grad_scale);

  // An elementwise or row operation as its own step, its result scratch.
  template <typename Build>
  Tensor op(const std::string& label, Build&& build) {
    return add(label, 0.0, [&](Program& p, const std::string& name) {
      const Tensor t = build(p, name);
      g_.set_scratch(t);
      return t;
    });
  }

  // Column sums of x (a bias's gradient) as a step, with their partials recorded.
  Tensor column_sums(const std::string& label, Tensor x);

 private:
  Graph& g_;
  std::vector<LayerStep>& steps_;
  std::string name_;
  double memory_;
  unsigned first_tile_, tiles_;
};

namespace reference {

template <typename T>
std::vector<T> part(const std::vector<T>& v, size_t begin, size_t end) {
  return std::vector<T>(v.begin() + static_cast<std::ptrdiff_t>(begin),
                        v.begin() + static_cast<std::ptrdiff_t>(end));
}
template <typename T>
void append(std::vector<T>& to, const std::vector<T>& from) {
  to.insert(to.end(), from.begin(), from.end());
}

// A graph's steps by label, for the host's run of the same operations: each product by its
// step's plan, each column sum by its step's partials.
class RecordedSteps {
 public:
  RecordedSteps(const std::vector<LayerStep>& steps, std::string prefix)
      : steps_(steps), prefix_(std::move(prefix)) {}

  // The step labelled prefix.label; throws std::invalid_argument naming it when there is none.
  const LayerStep& operator[](const std::string& label) const;
  // C = op(A) op(B), f16 operands as bits, for each of `groups` groups in turn.
  std::vector<float> product(const std::string& label, const std::vector<uint16_t>& a,
                             const std::vector<uint16_t>& b, size_t groups = 1) const;
  std::vector<uint16_t> product16(const std::string& label, const std::vector<uint16_t>& a,
                                  const std::vector<uint16_t>& b, size_t groups = 1) const {
    return cast_to_f16(product(label, a, b, groups));
  }
  std::vector<float> column_sums(const std::string& label, const std::vector<float>& x,
                                 size_t columns) const {
    return reduce_columns(x, columns, (*this)[label].partial_rows);
  }
  // dlogits, each row's loss appended to `loss`, the rows cut as the step cut them.
  std::vector<float> cross_entropy(const std::string& label, const std::vector<float>& logits,
                                   const std::vector<uint32_t>& labels, size_t columns,
                                   float grad_scale, std::vector<float>* loss) const {
    return reference::cross_entropy(logits, labels, columns, grad_scale, loss,
                                    (*this)[label].row_slices);
  }

 private:
  const std::vector<LayerStep>& steps_;
  std::string prefix_;
};

}  // namespace reference

}  // namespace ipu::sdk::ops
