// A training step's other operations: dropout, Adam and LAMB, embedding lookup and its
// gradient (sdk/ops/elementwise.h).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>

#include "sdk/ops/elementwise.h"
#include "sdk/ops/op_support.h"
#include "sdk/ops/pieces.h"

namespace ipu::sdk::ops {

Tensor dropout(Graph& g, Program& program, Tensor x, float rate, uint64_t seed,
               const std::string& name) {
  require_sequence(program, name);
  const TensorInfo xi = mapped(g, x, name, "operand");
  require_type(xi, DType::kF32, name, "operand");
  if (!(rate >= 0.0f && rate < 1.0f))
    throw GraphError(fmt::format("{}: the dropout rate must be in [0, 1), not {}", name, rate));
  add_ops_codelets(g);
  const Tensor out = g.add_variable(DType::kF32, xi.shape, name);
  g.set_tile_mapping(out, xi.mapping);
  const auto keep = static_cast<uint32_t>(
      std::min(4294967295.0, std::floor((1.0 - static_cast<double>(rate)) * 4294967296.0)));
  const float scale = 1.0f / (1.0f - rate);
  const ComputeSet cs = g.add_compute_set(name);
  const WorkSplit split(xi);
  for (const Interval& m : xi.mapping)
    for (const auto& [lo, hi] : split.ranges(m)) {
      const auto [s0, s1] = dropout_state(seed, lo);
      g.add_vertex(cs, "dropout_f32", m.tile,
                   {{"x", g.region(x, lo, hi)},
                    {"out", g.region(out, lo, hi)},
                    {"n", u32(hi - lo)},
                    {"keep", keep},
                    {"scale", bits_of(scale)},
                    {"s0_lo", static_cast<uint32_t>(s0)},
                    {"s0_hi", static_cast<uint32_t>(s0 >> 32)},
                    {"s1_lo", static_cast<uint32_t>(s1)},
                    {"s1_hi", static_cast<uint32_t>(s1 >> 32)}});
    }
  program.body.push_back(Execute(cs));
  return out;
}

void accumulate(Graph& g, Program& program, Tensor sum, Tensor grad, const std::string& name,
                const AccumulateOptions& options) {
  require_sequence(program, name);
  const TensorInfo si = mapped(g, sum, name, "sum");
  const TensorInfo gi = mapped(g, grad, name, "gradient");
  require_type(gi, DType::kF32, name, "gradient");
  if (si.type != DType::kF32 && si.type != DType::kF16)
    throw GraphError(fmt::format("{}: sum '{}' is {}; a gradient's sum is f32 or f16", name,
                                 si.name, dtype_name(si.type)));
  if (gi.shape != si.shape)
    throw GraphError(fmt::format("{}: gradient '{}' is [{}], its sum '{}' [{}]", name, gi.name,
                                 fmt::join(gi.shape, " x "), si.name, fmt::join(si.shape, " x ")));
  if (si.type == DType::kF32) {
    binary_in_place(g, program, BinaryOp::kAdd, sum, grad, name);
    return;
  }
  add_ops_codelets(g);
  const Tensor local = laid_like(g, program, grad, si, name + ".gradient");
  struct Range {
    unsigned tile;
    size_t lo, hi;
  };
  std::vector<Range> ranges;  // element_ranges(sum, 2), each with its tile
  const WorkSplit split(si);
  for (const Interval& m : si.mapping)
    for (const auto& [lo, hi] : split.ranges(m, 2)) ranges.push_back({m.tile, lo, hi});
  std::optional<Tensor> draws;  // each range's count of calls, on the range's tile
  if (options.stochastic) {
    draws = g.add_variable(DType::kU32, {ranges.size()}, name + ".draws");
    std::vector<Interval> at;
    for (size_t k = 0; k < ranges.size(); ++k) at.push_back({k, k + 1, ranges[k].tile});
    g.set_tile_mapping(*draws, at);
  }
  const ComputeSet cs = g.add_compute_set(name);
  for (size_t k = 0; k < ranges.size(); ++k) {
    const auto [tile, lo, hi] = ranges[k];
    std::map<std::string, Binding> fields{
        {"grad", g.region(local, lo, hi)}, {"sum", g.region(sum, lo, hi)}, {"n", u32(hi - lo)}};
    if (draws) {
      const auto [s0, s1] = dropout_state(options.seed, lo);
      fields.insert({{"draws", g.region(*draws, k, k + 1)},
                     {"s0_lo", static_cast<uint32_t>(s0)},
                     {"s0_hi", static_cast<uint32_t>(s0 >> 32)},
                     {"s1_lo", static_cast<uint32_t>(s1)},
                     {"s1_hi", static_cast<uint32_t>(s1 >> 32)}});
    }
    g.add_vertex(cs, draws ? "accumulate_f16_sr" : "accumulate_f16", tile, fields);
  }
  program.body.push_back(Execute(cs));
}

void zero(Graph& g, Program& program, Tensor t, const std::string& name) {
  require_sequence(program, name);
  const TensorInfo ti = mapped(g, t, name, "operand");
  const bool f32 = ti.type == DType::kF32;
  if (!f32) require_type(ti, DType::kF16, name, "operand");
  add_ops_codelets(g);
  const ComputeSet cs = g.add_compute_set(name);
  const WorkSplit split(ti);
  for (const Interval& m : ti.mapping)
    for (const auto& [lo, hi] : split.ranges(m, f32 ? 1 : 2))
      g.add_vertex(cs, f32 ? "zero_f32" : "zero_f16", m.tile,
                   {{"out", g.region(t, lo, hi)}, {"n", u32(hi - lo)}});
  program.body.push_back(Execute(cs));
}

void adam(Graph& graph, Program& program, Tensor w, Tensor g, Tensor m, Tensor v,
          Tensor corrections, const AdamOptions& o, const std::string& name) {
  Graph& gr = graph;  // g is the gradient here
  require_sequence(program, name);
  const TensorInfo wi = mapped(gr, w, name, "w");
  require_type(wi, DType::kF32, name, "w");
  for (const auto& [t, which] : {std::pair{g, "g"}, std::pair{m, "m"}, std::pair{v, "v"}}) {
    const TensorInfo ti = mapped(gr, t, name, which);
    require_type(ti, DType::kF32, name, which);
    if (ti.shape != wi.shape)
      throw GraphError(fmt::format("{}: {} '{}' [{}] must have w '{}''s shape [{}]", name, which,
                                   ti.name, fmt::join(ti.shape, " x "), wi.name,
                                   fmt::join(wi.shape, " x ")));
  }
  const TensorInfo ci = mapped(gr, corrections, name, "corrections");
  require_type(ci, DType::kF32, name, "corrections");
  if (ci.elements != 2 && !(ci.shape.size() == 2 && ci.shape[1] == 2))
    throw GraphError(
        fmt::format("{}: corrections '{}' must hold 2 values (1 / (1 - b1^t), 1 / (1 - "
                    "b2^t)), not {}",
                    name, ci.name, ci.elements));
  if (m.id == v.id || m.id == w.id || v.id == w.id)
    throw GraphError(fmt::format("{}: w, m and v must be three tensors", name));
  // m and v are state: they must be w's layout already (a copy would not carry the update).
  for (const auto& [t, which] : {std::pair{m, "m"}, std::pair{v, "v"}})
    if (!same_mapping(gr.tensor(t).mapping, wi.mapping))
      throw GraphError(
          fmt::format("{}: {} '{}' must be laid out as w '{}' (the moments are "
                      "updated in place)",
                      name, which, gr.tensor(t).name, wi.name));
  add_ops_codelets(gr);
  const Tensor gl = laid_like(gr, program, g, wi, name + ".g");
  const std::vector<unsigned> tiles = tiles_of(wi);
  const LocalCopies corr = local_copies(gr, program, corrections, 2, tiles, name + ".corrections");
  const auto ranges = element_ranges(gr, w);
  const Tensor u = gr.add_variable(DType::kF32, wi.shape, name + ".u");
  gr.set_tile_mapping(u, wi.mapping);
  gr.set_scratch(u);
  std::vector<Interval> partial_mapping;
  size_t r = 0;
  const WorkSplit split(wi);
  for (const Interval& piece : wi.mapping)
    for (size_t k = 0; k < split.ranges(piece).size(); ++k, ++r)
      partial_mapping.push_back({2 * r, 2 * r + 2, piece.tile});
  const Tensor partials = gr.add_variable(DType::kF32, {ranges.size(), 2}, name + ".partials");
  gr.set_tile_mapping(partials, partial_mapping);
  gr.set_scratch(partials);
  const ComputeSet cs = gr.add_compute_set(name);
  r = 0;
  for (const Interval& piece : wi.mapping) {
    const size_t at =
        static_cast<size_t>(std::find(tiles.begin(), tiles.end(), piece.tile) - tiles.begin());
    for (const auto& [lo, hi] : split.ranges(piece)) {
      gr.add_vertex(cs, "adam_f32", piece.tile,
                    {{"w", gr.region(w, lo, hi)},
                     {"g", gr.region(gl, lo, hi)},
                     {"m", gr.region(m, lo, hi)},
                     {"v", gr.region(v, lo, hi)},
                     {"u", gr.region(u, lo, hi)},
                     {"corr", gr.region(corr.tensor, corr.at[at], corr.at[at] + 2)},
                     {"partial", gr.region(partials, 2 * r, 2 * r + 2)},
                     {"n", u32(hi - lo)},
                     {"b1", bits_of(o.beta1)},
                     {"b2", bits_of(o.beta2)},
                     {"eps", bits_of(o.epsilon)},
                     {"wd", bits_of(o.weight_decay)},
                     {"lr", bits_of(o.learning_rate)},
                     {"lamb", o.lamb ? 1u : 0u}});
      ++r;
    }
  }
  program.body.push_back(Execute(cs));
  if (!o.lamb) return;
  // The ranges' partial sums added by the tree of reduce_columns (no tile gathers more than
  // kPartialFanIn of them: gathered on one tile, a fragmented 256 x 64 weight's 770 partials cost
  // that tile 1,542 exchange actions), then the trust ratio where the total lies, to every tile.
  std::vector<Region> partial_rows;
  for (size_t i = 0; i < ranges.size(); ++i)
    partial_rows.push_back(gr.region(partials, 2 * i, 2 * i + 2));
  Tensor total = sum_partials(gr, program, std::move(partial_rows), 2, name + ".norms");
  const unsigned home = gr.tensor(total).mapping.front().tile;
  if (gr.tensor(total).mapping.size() > 1) {  // the two sums on two tiles: both to the first
    const Tensor both = gr.add_variable(DType::kF32, {2}, name + ".norms_together");
    gr.set_tile_mapping(both, home);
    gr.set_scratch(both);
    program.body.push_back(Copy(total, both));
    total = both;
  }
  // A shard's sums are the whole tensor's once added over the replicas.
  if (o.norms_across_replicas) program.body.push_back(AllReduce(total, CollectiveOp::kSum));
  const Tensor ratio = gr.add_variable(DType::kF32, {1}, name + ".ratio");
  gr.set_tile_mapping(ratio, home);
  gr.set_scratch(ratio);
  const ComputeSet ratio_cs = gr.add_compute_set(name + ".ratio");
  gr.add_vertex(ratio_cs, "lamb_ratio_f32", home,
                {{"partials", gr.region(total)}, {"ratio", gr.region(ratio)}, {"parts", 1u}});
  program.body.push_back(Execute(ratio_cs));
  const Tensor ratios = replicate(gr, program, ratio, tiles, name + ".ratios");
  const ComputeSet apply = gr.add_compute_set(name + ".apply");
  for (const Interval& piece : wi.mapping) {
    const size_t at =
        static_cast<size_t>(std::find(tiles.begin(), tiles.end(), piece.tile) - tiles.begin());
    for (const auto& [lo, hi] : split.ranges(piece))
      gr.add_vertex(apply, "lamb_apply_f32", piece.tile,
                    {{"w", gr.region(w, lo, hi)},
                     {"u", gr.region(u, lo, hi)},
                     {"ratio", gr.region(ratios, at, at + 1)},
                     {"n", u32(hi - lo)},
                     {"lr", bits_of(o.learning_rate)}});
  }
  program.body.push_back(Execute(apply));
}

Tensor embedding_lookup(Graph& g, Program& program, Tensor table_t, Tensor indices,
                        const std::string& name) {
  require_sequence(program, name);
  const TensorInfo ti0 = mapped(g, table_t, name, "table");
  if (ti0.type != DType::kF32 && ti0.type != DType::kF16)
    throw GraphError(fmt::format("{}: table '{}' is {}; a table is f32 or f16", name, ti0.name,
                                 dtype_name(ti0.type)));
  require_matrix(ti0, name);
  const TensorInfo ii = mapped(g, indices, name, "indices");
  require_indices(ii, name);
  add_ops_codelets(g);
  const Tensor table = whole_rows(g, program, table_t, name);
  const TensorInfo ti = g.tensor(table);
  const size_t entries = ti.shape[1], count = ii.elements;
  const Tensor out = rows_like(g, ti, count, name);
  const std::vector<unsigned> tiles = tiles_of(ti);
  const Tensor copies = replicate(g, program, indices, tiles, name + ".indices");
  const ComputeSet cs = g.add_compute_set(name);
  for (const RowRange& r : row_ranges(ti)) {
    const size_t at =
        static_cast<size_t>(std::find(tiles.begin(), tiles.end(), r.tile) - tiles.begin());
    g.add_vertex(cs, ti.type == DType::kF16 ? "embedding_lookup_f16" : "embedding_lookup_f32",
                 r.tile,
                 {{"table", g.region(table, r.first * entries, (r.first + r.rows) * entries)},
                  {"indices", g.region(copies, at * count, (at + 1) * count)},
                  {"out", g.region(out, r.first * count, (r.first + r.rows) * count)},
                  {"rows", u32(r.rows)},
                  {"entries", u32(entries)},
                  {"count", u32(count)}});
  }
  program.body.push_back(Execute(cs));
  return out;
}

namespace {

// embedding_grad into `like`'s layout: each piece of a feature row on its tile, over six workers.
Tensor embedding_grad_like(Graph& g, Program& program, Tensor dout, Tensor indices, size_t entries,
                           const TensorInfo& like, const std::string& name) {
  const TensorInfo di = g.tensor(dout);
  const size_t features = di.shape[0], count = di.shape[1];
  if (like.shape != std::vector<size_t>{features, entries})
    throw GraphError(fmt::format("{}: the gradient's layout '{}' [{}] is not [{} x {}]", name,
                                 like.name, fmt::join(like.shape, " x "), features, entries));
  const Tensor grad = g.add_variable(DType::kF32, like.shape, name);
  g.set_tile_mapping(grad, like.mapping);
  // Each piece cut at feature rows: (tile, feature, first entry, end).
  struct Piece {
    unsigned tile;
    size_t h, first, end;
  };
  std::vector<Piece> pieces;
  for (const Interval& m : like.mapping)
    for (size_t at = m.begin; at < m.end;) {
      const size_t h = at / entries, end = std::min(m.end, (h + 1) * entries);
      pieces.push_back({m.tile, h, at - h * entries, end - h * entries});
      at = end;
    }
  // Each tile's features' rows of dout, and the indices, beside its pieces.
  std::map<unsigned, std::vector<size_t>> rows_of;  // by tile, in order
  for (const Piece& p : pieces) {
    std::vector<size_t>& rows = rows_of[p.tile];
    if (rows.empty() || rows.back() != p.h) rows.push_back(p.h);
  }
  std::vector<std::pair<unsigned, size_t>> sizes;
  std::vector<unsigned> tiles;
  for (const auto& [tile, rows] : rows_of)
    sizes.emplace_back(tile, rows.size() * count), tiles.push_back(tile);
  const Chunks local = add_chunked(g, DType::kF32, sizes, name + ".dout");
  g.set_scratch(local.tensor);
  std::vector<CopyPairs> lists;
  for (size_t i = 0; i < tiles.size(); ++i) {
    CopyPairs list;
    const std::vector<size_t>& rows = rows_of[tiles[i]];
    for (size_t k = 0; k < rows.size(); ++k)
      list.emplace_back(
          g.region(dout, rows[k] * count, (rows[k] + 1) * count),
          g.region(local.tensor, local.offsets[i] + k * count, local.offsets[i] + (k + 1) * count));
    lists.push_back(std::move(list));
  }
  program.body.push_back(Copy(interleave(lists)));
  const Tensor copies = replicate(g, program, indices, tiles, name + ".indices");
  const ComputeSet cs = g.add_compute_set(name);
  for (const Piece& p : pieces) {
    const size_t at =
        static_cast<size_t>(std::find(tiles.begin(), tiles.end(), p.tile) - tiles.begin());
    const std::vector<size_t>& rows = rows_of[p.tile];
    const size_t k = static_cast<size_t>(std::find(rows.begin(), rows.end(), p.h) - rows.begin());
    const size_t row_at = local.offsets[at] + k * count;
    for (const auto& [lo, hi] : six_ranges({p.first, p.end, p.tile}))
      g.add_vertex(cs, "embedding_grad_range_f32", p.tile,
                   {{"dout", g.region(local.tensor, row_at, row_at + count)},
                    {"indices", g.region(copies, at * count, (at + 1) * count)},
                    {"grad", g.region(grad, p.h * entries + lo, p.h * entries + hi)},
                    {"first", u32(lo)},
                    {"n", u32(hi - lo)},
                    {"count", u32(count)}});
  }
  program.body.push_back(Execute(cs));
  return grad;
}

}  // namespace

Tensor embedding_grad(Graph& g, Program& program, Tensor dout_t, Tensor indices, size_t entries,
                      const std::string& name, std::optional<Tensor> like) {
  require_sequence(program, name);
  const TensorInfo di0 = mapped(g, dout_t, name, "dout");
  require_type(di0, DType::kF32, name, "dout");
  require_matrix(di0, name);
  const TensorInfo ii = mapped(g, indices, name, "indices");
  require_indices(ii, name);
  if (di0.shape[1] != ii.elements)
    throw GraphError(fmt::format("{}: dout '{}' has {} columns for {} indices", name, di0.name,
                                 di0.shape[1], ii.elements));
  if (entries == 0) throw GraphError(fmt::format("{}: a table of no entries", name));
  add_ops_codelets(g);
  if (like) {
    const TensorInfo li = mapped(g, *like, name, "layout");
    return embedding_grad_like(g, program, dout_t, indices, entries, li, name);
  }
  const Tensor dout = whole_rows(g, program, dout_t, name);
  const TensorInfo di = g.tensor(dout);
  const size_t count = ii.elements;
  const Tensor grad = rows_like(g, di, entries, name);
  const std::vector<unsigned> tiles = tiles_of(di);
  const Tensor copies = replicate(g, program, indices, tiles, name + ".indices");
  const ComputeSet cs = g.add_compute_set(name);
  for (const RowRange& r : row_ranges(di)) {
    const size_t at =
        static_cast<size_t>(std::find(tiles.begin(), tiles.end(), r.tile) - tiles.begin());
    g.add_vertex(cs, "embedding_grad_f32", r.tile,
                 {{"dout", g.region(dout, r.first * count, (r.first + r.rows) * count)},
                  {"indices", g.region(copies, at * count, (at + 1) * count)},
                  {"grad", g.region(grad, r.first * entries, (r.first + r.rows) * entries)},
                  {"rows", u32(r.rows)},
                  {"entries", u32(entries)},
                  {"count", u32(count)}});
  }
  program.body.push_back(Execute(cs));
  return grad;
}

}  // namespace ipu::sdk::ops
