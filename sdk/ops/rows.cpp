// Operations along the rows of a matrix: reductions, softmax, layer norm and cross-entropy,
// forward and backward (sdk/ops/elementwise.h).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

#include "firmware/codelets/ops_math.h"
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
                    SoftmaxMask kind, const std::string& name, float scale, Tensor* rounded) {
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
  // The f16 copy in the division's pass where every row starts on a word of it; else a cast after.
  const bool fused = rounded != nullptr && columns % 2 == 0;
  if (fused) {
    *rounded = g.add_variable(DType::kF16, xi.shape, name + ".f16");
    g.set_tile_mapping(*rounded, g.tensor(out).mapping);
  }
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
    std::map<std::string, Binding> fields{
        {"x", xr},
        {"mask", masks ? g.region(*masks, at * columns, (at + 1) * columns) : xr},
        {"out", g.region(out, r.first * columns, (r.first + r.rows) * columns)},
        {"rows", u32(r.rows)},
        {"columns", u32(columns)},
        {"masked", static_cast<uint32_t>(kind)},
        {"first_query", u32(r.first % columns)},
        {"scale", bits_of(scale)}};
    if (fused)
      fields["out16"] = g.region(*rounded, r.first * columns, (r.first + r.rows) * columns);
    g.add_vertex(cs, fused ? "softmax_rows_f32_f16" : "softmax_rows_f32", r.tile, fields);
  }
  program.body.push_back(Execute(cs));
  if (rounded != nullptr && !fused) *rounded = cast(g, program, out, DType::kF16, name + ".f16");
  return out;
}

}  // namespace

Tensor softmax_rows(Graph& g, Program& program, Tensor x, std::optional<Tensor> mask,
                    const std::string& name, float scale, Tensor* rounded) {
  return softmax_with(g, program, x, mask, mask ? SoftmaxMask::kAdded : SoftmaxMask::kNone, name,
                      scale, rounded);
}

Tensor softmax_rows_packed(Graph& g, Program& program, Tensor x, Tensor sequence_ids,
                           const std::string& name, float scale, Tensor* rounded) {
  return softmax_with(g, program, x, sequence_ids, SoftmaxMask::kSequenceIds, name, scale, rounded);
}

namespace {

// A layer norm's runs of rows (a mapping interval each) when every tile holds fewer rows than it
// has workers, so that six vertices a run, a column slice each, keep all six busy (BERT-Large's
// rows lie one a tile); else none, and a vertex takes whole rows.
std::vector<RowRange> sliced_runs(const TensorInfo& rows) {
  const size_t columns = rows.shape.back();
  std::map<unsigned, size_t> per_tile;
  std::vector<RowRange> runs;
  for (const Interval& m : rows.mapping) {
    per_tile[m.tile] += (m.end - m.begin) / columns;
    runs.push_back({m.tile, m.begin / columns, (m.end - m.begin) / columns});
  }
  for (const auto& [tile, n] : per_tile)
    if (n >= 6) return {};
  return columns >= 6 ? runs : std::vector<RowRange>{};
}

// A tensor of `per_row` x 6 values a row, run by run on the run's tile: run r's [per_row x 6 x
// rows], slice-major (the slices' sums of a layer norm), scratch.
Tensor run_slices(Graph& g, const std::vector<RowRange>& runs, size_t per_row,
                  const std::string& name) {
  size_t total = 0;
  for (const RowRange& r : runs) total = std::max(total, r.first + r.rows);
  const Tensor t = g.add_variable(DType::kF32, {6 * per_row * total}, name);
  std::vector<Interval> mapping;
  for (const RowRange& r : runs)
    mapping.push_back({6 * per_row * r.first, 6 * per_row * (r.first + r.rows), r.tile});
  std::sort(mapping.begin(), mapping.end(),
            [](const Interval& a, const Interval& b) { return a.begin < b.begin; });
  g.set_tile_mapping(t, mapping);
  g.set_scratch(t);
  return t;
}

}  // namespace

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
  const auto at = [&](unsigned tile) {
    return static_cast<size_t>(std::find(tiles.begin(), tiles.end(), tile) - tiles.begin());
  };
  if (const std::vector<RowRange> runs = sliced_runs(xi); !runs.empty()) {
    // Six vertices a run, a column slice each, in three compute sets: the slices' sums, their
    // squares about the mean, then y (the statistics' bits are the one-worker path's).
    const Tensor sums = run_slices(g, runs, 1, name + ".slice_sums");
    const Tensor squares = run_slices(g, runs, 1, name + ".slice_squares");
    const ComputeSet phase[3] = {g.add_compute_set(name + ".slice_sums"),
                                 g.add_compute_set(name + ".slice_squares"),
                                 g.add_compute_set(name)};
    for (const RowRange& r : runs) {
      const size_t lo = r.first * columns, hi = (r.first + r.rows) * columns, k = at(r.tile);
      const Region x_rows = g.region(rows, lo, hi),
                   all_sums = g.region(sums, 6 * r.first, 6 * (r.first + r.rows));
      const Region all_squares = g.region(squares, 6 * r.first, 6 * (r.first + r.rows));
      for (uint32_t slice = 0; slice < IPU_OPS_ROW_SLICES; ++slice) {
        const size_t own = 6 * r.first + slice * r.rows;
        const auto with_shape = [&](std::map<std::string, Binding> f) {
          f.insert({{"rows", u32(r.rows)}, {"columns", u32(columns)}, {"slice", slice}});
          return f;
        };
        g.add_vertex(phase[0], "layer_norm_slice_sums_f32", r.tile,
                     with_shape({{"x", x_rows}, {"sums", g.region(sums, own, own + r.rows)}}));
        g.add_vertex(phase[1], "layer_norm_slice_squares_f32", r.tile,
                     with_shape({{"x", x_rows},
                                 {"sums", all_sums},
                                 {"squares", g.region(squares, own, own + r.rows)}}));
        g.add_vertex(phase[2], "layer_norm_slice_apply_f32", r.tile,
                     with_shape({{"x", x_rows},
                                 {"gamma", g.region(gammas, k * columns, (k + 1) * columns)},
                                 {"beta", g.region(betas, k * columns, (k + 1) * columns)},
                                 {"sums", all_sums},
                                 {"squares", all_squares},
                                 {"y", g.region(out.y, lo, hi)},
                                 {"mean_out", g.region(out.mean, r.first, r.first + r.rows)},
                                 {"inv_out", g.region(out.inv_std, r.first, r.first + r.rows)},
                                 {"eps", bits_of(eps)}}));
      }
    }
    for (const ComputeSet& c : phase) program.body.push_back(Execute(c));
    return out;
  }
  const ComputeSet cs = g.add_compute_set(name);
  for (const RowRange& r : row_ranges(xi)) {
    const size_t k = at(r.tile);
    g.add_vertex(cs, "layer_norm_rows_f32", r.tile,
                 {{"x", g.region(rows, r.first * columns, (r.first + r.rows) * columns)},
                  {"gamma", g.region(gammas, k * columns, (k + 1) * columns)},
                  {"beta", g.region(betas, k * columns, (k + 1) * columns)},
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

Tensor softmax_grad_rows(Graph& g, Program& program, Tensor y, Tensor dy, const std::string& name,
                         float scale, DType out) {
  require_sequence(program, name);
  matrix_and_gradient(g, y, dy, name, "y");
  if (out != DType::kF32 && out != DType::kF16)
    throw GraphError(
        fmt::format("{}: the gradient's type must be f32 or f16, not {}", name, dtype_name(out)));
  add_ops_codelets(g);
  const Tensor rows = whole_rows(g, program, y, name);
  const TensorInfo yi = g.tensor(rows);
  const size_t columns = yi.shape.back();
  // An f16 result's pieces must start on words (the exchange moves words): rows of odd length
  // laid out from an odd element take the f32 result and a cast, which moves them.
  bool words = true;
  for (const Interval& m : yi.mapping) words &= m.begin % 2 == 0;
  if (out == DType::kF16 && !words)
    return cast(g, program, softmax_grad_rows(g, program, y, dy, name + ".f32", scale), DType::kF16,
                name);
  const Tensor d = laid_like(g, program, dy, yi, name + ".dy");
  const Tensor dx = g.add_variable(out, yi.shape, name);
  g.set_tile_mapping(dx, yi.mapping);
  const ComputeSet cs = g.add_compute_set(name);
  for (const RowRange& r : row_ranges(yi)) {
    const size_t lo = r.first * columns, hi = (r.first + r.rows) * columns;
    g.add_vertex(cs, out == DType::kF16 ? "softmax_grad_rows_f16" : "softmax_grad_rows_f32", r.tile,
                 {{"y", g.region(rows, lo, hi)},
                  {"dy", g.region(d, lo, hi)},
                  {"dx", g.region(dx, lo, hi)},
                  {"rows", u32(r.rows)},
                  {"columns", u32(columns)},
                  {"scale", bits_of(scale)}});
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
  const std::vector<RowRange> runs = sliced_runs(xi);
  const std::vector<RowRange> ranges = runs.empty() ? row_ranges(xi) : runs;
  std::vector<Interval> partial_mapping;
  for (size_t i = 0; i < ranges.size(); ++i)
    partial_mapping.push_back({2 * i * columns, 2 * (i + 1) * columns, ranges[i].tile});
  // Each range's partial sums, dgamma's then dbeta's, in one row of 2C on its tile: both trees'
  // levels then share their exchanges and compute sets.
  const Tensor parts = g.add_variable(DType::kF32, {ranges.size(), 2 * columns}, name + ".parts");
  g.set_tile_mapping(parts, partial_mapping);
  g.set_scratch(parts);
  if (!runs.empty()) {
    // Six vertices a run, a column slice each, in two compute sets: the slices' sums of g and g
    // xhat with the slice's dgamma and dbeta, then dx (the bits of the one-worker path).
    const Tensor sums = run_slices(g, runs, 2, name + ".slice_sums");
    const ComputeSet phase[2] = {g.add_compute_set(name + ".slice_sums"), g.add_compute_set(name)};
    for (size_t i = 0; i < runs.size(); ++i) {
      const RowRange& r = runs[i];
      const size_t lo = r.first * columns, hi = (r.first + r.rows) * columns;
      const size_t k =
          static_cast<size_t>(std::find(tiles.begin(), tiles.end(), r.tile) - tiles.begin());
      const std::map<std::string, Binding> common = {
          {"x", g.region(rows, lo, hi)},
          {"dy", g.region(d, lo, hi)},
          {"gamma", g.region(gammas, k * columns, (k + 1) * columns)},
          {"mean", g.region(mean, r.first, r.first + r.rows)},
          {"inv", g.region(inv, r.first, r.first + r.rows)},
          {"rows", u32(r.rows)},
          {"columns", u32(columns)}};
      const size_t block = 12 * r.first;
      for (uint32_t slice = 0; slice < IPU_OPS_ROW_SLICES; ++slice) {
        const uint32_t c0 = ipu_ops_slice_begin(u32(columns), slice),
                       c1 = ipu_ops_slice_begin(u32(columns), slice + 1);
        std::map<std::string, Binding> f0 = common, f1 = common;
        f0.insert(
            {{"sum_g", g.region(sums, block + slice * r.rows, block + (slice + 1) * r.rows)},
             {"sum_gx", g.region(sums, block + (6 + slice) * r.rows, block + (7 + slice) * r.rows)},
             {"dgamma", g.region(parts, 2 * i * columns + c0, 2 * i * columns + c1)},
             {"dbeta", g.region(parts, (2 * i + 1) * columns + c0, (2 * i + 1) * columns + c1)},
             {"slice", slice}});
        f1.insert({{"sums", g.region(sums, block, block + 12 * r.rows)},
                   {"dx", g.region(out.dx, lo, hi)},
                   {"slice", slice}});
        g.add_vertex(phase[0], "layer_norm_grad_slice_sums_f32", r.tile, f0);
        g.add_vertex(phase[1], "layer_norm_grad_slice_apply_f32", r.tile, f1);
      }
      out.partial_rows.push_back(r.rows);
    }
    for (const ComputeSet& c : phase) program.body.push_back(Execute(c));
  } else {
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
  }
  // The partials added across the tiles, by a tree (sum_partials).
  std::vector<Region> rows_2c;
  for (size_t i = 0; i < ranges.size(); ++i)
    rows_2c.push_back(g.region(parts, 2 * i * columns, (2 * i + 2) * columns));
  const Tensor sums = sum_partials(g, program, std::move(rows_2c), 2 * columns, name + ".sums");
  out.dgamma = g.slice(sums, 0, columns, {columns}, name + ".dgamma");
  out.dbeta = g.slice(sums, columns, 2 * columns, {columns}, name + ".dbeta");
  return out;
}

namespace {

// cross_entropy of logits laid out in row slices (cuts): each slice cut over up to six workers,
// their maxes gathered to the row's first tile and its max sent back, their sums of e^(x - m)
// and label values gathered and the row's total sent back, then each slice's gradient.
CrossEntropy cross_entropy_sliced(Graph& g, Program& program, Tensor logits, Tensor labels,
                                  const RowCuts& cuts, float grad_scale, const std::string& name) {
  const TensorInfo xi = g.tensor(logits);
  const size_t columns = xi.shape.back(), rows = xi.elements / columns;
  const size_t pieces = cuts.starts.size();
  std::map<unsigned, size_t> per_tile;
  for (unsigned t : cuts.tiles) ++per_tile[t];
  const bool split =
      std::all_of(per_tile.begin(), per_tile.end(), [](const auto& e) { return e.second < 6; });
  // The slices of a row: each piece's six worker ranges (or the piece), with the piece's index.
  struct Slice {
    size_t first, end, piece;
  };
  std::vector<Slice> slices;
  for (size_t p = 0; p < pieces; ++p) {
    const Interval piece{cuts.starts[p], p + 1 < pieces ? cuts.starts[p + 1] : columns, 0};
    for (const auto& [lo, hi] :
         split ? six_ranges(piece) : std::vector{std::pair{piece.begin, piece.end}})
      slices.push_back({lo, hi, p});
  }
  const size_t S = slices.size();
  const auto tile_of = [&](size_t r, size_t p) { return cuts.tiles[r * pieces + p]; };
  // A tensor [rows x S x width]: row r's slice i's values on its piece's tile.
  const auto by_piece = [&](DType type, size_t width, const std::string& what) {
    const Tensor t = g.add_variable(type, {rows, S * width}, name + "." + what);
    std::vector<Interval> mapping;
    for (size_t r = 0; r < rows; ++r)
      for (size_t i = 0; i < S; ++i)
        mapping.push_back(
            {(r * S + i) * width, (r * S + i + 1) * width, tile_of(r, slices[i].piece)});
    g.set_tile_mapping(t, mapping);  // merged neighbours are still one tile's
    g.set_scratch(t);
    return t;
  };
  // A tensor [rows x width] ([rows] for width 1), row r on its first piece's tile (its owner).
  const auto by_owner = [&](DType type, size_t width, const std::string& what) {
    const Tensor t = g.add_variable(
        type, width == 1 ? std::vector<size_t>{rows} : std::vector<size_t>{rows, width},
        name + "." + what);
    std::vector<Interval> mapping;
    for (size_t r = 0; r < rows; ++r)
      mapping.push_back({r * width, (r + 1) * width, tile_of(r, 0)});
    g.set_tile_mapping(t, mapping);
    return t;
  };
  // Row r's value in `owned` ([rows]) sent to each of its pieces' tiles: a new [rows x pieces]
  // tensor, row r's piece p on its tile (one receive a piece, shared by its worker slices).
  const auto send_back = [&](Tensor owned, DType type, const std::string& what) {
    const Tensor local = g.add_variable(type, {rows, pieces}, name + "." + what);
    std::vector<Interval> mapping;
    CopyPairs pairs;
    for (size_t r = 0; r < rows; ++r)
      for (size_t p = 0; p < pieces; ++p) {
        mapping.push_back({r * pieces + p, r * pieces + p + 1, tile_of(r, p)});
        pairs.emplace_back(g.region(owned, r, r + 1),
                           g.region(local, r * pieces + p, r * pieces + p + 1));
      }
    g.set_tile_mapping(local, mapping);
    g.set_scratch(local);
    program.body.push_back(Copy(std::move(pairs)));
    return local;
  };
  // Slice i of row r's element of such a tensor.
  const auto at_piece = [&](Tensor local, size_t r, size_t i) {
    const size_t k = r * pieces + slices[i].piece;
    return g.region(local, k, k + 1);
  };
  CrossEntropy out;
  for (const Slice& s : slices) out.slices.push_back(s.first);
  out.loss = by_owner(DType::kF32, 1, "loss");
  out.dlogits = g.add_variable(DType::kF32, xi.shape, name + ".dlogits");
  g.set_tile_mapping(out.dlogits, xi.mapping);
  const Tensor owner_labels = laid_like(g, program, labels, g.tensor(out.loss), name + ".labels");
  const Tensor labels_local = send_back(owner_labels, DType::kU32, "piece_labels");

  // The slices' maxes, then each row's.
  const Tensor slice_max = by_piece(DType::kF32, 1, "slice_max");
  const ComputeSet maxes = g.add_compute_set(name + ".slice_max");
  for (size_t r = 0; r < rows; ++r)
    for (size_t i = 0; i < S; ++i)
      g.add_vertex(
          maxes, "reduce_rows_op_f32", tile_of(r, slices[i].piece),
          {{"x", g.region(logits, r * columns + slices[i].first, r * columns + slices[i].end)},
           {"out", g.region(slice_max, r * S + i, r * S + i + 1)},
           {"rows", 1u},
           {"columns", u32(slices[i].end - slices[i].first)},
           {"op", static_cast<uint32_t>(ReduceOp::kMax)}});
  program.body.push_back(Execute(maxes));
  const Tensor gathered_max = by_owner(DType::kF32, S, "gathered_max");
  g.set_scratch(gathered_max);
  program.body.push_back(Copy(relayout(g, slice_max, gathered_max)));
  const Tensor row_max = by_owner(DType::kF32, 1, "max");
  g.set_scratch(row_max);
  const ComputeSet maxed = g.add_compute_set(name + ".max");
  for (size_t r = 0; r < rows; ++r)
    g.add_vertex(maxed, "reduce_rows_op_f32", tile_of(r, 0),
                 {{"x", g.region(gathered_max, r * S, (r + 1) * S)},
                  {"out", g.region(row_max, r, r + 1)},
                  {"rows", 1u},
                  {"columns", u32(S)},
                  {"op", static_cast<uint32_t>(ReduceOp::kMax)}});
  program.body.push_back(Execute(maxed));
  const Tensor max_local = send_back(row_max, DType::kF32, "piece_row_max");

  // e^(x - m) into dlogits, each slice's sum and label value, then each row's total and loss.
  const Tensor stats = by_piece(DType::kF32, 2, "slice_stats");
  const ComputeSet exps = g.add_compute_set(name + ".slice_exp");
  for (size_t r = 0; r < rows; ++r)
    for (size_t i = 0; i < S; ++i) {
      const size_t lo = r * columns + slices[i].first, hi = r * columns + slices[i].end;
      g.add_vertex(exps, "cross_entropy_slice_exp_f32", tile_of(r, slices[i].piece),
                   {{"x", g.region(logits, lo, hi)},
                    {"m", at_piece(max_local, r, i)},
                    {"label", at_piece(labels_local, r, i)},
                    {"dx", g.region(out.dlogits, lo, hi)},
                    {"stats", g.region(stats, 2 * (r * S + i), 2 * (r * S + i + 1))},
                    {"first", u32(slices[i].first)},
                    {"n", u32(slices[i].end - slices[i].first)}});
    }
  program.body.push_back(Execute(exps));
  const Tensor gathered_stats = by_owner(DType::kF32, 2 * S, "gathered_stats");
  g.set_scratch(gathered_stats);
  program.body.push_back(Copy(relayout(g, stats, gathered_stats)));
  const Tensor total = by_owner(DType::kF32, 1, "total");
  g.set_scratch(total);
  const ComputeSet combined = g.add_compute_set(name + ".combine");
  for (size_t r = 0; r < rows; ++r)
    g.add_vertex(combined, "cross_entropy_combine_f32", tile_of(r, 0),
                 {{"stats", g.region(gathered_stats, 2 * r * S, 2 * (r + 1) * S)},
                  {"m", g.region(row_max, r, r + 1)},
                  {"label", g.region(owner_labels, r, r + 1)},
                  {"loss", g.region(out.loss, r, r + 1)},
                  {"total", g.region(total, r, r + 1)},
                  {"slices", u32(S)},
                  {"columns", u32(columns)}});
  program.body.push_back(Execute(combined));
  const Tensor total_local = send_back(total, DType::kF32, "piece_total");

  const ComputeSet grads = g.add_compute_set(name + ".slice_grad");
  for (size_t r = 0; r < rows; ++r)
    for (size_t i = 0; i < S; ++i)
      g.add_vertex(grads, "cross_entropy_slice_grad_f32", tile_of(r, slices[i].piece),
                   {{"dx", g.region(out.dlogits, r * columns + slices[i].first,
                                    r * columns + slices[i].end)},
                    {"total", at_piece(total_local, r, i)},
                    {"label", at_piece(labels_local, r, i)},
                    {"first", u32(slices[i].first)},
                    {"n", u32(slices[i].end - slices[i].first)},
                    {"grad_scale", bits_of(grad_scale)}});
  program.body.push_back(Execute(grads));
  return out;
}

}  // namespace

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
  const RowCuts cuts = row_cuts(xi0);
  if (!cuts.starts.empty())
    return cross_entropy_sliced(g, program, logits, labels, cuts, grad_scale, name);
  const Tensor rows = whole_rows(g, program, logits, name);
  const TensorInfo xi = g.tensor(rows);
  const size_t columns = xi.shape.back();
  CrossEntropy out;
  out.slices = {0};
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
