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

// t, or where its mapping is not `mapping` a copy of it so laid out.
Tensor laid_out_as(Graph& g, Program& program, Tensor t, const std::vector<Interval>& mapping,
                   const std::string& name) {
  const TensorInfo ti = g.tensor(t);  // a copy: adding a tensor moves them
  const bool same = std::equal(ti.mapping.begin(), ti.mapping.end(), mapping.begin(), mapping.end(),
                               [](const Interval& x, const Interval& y) {
                                 return x.begin == y.begin && x.end == y.end && x.tile == y.tile;
                               });
  if (same) return t;
  const Tensor copy = g.add_variable(ti.type, ti.shape, name);
  g.set_tile_mapping(copy, mapping);
  g.set_scratch(copy);
  program.body.push_back(Copy(relayout(g, t, copy)));
  return copy;
}

// Binary's operand b beside each of a's pieces: a copy with a's mapping, or a vector of a's
// last dimension on each of a's tiles (its columns those tiles' pieces span, where each piece
// lies within a row); each of a's ranges then reads its part.
class OperandBeside {
 public:
  // Adds the copies' exchange to `program`; a and b already checked.
  OperandBeside(Graph& g, Program& program, const TensorInfo& ai, Tensor b, const std::string& name)
      : g_(g), bi_(g.tensor(b)), tiles_(tiles_of(ai)) {
    vector_ = bi_.shape.size() == 1 && !ai.shape.empty() && bi_.shape[0] == ai.shape.back();
    local_ = b;
    const size_t columns = bi_.elements;
    if (vector_) {
      for (const Interval& m : ai.mapping) {
        const size_t c = m.begin % columns, n = m.end - m.begin;
        const std::pair<size_t, size_t> mine =
            n <= columns - c ? std::pair{c, c + n} : std::pair{size_t{0}, columns};
        const auto [it, fresh] = span_.try_emplace(m.tile, mine);
        if (!fresh)
          it->second = {std::min(it->second.first, mine.first),
                        std::max(it->second.second, mine.second)};
      }
      for (const auto& [tile, s] : span_) narrow_ |= s.second - s.first < columns;
    }
    if (vector_ && narrow_) {  // each tile's span of b, in the order of `tiles_`
      std::vector<std::pair<unsigned, size_t>> sizes;
      for (unsigned t : tiles_) sizes.emplace_back(t, span_[t].second - span_[t].first);
      narrow_b_ = add_chunked(g, DType::kF32, sizes, name + ".b");
      g.set_scratch(narrow_b_.tensor);
      CopyPairs pairs;
      for (size_t i = 0; i < tiles_.size(); ++i) {
        const auto [lo, hi] = span_[tiles_[i]];
        pairs.emplace_back(g.region(b, lo, hi), g.region(narrow_b_.tensor, narrow_b_.offsets[i],
                                                         narrow_b_.offsets[i] + (hi - lo)));
      }
      program.body.push_back(Copy(std::move(pairs)));
    } else if (vector_) {
      local_ = replicate(g, program, b, tiles_, name + ".b");
    } else {
      local_ = laid_out_as(g, program, b, ai.mapping, name + ".b");
    }
  }

  // The part of b that a's elements [lo, hi) of piece m read: a region, and b's elements
  // repeating every `period` from `offset` (a vector's columns).
  struct Part {
    Region b;
    uint32_t period, offset;
  };
  Part at(const Interval& m, size_t lo, size_t hi) const {
    if (!vector_) return {g_.region(local_, lo, hi), u32(hi - lo), 0};
    const size_t at =
        static_cast<size_t>(std::find(tiles_.begin(), tiles_.end(), m.tile) - tiles_.begin());
    if (narrow_) {
      const auto [first, end] = span_.at(m.tile);
      return {
          g_.region(narrow_b_.tensor, narrow_b_.offsets[at], narrow_b_.offsets[at] + (end - first)),
          u32(end - first), u32(lo % bi_.elements - first)};
    }
    return {g_.region(local_, at * bi_.elements, (at + 1) * bi_.elements), u32(bi_.elements),
            u32(lo % bi_.elements)};
  }

 private:
  Graph& g_;
  TensorInfo bi_;
  std::vector<unsigned> tiles_;
  bool vector_ = false, narrow_ = false;
  std::map<unsigned, std::pair<size_t, size_t>> span_;  // by tile: [first, end) columns
  Chunks narrow_b_;
  Tensor local_;
};

// A mapping's pieces moved to even starts (where an f16 tensor's pieces must start): each odd
// start one element earlier, the element taken from the piece before.
std::vector<Interval> even_starts(const std::vector<Interval>& pieces) {
  std::vector<Interval> mapping;
  for (const Interval& m : pieces) {
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
  return mapping;
}

// a, or where any of its pieces starts at an odd element a copy of it on even starts.
Tensor on_even_starts(Graph& g, Program& program, Tensor a, const std::string& name) {
  const TensorInfo ai = g.tensor(a);  // a copy: adding a tensor moves them
  bool moved = false;
  for (const Interval& m : ai.mapping) moved |= m.begin % 2 != 0;
  if (!moved) return a;
  const Tensor source = g.add_variable(ai.type, ai.shape, name + ".even");
  g.set_tile_mapping(source, even_starts(ai.mapping));
  g.set_scratch(source);
  program.body.push_back(Copy(a, source));
  return source;
}

// Whether b has a's shape or is a vector of its last dimension; else GraphError.
void require_binary_shapes(const TensorInfo& ai, const TensorInfo& bi, const std::string& name) {
  const bool same = bi.shape == ai.shape;
  const bool vector = bi.shape.size() == 1 && !ai.shape.empty() && bi.shape[0] == ai.shape.back();
  if (!same && !vector)
    throw GraphError(fmt::format(
        "{}: '{}' [{}] and '{}' [{}] do not match: b must have a's shape or be a vector of a's "
        "last dimension",
        name, ai.name, fmt::join(ai.shape, " x "), bi.name, fmt::join(bi.shape, " x ")));
}

// Whether the bias is a vector of a's last dimension; else GraphError.
void require_bias_vector(const TensorInfo& ai, const TensorInfo& bi, const std::string& name) {
  if (ai.shape.empty() || bi.shape != std::vector<size_t>{ai.shape.back()})
    throw GraphError(
        fmt::format("{}: bias '{}' [{}] must be a vector of '{}' [{}]'s last dimension", name,
                    bi.name, fmt::join(bi.shape, " x "), ai.name, fmt::join(ai.shape, " x ")));
}

// What two operands must share: one shape; else GraphError naming both as what they are.
void require_same_shape(const TensorInfo& first, const char* first_what, const TensorInfo& second,
                        const char* second_what, const std::string& name) {
  if (first.shape != second.shape)
    throw GraphError(fmt::format("{}: {} '{}' [{}] and {} '{}' [{}] must have one shape", name,
                                 first_what, first.name, fmt::join(first.shape, " x "), second_what,
                                 second.name, fmt::join(second.shape, " x ")));
}

// One compute set of `codelet` over `on`'s pieces, a vertex for each of WorkSplit's ranges (of
// `grain` elements a multiple), with b brought beside each (OperandBeside: fields b, period and
// offset) and the range's own fields(lo, hi); the copies b needs go first.
template <typename Fields>
void execute_beside(Graph& g, Program& program, const TensorInfo& on, Tensor b,
                    const std::string& name, const char* codelet, size_t grain, Fields&& fields) {
  const OperandBeside beside(g, program, on, b, name);
  const WorkSplit split(on);
  const ComputeSet cs = g.add_compute_set(name);
  for (const Interval& m : on.mapping)
    for (const auto& [lo, hi] : split.ranges(m, grain)) {
      const OperandBeside::Part part = beside.at(m, lo, hi);
      std::map<std::string, Binding> f = fields(lo, hi);
      f.insert({{"b", part.b}, {"period", part.period}, {"offset", part.offset}});
      g.add_vertex(cs, codelet, m.tile, f);
    }
  program.body.push_back(Execute(cs));
}

// out = a op b, `out` a new tensor mapped as a, or a itself (each element is read before it is
// written, so the codelet may write over its operand).
Tensor binary_into(Graph& g, Program& program, BinaryOp op, Tensor a, Tensor b,
                   const std::string& name, bool in_place) {
  require_sequence(program, name);
  const TensorInfo ai = mapped(g, a, name, "operand a");
  const TensorInfo bi = mapped(g, b, name, "operand b");
  require_type(ai, DType::kF32, name, "operand a");
  require_type(bi, DType::kF32, name, "operand b");
  require_binary_shapes(ai, bi, name);
  add_ops_codelets(g);
  Tensor out = a;
  if (!in_place) {
    out = g.add_variable(DType::kF32, ai.shape, name);
    g.set_tile_mapping(out, ai.mapping);
  }
  execute_beside(g, program, ai, b, name, "binary_f32", 1, [&](size_t lo, size_t hi) {
    return std::map<std::string, Binding>{{"a", g.region(a, lo, hi)},
                                          {"out", g.region(out, lo, hi)},
                                          {"n", u32(hi - lo)},
                                          {"op", static_cast<uint32_t>(op)}};
  });
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

namespace {

// A fused operation's f32 result and its f16 copy, both laid out as its operand on even starts
// (`source`: a, or a copy of it so laid out), as cast lays out an f16 result.
struct F32AndF16 {
  Tensor source, f32, f16;
};
F32AndF16 f32_and_f16(Graph& g, Program& program, Tensor a, const std::string& name,
                      const std::string& f32_name, const std::string& f16_name) {
  const std::vector<size_t> shape = g.tensor(a).shape;  // a copy: adding tensors moves them
  F32AndF16 out{on_even_starts(g, program, a, name), g.add_variable(DType::kF32, shape, f32_name),
                g.add_variable(DType::kF16, shape, f16_name)};
  const std::vector<Interval> mapping = g.tensor(out.source).mapping;
  g.set_tile_mapping(out.f32, mapping);
  g.set_tile_mapping(out.f16, mapping);
  return out;
}

}  // namespace

BiasGelu bias_gelu(Graph& g, Program& program, Tensor a, Tensor bias, const std::string& name) {
  require_sequence(program, name);
  const TensorInfo ai = mapped(g, a, name, "operand");
  const TensorInfo bi = mapped(g, bias, name, "bias");
  require_type(ai, DType::kF32, name, "operand");
  require_type(bi, DType::kF32, name, "bias");
  require_bias_vector(ai, bi, name);
  add_ops_codelets(g);
  const F32AndF16 r = f32_and_f16(g, program, a, name, name + ".sum", name);
  const TensorInfo si = g.tensor(r.source);
  // f16 ranges of whole words (a grain of 2)
  execute_beside(g, program, si, bias, name, "bias_gelu_f32_f16", 2, [&](size_t lo, size_t hi) {
    return std::map<std::string, Binding>{{"a", g.region(r.source, lo, hi)},
                                          {"sum", g.region(r.f32, lo, hi)},
                                          {"out", g.region(r.f16, lo, hi)},
                                          {"n", u32(hi - lo)}};
  });
  return {r.f32, r.f16};
}

Tensor bias_residual(Graph& g, Program& program, Tensor a, Tensor bias, Tensor x,
                     const std::string& name) {
  require_sequence(program, name);
  const TensorInfo ai = mapped(g, a, name, "operand");
  const TensorInfo bi = mapped(g, bias, name, "bias");
  const TensorInfo xi = mapped(g, x, name, "residual");
  require_type(ai, DType::kF32, name, "operand");
  require_type(bi, DType::kF32, name, "bias");
  require_type(xi, DType::kF32, name, "residual");
  require_bias_vector(ai, bi, name);
  require_same_shape(xi, "residual", ai, "operand", name);
  add_ops_codelets(g);
  const Tensor out = g.add_variable(DType::kF32, xi.shape, name);
  g.set_tile_mapping(out, xi.mapping);
  const Tensor as = laid_out_as(g, program, a, xi.mapping, name + ".a");
  execute_beside(g, program, xi, bias, name, "bias_residual_f32", 1, [&](size_t lo, size_t hi) {
    return std::map<std::string, Binding>{{"a", g.region(as, lo, hi)},
                                          {"x", g.region(x, lo, hi)},
                                          {"out", g.region(out, lo, hi)},
                                          {"n", u32(hi - lo)}};
  });
  return out;
}

GeluGrad gelu_grad(Graph& g, Program& program, Tensor grad, Tensor x, const std::string& name) {
  require_sequence(program, name);
  const TensorInfo gi = mapped(g, grad, name, "gradient");
  const TensorInfo xi = mapped(g, x, name, "GeLU's input");
  require_type(gi, DType::kF32, name, "gradient");
  require_type(xi, DType::kF32, name, "GeLU's input");
  require_same_shape(gi, "gradient", xi, "GeLU's input", name);
  add_ops_codelets(g);
  const F32AndF16 r = f32_and_f16(g, program, grad, name, name, name + ".f16");
  const TensorInfo si = g.tensor(r.source);
  const Tensor xs = laid_out_as(g, program, x, si.mapping, name + ".x");
  const WorkSplit split(si);
  const ComputeSet cs = g.add_compute_set(name);
  for (const Interval& m : si.mapping)
    for (const auto& [lo, hi] : split.ranges(m, 2)) {  // f16 ranges of whole words
      g.add_vertex(cs, "gelu_grad_f32_f16", m.tile,
                   {{"grad", g.region(r.source, lo, hi)},
                    {"x", g.region(xs, lo, hi)},
                    {"out", g.region(r.f32, lo, hi)},
                    {"out16", g.region(r.f16, lo, hi)},
                    {"n", u32(hi - lo)}});
    }
  program.body.push_back(Execute(cs));
  return {r.f32, r.f16};
}

namespace {

// out = f(a), `out` a new tensor mapped as a, or a itself (the codelet reads each element
// before it writes it).
Tensor unary_into(Graph& g, Program& program, UnaryOp op, Tensor a, const std::string& name,
                  float k, bool in_place) {
  require_sequence(program, name);
  const TensorInfo ai = mapped(g, a, name, "operand");
  require_type(ai, DType::kF32, name, "operand");
  add_ops_codelets(g);
  Tensor out = a;
  if (!in_place) {
    out = g.add_variable(DType::kF32, ai.shape, name);
    g.set_tile_mapping(out, ai.mapping);
  }
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

}  // namespace

Tensor unary(Graph& g, Program& program, UnaryOp op, Tensor a, const std::string& name, float k) {
  return unary_into(g, program, op, a, name, k, false);
}

void unary_in_place(Graph& g, Program& program, UnaryOp op, Tensor a, const std::string& name,
                    float k) {
  unary_into(g, program, op, a, name, k, true);
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
  const std::vector<Interval> mapping = even_starts(ai.mapping);
  const Tensor source = narrow ? on_even_starts(g, program, a, name) : a;
  const Tensor out = g.add_variable(to, ai.shape, name);
  g.set_tile_mapping(out, narrow ? mapping : ai.mapping);
  const bool stochastic = narrow && options.stochastic;
  // The step counter, on every tile of the result.
  std::optional<LocalCopies> steps;
  std::vector<unsigned> step_tiles;
  if (stochastic && options.step) {
    const TensorInfo si = mapped(g, *options.step, name, "step");
    if (si.type != DType::kU32 || (si.elements != 1 && si.shape.back() != 1))
      throw GraphError(
          fmt::format("{}: step '{}' must be one u32 (or its copies on tiles)", name, si.name));
    step_tiles = tiles_of(g.tensor(out));
    steps = local_copies(g, program, *options.step, 1, step_tiles, name + ".step");
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
        fields.insert({"step", g.region(steps->tensor, steps->at[at], steps->at[at] + 1)});
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

namespace {

// transpose's gather of every row's columns to the tiles of y, in two exchange phases when many
// tiles hold x's rows and many take y's: in one, each of y's tiles receives a run from every
// row (a [1,024 x 1,024] matrix over 1,024 tiles: 1,024 receives and 1,024 sends a tile, each an
// action gap apart, 123,000 cycles and 32 KB of action tables). Here x's row blocks go in
// groups and y's tiles in bands of about the square root of their counts: each group's rows of
// a band's columns go to one tile (a run a row), which regroups them by destination (a compute
// set) and sends each destination its columns of the group's rows (one run). A tile then takes
// part in about 4 x 32 actions. false: x's rows are not whole on their tiles, or too few tiles
// take part to gain; nothing is added.
bool gather_in_two_stages(Graph& g, Program& program, Tensor x, const TensorInfo& yi,
                          const Chunks& staged, const std::string& name) {
  const TensorInfo xi = g.tensor(x);
  const size_t rows = xi.shape[0], columns = xi.shape[1];
  struct Block {
    unsigned tile;
    size_t first, count;  // rows
  };
  std::vector<Block> blocks;
  for (const Interval& m : xi.mapping) {
    if (m.begin % columns != 0 || m.end % columns != 0) return false;
    blocks.push_back({m.tile, m.begin / columns, (m.end - m.begin) / columns});
  }
  std::sort(blocks.begin(), blocks.end(),
            [](const Block& a, const Block& b) { return a.first < b.first; });
  const size_t destinations = yi.mapping.size();
  constexpr size_t kWorthIt = 64;  // below, one phase's few receives cost less than two phases
  if (blocks.size() < kWorthIt || destinations < kWorthIt) return false;
  const auto root = [](size_t n) { return static_cast<size_t>(std::ceil(std::sqrt(n))); };
  const size_t band_size = root(destinations), bands = (destinations + band_size - 1) / band_size;
  const size_t group_size = root(blocks.size());
  const size_t groups = (blocks.size() + group_size - 1) / group_size;
  // Destination i's columns [c0, c0 + cw) of x; a band's destinations are consecutive, so its
  // columns are one run of each row.
  std::vector<size_t> c0(destinations), cw(destinations);
  for (size_t i = 0; i < destinations; ++i)
    c0[i] = yi.mapping[i].begin / rows, cw[i] = (yi.mapping[i].end - yi.mapping[i].begin) / rows;
  const auto band_of = [&](size_t e) {
    return std::pair{e * band_size, std::min(destinations, (e + 1) * band_size)};
  };
  const auto group_of = [&](size_t k) {
    return std::pair{k * group_size, std::min(blocks.size(), (k + 1) * group_size)};
  };
  // Each (group, band)'s tile: y's tiles in turn. Its two buffers: the group's rows of the
  // band's columns as they arrive, [rows][band columns]; then by destination, [dest][rows][cw].
  std::vector<std::pair<unsigned, size_t>> sizes;
  std::vector<size_t> group_rows(groups), first_row(groups), band_columns(bands);
  for (size_t k = 0; k < groups; ++k) {
    const auto [b0, b1] = group_of(k);
    first_row[k] = blocks[b0].first;
    for (size_t b = b0; b < b1; ++b) group_rows[k] += blocks[b].count;
  }
  for (size_t e = 0; e < bands; ++e) {
    const auto [d0, d1] = band_of(e);
    for (size_t i = d0; i < d1; ++i) band_columns[e] += cw[i];
  }
  const auto middle = [&](size_t k, size_t e) {
    return yi.mapping[(k * bands + e) % destinations].tile;
  };
  for (size_t k = 0; k < groups; ++k)
    for (size_t e = 0; e < bands; ++e)
      sizes.emplace_back(middle(k, e), group_rows[k] * band_columns[e]);
  const Chunks arrived = add_chunked(g, DType::kF32, sizes, name + ".bands");
  const Chunks regrouped = add_chunked(g, DType::kF32, sizes, name + ".regrouped");
  g.set_scratch(arrived.tensor);
  g.set_scratch(regrouped.tensor);
  // Phase 1: every row's run of each band's columns to its (group, band) tile.
  std::map<unsigned, CopyPairs> first;
  for (size_t k = 0; k < groups; ++k) {
    const auto [b0, b1] = group_of(k);
    for (size_t e = 0; e < bands; ++e) {
      const size_t at = arrived.offsets[k * bands + e], width = band_columns[e];
      const size_t from = c0[band_of(e).first];
      for (size_t b = b0; b < b1; ++b)
        for (size_t r = blocks[b].first; r < blocks[b].first + blocks[b].count; ++r) {
          const size_t row = at + (r - first_row[k]) * width;
          first[blocks[b].tile].push_back(
              {g.region(x, r * columns + from, r * columns + from + width),
               g.region(arrived.tensor, row, row + width)});
        }
    }
  }
  std::vector<CopyPairs> lists;
  for (auto& [tile, pairs] : first) lists.push_back(std::move(pairs));
  program.body.push_back(Copy(interleave(lists)));
  // Regrouped by destination on each (group, band) tile; phase 2: each destination's block.
  const ComputeSet cs = g.add_compute_set(name + ".regroup");
  std::map<unsigned, CopyPairs> second;
  for (size_t k = 0; k < groups; ++k)
    for (size_t e = 0; e < bands; ++e) {
      const size_t in = arrived.offsets[k * bands + e], width = band_columns[e];
      const auto [d0, d1] = band_of(e);
      size_t out = regrouped.offsets[k * bands + e];
      for (size_t i = d0; i < d1; ++i) {
        const size_t block = group_rows[k] * cw[i];
        g.add_vertex(cs, "gather_columns_f32", middle(k, e),
                     {{"in", g.region(arrived.tensor, in, in + group_rows[k] * width)},
                      {"out", g.region(regrouped.tensor, out, out + block)},
                      {"rows", u32(group_rows[k])},
                      {"stride", u32(width)},
                      {"first", u32(c0[i] - c0[d0])},
                      {"columns", u32(cw[i])}});
        const size_t to = staged.offsets[i] + first_row[k] * cw[i];
        second[middle(k, e)].push_back({g.region(regrouped.tensor, out, out + block),
                                        g.region(staged.tensor, to, to + block)});
        out += block;
      }
    }
  program.body.push_back(Execute(cs));
  lists.clear();
  for (auto& [tile, pairs] : second) lists.push_back(std::move(pairs));
  program.body.push_back(Copy(interleave(lists)));
  return true;
}

}  // namespace

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
  if (!gather_in_two_stages(g, program, x, yi, staged, name)) {
    std::map<unsigned, CopyPairs> by_source;
    for (size_t i = 0; i < yi.mapping.size(); ++i) {
      const Interval& m = yi.mapping[i];
      const size_t c0 = m.begin / rows, cw = (m.end - m.begin) / rows;
      for (size_t r = 0; r < rows; ++r)
        by_source[g.tile_of(x, r * columns + c0)].push_back(
            {g.region(x, r * columns + c0, r * columns + c0 + cw),
             g.region(staged.tensor, staged.offsets[i] + r * cw,
                      staged.offsets[i] + (r + 1) * cw)});
    }
    std::vector<CopyPairs> lists;
    for (auto& [tile, pairs] : by_source) lists.push_back(std::move(pairs));
    program.body.push_back(Copy(interleave(lists)));
  }
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
