// Models as lists of labelled steps (sdk/ops/steps.h).
#include "sdk/ops/steps.h"

#include <stdexcept>

namespace ipu::sdk::ops {

Program sequence_of(const std::vector<LayerStep>& steps) {
  Program all = Sequence({});
  for (const LayerStep& s : steps) all.body.push_back(s.program);
  return all;
}

double flops_of(const std::vector<LayerStep>& steps) {
  double f = 0;
  for (const LayerStep& s : steps) f += s.flops;
  return f;
}

Tensor StepList::matmul(const std::string& label, Tensor a, Tensor b, bool ta, bool tb,
                        DType output, bool kept, bool in_blocks, bool row_blocks) {
  const TensorInfo& ai = g_.tensor(a);
  const TensorInfo& bi = g_.tensor(b);
  const bool grouped = ai.shape.size() == 3;
  const size_t d = grouped ? 1 : 0;
  const size_t m = ta ? ai.shape[d + 1] : ai.shape[d], k = ta ? ai.shape[d] : ai.shape[d + 1];
  const size_t n = tb ? bi.shape[d] : bi.shape[d + 1];
  const size_t groups = grouped ? ai.shape[0] : 1;
  std::optional<MatmulPlan> plan;
  const Tensor c =
      add(label, 2.0 * static_cast<double>(groups * m * n * k),
          [&](Program& p, const std::string& name) {
            MatmulOptions o;
            o.transpose_a = ta;
            o.transpose_b = tb;
            o.output = output;
            o.available_memory_proportion = memory_;
            o.first_tile = first_tile_;
            o.tiles = tiles_;
            o.name = name;
            o.rows_output = !in_blocks;  // for the row operations and products
            o.row_blocks = row_blocks;
            const MatmulShape shape{m, k, n};
            const OperandLayout layout = layout_of(g_, a, b);
            plan = grouped ? plan_grouped_matmul(g_.target(), shape, groups, o, nullptr, &layout)
                           : plan_matmul(g_.target(), shape, o, nullptr, &layout);
            const Tensor result = grouped ? grouped_matmul(g_, p, a, b, o, &*plan)
                                          : ops::matmul(g_, p, a, b, o, &*plan);
            if (!kept) g_.set_scratch(result);
            return result;
          });
  steps_.back().plan = plan;
  return c;
}

Tensor StepList::column_sums(const std::string& label, Tensor x) {
  const ColumnSums sums = add(label, 0.0, [&](Program& p, const std::string& name) {
    return reduce_columns(g_, p, x, name);
  });
  partial_rows(sums.partial_rows);
  return sums.sum;
}

CrossEntropy StepList::cross_entropy(const std::string& label, Tensor logits, Tensor labels,
                                     float grad_scale) {
  const CrossEntropy out = add(label, 0.0, [&](Program& p, const std::string& name) {
    return ops::cross_entropy(g_, p, logits, labels, grad_scale, name);
  });
  steps_.back().row_slices = out.slices;
  return out;
}

namespace reference {

const LayerStep& RecordedSteps::operator[](const std::string& label) const {
  const std::string full = prefix_ + "." + label;
  for (const LayerStep& s : steps_)
    if (s.label == full) return s;
  throw std::invalid_argument(fmt::format("host reference: no step '{}' in the graph's", full));
}

std::vector<float> RecordedSteps::product(const std::string& label, const std::vector<uint16_t>& a,
                                          const std::vector<uint16_t>& b, size_t groups) const {
  const LayerStep& step = (*this)[label];
  if (!step.plan)
    throw std::invalid_argument(fmt::format("host reference: step '{}' is no product", step.label));
  std::vector<float> c;
  const size_t as = a.size() / groups, bs = b.size() / groups;
  for (size_t g = 0; g < groups; ++g)
    append(c, matmul_reference(*step.plan, part(a, g * as, (g + 1) * as),
                               part(b, g * bs, (g + 1) * bs)));
  return c;
}

}  // namespace reference

}  // namespace ipu::sdk::ops
