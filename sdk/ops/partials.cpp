// Column sums of partial rows spread over many tiles, by a tree (sdk/ops/op_support.h): a row
// gathered whole to one tile would not fit it (1024 partials of 1024 columns are 4 MB), and a
// tile's exchange actions are an action gap (120 cycles) apart, so no tile may receive a piece from
// each of a thousand others either. Each level sums groups of kPartialFanIn rows: a group's columns
// are cut into chunks, one for each of the group's tiles, and each such tile gathers its chunk of
// every row of the group and adds them in order (sum_rows_in_order_f32). Every group of a level
// shares one exchange and one compute set.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>

#include "sdk/ops/elementwise.h"
#include "sdk/ops/op_support.h"
#include "sdk/ops/pieces.h"

namespace ipu::sdk::ops {

namespace {

constexpr size_t kLastChunkColumns = 16;
constexpr size_t kWorkerColumns = 8;  // the fewest columns a vertex of a chunk's sum takes

// The tiles holding a group's rows, in order of first appearance, at most `limit`.
std::vector<unsigned> owners_of(const Graph& g, const std::vector<Region>& rows, size_t limit) {
  std::vector<unsigned> out;
  for (const Region& r : rows)
    for (const Interval& m : g.tensor(r.tensor).mapping)
      if (m.end > r.begin && m.begin < r.end &&
          std::find(out.begin(), out.end(), m.tile) == out.end()) {
        if (out.size() == limit) return out;
        out.push_back(m.tile);
      }
  return out;
}

}  // namespace

Tensor sum_partials(Graph& g, Program& program, std::vector<Region> rows, size_t columns,
                    const std::string& name) {
  if (rows.empty() || columns == 0)
    throw GraphError(fmt::format("{}: no partial sums to add", name));
  return sum_partials(g, program, {{std::move(rows), columns, 0}}, columns, name);
}

Tensor sum_partials(Graph& g, Program& program, std::vector<PartialSums> problems, size_t total,
                    const std::string& name) {
  if (problems.empty() || problems.front().rows.empty())
    throw GraphError(fmt::format("{}: no partial sums to add", name));
  // The problems' columns tile the result exactly, each with as many rows as the first.
  std::vector<std::pair<size_t, size_t>> spans;
  for (size_t i = 0; i < problems.size(); ++i) {
    const PartialSums& p = problems[i];
    if (p.rows.size() != problems.front().rows.size() || p.columns == 0)
      throw GraphError(fmt::format(
          "{}: partial sums {} have {} rows of {} columns, where the first have {} rows", name, i,
          p.rows.size(), p.columns, problems.front().rows.size()));
    spans.emplace_back(p.offset, p.offset + p.columns);
  }
  std::sort(spans.begin(), spans.end());
  size_t covered = 0;
  for (const auto& [begin, end] : spans) {
    if (begin != covered) break;
    covered = end;
  }
  if (covered != total)
    throw GraphError(fmt::format(
        "{}: the partial sums' columns do not cover the {} result columns once each (from {})",
        name, total, covered));
  const Tensor result = g.add_variable(DType::kF32, {total}, name);
  for (unsigned level = 0;; ++level) {
    const size_t count = problems.front().rows.size();
    const size_t groups = (count + kPartialFanIn - 1) / kPartialFanIn;
    const bool last = groups == 1;
    // Each problem's groups' owners and their chunks of the columns.
    struct Chunk {
      size_t problem, group, first, width;
      unsigned tile;
    };
    std::vector<Chunk> chunks;
    std::vector<std::pair<unsigned, size_t>> gathered_sizes;
    std::vector<Interval> result_mapping;
    std::vector<Tensor> outs;  // a level's sums, a problem's (the last level's: the result)
    for (size_t pi = 0; pi < problems.size(); ++pi) {
      const PartialSums& p = problems[pi];
      std::vector<Interval> out_mapping;
      for (size_t gi = 0; gi < groups; ++gi) {
        const std::vector<Region> members(
            p.rows.begin() + static_cast<ptrdiff_t>(gi * kPartialFanIn),
            p.rows.begin() + static_cast<ptrdiff_t>(std::min(count, (gi + 1) * kPartialFanIn)));
        // The last level's chunks are the result's pieces, which its user (a gradient's sum,
        // whole on a tile) receives one by one: at least kLastChunkColumns each, where a chunk
        // a tile made a 1,024-column sum 513 pieces of two columns (8 KB of exchange actions on
        // the tile that adds them).
        const std::vector<unsigned> owners = owners_of(
            g, members, last ? std::max<size_t>(1, p.columns / kLastChunkColumns) : p.columns);
        const size_t width = (p.columns + owners.size() - 1) / owners.size();
        for (size_t i = 0; i < owners.size() && i * width < p.columns; ++i) {
          const size_t first = i * width, w = std::min(p.columns, first + width) - first;
          chunks.push_back({pi, gi, first, w, owners[i]});
          gathered_sizes.emplace_back(owners[i], members.size() * w);
          if (last)
            result_mapping.push_back({p.offset + first, p.offset + first + w, owners[i]});
          else
            out_mapping.push_back({gi * p.columns + first, gi * p.columns + first + w, owners[i]});
        }
      }
      if (!last) {
        outs.push_back(g.add_variable(DType::kF32, {groups, p.columns},
                                      problems.size() == 1
                                          ? fmt::format("{}.sums{}", name, level)
                                          : fmt::format("{}.sums{}.{}", name, level, pi)));
        g.set_tile_mapping(outs.back(), out_mapping);
        g.set_scratch(outs.back());
      }
    }
    if (last) {
      std::sort(result_mapping.begin(), result_mapping.end(),
                [](const Interval& a, const Interval& b) { return a.begin < b.begin; });
      g.set_tile_mapping(result, result_mapping);
    }
    const Chunks gathered =
        add_chunked(g, DType::kF32, gathered_sizes, fmt::format("{}.level{}", name, level));
    g.set_scratch(gathered.tensor);
    std::vector<CopyPairs> lists;  // one a receiving tile's chunk
    const ComputeSet cs = g.add_compute_set(fmt::format("{}.level{}", name, level));
    for (size_t k = 0; k < chunks.size(); ++k) {
      const Chunk& c = chunks[k];
      const PartialSums& p = problems[c.problem];
      const size_t first_row = c.group * kPartialFanIn;
      const size_t rows = std::min(count, first_row + kPartialFanIn) - first_row;
      CopyPairs list;
      for (size_t r = 0; r < rows; ++r) {
        const Region& row = p.rows[first_row + r];
        const size_t at = gathered.offsets[k] + r * c.width;
        list.emplace_back(g.region(row.tensor, row.begin + c.first, row.begin + c.first + c.width),
                          g.region(gathered.tensor, at, at + c.width));
      }
      lists.push_back(std::move(list));
      // Six vertices, a range of the chunk's columns each (at least kWorkerColumns), so that
      // every worker adds: one vertex a chunk left five idle (a feed-forward bias's gradient,
      // 32 rows of 128 columns a chunk, took 161k cycles).
      const size_t at = gathered.offsets[k];
      const size_t vertices = std::clamp<size_t>(c.width / kWorkerColumns, 1, 6);
      for (size_t w = 0; w < vertices; ++w) {
        const size_t begin = c.width * w / vertices, size = c.width * (w + 1) / vertices - begin;
        const size_t from = at + begin;
        const Region out_region =
            last ? g.region(result, p.offset + c.first + begin, p.offset + c.first + begin + size)
                 : g.region(outs[c.problem], c.group * p.columns + c.first + begin,
                            c.group * p.columns + c.first + begin + size);
        g.add_vertex(cs, "sum_rows_in_order_f32", c.tile,
                     {{"in", g.region(gathered.tensor, from, from + (rows - 1) * c.width + size)},
                      {"out", out_region},
                      {"rows", u32(rows)},
                      {"columns", u32(size)},
                      {"stride", u32(c.width)}});
      }
    }
    program.body.push_back(Copy(interleave(lists)));
    program.body.push_back(Execute(cs));
    if (last) return result;
    for (size_t pi = 0; pi < problems.size(); ++pi) {
      problems[pi].rows.clear();
      for (size_t gi = 0; gi < groups; ++gi)
        problems[pi].rows.push_back(
            g.region(outs[pi], gi * problems[pi].columns, (gi + 1) * problems[pi].columns));
    }
  }
}

namespace {

// Rows in blocks of a slice (map_row_blocks): the rows of a slice cut into runs on one tile each,
// the same runs in every slice, and some run of two rows or more. Each run, in pieces of up to
// kSumPieces rows, is summed on its tile first (sum_pieces_in_order_f32): those sums are the
// partials, the same rows' for every slice, and the slices' sums go up their trees side by
// side. Nothing when x is not so laid out.
std::optional<ColumnSums> row_block_sums(Graph& g, Program& program, Tensor x, const TensorInfo& xi,
                                         const RowCuts& cuts, const std::string& name) {
  const size_t columns = xi.shape.back(), rows = xi.elements / columns;
  const size_t slices = cuts.starts.size();
  const auto tile_of = [&](size_t r, size_t s) { return cuts.tiles[r * slices + s]; };
  std::vector<size_t> runs;  // rows a partial, in order
  for (size_t r = 0; r < rows;) {
    size_t end = r + 1;
    const auto same_tiles = [&](size_t a, size_t b) {
      for (size_t s = 0; s < slices; ++s)
        if (tile_of(a, s) != tile_of(b, s)) return false;
      return true;
    };
    while (end < rows && end - r < kSumPieces && same_tiles(end, r)) ++end;
    runs.push_back(end - r);
    r = end;
  }
  if (std::all_of(runs.begin(), runs.end(), [](size_t n) { return n == 1; })) return std::nullopt;
  require_sequence(program, name);
  add_ops_codelets(g);
  const auto width_of = [&](size_t s) {
    return (s + 1 < slices ? cuts.starts[s + 1] : columns) - cuts.starts[s];
  };
  std::vector<std::pair<unsigned, size_t>> sizes;  // the runs of two rows or more, a slice each
  for (size_t s = 0, r = 0; s < slices; ++s, r = 0)
    for (size_t n : runs) {
      if (n > 1) sizes.emplace_back(tile_of(r, s), width_of(s));
      r += n;
    }
  const Chunks parts = add_chunked(g, DType::kF32, sizes, name + ".parts");
  g.set_scratch(parts.tensor);
  const ComputeSet cs = g.add_compute_set(name);
  std::vector<PartialSums> problems;
  size_t k = 0;
  for (size_t s = 0; s < slices; ++s) {
    const size_t first = cuts.starts[s], width = width_of(s);
    PartialSums p{{}, width, first};
    size_t r = 0;
    for (size_t n : runs) {
      const auto row = [&](size_t i, size_t begin, size_t end) {
        return g.region(x, (r + i) * columns + first + begin, (r + i) * columns + first + end);
      };
      if (n == 1) {
        p.rows.push_back(row(0, 0, width));
      } else {
        const size_t at = parts.offsets[k++];
        // Six vertices, a range of the columns each (at least kWorkerColumns), each but the
        // last an even number of them, so that every range's rows lie on pairs alike.
        const size_t vertices = std::clamp<size_t>(width / kWorkerColumns, 1, 6);
        const auto cut = [&](size_t w) {
          return w == vertices ? width : (width * w / vertices) & ~size_t{1};
        };
        for (size_t w = 0; w < vertices; ++w) {
          const size_t begin = cut(w), end = cut(w + 1);
          std::map<std::string, Binding> fields{
              {"out", g.region(parts.tensor, at + begin, at + end)},
              {"rows", u32(n)},
              {"columns", u32(end - begin)}};
          for (size_t i = 0; i < kSumPieces; ++i)  // the unused ones repeat the first
            fields[fmt::format("in{}", i)] = row(i < n ? i : 0, begin, end);
          g.add_vertex(cs, "sum_pieces_in_order_f32", tile_of(r, s), fields);
        }
        p.rows.push_back(g.region(parts.tensor, at, at + width));
      }
      r += n;
    }
    problems.push_back(std::move(p));
  }
  program.body.push_back(Execute(cs));
  ColumnSums out;
  out.partial_rows = runs;
  out.sum = sum_partials(g, program, std::move(problems), columns, name + ".sum");
  return out;
}

}  // namespace

ColumnSums reduce_columns(Graph& g, Program& program, Tensor x, const std::string& name) {
  // Rows in slices (a vocabulary's logits' gradient): each row is a partial sum, so no tile
  // gathers a whole row; rows in blocks of a slice are first summed on their tiles.
  const TensorInfo& x0 = mapped(g, x, name, "operand");
  const RowCuts cuts = x0.type == DType::kF32 && x0.shape.size() >= 2 ? row_cuts(x0) : RowCuts{};
  if (!cuts.starts.empty())
    if (std::optional<ColumnSums> blocks = row_block_sums(g, program, x, x0, cuts, name))
      return *std::move(blocks);
  if (!cuts.starts.empty()) {
    require_sequence(program, name);
    add_ops_codelets(g);
    const size_t columns = x0.shape.back(), count = x0.elements / columns;
    ColumnSums out;
    std::vector<Region> part_rows;
    for (size_t r = 0; r < count; ++r)
      part_rows.push_back(g.region(x, r * columns, (r + 1) * columns));
    out.partial_rows.assign(count, 1);
    out.sum = sum_partials(g, program, std::move(part_rows), columns, name + ".sum");
    return out;
  }
  const Tensor rows = f32_rows(g, program, x, name);
  const TensorInfo xi = g.tensor(rows);
  const size_t columns = xi.shape.back();
  const std::vector<RowRange> ranges = row_ranges(xi);
  // A range of one row is its own partial sum: no vertex copies it (a tile of BERT-Large's
  // feed-forward gradient holds one row of 4,096, which one worker copied in about 100k cycles).
  std::vector<size_t> summed;  // the ranges of several rows
  for (size_t i = 0; i < ranges.size(); ++i)
    if (ranges[i].rows > 1) summed.push_back(i);
  Tensor parts;
  ComputeSet cs;
  if (!summed.empty()) {
    std::vector<Interval> mapping;
    for (size_t k = 0; k < summed.size(); ++k)
      mapping.push_back({k * columns, (k + 1) * columns, ranges[summed[k]].tile});
    parts = g.add_variable(DType::kF32, {summed.size(), columns}, name + ".parts");
    g.set_tile_mapping(parts, mapping);
    g.set_scratch(parts);
    cs = g.add_compute_set(name);
  }
  ColumnSums out;
  std::vector<Region> part_rows;
  for (size_t i = 0, k = 0; i < ranges.size(); ++i) {
    const RowRange& r = ranges[i];
    const Region in = g.region(rows, r.first * columns, (r.first + r.rows) * columns);
    out.partial_rows.push_back(r.rows);
    if (r.rows == 1) {
      part_rows.push_back(in);
      continue;
    }
    const Region part = g.region(parts, k * columns, (k + 1) * columns);
    ++k;
    g.add_vertex(cs, "sum_rows_in_order_f32", r.tile,
                 {{"in", in},
                  {"out", part},
                  {"rows", u32(r.rows)},
                  {"columns", u32(columns)},
                  {"stride", u32(columns)}});
    part_rows.push_back(part);
  }
  if (!summed.empty()) program.body.push_back(Execute(cs));
  out.sum = sum_partials(g, program, std::move(part_rows), columns, name + ".sum");
  return out;
}

namespace reference {

std::vector<float> sum_partials(std::vector<float> parts, size_t columns) {
  size_t rows = parts.size() / columns;
  do {
    const size_t groups = (rows + kPartialFanIn - 1) / kPartialFanIn;
    std::vector<float> next(groups * columns);
    for (size_t gi = 0; gi < groups; ++gi) {
      const size_t first = gi * kPartialFanIn, end = std::min(rows, first + kPartialFanIn);
      for (size_t c = 0; c < columns; ++c) {
        float s = parts[first * columns + c];
        for (size_t r = first + 1; r < end; ++r) s += parts[r * columns + c];
        next[gi * columns + c] = s;
      }
    }
    parts = std::move(next);
    rows = groups;
  } while (rows > 1);
  return parts;
}

std::vector<float> reduce_columns(const std::vector<float>& x, size_t columns,
                                  const std::vector<size_t>& partial_rows) {
  std::vector<float> parts(partial_rows.size() * columns);
  size_t row = 0;
  for (size_t p = 0; p < partial_rows.size(); ++p, row += partial_rows[p - 1])
    for (size_t c = 0; c < columns; ++c) {
      float s = x[row * columns + c];
      for (size_t r = 1; r < partial_rows[p]; ++r) s += x[(row + r) * columns + c];
      parts[p * columns + c] = s;
    }
  return sum_partials(std::move(parts), columns);
}

}  // namespace reference

}  // namespace ipu::sdk::ops
