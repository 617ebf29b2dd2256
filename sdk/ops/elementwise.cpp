// Elementwise operations: binary and unary arithmetic, casts, transpose (sdk/ops/elementwise.h).
#include "sdk/ops/elementwise.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "sdk/ops/op_support.h"
#include "sdk/ops/pieces.h"

namespace ipu::sdk::ops {

namespace {

// out = a op b, `out` a new tensor mapped as a, or a itself (each element is read before it is
// written, so the codelet may write over its operand).
Tensor binary_into(Graph& g, Program& program, BinaryOp op, Tensor a, Tensor b,
                   const std::string& name, bool in_place) {
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
  add_ops_codelets(g);
  Tensor out = a;
  if (!in_place) {
    out = g.add_variable(DType::kF32, ai.shape, name);
    g.set_tile_mapping(out, ai.mapping);
  }
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
    g.set_scratch(b_local);
    program.body.push_back(Copy(b, b_local));
  }
  const ComputeSet cs = g.add_compute_set(name);
  const WorkSplit split(ai);
  for (const Interval& m : ai.mapping)
    for (const auto& [lo, hi] : split.ranges(m)) {
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

}  // namespace

Tensor binary(Graph& g, Program& program, BinaryOp op, Tensor a, Tensor b,
              const std::string& name) {
  return binary_into(g, program, op, a, b, name, false);
}

void binary_in_place(Graph& g, Program& program, BinaryOp op, Tensor a, Tensor b,
                     const std::string& name) {
  binary_into(g, program, op, a, b, name, true);
}

Tensor unary(Graph& g, Program& program, UnaryOp op, Tensor a, const std::string& name, float k) {
  require_sequence(program, name);
  const TensorInfo ai = mapped(g, a, name, "operand");
  require_type(ai, DType::kF32, name, "operand");
  add_ops_codelets(g);
  const Tensor out = g.add_variable(DType::kF32, ai.shape, name);
  g.set_tile_mapping(out, ai.mapping);
  const ComputeSet cs = g.add_compute_set(name);
  const WorkSplit split(ai);
  for (const Interval& m : ai.mapping)
    for (const auto& [lo, hi] : split.ranges(m))
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
  add_ops_codelets(g);
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
    g.set_scratch(source);
    program.body.push_back(Copy(a, source));
  }
  const Tensor out = g.add_variable(to, ai.shape, name);
  g.set_tile_mapping(out, narrow ? mapping : ai.mapping);
  const bool stochastic = narrow && options.stochastic;
  // The step counter, on every tile of the result.
  std::optional<Tensor> steps;
  std::vector<unsigned> step_tiles;
  if (stochastic && options.step) {
    const TensorInfo si = mapped(g, *options.step, name, "step");
    if (si.type != DType::kU32 || si.elements != 1)
      throw GraphError(fmt::format("{}: step '{}' must be one u32", name, si.name));
    step_tiles = tiles_of(g.tensor(out));
    steps = replicate(g, program, *options.step, step_tiles, name + ".step");
  }
  const ComputeSet cs = g.add_compute_set(name);
  const WorkSplit split(g.tensor(out));
  for (const Interval& m : narrow ? mapping : ai.mapping)
    for (const auto& [lo, hi] : split.ranges(m, 2)) {  // f16 pieces of whole words
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
      if (steps) {
        const size_t at = static_cast<size_t>(
            std::find(step_tiles.begin(), step_tiles.end(), m.tile) - step_tiles.begin());
        fields.insert({"step", g.region(*steps, at, at + 1)});
      }
      g.add_vertex(cs,
                   steps        ? "cast_f32_f16_sr_step"
                   : stochastic ? "cast_f32_f16_sr"
                   : narrow     ? "cast_f32_f16"
                                : "cast_f16_f32",
                   m.tile, fields);
    }
  program.body.push_back(Execute(cs));
  return out;
}

std::vector<std::pair<size_t, size_t>> element_ranges(const Graph& g, Tensor x, size_t grain) {
  std::vector<std::pair<size_t, size_t>> out;
  const WorkSplit split(g.tensor(x));
  for (const Interval& m : g.tensor(x).mapping)
    for (const auto& range : split.ranges(m, grain)) out.push_back(range);
  return out;
}

Tensor transpose(Graph& g, Program& program, Tensor x, const std::string& name) {
  require_sequence(program, name);
  const TensorInfo xi = mapped(g, x, name, "operand");
  require_type(xi, DType::kF32, name, "operand");
  require_matrix(xi, name);
  add_ops_codelets(g);
  const size_t rows = xi.shape[0], columns = xi.shape[1];
  const Tensor y = g.add_variable(DType::kF32, {columns, rows}, name);
  // As many tiles as x uses (at most one a column), from x's first tile on its chip.
  const auto [first, chip] = own_chip_from(g, xi);
  const unsigned tiles = static_cast<unsigned>(
      std::min<size_t>({columns, std::max<size_t>(1, tiles_of(xi).size()), size_t{chip}}));
  g.map_evenly(y, first, tiles, rows);
  const TensorInfo yi = g.tensor(y);
  // Each tile's columns of every row of x, gathered [rows x its columns].
  std::vector<std::pair<unsigned, size_t>> chunks;
  for (const Interval& m : yi.mapping) chunks.emplace_back(m.tile, (m.end - m.begin));
  const Chunks staged = add_chunked(g, DType::kF32, chunks, name + ".columns");
  g.set_scratch(staged.tensor);
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

}  // namespace ipu::sdk::ops
