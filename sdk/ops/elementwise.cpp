#include "sdk/ops/elementwise.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "firmware/codelets/ops_math.h"
#include "sdk/graph/sdk_paths.h"
#include "sdk/ops/pieces.h"

namespace ipu::sdk::ops {
namespace {

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
uint32_t u32(size_t x) { return static_cast<uint32_t>(x); }

void add_codelets(Graph& g) {
  if (g.codelets().count("binary_f32")) return;
  const std::string file = sdk_paths().codelet_dir() + "/ops_elementwise.c";
  auto in = [](const char* n, DType t) { return Field{n, FieldKind::kInput, t}; };
  auto out = [](const char* n, DType t) { return Field{n, FieldKind::kOutput, t}; };
  auto scalar = [](const char* n) { return Field{n, FieldKind::kScalar, DType::kU32}; };
  const DType f32 = DType::kF32, f16 = DType::kF16;
  g.add_codelet("binary_f32", file,
                {in("a", f32), in("b", f32), out("out", f32), scalar("n"), scalar("op"),
                 scalar("period"), scalar("offset")});
  g.add_codelet("unary_f32", file,
                {in("a", f32), out("out", f32), scalar("n"), scalar("op"), scalar("k")});
  g.add_codelet("cast_f32_f16", file, {in("a", f32), out("out", f16), scalar("n")});
  g.add_codelet("cast_f32_f16_sr", file,
                {in("a", f32), out("out", f16), scalar("n"), scalar("s0_lo"), scalar("s0_hi"),
                 scalar("s1_lo"), scalar("s1_hi")});
  if (g.codelets().count("cast_f16_f32") == 0)  // the matmul library may have declared it
    g.add_codelet("cast_f16_f32", sdk_paths().codelet_dir() + "/matmul_planned.c",
                  {in("in", f16), out("out", f32), scalar("n")});
  g.add_codelet("reduce_rows_op_f32", file,
                {in("x", f32), out("out", f32), scalar("rows"), scalar("columns"), scalar("op")});
  g.add_codelet("softmax_rows_f32", file,
                {in("x", f32), in("mask", f32), out("out", f32), scalar("rows"), scalar("columns"),
                 scalar("masked")});
  g.add_codelet(
      "layer_norm_rows_f32", file,
      {in("x", f32), in("gamma", f32), in("beta", f32), out("y", f32), out("mean_out", f32),
       out("inv_out", f32), scalar("rows"), scalar("columns"), scalar("eps")});
  g.add_codelet("softmax_grad_rows_f32", file,
                {in("y", f32), in("dy", f32), out("dx", f32), scalar("rows"), scalar("columns")});
  g.add_codelet(
      "layer_norm_grad_rows_f32", file,
      {in("x", f32), in("dy", f32), in("gamma", f32), in("mean", f32), in("inv", f32),
       out("dx", f32), out("dgamma", f32), out("dbeta", f32), scalar("rows"), scalar("columns")});
  g.add_codelet("sum_rows_in_order_f32", file,
                {in("in", f32), out("out", f32), scalar("rows"), scalar("columns")});
  g.add_codelet("dropout_f32", file,
                {in("x", f32), out("out", f32), scalar("n"), scalar("keep"), scalar("scale"),
                 scalar("s0_lo"), scalar("s0_hi"), scalar("s1_lo"), scalar("s1_hi")});
  g.add_codelet("adam_f32", file,
                {Field{"w", FieldKind::kInOut, f32}, in("g", f32),
                 Field{"m", FieldKind::kInOut, f32}, Field{"v", FieldKind::kInOut, f32},
                 out("u", f32), in("corr", f32), out("partial", f32), scalar("n"), scalar("b1"),
                 scalar("b2"), scalar("eps"), scalar("wd"), scalar("lr"), scalar("lamb")});
  g.add_codelet("lamb_ratio_f32", file, {in("partials", f32), out("ratio", f32), scalar("parts")});
  g.add_codelet("lamb_apply_f32", file,
                {Field{"w", FieldKind::kInOut, f32}, in("u", f32), in("ratio", f32), scalar("n"),
                 scalar("lr")});
  g.add_codelet("transpose_f32", file,
                {in("in", f32), out("out", f32), scalar("rows"), scalar("stride"), scalar("first"),
                 scalar("columns")});
  g.add_codelet("embedding_lookup_f32", file,
                {in("table", f32), in("indices", DType::kU32), out("out", f32), scalar("rows"),
                 scalar("entries"), scalar("count")});
  g.add_codelet("embedding_grad_f32", file,
                {in("dout", f32), in("indices", DType::kU32), out("grad", f32), scalar("rows"),
                 scalar("entries"), scalar("count")});
  g.add_codelet("cross_entropy_rows_f32", file,
                {in("x", f32), in("labels", DType::kU32), out("loss", f32), out("dx", f32),
                 scalar("rows"), scalar("columns"), scalar("grad_scale")});
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
  program.body.push_back(Copy(t, copy));
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
std::vector<std::pair<size_t, size_t>> six_ranges(const Interval& m, size_t grain = 1) {
  std::vector<std::pair<size_t, size_t>> out;
  const size_t units = (m.end - m.begin + grain - 1) / grain;
  for (size_t w = 0; w < 6; ++w) {
    const size_t lo = m.begin + grain * (units * w / 6);
    const size_t hi = std::min(m.end, m.begin + grain * (units * (w + 1) / 6));
    if (lo < hi) out.emplace_back(lo, hi);
  }
  return out;
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
  program.body.push_back(Broadcast(v, copies));
  return copies;
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

// x as a matrix with whole rows on tiles: x itself when every row lies on one tile, else a copy
// laid out so (rows spread evenly over x's tiles), by an exchange.
Tensor whole_rows(Graph& g, Program& program, Tensor x, const std::string& name) {
  const TensorInfo info = g.tensor(x);
  const size_t columns = info.shape.back();
  bool whole = true;
  for (const Interval& m : info.mapping) whole &= m.begin % columns == 0 && m.end % columns == 0;
  if (whole) return x;
  const Tensor rows = g.add_variable(info.type, info.shape, name + ".rows");
  g.map_evenly(rows, 0,
               std::min<unsigned>(g.tiles(), static_cast<unsigned>(info.elements / columns)),
               columns);
  program.body.push_back(Copy(x, rows));
  return rows;
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

}  // namespace

Tensor binary(Graph& g, Program& program, BinaryOp op, Tensor a, Tensor b,
              const std::string& name) {
  require_sequence(program, name);
  const TensorInfo ai = mapped(g, a, name, "operand a");
  const TensorInfo bi = mapped(g, b, name, "operand b");
  require_type(ai, DType::kF32, name, "operand a");
  require_type(bi, DType::kF32, name, "operand b");
  const bool same = bi.shape == ai.shape;
  const bool vector = bi.shape.size() == 1 && !ai.shape.empty() && bi.shape[0] == ai.shape.back();
  if (!same && !vector)
    throw GraphError(fmt::format(
        "{}: '{}' [{}] and '{}' [{}] do not match: b must have a's shape or be a vector of a's "
        "last dimension",
        name, ai.name, fmt::join(ai.shape, " x "), bi.name, fmt::join(bi.shape, " x ")));
  add_codelets(g);
  const Tensor out = g.add_variable(DType::kF32, ai.shape, name);
  g.set_tile_mapping(out, ai.mapping);
  // b beside each of a's pieces: a copy with a's mapping, or the vector on each of a's tiles.
  Tensor b_local = b;
  const std::vector<unsigned> tiles = tiles_of(ai);
  auto alike = [&] {
    if (bi.mapping.size() != ai.mapping.size()) return false;
    for (size_t i = 0; i < ai.mapping.size(); ++i)
      if (ai.mapping[i].begin != bi.mapping[i].begin || ai.mapping[i].end != bi.mapping[i].end ||
          ai.mapping[i].tile != bi.mapping[i].tile)
        return false;
    return true;
  };
  if (vector) {
    b_local = replicate(g, program, b, tiles, name + ".b");
  } else if (!alike()) {
    b_local = g.add_variable(DType::kF32, ai.shape, name + ".b");
    g.set_tile_mapping(b_local, ai.mapping);
    program.body.push_back(Copy(b, b_local));
  }
  const ComputeSet cs = g.add_compute_set(name);
  for (const Interval& m : ai.mapping)
    for (const auto& [lo, hi] : six_ranges(m)) {
      Region b_region;
      uint32_t period = u32(hi - lo), offset = 0;
      if (!vector) {
        b_region = g.region(b_local, lo, hi);
      } else {
        const size_t row =
            static_cast<size_t>(std::find(tiles.begin(), tiles.end(), m.tile) - tiles.begin());
        b_region = g.region(b_local, row * bi.elements, (row + 1) * bi.elements);
        period = u32(bi.elements);
        offset = u32(lo % bi.elements);
      }
      g.add_vertex(cs, "binary_f32", m.tile,
                   {{"a", g.region(a, lo, hi)},
                    {"b", b_region},
                    {"out", g.region(out, lo, hi)},
                    {"n", u32(hi - lo)},
                    {"op", static_cast<uint32_t>(op)},
                    {"period", period},
                    {"offset", offset}});
    }
  program.body.push_back(Execute(cs));
  return out;
}

Tensor unary(Graph& g, Program& program, UnaryOp op, Tensor a, const std::string& name, float k) {
  require_sequence(program, name);
  const TensorInfo ai = mapped(g, a, name, "operand");
  require_type(ai, DType::kF32, name, "operand");
  add_codelets(g);
  const Tensor out = g.add_variable(DType::kF32, ai.shape, name);
  g.set_tile_mapping(out, ai.mapping);
  const ComputeSet cs = g.add_compute_set(name);
  for (const Interval& m : ai.mapping)
    for (const auto& [lo, hi] : six_ranges(m))
      g.add_vertex(cs, "unary_f32", m.tile,
                   {{"a", g.region(a, lo, hi)},
                    {"out", g.region(out, lo, hi)},
                    {"n", u32(hi - lo)},
                    {"op", static_cast<uint32_t>(op)},
                    {"k", bits_of(k)}});
  program.body.push_back(Execute(cs));
  return out;
}

Tensor cast(Graph& g, Program& program, Tensor a, DType to, const std::string& name,
            const CastOptions& options) {
  require_sequence(program, name);
  const TensorInfo ai = mapped(g, a, name, "operand");
  const bool narrow = ai.type == DType::kF32 && to == DType::kF16;
  const bool widen = ai.type == DType::kF16 && to == DType::kF32;
  if (!narrow && !widen)
    throw GraphError(fmt::format("{}: no cast from {} to {} ('{}'); the casts are f32 <-> f16",
                                 name, dtype_name(ai.type), dtype_name(to), ai.name));
  add_codelets(g);
  // An f16 result's pieces start on words: with a's pieces moved to even starts (a copy of a
  // laid out so, when any of its starts is odd).
  std::vector<Interval> mapping;
  for (const Interval& m : ai.mapping) {
    const size_t begin = m.begin & ~size_t{1};
    if (!mapping.empty()) {  // the previous piece now ends where this one starts
      mapping.back().end = begin;
      if (mapping.back().end <= mapping.back().begin) mapping.pop_back();  // it held one element
    }
    if (!mapping.empty() && mapping.back().tile == m.tile && mapping.back().end == begin)
      mapping.back().end = m.end;
    else
      mapping.push_back({begin, m.end, m.tile});
  }
  Tensor source = a;
  bool moved = false;
  for (const Interval& m : ai.mapping) moved |= m.begin % 2 != 0;
  if (narrow && moved) {
    source = g.add_variable(ai.type, ai.shape, name + ".even");
    g.set_tile_mapping(source, mapping);
    program.body.push_back(Copy(a, source));
  }
  const Tensor out = g.add_variable(to, ai.shape, name);
  g.set_tile_mapping(out, narrow ? mapping : ai.mapping);
  const ComputeSet cs = g.add_compute_set(name);
  const bool stochastic = narrow && options.stochastic;
  for (const Interval& m : narrow ? mapping : ai.mapping)
    for (const auto& [lo, hi] : six_ranges(m, 2)) {  // f16 pieces of whole words
      std::map<std::string, Binding> fields{{narrow ? "a" : "in", g.region(source, lo, hi)},
                                            {"out", g.region(out, lo, hi)},
                                            {"n", u32(hi - lo)}};
      if (stochastic) {
        const auto [s0, s1] = dropout_state(options.seed, lo);
        fields.insert({{"s0_lo", static_cast<uint32_t>(s0)},
                       {"s0_hi", static_cast<uint32_t>(s0 >> 32)},
                       {"s1_lo", static_cast<uint32_t>(s1)},
                       {"s1_hi", static_cast<uint32_t>(s1 >> 32)}});
      }
      g.add_vertex(cs,
                   stochastic ? "cast_f32_f16_sr"
                   : narrow   ? "cast_f32_f16"
                              : "cast_f16_f32",
                   m.tile, fields);
    }
  program.body.push_back(Execute(cs));
  return out;
}

namespace {

// Six ranges of the whole rows of each interval of a rows-laid matrix: (tile, first row, rows).
struct RowRange {
  unsigned tile;
  size_t first, rows;
};
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

}  // namespace

Tensor reduce_rows(Graph& g, Program& program, ReduceOp op, Tensor x, const std::string& name) {
  require_sequence(program, name);
  const TensorInfo xi0 = mapped(g, x, name, "operand");
  require_type(xi0, DType::kF32, name, "operand");
  require_rows(xi0, name);
  add_codelets(g);
  const Tensor rows = whole_rows(g, program, x, name);
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

Tensor softmax_rows(Graph& g, Program& program, Tensor x, std::optional<Tensor> mask,
                    const std::string& name) {
  require_sequence(program, name);
  const TensorInfo xi0 = mapped(g, x, name, "operand");
  require_type(xi0, DType::kF32, name, "operand");
  require_rows(xi0, name);
  if (mask) {
    const TensorInfo mi = mapped(g, *mask, name, "mask");
    require_type(mi, DType::kF32, name, "mask");
    if (mi.shape.size() != 1 || mi.elements != xi0.shape.back())
      throw GraphError(fmt::format("{}: mask '{}' must be a vector of {} (a row of '{}')", name,
                                   mi.name, xi0.shape.back(), xi0.name));
  }
  add_codelets(g);
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
                  {"masked", masks ? 1u : 0u}});
  }
  program.body.push_back(Execute(cs));
  return out;
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
  add_codelets(g);
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
  add_codelets(g);
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
  add_codelets(g);
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
  // Each range's partial sums of dgamma and dbeta, a row of columns on its tile.
  std::vector<Interval> partial_mapping;
  for (size_t i = 0; i < ranges.size(); ++i)
    partial_mapping.push_back({i * columns, (i + 1) * columns, ranges[i].tile});
  const Tensor dgamma_parts =
      g.add_variable(DType::kF32, {ranges.size(), columns}, name + ".dgamma_parts");
  const Tensor dbeta_parts =
      g.add_variable(DType::kF32, {ranges.size(), columns}, name + ".dbeta_parts");
  g.set_tile_mapping(dgamma_parts, partial_mapping);
  g.set_tile_mapping(dbeta_parts, partial_mapping);
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
                  {"dgamma", g.region(dgamma_parts, i * columns, (i + 1) * columns)},
                  {"dbeta", g.region(dbeta_parts, i * columns, (i + 1) * columns)},
                  {"rows", u32(r.rows)},
                  {"columns", u32(columns)}});
    out.partial_rows.push_back(r.rows);
  }
  program.body.push_back(Execute(cs));
  // The partials gathered on gamma's first tile and added there in order.
  const unsigned home = g.tensor(gamma).mapping.front().tile;
  const ComputeSet sum_cs = g.add_compute_set(name + ".sum");
  for (const auto& [parts, which] :
       {std::pair{dgamma_parts, ".dgamma"}, std::pair{dbeta_parts, ".dbeta"}}) {
    const Tensor gathered =
        g.add_variable(DType::kF32, {ranges.size(), columns}, name + which + "_gathered");
    g.set_tile_mapping(gathered, home);
    program.body.push_back(Copy(parts, gathered));
    const Tensor total = g.add_variable(DType::kF32, {columns}, name + which);
    g.set_tile_mapping(total, home);
    g.add_vertex(sum_cs, "sum_rows_in_order_f32", home,
                 {{"in", g.region(gathered)},
                  {"out", g.region(total)},
                  {"rows", u32(ranges.size())},
                  {"columns", u32(columns)}});
    (std::string(which) == ".dgamma" ? out.dgamma : out.dbeta) = total;
  }
  program.body.push_back(Execute(sum_cs));
  return out;
}

std::vector<std::pair<size_t, size_t>> element_ranges(const Graph& g, Tensor x, size_t grain) {
  std::vector<std::pair<size_t, size_t>> out;
  for (const Interval& m : g.tensor(x).mapping)
    for (const auto& range : six_ranges(m, grain)) out.push_back(range);
  return out;
}

Tensor dropout(Graph& g, Program& program, Tensor x, float rate, uint64_t seed,
               const std::string& name) {
  require_sequence(program, name);
  const TensorInfo xi = mapped(g, x, name, "operand");
  require_type(xi, DType::kF32, name, "operand");
  if (!(rate >= 0.0f && rate < 1.0f))
    throw GraphError(fmt::format("{}: the dropout rate must be in [0, 1), not {}", name, rate));
  add_codelets(g);
  const Tensor out = g.add_variable(DType::kF32, xi.shape, name);
  g.set_tile_mapping(out, xi.mapping);
  const auto keep = static_cast<uint32_t>(
      std::min(4294967295.0, std::floor((1.0 - static_cast<double>(rate)) * 4294967296.0)));
  const float scale = 1.0f / (1.0f - rate);
  const ComputeSet cs = g.add_compute_set(name);
  for (const Interval& m : xi.mapping)
    for (const auto& [lo, hi] : six_ranges(m)) {
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
  add_codelets(g);
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
  if (ci.elements != 2)
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
  add_codelets(gr);
  const Tensor gl = laid_like(gr, program, g, wi, name + ".g");
  const std::vector<unsigned> tiles = tiles_of(wi);
  const Tensor corr = replicate(gr, program, corrections, tiles, name + ".corrections");
  const auto ranges = element_ranges(gr, w);
  const Tensor u = gr.add_variable(DType::kF32, wi.shape, name + ".u");
  gr.set_tile_mapping(u, wi.mapping);
  std::vector<Interval> partial_mapping;
  size_t r = 0;
  for (const Interval& piece : wi.mapping)
    for (size_t k = 0; k < six_ranges(piece).size(); ++k, ++r)
      partial_mapping.push_back({2 * r, 2 * r + 2, piece.tile});
  const Tensor partials = gr.add_variable(DType::kF32, {ranges.size(), 2}, name + ".partials");
  gr.set_tile_mapping(partials, partial_mapping);
  const ComputeSet cs = gr.add_compute_set(name);
  r = 0;
  for (const Interval& piece : wi.mapping) {
    const size_t at =
        static_cast<size_t>(std::find(tiles.begin(), tiles.end(), piece.tile) - tiles.begin());
    for (const auto& [lo, hi] : six_ranges(piece)) {
      gr.add_vertex(cs, "adam_f32", piece.tile,
                    {{"w", gr.region(w, lo, hi)},
                     {"g", gr.region(gl, lo, hi)},
                     {"m", gr.region(m, lo, hi)},
                     {"v", gr.region(v, lo, hi)},
                     {"u", gr.region(u, lo, hi)},
                     {"corr", gr.region(corr, 2 * at, 2 * at + 2)},
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
  // The trust ratio on w's first tile from the ranges' partial sums, then to every tile.
  const unsigned home = wi.mapping.front().tile;
  const Tensor gathered = gr.add_variable(DType::kF32, {ranges.size(), 2}, name + ".gathered");
  gr.set_tile_mapping(gathered, home);
  program.body.push_back(Copy(partials, gathered));
  const Tensor ratio = gr.add_variable(DType::kF32, {1}, name + ".ratio");
  gr.set_tile_mapping(ratio, home);
  const ComputeSet ratio_cs = gr.add_compute_set(name + ".ratio");
  gr.add_vertex(ratio_cs, "lamb_ratio_f32", home,
                {{"partials", gr.region(gathered)},
                 {"ratio", gr.region(ratio)},
                 {"parts", u32(ranges.size())}});
  program.body.push_back(Execute(ratio_cs));
  const Tensor ratios = replicate(gr, program, ratio, tiles, name + ".ratios");
  const ComputeSet apply = gr.add_compute_set(name + ".apply");
  for (const Interval& piece : wi.mapping) {
    const size_t at =
        static_cast<size_t>(std::find(tiles.begin(), tiles.end(), piece.tile) - tiles.begin());
    for (const auto& [lo, hi] : six_ranges(piece))
      gr.add_vertex(apply, "lamb_apply_f32", piece.tile,
                    {{"w", gr.region(w, lo, hi)},
                     {"u", gr.region(u, lo, hi)},
                     {"ratio", gr.region(ratios, at, at + 1)},
                     {"n", u32(hi - lo)},
                     {"lr", bits_of(o.learning_rate)}});
  }
  program.body.push_back(Execute(apply));
}

namespace {

// The feature rows of a feature-major tensor, whole on tiles, as (tile, first row, rows), a
// row range a vertex (six a tile piece).
std::vector<RowRange> feature_ranges(const TensorInfo& t) { return row_ranges(t); }

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

void require_indices(const TensorInfo& t, const std::string& op) {
  if (t.type != DType::kU32 || t.shape.size() != 1)
    throw GraphError(fmt::format("{}: indices '{}' must be a u32 vector, not {} [{}]", op, t.name,
                                 dtype_name(t.type), fmt::join(t.shape, " x ")));
}

}  // namespace

Tensor transpose(Graph& g, Program& program, Tensor x, const std::string& name) {
  require_sequence(program, name);
  const TensorInfo xi = mapped(g, x, name, "operand");
  require_type(xi, DType::kF32, name, "operand");
  require_matrix(xi, name);
  add_codelets(g);
  const size_t rows = xi.shape[0], columns = xi.shape[1];
  const Tensor y = g.add_variable(DType::kF32, {columns, rows}, name);
  const unsigned tiles =
      static_cast<unsigned>(std::min<size_t>(columns, std::max<size_t>(1, tiles_of(xi).size())));
  g.map_evenly(y, 0, tiles, rows);
  const TensorInfo yi = g.tensor(y);
  // Each tile's columns of every row of x, gathered [rows x its columns].
  std::vector<std::pair<unsigned, size_t>> chunks;
  for (const Interval& m : yi.mapping) chunks.emplace_back(m.tile, (m.end - m.begin));
  const Chunks staged = add_chunked(g, DType::kF32, chunks, name + ".columns");
  std::map<unsigned, CopyPairs> by_source;
  for (size_t i = 0; i < yi.mapping.size(); ++i) {
    const Interval& m = yi.mapping[i];
    const size_t c0 = m.begin / rows, cw = (m.end - m.begin) / rows;
    for (size_t r = 0; r < rows; ++r)
      by_source[g.tile_of(x, r * columns + c0)].push_back(
          {g.region(x, r * columns + c0, r * columns + c0 + cw),
           g.region(staged.tensor, staged.offsets[i] + r * cw, staged.offsets[i] + (r + 1) * cw)});
  }
  std::vector<CopyPairs> lists;
  for (auto& [tile, pairs] : by_source) lists.push_back(std::move(pairs));
  program.body.push_back(Copy(interleave(lists)));
  const ComputeSet cs = g.add_compute_set(name);
  for (size_t i = 0; i < yi.mapping.size(); ++i) {
    const Interval& m = yi.mapping[i];
    const size_t c0 = m.begin / rows, cw = (m.end - m.begin) / rows;
    for (unsigned w = 0; w < 6; ++w) {
      const size_t lo = cw * w / 6, hi = cw * (w + 1) / 6;
      if (lo == hi) continue;
      g.add_vertex(
          cs, "transpose_f32", m.tile,
          {{"in", g.region(staged.tensor, staged.offsets[i], staged.offsets[i] + rows * cw)},
           {"out", g.region(y, (c0 + lo) * rows, (c0 + hi) * rows)},
           {"rows", u32(rows)},
           {"stride", u32(cw)},
           {"first", u32(lo)},
           {"columns", u32(hi - lo)}});
    }
  }
  program.body.push_back(Execute(cs));
  return y;
}

Tensor embedding_lookup(Graph& g, Program& program, Tensor table_t, Tensor indices,
                        const std::string& name) {
  require_sequence(program, name);
  const TensorInfo ti0 = mapped(g, table_t, name, "table");
  require_type(ti0, DType::kF32, name, "table");
  require_matrix(ti0, name);
  const TensorInfo ii = mapped(g, indices, name, "indices");
  require_indices(ii, name);
  add_codelets(g);
  const Tensor table = whole_rows(g, program, table_t, name);
  const TensorInfo ti = g.tensor(table);
  const size_t entries = ti.shape[1], count = ii.elements;
  const Tensor out = rows_like(g, ti, count, name);
  const std::vector<unsigned> tiles = tiles_of(ti);
  const Tensor copies = replicate(g, program, indices, tiles, name + ".indices");
  const ComputeSet cs = g.add_compute_set(name);
  for (const RowRange& r : feature_ranges(ti)) {
    const size_t at =
        static_cast<size_t>(std::find(tiles.begin(), tiles.end(), r.tile) - tiles.begin());
    g.add_vertex(cs, "embedding_lookup_f32", r.tile,
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

Tensor embedding_grad(Graph& g, Program& program, Tensor dout_t, Tensor indices, size_t entries,
                      const std::string& name) {
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
  add_codelets(g);
  const Tensor dout = whole_rows(g, program, dout_t, name);
  const TensorInfo di = g.tensor(dout);
  const size_t count = ii.elements;
  const Tensor grad = rows_like(g, di, entries, name);
  const std::vector<unsigned> tiles = tiles_of(di);
  const Tensor copies = replicate(g, program, indices, tiles, name + ".indices");
  const ComputeSet cs = g.add_compute_set(name);
  for (const RowRange& r : feature_ranges(di)) {
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

namespace reference {

std::vector<float> binary(BinaryOp op, const std::vector<float>& a, const std::vector<float>& b) {
  std::vector<float> out(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    const float x = a[i], y = b[i % b.size()];
    switch (op) {
      case BinaryOp::kAdd: out[i] = x + y; break;
      case BinaryOp::kSub: out[i] = x - y; break;
      case BinaryOp::kMul: out[i] = x * y; break;
      case BinaryOp::kMulGeluGrad: out[i] = x * ipu_ops_gelu_grad(y); break;
    }
  }
  return out;
}

std::vector<float> unary(UnaryOp op, const std::vector<float>& a, float k) {
  std::vector<float> out(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    const float x = a[i];
    switch (op) {
      case UnaryOp::kRelu: out[i] = x > 0.0f ? x : 0.0f; break;
      case UnaryOp::kGelu: out[i] = ipu_ops_gelu(x); break;
      case UnaryOp::kScale: out[i] = k * x; break;
      case UnaryOp::kExp: out[i] = ipu_ops_expf(x); break;
    }
  }
  return out;
}

std::vector<uint16_t> cast_to_f16(const std::vector<float>& a) {
  std::vector<uint16_t> out(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    const uint32_t u = bits_of(a[i]);
    const uint32_t sign = (u >> 16) & 0x8000u, magnitude = u & 0x7fffffffu;
    if (magnitude > 0x7f800000u) {  // NaN: the canonical one
      out[i] = 0x7e00;
      continue;
    }
    // Scale to units of the f16 result's last place, then round to nearest even.
    const double x = std::fabs(static_cast<double>(a[i]));
    int e;
    std::frexp(x, &e);                          // x = m 2^e, m in [0.5, 1)
    const int quantum = std::max(e - 11, -24);  // f16: 11 significant bits, subnormal from 2^-24
    const double scaled = std::ldexp(x, -quantum);
    double q = std::nearbyint(scaled);  // the host's default rounding: nearest even
    const double rounded = std::ldexp(q, quantum);
    uint16_t h;
    if (rounded >= 65520.0 || magnitude == 0x7f800000u) {
      h = 0x7c00;  // overflow to infinity
    } else if (rounded == 0) {
      h = 0;
    } else {
      int re;
      const double m = std::frexp(rounded, &re);
      if (re - 1 < -14) {  // subnormal: units of 2^-24
        h = static_cast<uint16_t>(std::ldexp(rounded, 24));
      } else {
        h = static_cast<uint16_t>(((re - 1 + 15) << 10) |
                                  (static_cast<uint32_t>(std::ldexp(m, 11)) & 0x3ff));
      }
    }
    out[i] = static_cast<uint16_t>(sign | h);
  }
  return out;
}

std::vector<uint16_t> cast_to_f16_stochastic(const std::vector<float>& a,
                                             const std::vector<std::pair<size_t, size_t>>& ranges,
                                             uint64_t seed) {
  std::vector<uint16_t> out(a.size());
  for (const auto& [lo, hi] : ranges) {
    auto [s0, s1] = dropout_state(seed, lo);
    uint64_t bits = 0;
    for (size_t i = lo; i < hi; ++i) {
      if ((i - lo) % 2 == 0) bits = ipu_ops_prng_next(&s0, &s1);  // one draw a pair
      const auto random = static_cast<uint32_t>((i - lo) % 2 == 0 ? bits : bits >> 32);
      const uint32_t u = bits_of(a[i]);
      const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
      if ((u & 0x7fffffffu) > 0x7f800000u) {
        out[i] = 0x7e00;
        continue;
      }
      if ((u & 0x7fffffffu) == 0x7f800000u) {
        out[i] = static_cast<uint16_t>(sign | 0x7c00);
        continue;
      }
      // |x| between two multiples of the f16 unit at its magnitude (2^-24 at the least): up
      // when the discarded fraction, as 32 bits truncated, plus the random word reaches 2^32.
      const double x = std::fabs(static_cast<double>(a[i]));
      int e;
      std::frexp(x, &e);
      const int quantum = std::max(e - 11, -24);
      const double scaled = std::ldexp(x, -quantum);
      double units = std::floor(scaled);
      const auto fraction = static_cast<uint64_t>(std::ldexp(scaled - units, 32));
      if (fraction + random >= (uint64_t{1} << 32)) units += 1;
      const double rounded = std::ldexp(units, quantum);
      uint16_t h;
      if (rounded >= 65536.0) {
        h = 0x7c00;
      } else if (rounded == 0) {
        h = 0;
      } else {
        int re;
        const double mant = std::frexp(rounded, &re);
        h = re - 1 < -14
                ? static_cast<uint16_t>(std::ldexp(rounded, 24))
                : static_cast<uint16_t>(((re - 1 + 15) << 10) |
                                        (static_cast<uint32_t>(std::ldexp(mant, 11)) & 0x3ff));
      }
      out[i] = static_cast<uint16_t>(sign | h);
    }
  }
  return out;
}

std::vector<float> reduce_rows(ReduceOp op, const std::vector<float>& x, size_t columns) {
  std::vector<float> out(x.size() / columns);
  for (size_t r = 0; r < out.size(); ++r) {
    const float* row = &x[r * columns];
    float acc = op == ReduceOp::kSumSquares ? row[0] * row[0] : row[0];
    for (size_t c = 1; c < columns; ++c) {
      if (op == ReduceOp::kMax)
        acc = row[c] > acc ? row[c] : acc;
      else if (op == ReduceOp::kSumSquares)
        acc += row[c] * row[c];
      else
        acc += row[c];
    }
    out[r] = op == ReduceOp::kMean ? acc / static_cast<float>(columns) : acc;
  }
  return out;
}

std::vector<float> softmax_rows(const std::vector<float>& x, const std::vector<float>* mask,
                                size_t columns) {
  std::vector<float> out(x.size());
  for (size_t r = 0; r < x.size() / columns; ++r) {
    const float* row = &x[r * columns];
    float* o = &out[r * columns];
    float m = mask ? row[0] + (*mask)[0] : row[0];
    for (size_t c = 0; c < columns; ++c) {
      o[c] = mask ? row[c] + (*mask)[c] : row[c];
      m = o[c] > m ? o[c] : m;
    }
    float sum = 0.0f;
    for (size_t c = 0; c < columns; ++c) {
      o[c] = ipu_ops_expf(o[c] - m);
      sum += o[c];
    }
    for (size_t c = 0; c < columns; ++c) o[c] = o[c] / sum;
  }
  return out;
}

std::vector<float> layer_norm(const std::vector<float>& x, const std::vector<float>& gamma,
                              const std::vector<float>& beta, float eps, size_t columns,
                              std::vector<float>* mean_out, std::vector<float>* inv_out) {
  std::vector<float> y(x.size());
  for (size_t r = 0; r < x.size() / columns; ++r) {
    const float* row = &x[r * columns];
    float sum = 0.0f;
    for (size_t c = 0; c < columns; ++c) sum += row[c];
    const float mean = sum / static_cast<float>(columns);
    float squares = 0.0f;
    for (size_t c = 0; c < columns; ++c) {
      const float d = row[c] - mean;
      squares += d * d;
    }
    const float inv = ipu_ops_rsqrtf(squares / static_cast<float>(columns) + eps);
    for (size_t c = 0; c < columns; ++c)
      y[r * columns + c] = ((row[c] - mean) * inv) * gamma[c] + beta[c];
    if (mean_out) mean_out->push_back(mean);
    if (inv_out) inv_out->push_back(inv);
  }
  return y;
}

std::vector<float> softmax_grad_rows(const std::vector<float>& y, const std::vector<float>& dy,
                                     size_t columns) {
  std::vector<float> dx(y.size());
  for (size_t r = 0; r < y.size() / columns; ++r) {
    float s = 0.0f;
    for (size_t c = 0; c < columns; ++c) s += dy[r * columns + c] * y[r * columns + c];
    for (size_t c = 0; c < columns; ++c)
      dx[r * columns + c] = y[r * columns + c] * (dy[r * columns + c] - s);
  }
  return dx;
}

std::vector<float> layer_norm_grad(const std::vector<float>& x, const std::vector<float>& dy,
                                   const std::vector<float>& gamma, const std::vector<float>& mean,
                                   const std::vector<float>& inv_std, size_t columns,
                                   const std::vector<size_t>& partial_rows,
                                   std::vector<float>* dgamma, std::vector<float>* dbeta) {
  std::vector<float> dx(x.size());
  std::vector<float> dg(columns), db(columns), part_g(columns), part_b(columns);
  size_t row = 0;
  for (size_t part = 0; part < partial_rows.size(); ++part) {
    std::fill(part_g.begin(), part_g.end(), 0.0f);
    std::fill(part_b.begin(), part_b.end(), 0.0f);
    for (size_t i = 0; i < partial_rows[part]; ++i, ++row) {
      const float* xr = &x[row * columns];
      const float* d = &dy[row * columns];
      float sum_g = 0.0f, sum_gx = 0.0f;
      for (size_t c = 0; c < columns; ++c) {
        const float xhat = (xr[c] - mean[row]) * inv_std[row], g = d[c] * gamma[c];
        sum_g += g;
        sum_gx += g * xhat;
        part_g[c] += d[c] * xhat;
        part_b[c] += d[c];
      }
      const float a = sum_g / static_cast<float>(columns), b = sum_gx / static_cast<float>(columns);
      for (size_t c = 0; c < columns; ++c) {
        const float xhat = (xr[c] - mean[row]) * inv_std[row], g = d[c] * gamma[c];
        dx[row * columns + c] = inv_std[row] * ((g - a) - xhat * b);
      }
    }
    for (size_t c = 0; c < columns; ++c) {
      dg[c] = part == 0 ? part_g[c] : dg[c] + part_g[c];
      db[c] = part == 0 ? part_b[c] : db[c] + part_b[c];
    }
  }
  if (dgamma) *dgamma = dg;
  if (dbeta) *dbeta = db;
  return dx;
}

std::vector<float> dropout(const std::vector<float>& x,
                           const std::vector<std::pair<size_t, size_t>>& ranges, float rate,
                           uint64_t seed) {
  std::vector<float> out(x.size());
  const auto keep = static_cast<uint32_t>(
      std::min(4294967295.0, std::floor((1.0 - static_cast<double>(rate)) * 4294967296.0)));
  const float scale = 1.0f / (1.0f - rate);
  for (const auto& [lo, hi] : ranges) {
    auto [s0, s1] = dropout_state(seed, lo);
    for (size_t i = lo; i < hi; ++i) {
      const auto r = static_cast<uint32_t>(ipu_ops_prng_next(&s0, &s1));
      out[i] = r < keep ? x[i] * scale : 0.0f;
    }
  }
  return out;
}

std::vector<float> cross_entropy(const std::vector<float>& logits,
                                 const std::vector<uint32_t>& labels, size_t columns,
                                 float grad_scale, std::vector<float>* loss) {
  std::vector<float> dx(logits.size());
  for (size_t r = 0; r < labels.size(); ++r) {
    const float* x = &logits[r * columns];
    float* d = &dx[r * columns];
    float m = x[0];
    for (size_t c = 1; c < columns; ++c) m = x[c] > m ? x[c] : m;
    float s = 0.0f;
    for (size_t c = 0; c < columns; ++c) {
      d[c] = ipu_ops_expf(x[c] - m);
      s += d[c];
    }
    const uint32_t label = labels[r];
    if (loss) loss->push_back(label < columns ? (m + ipu_ops_logf(s)) - x[label] : std::nanf(""));
    for (size_t c = 0; c < columns; ++c)
      d[c] = (d[c] / s - (c == label ? 1.0f : 0.0f)) * grad_scale;
  }
  return dx;
}

std::vector<float> embedding_lookup(const std::vector<float>& table_t, size_t entries,
                                    const std::vector<uint32_t>& indices) {
  const size_t features = table_t.size() / entries;
  std::vector<float> out(features * indices.size());
  for (size_t h = 0; h < features; ++h)
    for (size_t r = 0; r < indices.size(); ++r)
      out[h * indices.size() + r] =
          indices[r] < entries ? table_t[h * entries + indices[r]] : std::nanf("");
  return out;
}

std::vector<float> embedding_grad(const std::vector<float>& dout_t,
                                  const std::vector<uint32_t>& indices, size_t entries) {
  const size_t features = dout_t.size() / indices.size();
  std::vector<float> grad(features * entries, 0.0f);
  for (size_t h = 0; h < features; ++h)
    for (size_t r = 0; r < indices.size(); ++r)
      if (indices[r] < entries) grad[h * entries + indices[r]] += dout_t[h * indices.size() + r];
  return grad;
}

void adam(std::vector<float>& w, const std::vector<float>& g, std::vector<float>& m,
          std::vector<float>& v, const float corrections[2], const AdamOptions& o,
          const std::vector<std::pair<size_t, size_t>>& ranges) {
  const float c1 = corrections[0], c2 = corrections[1];
  const float one_b1 = 1.0f - o.beta1, one_b2 = 1.0f - o.beta2;
  std::vector<float> u(w.size()), sums;
  for (const auto& [lo, hi] : ranges) {
    float sum_w = 0.0f, sum_u = 0.0f;
    for (size_t i = lo; i < hi; ++i) {
      m[i] = o.beta1 * m[i] + one_b1 * g[i];
      v[i] = o.beta2 * v[i] + one_b2 * (g[i] * g[i]);
      u[i] = (m[i] * c1) / (std::sqrt(v[i] * c2) + o.epsilon) + o.weight_decay * w[i];
      if (o.lamb) {
        sum_w += w[i] * w[i];
        sum_u += u[i] * u[i];
      } else {
        w[i] = w[i] - o.learning_rate * u[i];
      }
    }
    sums.push_back(sum_w);
    sums.push_back(sum_u);
  }
  if (!o.lamb) return;
  float sw = sums[0], su = sums[1];
  for (size_t p = 1; p < ranges.size(); ++p) {
    sw += sums[2 * p];
    su += sums[2 * p + 1];
  }
  const float ratio = sw > 0.0f && su > 0.0f ? std::sqrt(sw) / std::sqrt(su) : 1.0f;
  const float step = o.learning_rate * ratio;
  for (size_t i = 0; i < w.size(); ++i) w[i] = w[i] - step * u[i];
}

}  // namespace reference
}  // namespace ipu::sdk::ops
