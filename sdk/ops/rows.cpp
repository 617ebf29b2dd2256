// Operations along the rows of a matrix: reductions, softmax, layer norm and cross-entropy,
// forward and backward (sdk/ops/elementwise.h).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "sdk/ops/elementwise.h"
#include "sdk/ops/op_support.h"
#include "sdk/ops/pieces.h"

namespace ipu::sdk::ops {

Tensor reduce_rows(Graph& g, Program& program, ReduceOp op, Tensor x, const std::string& name) {
  const Tensor rows = f32_rows(g, program, x, name);
  const TensorInfo xi = g.tensor(rows);
  const size_t columns = xi.shape.back();
  const Tensor out = row_vector(g, xi, name);
  const ComputeSet cs = g.add_compute_set(name);
  for (const RowRange& r : row_ranges(xi))
    g.add_vertex(cs, "reduce_rows_op_f32", r.tile,
                 {{"x", g.region(rows, r.first * columns, (r.first + r.rows) * columns)},
                  {"out", g.region(out, r.first, r.first + r.rows)},
                  {"rows", u32(r.rows)},
                  {"columns", u32(columns)},
                  {"op", static_cast<uint32_t>(op)}});
  program.body.push_back(Execute(cs));
  return out;
}

namespace {

enum class SoftmaxMask : uint32_t { kNone = 0, kAdded = 1, kSequenceIds = 2 };

Tensor softmax_with(Graph& g, Program& program, Tensor x, std::optional<Tensor> mask,
                    SoftmaxMask kind, const std::string& name) {
  require_sequence(program, name);
  const TensorInfo xi0 = mapped(g, x, name, "operand");
  require_type(xi0, DType::kF32, name, "operand");
  require_rows(xi0, name);
  const char* what = kind == SoftmaxMask::kSequenceIds ? "sequence ids" : "mask";
  if (mask) {
    const TensorInfo mi = mapped(g, *mask, name, what);
    require_type(mi, DType::kF32, name, what);
    if (mi.shape.size() != 1 || mi.elements != xi0.shape.back())
      throw GraphError(fmt::format("{}: {} '{}' must be a vector of {} (a row of '{}')", name, what,
                                   mi.name, xi0.shape.back(), xi0.name));
  }
  add_ops_codelets(g);
  const Tensor rows = whole_rows(g, program, x, name);
  const TensorInfo xi = g.tensor(rows);
  const size_t columns = xi.shape.back();
  const Tensor out = g.add_variable(DType::kF32, xi.shape, name);
  g.set_tile_mapping(out, xi.mapping);
  const std::vector<unsigned> tiles = tiles_of(xi);
  // Without a mask the codelet never reads its mask field: it points at x.
  const std::optional<Tensor> masks =
      mask ? std::optional<Tensor>(replicate(g, program, *mask, tiles, name + ".mask"))
           : std::nullopt;
  const ComputeSet cs = g.add_compute_set(name);
  for (const RowRange& r : row_ranges(xi)) {
    const Region xr = g.region(rows, r.first * columns, (r.first + r.rows) * columns);
    const size_t at =
        static_cast<size_t>(std::find(tiles.begin(), tiles.end(), r.tile) - tiles.begin());
    g.add_vertex(cs, "softmax_rows_f32", r.tile,
                 {{"x", xr},
                  {"mask", masks ? g.region(*masks, at * columns, (at + 1) * columns) : xr},
                  {"out", g.region(out, r.first * columns, (r.first + r.rows) * columns)},
                  {"rows", u32(r.rows)},
                  {"columns", u32(columns)},
                  {"masked", static_cast<uint32_t>(kind)},
                  {"first_query", u32(r.first % columns)}});
  }
  program.body.push_back(Execute(cs));
  return out;
}

}  // namespace

Tensor softmax_rows(Graph& g, Program& program, Tensor x, std::optional<Tensor> mask,
                    const std::string& name) {
  return softmax_with(g, program, x, mask, mask ? SoftmaxMask::kAdded : SoftmaxMask::kNone, name);
}

Tensor softmax_rows_packed(Graph& g, Program& program, Tensor x, Tensor sequence_ids,
                           const std::string& name) {
  return softmax_with(g, program, x, sequence_ids, SoftmaxMask::kSequenceIds, name);
}

LayerNorm layer_norm(Graph& g, Program& program, Tensor x, Tensor gamma, Tensor beta, float eps,
                     const std::string& name) {
  require_sequence(program, name);
  const TensorInfo xi0 = mapped(g, x, name, "operand");
  require_type(xi0, DType::kF32, name, "operand");
  require_rows(xi0, name);
  for (const auto& [t, which] : {std::pair{gamma, "gamma"}, std::pair{beta, "beta"}}) {
    const TensorInfo vi = mapped(g, t, name, which);
    require_type(vi, DType::kF32, name, which);
    if (vi.shape.size() != 1 || vi.elements != xi0.shape.back())
      throw GraphError(fmt::format("{}: {} '{}' must be a vector of {} (a row of '{}')", name,
                                   which, vi.name, xi0.shape.back(), xi0.name));
  }
  if (!(eps > 0)) throw GraphError(fmt::format("{}: eps must be positive, not {}", name, eps));
  add_ops_codelets(g);
  const Tensor rows = whole_rows(g, program, x, name);
  const TensorInfo xi = g.tensor(rows);
  const size_t columns = xi.shape.back();
  LayerNorm out;
  out.y = g.add_variable(DType::kF32, xi.shape, name);
  g.set_tile_mapping(out.y, xi.mapping);
  out.mean = row_vector(g, xi, name + ".mean");
  out.inv_std = row_vector(g, xi, name + ".inv_std");
  const std::vector<unsigned> tiles = tiles_of(xi);
  const Tensor gammas = replicate(g, program, gamma, tiles, name + ".gamma");
  const Tensor betas = replicate(g, program, beta, tiles, name + ".beta");
  const ComputeSet cs = g.add_compute_set(name);
  for (const RowRange& r : row_ranges(xi)) {
    const size_t at =
        static_cast<size_t>(std::find(tiles.begin(), tiles.end(), r.tile) - tiles.begin());
    g.add_vertex(cs, "layer_norm_rows_f32", r.tile,
                 {{"x", g.region(rows, r.first * columns, (r.first + r.rows) * columns)},
                  {"gamma", g.region(gammas, at * columns, (at + 1) * columns)},
                  {"beta", g.region(betas, at * columns, (at + 1) * columns)},
                  {"y", g.region(out.y, r.first * columns, (r.first + r.rows) * columns)},
                  {"mean_out", g.region(out.mean, r.first, r.first + r.rows)},
                  {"inv_out", g.region(out.inv_std, r.first, r.first + r.rows)},
                  {"rows", u32(r.rows)},
                  {"columns", u32(columns)},
                  {"eps", bits_of(eps)}});
  }
  program.body.push_back(Execute(cs));
  return out;
}

Tensor softmax_grad_rows(Graph& g, Program& program, Tensor y, Tensor dy, const std::string& name) {
  require_sequence(program, name);
  matrix_and_gradient(g, y, dy, name, "y");
  add_ops_codelets(g);
  const Tensor rows = whole_rows(g, program, y, name);
  const TensorInfo yi = g.tensor(rows);
  const Tensor d = laid_like(g, program, dy, yi, name + ".dy");
  const size_t columns = yi.shape.back();
  const Tensor dx = g.add_variable(DType::kF32, yi.shape, name);
  g.set_tile_mapping(dx, yi.mapping);
  const ComputeSet cs = g.add_compute_set(name);
  for (const RowRange& r : row_ranges(yi)) {
    const size_t lo = r.first * columns, hi = (r.first + r.rows) * columns;
    g.add_vertex(cs, "softmax_grad_rows_f32", r.tile,
                 {{"y", g.region(rows, lo, hi)},
                  {"dy", g.region(d, lo, hi)},
                  {"dx", g.region(dx, lo, hi)},
                  {"rows", u32(r.rows)},
                  {"columns", u32(columns)}});
  }
  program.body.push_back(Execute(cs));
  return dx;
}

LayerNormGrad layer_norm_grad(Graph& g, Program& program, Tensor x, Tensor dy, Tensor gamma,
                              const LayerNorm& forward, const std::string& name) {
  require_sequence(program, name);
  matrix_and_gradient(g, x, dy, name, "x");
  add_ops_codelets(g);
  const Tensor rows = whole_rows(g, program, x, name);
  const TensorInfo xi = g.tensor(rows);
  const size_t columns = xi.shape.back();
  const Tensor d = laid_like(g, program, dy, xi, name + ".dy");
  // The forward's statistics, one a row on its row's tile (they are, when x is the forward's).
  const TensorInfo stats_like{name,
                              DType::kF32,
                              {xi.elements / columns},
                              xi.elements / columns,
                              [&] {
                                std::vector<Interval> m;
                                for (const Interval& i : xi.mapping)
                                  m.push_back({i.begin / columns, i.end / columns, i.tile});
                                return m;
                              }(),
                              {}};
  const Tensor mean = laid_like(g, program, forward.mean, stats_like, name + ".mean");
  const Tensor inv = laid_like(g, program, forward.inv_std, stats_like, name + ".inv_std");
  LayerNormGrad out;
  out.dx = g.add_variable(DType::kF32, xi.shape, name);
  g.set_tile_mapping(out.dx, xi.mapping);
  const std::vector<unsigned> tiles = tiles_of(xi);
  const Tensor gammas = replicate(g, program, gamma, tiles, name + ".gamma");
  const std::vector<RowRange> ranges = row_ranges(xi);
  std::vector<Interval> partial_mapping;
  for (size_t i = 0; i < ranges.size(); ++i)
    partial_mapping.push_back({2 * i * columns, 2 * (i + 1) * columns, ranges[i].tile});
  // Each range's partial sums, dgamma's then dbeta's, in one row of 2C on its tile: both trees'
  // levels then share their exchanges and compute sets.
  const Tensor parts = g.add_variable(DType::kF32, {ranges.size(), 2 * columns}, name + ".parts");
  g.set_tile_mapping(parts, partial_mapping);
  g.set_scratch(parts);
  const ComputeSet cs = g.add_compute_set(name);
  for (size_t i = 0; i < ranges.size(); ++i) {
    const RowRange& r = ranges[i];
    const size_t lo = r.first * columns, hi = (r.first + r.rows) * columns;
    const size_t at =
        static_cast<size_t>(std::find(tiles.begin(), tiles.end(), r.tile) - tiles.begin());
    g.add_vertex(cs, "layer_norm_grad_rows_f32", r.tile,
                 {{"x", g.region(rows, lo, hi)},
                  {"dy", g.region(d, lo, hi)},
                  {"gamma", g.region(gammas, at * columns, (at + 1) * columns)},
                  {"mean", g.region(mean, r.first, r.first + r.rows)},
                  {"inv", g.region(inv, r.first, r.first + r.rows)},
                  {"dx", g.region(out.dx, lo, hi)},
                  {"dgamma", g.region(parts, 2 * i * columns, (2 * i + 1) * columns)},
                  {"dbeta", g.region(parts, (2 * i + 1) * columns, (2 * i + 2) * columns)},
                  {"rows", u32(r.rows)},
                  {"columns", u32(columns)}});
    out.partial_rows.push_back(r.rows);
  }
  program.body.push_back(Execute(cs));
  // The partials added across the tiles, by a tree (sum_partials).
  std::vector<Region> rows_2c;
  for (size_t i = 0; i < ranges.size(); ++i)
    rows_2c.push_back(g.region(parts, 2 * i * columns, (2 * i + 2) * columns));
  const Tensor sums = sum_partials(g, program, std::move(rows_2c), 2 * columns, name + ".sums");
  out.dgamma = g.slice(sums, 0, columns, {columns}, name + ".dgamma");
  out.dbeta = g.slice(sums, columns, 2 * columns, {columns}, name + ".dbeta");
  return out;
}

CrossEntropy cross_entropy(Graph& g, Program& program, Tensor logits, Tensor labels,
                           float grad_scale, const std::string& name) {
  require_sequence(program, name);
  const TensorInfo xi0 = mapped(g, logits, name, "logits");
  const TensorInfo li = mapped(g, labels, name, "labels");
  require_type(xi0, DType::kF32, name, "logits");
  require_type(li, DType::kU32, name, "labels");
  require_rows(xi0, name);
  if (li.shape.size() != 1 || li.elements != xi0.elements / xi0.shape.back())
    throw GraphError(fmt::format("{}: labels '{}' must be a vector of {} (one a row of '{}')", name,
                                 li.name, xi0.elements / xi0.shape.back(), xi0.name));
  add_ops_codelets(g);
  const Tensor rows = whole_rows(g, program, logits, name);
  const TensorInfo xi = g.tensor(rows);
  const size_t columns = xi.shape.back();
  CrossEntropy out;
  out.loss = row_vector(g, xi, name + ".loss");
  out.dlogits = g.add_variable(DType::kF32, xi.shape, name + ".dlogits");
  g.set_tile_mapping(out.dlogits, xi.mapping);
  const Tensor l = laid_like(g, program, labels, g.tensor(out.loss), name + ".labels");
  const ComputeSet cs = g.add_compute_set(name);
  for (const RowRange& r : row_ranges(xi)) {
    const size_t lo = r.first * columns, hi = (r.first + r.rows) * columns;
    g.add_vertex(cs, "cross_entropy_rows_f32", r.tile,
                 {{"x", g.region(rows, lo, hi)},
                  {"labels", g.region(l, r.first, r.first + r.rows)},
                  {"loss", g.region(out.loss, r.first, r.first + r.rows)},
                  {"dx", g.region(out.dlogits, lo, hi)},
                  {"rows", u32(r.rows)},
                  {"columns", u32(columns)},
                  {"grad_scale", bits_of(grad_scale)}});
  }
  program.body.push_back(Execute(cs));
  return out;
}

}  // namespace ipu::sdk::ops
