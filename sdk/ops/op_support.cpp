// Helpers the operator library's elementwise, row and training operations share (internal:
// not part of the installed API).
#include "sdk/ops/op_support.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>

#include "sdk/graph/sdk_paths.h"
#include "sdk/ops/pieces.h"

namespace ipu::sdk::ops {

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
uint32_t u32(size_t x) { return static_cast<uint32_t>(x); }

void add_ops_codelets(Graph& g) {
  if (g.codelets().count("binary_f32")) return;
  const std::string file = sdk_paths().codelet_dir() + "/ops_elementwise.c",
                    training = sdk_paths().codelet_dir() + "/ops_training.c";
  auto in = [](const char* n, DType t) { return Field{n, FieldKind::kInput, t}; };
  auto out = [](const char* n, DType t) { return Field{n, FieldKind::kOutput, t}; };
  auto scalar = [](const char* n) { return Field{n, FieldKind::kScalar, DType::kU32}; };
  const DType f32 = DType::kF32, f16 = DType::kF16;
  g.add_codelet("binary_f32", file,
                {in("a", f32), in("b", f32), out("out", f32), scalar("n"), scalar("op"),
                 scalar("period"), scalar("offset")});
  g.add_codelet("bias_gelu_f32_f16", file,
                {in("a", f32), in("b", f32), out("sum", f32), out("out", f16), scalar("n"),
                 scalar("period"), scalar("offset")});
  g.add_codelet("bias_residual_f32", file,
                {in("a", f32), in("b", f32), in("x", f32), out("out", f32), scalar("n"),
                 scalar("period"), scalar("offset")});
  g.add_codelet("gelu_grad_f32_f16", file,
                {in("grad", f32), in("x", f32), out("out", f32), out("out16", f16), scalar("n")});
  g.add_codelet("unary_f32", file,
                {in("a", f32), out("out", f32), scalar("n"), scalar("op"), scalar("k")});
  g.add_codelet("cast_f32_f16", file, {in("a", f32), out("out", f16), scalar("n")});
  g.add_codelet("cast_f32_f16_sr", file,
                {in("a", f32), out("out", f16), scalar("n"), scalar("s0_lo"), scalar("s0_hi"),
                 scalar("s1_lo"), scalar("s1_hi")});
  g.add_codelet("cast_f32_f16_sr_step", file,
                {in("a", f32), in("step", DType::kU32), out("out", f16), scalar("n"),
                 scalar("s0_lo"), scalar("s0_hi"), scalar("s1_lo"), scalar("s1_hi")});
  const auto inout = [](const char* n, DType t) { return Field{n, FieldKind::kInOut, t}; };
  g.add_codelet("accumulate_f16", file, {in("grad", f32), inout("sum", f16), scalar("n")});
  g.add_codelet("accumulate_f16_sr", file,
                {in("grad", f32), inout("sum", f16), inout("draws", DType::kU32), scalar("n"),
                 scalar("s0_lo"), scalar("s0_hi"), scalar("s1_lo"), scalar("s1_hi")});
  g.add_codelet("zero_f16", file, {out("out", f16), scalar("n")});
  g.add_codelet("zero_f32", file, {out("out", f32), scalar("n")});
  if (g.codelets().count("cast_f16_f32") == 0)  // the matmul library may have declared it
    g.add_codelet("cast_f16_f32", sdk_paths().codelet_dir() + "/matmul_planned.c",
                  {in("in", f16), out("out", f32), scalar("n")});
  g.add_codelet("reduce_rows_op_f32", file,
                {in("x", f32), out("out", f32), scalar("rows"), scalar("columns"), scalar("op")});
  g.add_codelet("softmax_rows_f32", file,
                {in("x", f32), in("mask", f32), out("out", f32), scalar("rows"), scalar("columns"),
                 scalar("masked"), scalar("first_query"), scalar("scale")});
  g.add_codelet("softmax_rows_f32_f16", file,
                {in("x", f32), in("mask", f32), out("out", f32), scalar("rows"), scalar("columns"),
                 scalar("masked"), scalar("first_query"), scalar("scale"), out("out16", f16)});
  g.add_codelet(
      "layer_norm_rows_f32", file,
      {in("x", f32), in("gamma", f32), in("beta", f32), out("y", f32), out("mean_out", f32),
       out("inv_out", f32), scalar("rows"), scalar("columns"), scalar("eps")});
  g.add_codelet(
      "layer_norm_slice_sums_f32", file,
      {in("x", f32), out("sums", f32), scalar("rows"), scalar("columns"), scalar("slice")});
  g.add_codelet("layer_norm_slice_squares_f32", file,
                {in("x", f32), in("sums", f32), out("squares", f32), scalar("rows"),
                 scalar("columns"), scalar("slice")});
  g.add_codelet("layer_norm_slice_apply_f32", file,
                {in("x", f32), in("gamma", f32), in("beta", f32), in("sums", f32),
                 in("squares", f32), out("y", f32), out("mean_out", f32), out("inv_out", f32),
                 scalar("rows"), scalar("columns"), scalar("slice"), scalar("eps")});
  g.add_codelet("layer_norm_grad_slice_sums_f32", file,
                {in("x", f32), in("dy", f32), in("gamma", f32), in("mean", f32), in("inv", f32),
                 out("sum_g", f32), out("sum_gx", f32), out("dgamma", f32), out("dbeta", f32),
                 scalar("rows"), scalar("columns"), scalar("slice")});
  g.add_codelet(
      "layer_norm_grad_slice_apply_f32", file,
      {in("x", f32), in("dy", f32), in("gamma", f32), in("mean", f32), in("inv", f32),
       in("sums", f32), out("dx", f32), scalar("rows"), scalar("columns"), scalar("slice")});
  g.add_codelet("softmax_grad_rows_f32", file,
                {in("y", f32), in("dy", f32), out("dx", f32), scalar("rows"), scalar("columns"),
                 scalar("scale")});
  g.add_codelet("softmax_grad_rows_f16", file,
                {in("y", f32), in("dy", f32), out("dx", f16), scalar("rows"), scalar("columns"),
                 scalar("scale")});
  g.add_codelet(
      "layer_norm_grad_rows_f32", file,
      {in("x", f32), in("dy", f32), in("gamma", f32), in("mean", f32), in("inv", f32),
       out("dx", f32), out("dgamma", f32), out("dbeta", f32), scalar("rows"), scalar("columns")});
  g.add_codelet(
      "sum_rows_in_order_f32", file,
      {in("in", f32), out("out", f32), scalar("rows"), scalar("columns"), scalar("stride")});
  {
    std::vector<Field> pieces;
    for (size_t i = 0; i < kSumPieces; ++i)
      pieces.push_back(in(fmt::format("in{}", i).c_str(), f32));  // Field copies the name
    pieces.push_back(out("out", f32));
    pieces.push_back(scalar("rows"));
    pieces.push_back(scalar("columns"));
    g.add_codelet("sum_pieces_in_order_f32", file, pieces);
  }
  g.add_codelet("dropout_f32", training,
                {in("x", f32), out("out", f32), scalar("n"), scalar("keep"), scalar("scale"),
                 scalar("s0_lo"), scalar("s0_hi"), scalar("s1_lo"), scalar("s1_hi")});
  g.add_codelet("adam_f32", training,
                {Field{"w", FieldKind::kInOut, f32}, in("g", f32),
                 Field{"m", FieldKind::kInOut, f32}, Field{"v", FieldKind::kInOut, f32},
                 out("u", f32), in("corr", f32), out("partial", f32), scalar("n"), scalar("b1"),
                 scalar("b2"), scalar("eps"), scalar("wd"), scalar("lr"), scalar("lamb")});
  g.add_codelet("lamb_ratio_f32", training,
                {in("partials", f32), out("ratio", f32), scalar("parts")});
  g.add_codelet("lamb_apply_f32", training,
                {Field{"w", FieldKind::kInOut, f32}, in("u", f32), in("ratio", f32), scalar("n"),
                 scalar("lr")});
  g.add_codelet("gather_columns_f32", file,
                {in("in", f32), out("out", f32), scalar("rows"), scalar("stride"), scalar("first"),
                 scalar("columns")});
  g.add_codelet("transpose_f32", file,
                {in("in", f32), out("out", f32), scalar("rows"), scalar("stride"), scalar("first"),
                 scalar("columns")});
  g.add_codelet("embedding_lookup_f32", training,
                {in("table", f32), in("indices", DType::kU32), out("out", f32), scalar("rows"),
                 scalar("entries"), scalar("count")});
  g.add_codelet("embedding_lookup_f16", training,
                {in("table", DType::kF16), in("indices", DType::kU32), out("out", f32),
                 scalar("rows"), scalar("entries"), scalar("count")});
  g.add_codelet("embedding_grad_f32", training,
                {in("dout", f32), in("indices", DType::kU32), out("grad", f32), scalar("rows"),
                 scalar("entries"), scalar("count")});
  g.add_codelet("embedding_grad_range_f32", training,
                {in("dout", f32), in("indices", DType::kU32), out("grad", f32), scalar("first"),
                 scalar("n"), scalar("count")});
  g.add_codelet("cross_entropy_rows_f32", training,
                {in("x", f32), in("labels", DType::kU32), out("loss", f32), out("dx", f32),
                 scalar("rows"), scalar("columns"), scalar("grad_scale")});
  g.add_codelet("cross_entropy_slice_exp_f32", training,
                {in("x", f32), in("m", f32), in("label", DType::kU32), out("dx", f32),
                 out("stats", f32), scalar("first"), scalar("n")});
  g.add_codelet("cross_entropy_combine_f32", training,
                {in("stats", f32), in("m", f32), in("label", DType::kU32), out("loss", f32),
                 out("total", f32), scalar("slices"), scalar("columns")});
  g.add_codelet("cross_entropy_slice_grad_f32", training,
                {Field{"dx", FieldKind::kInOut, f32}, in("total", f32), in("label", DType::kU32),
                 scalar("first"), scalar("n"), scalar("grad_scale")});
}

bool same_mapping(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].begin != b[i].begin || a[i].end != b[i].end || a[i].tile != b[i].tile) return false;
  return true;
}

// A tensor laid out as `like` (a copy by exchange when it is not already).
Tensor laid_like(Graph& g, Program& program, Tensor t, const TensorInfo& like_info,
                 const std::string& name) {
  const TensorInfo info = g.tensor(t);
  const std::vector<Interval> like = like_info.mapping;  // a copy: adding a tensor moves them
  if (same_mapping(info.mapping, like)) return t;
  const Tensor copy = g.add_variable(info.type, info.shape, name);
  g.set_tile_mapping(copy, like);
  g.set_scratch(copy);  // the operation's own, read by it alone
  program.body.push_back(Copy(relayout(g, t, copy)));
  return copy;
}

// The PRNG state of the dropout range starting at element `first`: splitmix64 of the seed and
// the element, twice (never all zero).
std::pair<uint64_t, uint64_t> dropout_state(uint64_t seed, size_t first) {
  uint64_t z = seed ^ (0x9e3779b97f4a7c15ull * (first + 1));
  auto mix = [&z] {
    z += 0x9e3779b97f4a7c15ull;
    uint64_t x = z;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
  };
  const uint64_t s0 = mix(), s1 = mix();
  return {s0, s1 == 0 && s0 == 0 ? 1 : s1};
}

const TensorInfo& mapped(const Graph& g, Tensor t, const std::string& op, const char* which) {
  if (t.id >= g.tensors().size())
    throw GraphError(fmt::format("{}: {} is not a tensor of this graph", op, which));
  const TensorInfo& info = g.tensor(t);
  size_t covered = 0;
  for (const Interval& m : info.mapping) covered += m.end - m.begin;
  if (covered != info.elements)
    throw GraphError(fmt::format("{}: {} '{}' is not mapped to tiles", op, which, info.name));
  return info;
}

void require_type(const TensorInfo& t, DType type, const std::string& op, const char* which) {
  if (t.type != type)
    throw GraphError(fmt::format("{}: {} '{}' is {}; the operation takes {}", op, which, t.name,
                                 dtype_name(t.type), dtype_name(type)));
}

// Six ranges of an interval, each at least `grain` elements apart (f16 pieces start on words).
std::vector<std::pair<size_t, size_t>> six_ranges(const Interval& m, size_t grain) {
  std::vector<std::pair<size_t, size_t>> out;
  const size_t units = (m.end - m.begin + grain - 1) / grain;
  for (size_t w = 0; w < 6; ++w) {
    const size_t lo = m.begin + grain * (units * w / 6);
    const size_t hi = std::min(m.end, m.begin + grain * (units * (w + 1) / 6));
    if (lo < hi) out.emplace_back(lo, hi);
  }
  return out;
}

WorkSplit::WorkSplit(const TensorInfo& t) {
  for (const Interval& m : t.mapping) ++pieces_[m.tile];
}

std::vector<std::pair<size_t, size_t>> WorkSplit::ranges(const Interval& m, size_t grain) const {
  if (pieces_.at(m.tile) >= 6) return {{m.begin, m.end}};
  return six_ranges(m, grain);
}

// One copy of `v` (a vector) on each listed tile: a tensor [tiles x n], row i on tiles[i],
// filled by a multicast of v.
Tensor replicate(Graph& g, Program& program, Tensor v, const std::vector<unsigned>& tiles,
                 const std::string& name) {
  const TensorInfo info = g.tensor(v);
  const Tensor copies = g.add_variable(info.type, {tiles.size(), info.elements}, name);
  std::vector<Interval> mapping;
  for (size_t i = 0; i < tiles.size(); ++i)
    mapping.push_back({i * info.elements, (i + 1) * info.elements, tiles[i]});
  g.set_tile_mapping(copies, mapping);
  g.set_scratch(copies);  // read by the operation that made it, only
  program.body.push_back(Broadcast(v, copies));
  return copies;
}

Tensor copies_on_tiles(Graph& g, Program& program, Tensor v, const std::vector<unsigned>& tiles,
                       const std::string& name) {
  require_sequence(program, name);
  const TensorInfo info = mapped(g, v, name, "vector");
  if (tiles.empty()) throw GraphError(fmt::format("{}: no tiles to copy '{}' to", name, info.name));
  const size_t n = info.elements;
  const Tensor copies = g.add_variable(info.type, {tiles.size(), n}, name);
  std::vector<Interval> mapping;
  for (size_t i = 0; i < tiles.size(); ++i) mapping.push_back({i * n, (i + 1) * n, tiles[i]});
  g.set_tile_mapping(copies, mapping);
  constexpr size_t kGroup = 64;
  const auto row = [&](size_t i) { return g.region(copies, i * n, (i + 1) * n); };
  CopyPairs first, rest;
  for (size_t i = 0; i < tiles.size(); ++i) {
    const size_t leader = tiles.size() > kGroup ? i / kGroup * kGroup : i;
    if (leader == i)
      first.emplace_back(g.region(v), row(i));
    else
      rest.emplace_back(row(leader), row(i));
  }
  program.body.push_back(Copy(std::move(first)));
  if (!rest.empty()) program.body.push_back(Copy(std::move(rest)));
  return copies;
}

LocalCopies local_copies(Graph& g, Program& program, Tensor v, size_t n,
                         const std::vector<unsigned>& tiles, const std::string& name) {
  const TensorInfo info = g.tensor(v);
  LocalCopies out{v, {}};
  if (info.shape.size() == 2 && info.shape[1] == n) {
    std::map<unsigned, size_t> row_on;  // by tile: a whole row it holds
    for (const Interval& m : info.mapping)
      if (m.begin % n == 0 && m.end - m.begin >= n) row_on.emplace(m.tile, m.begin);
    for (unsigned t : tiles) {
      const auto it = row_on.find(t);
      if (it == row_on.end())
        throw GraphError(fmt::format(
            "{}: '{}' [{} x {}] holds no copy on {}, which needs one (copies_on_tiles lays out "
            "one a tile)",
            name, info.name, info.shape[0], n, g.describe_tile(t)));
      out.at.push_back(it->second);
    }
    return out;
  }
  out.tensor = replicate(g, program, v, tiles, name);
  for (size_t i = 0; i < tiles.size(); ++i) out.at.push_back(i * n);
  return out;
}

std::vector<unsigned> tiles_of(const TensorInfo& t) {
  std::vector<unsigned> out;
  for (const Interval& m : t.mapping)
    if (std::find(out.begin(), out.end(), m.tile) == out.end()) out.push_back(m.tile);
  return out;
}

void require_sequence(const Program& program, const std::string& op) {
  if (program.kind != Program::Kind::kSequence)
    throw GraphError(fmt::format("{}: the program to append to must be a Sequence", op));
}

std::pair<unsigned, unsigned> own_chip_from(const Graph& g, const TensorInfo& t) {
  unsigned first = g.tiles();
  for (const Interval& m : t.mapping) first = std::min(first, m.tile);
  const unsigned chip_tiles = g.target().machine.chip.tiles;
  const unsigned chip_end = std::min(g.tiles(), (first / chip_tiles + 1) * chip_tiles);
  return {first, chip_end - first};
}

// x as a matrix with whole rows on tiles: x itself when every row lies on one tile, else a copy
// laid out so, by an exchange: rows spread evenly from x's first tile over the rest of that
// tile's chip (so that an operation of one pipeline stage stays on its chip).
Tensor whole_rows(Graph& g, Program& program, Tensor x, const std::string& name) {
  const TensorInfo info = g.tensor(x);
  const size_t columns = info.shape.back();
  bool whole = true;
  for (const Interval& m : info.mapping) whole &= m.begin % columns == 0 && m.end % columns == 0;
  if (whole) return x;
  const auto [first, tiles] = own_chip_from(g, info);
  const Tensor rows = g.add_variable(info.type, info.shape, name + ".rows");
  g.map_evenly(rows, first,
               std::min<unsigned>(tiles, static_cast<unsigned>(info.elements / columns)), columns);
  g.set_scratch(rows);
  program.body.push_back(Copy(relayout(g, x, rows)));
  return rows;
}

Tensor f32_rows(Graph& g, Program& program, Tensor x, const std::string& op) {
  require_sequence(program, op);
  const TensorInfo info = mapped(g, x, op, "operand");
  require_type(info, DType::kF32, op, "operand");
  require_rows(info, op);
  add_ops_codelets(g);
  return whole_rows(g, program, x, op);
}

// Row operations take any tensor of two or more dimensions as rows of its last one.
void require_rows(const TensorInfo& t, const std::string& op) {
  if (t.shape.size() < 2 || t.elements == 0)
    throw GraphError(fmt::format("{}: '{}' must be a matrix [rows x columns], not {} dimensions",
                                 op, t.name, t.shape.size()));
}

void require_matrix(const TensorInfo& t, const std::string& op) {
  if (t.shape.size() != 2 || t.elements == 0)
    throw GraphError(fmt::format("{}: '{}' must be a matrix [rows x columns], not {} dimensions",
                                 op, t.name, t.shape.size()));
}

// A backward pass's operands: an f32 matrix and its gradient of the same shape.
void matrix_and_gradient(const Graph& g, Tensor t, Tensor dy, const std::string& op,
                         const char* which) {
  const TensorInfo ti = mapped(g, t, op, which);
  const TensorInfo di = mapped(g, dy, op, "dy");
  require_type(ti, DType::kF32, op, which);
  require_type(di, DType::kF32, op, "dy");
  require_rows(ti, op);
  if (di.shape != ti.shape)
    throw GraphError(fmt::format("{}: dy '{}' [{}] must have {} '{}''s shape [{}]", op, di.name,
                                 fmt::join(di.shape, " x "), which, ti.name,
                                 fmt::join(ti.shape, " x ")));
}

std::vector<RowRange> row_ranges(const TensorInfo& t) {
  const size_t columns = t.shape.back();
  std::vector<RowRange> out;
  for (const Interval& m : t.mapping) {
    const size_t r0 = m.begin / columns, rows = (m.end - m.begin) / columns;
    for (size_t w = 0; w < 6; ++w) {
      const size_t lo = rows * w / 6, hi = rows * (w + 1) / 6;
      if (lo < hi) out.push_back({m.tile, r0 + lo, hi - lo});
    }
  }
  return out;
}

// A vector per row: [R], each element on its row's tile.
Tensor row_vector(Graph& g, const TensorInfo& rows_laid, const std::string& name) {
  const size_t columns = rows_laid.shape.back();
  const Tensor v = g.add_variable(DType::kF32, {rows_laid.elements / columns}, name);
  std::vector<Interval> mapping;
  for (const Interval& m : rows_laid.mapping)
    mapping.push_back({m.begin / columns, m.end / columns, m.tile});
  g.set_tile_mapping(v, mapping);
  return v;
}

// A tensor [rows x columns] laid out by whole rows as `like` ([rows x other]) is.
Tensor rows_like(Graph& g, const TensorInfo& like, size_t columns, const std::string& name) {
  const size_t like_columns = like.shape[1];
  const Tensor t = g.add_variable(DType::kF32, {like.shape[0], columns}, name);
  std::vector<Interval> mapping;
  for (const Interval& m : like.mapping)
    mapping.push_back({m.begin / like_columns * columns, m.end / like_columns * columns, m.tile});
  g.set_tile_mapping(t, mapping);
  return t;
}

RowCuts row_cuts(const TensorInfo& t) {
  const size_t columns = t.shape.back(), rows = t.elements / columns;
  // The pieces, with neighbours on one tile merged, each within one row.
  std::vector<Interval> pieces;
  for (const Interval& m : t.mapping) {
    if (!pieces.empty() && pieces.back().tile == m.tile && pieces.back().end == m.begin &&
        m.begin % columns != 0)
      pieces.back().end = m.end;
    else
      pieces.push_back(m);
    if (pieces.back().begin / columns != (pieces.back().end - 1) / columns) return {};
  }
  RowCuts cuts;
  for (const Interval& p : pieces) {
    if (p.begin / columns != 0) break;
    cuts.starts.push_back(p.begin);
  }
  const size_t per_row = cuts.starts.size();
  if (per_row < 2 || pieces.size() != rows * per_row) return {};
  for (size_t i = 0; i < pieces.size(); ++i) {
    if (pieces[i].begin != (i / per_row) * columns + cuts.starts[i % per_row]) return {};
    cuts.tiles.push_back(pieces[i].tile);
  }
  return cuts;
}

void map_rows(Graph& g, Tensor t, unsigned first, unsigned tiles) {
  const TensorInfo& info = g.tensor(t);
  const size_t columns = info.shape.back(), rows = info.elements / columns;
  const size_t slices = std::min<size_t>(tiles / rows, columns / kMinSliceColumns);
  const bool large = columns * dtype_size(info.type) > kSliceRowBytes;
  if (slices < 2 || (!large && tiles / rows < kSliceRowsTiles)) {
    g.map_evenly(t, first, static_cast<unsigned>(std::min<size_t>(tiles, rows)), columns);
    return;
  }
  const size_t width = ((columns + slices - 1) / slices + 1) & ~size_t{1};
  std::vector<Interval> mapping;
  for (size_t r = 0; r < rows; ++r)
    for (size_t s = 0; s * width < columns; ++s)
      mapping.push_back({r * columns + s * width, r * columns + std::min(columns, (s + 1) * width),
                         first + static_cast<unsigned>(r * slices + s)});
  g.set_tile_mapping(t, mapping);
}

void map_row_blocks(Graph& g, Tensor t, unsigned first, unsigned tiles) {
  const TensorInfo& info = g.tensor(t);
  const size_t columns = info.shape.back(), rows = info.elements / columns;
  // The slices that leave a tile the fewest elements: blocks of ceil(rows / (tiles / slices))
  // rows by a slice's width; one slice (whole rows) unless cutting saves a tile's elements.
  size_t best = 1, most = (rows + std::min<size_t>(tiles, rows) - 1) /
                          std::min<size_t>(tiles, rows) * columns;
  for (size_t slices = 2; slices <= kMostRowBlockSlices && tiles / slices >= 1; ++slices) {
    const size_t width = ((columns + slices - 1) / slices + 1) & ~size_t{1};
    if (width < kMinSliceColumns || (slices - 1) * width >= columns) continue;
    const size_t blocks = std::min<size_t>(tiles / slices, rows);
    const size_t elements = (rows + blocks - 1) / blocks * width;
    if (elements < most) best = slices, most = elements;
  }
  if (best == 1) {
    map_rows(g, t, first, tiles);
    return;
  }
  const size_t width = ((columns + best - 1) / best + 1) & ~size_t{1};
  const size_t blocks = std::min<size_t>(tiles / best, rows);
  std::vector<Interval> mapping;
  for (size_t r = 0; r < rows; ++r) {
    const size_t block = r * blocks / rows;
    for (size_t s = 0; s * width < columns; ++s)
      mapping.push_back({r * columns + s * width, r * columns + std::min(columns, (s + 1) * width),
                         first + static_cast<unsigned>(s * blocks + block)});
  }
  g.set_tile_mapping(t, mapping);
}

void require_indices(const TensorInfo& t, const std::string& op) {
  if (t.type != DType::kU32 || t.shape.size() != 1)
    throw GraphError(fmt::format("{}: indices '{}' must be a u32 vector, not {} [{}]", op, t.name,
                                 dtype_name(t.type), fmt::join(t.shape, " x ")));
}

}  // namespace ipu::sdk::ops
