// The planned matmul's graph: the phases that gather, pack, broadcast, multiply and reduce a
// plan's blocks, one product or a group of them, and its host reference (sdk/ops/matmul.h).
#include "sdk/ops/matmul.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <tuple>

#include "sdk/graph/sdk_paths.h"
#include "sdk/ops/elementwise.h"
#include "sdk/ops/matmul_geometry.h"
#include "sdk/ops/op_support.h"
#include "sdk/ops/pieces.h"

namespace ipu::sdk::ops {

using namespace detail;

void add_matmul_codelets(Graph& g) {
  if (g.codelets().count("matmul_amp_f16")) return;
  const std::string file = sdk_paths().codelet_dir() + "/matmul_planned.c";
  auto in = [](const char* n, DType t) { return Field{n, FieldKind::kInput, t}; };
  auto out = [](const char* n, DType t) { return Field{n, FieldKind::kOutput, t}; };
  auto scalar = [](const char* n) { return Field{n, FieldKind::kScalar, DType::kU32}; };
  const DType f16 = DType::kF16, f32 = DType::kF32;
  for (const DType t : {f16, f32}) {
    const std::string suffix = t == f16 ? "_f16" : "_f32";
    g.add_codelet("pack_weights" + suffix, file,
                  {in("in", t), out("out", f16), scalar("passes"), scalar("rows"), scalar("ks"),
                   scalar("group_stride"), scalar("row_stride"), scalar("k_stride"),
                   scalar("first_block"), scalar("blocks"), scalar("first_lane"), scalar("lanes")});
    g.add_codelet(
        "pack_stream" + suffix, file,
        {in("in", t), out("out", f16), scalar("columns"), scalar("ks"), scalar("column_stride"),
         scalar("k_stride"), scalar("first_item"), scalar("items")});
  }
  g.add_codelet("matmul_amp_f16", file,
                {in("a", f16), in("b", f16), out("ct", f32), scalar("groups"), scalar("passes"),
                 scalar("columns"), scalar("a_group_stride"), scalar("a_pass_stride"),
                 scalar("b_pass_stride"), scalar("ct_group_stride")});
  const auto reduce_fields = [&](std::vector<Field> last) {
    std::vector<Field> f{in("in", f32),         in("own", f32),         scalar("parts"),
                         scalar("part_stride"), scalar("group_stride"), scalar("own_group_stride"),
                         scalar("own_part"),    scalar("columns"),      scalar("first_row")};
    f.insert(f.end(), last.begin(), last.end());
    return f;
  };
  g.add_codelet("reduce_rows_f32", file, reduce_fields({out("out", f32), scalar("rows")}));
  std::vector<Field> apart;
  for (unsigned i = 0; i < kReduceApartRows; ++i)
    apart.push_back(out(fmt::format("out{}", i).c_str(), f32));  // Field copies the name
  apart.push_back(scalar("rows"));
  g.add_codelet("reduce_rows_apart_f32", file, reduce_fields(apart));
  if (g.codelets().count("cast_f16_f32") == 0)  // the elementwise library may have declared it
    g.add_codelet("cast_f16_f32", file, {in("in", f16), out("out", f32), scalar("n")});
}

namespace {

// Whether every piece of the runs (begin, length) of an f16 tensor moves as whole words into
// an even destination offset: each piece starts at an even element of its interval, an even
// distance from its run's start, and is of even length unless it ends its run.
bool words_align(const TensorInfo& t, const std::vector<std::pair<size_t, size_t>>& runs) {
  for (const auto& [begin, length] : runs) {
    const size_t end = begin + length;
    auto it = std::upper_bound(t.mapping.begin(), t.mapping.end(), begin,
                               [](size_t x, const Interval& m) { return x < m.end; });
    for (; it != t.mapping.end() && it->begin < end; ++it) {
      const size_t lo = std::max(begin, it->begin), hi = std::min(end, it->end);
      if ((lo - it->begin) % 2 != 0 || (lo - begin) % 2 != 0) return false;
      if ((hi - lo) % 2 != 0 && hi != end) return false;
    }
  }
  return true;
}

const TensorInfo& check_operand(const Graph& g, Tensor t, const char* which, const MatmulOptions& o,
                                size_t dims = 2) {
  if (t.id >= g.tensors().size())
    throw GraphError(fmt::format("{}: operand {} is not a tensor of this graph", o.name, which));
  const TensorInfo& info = g.tensor(t);
  if (info.type != DType::kF16)
    throw GraphError(fmt::format("{}: operand {} '{}' is {}; the AMP product takes f16", o.name,
                                 which, info.name, dtype_name(info.type)));
  if (info.shape.size() != dims)
    throw GraphError(fmt::format("{}: operand {} '{}' has {} dimensions; {} has {}", o.name, which,
                                 info.name, info.shape.size(),
                                 dims == 2 ? "a matrix" : "a group of matrices", dims));
  size_t mapped = 0;
  for (const Interval& m : info.mapping) mapped += m.end - m.begin;
  if (mapped != info.elements)
    throw GraphError(
        fmt::format("{}: operand {} '{}' is not mapped to tiles", o.name, which, info.name));
  return info;
}

}  // namespace

Tensor create_matmul_input(Graph& g, MatmulShape shape, bool lhs, const std::string& name,
                           const MatmulOptions& options, bool spread) {
  check_options(g.target(), shape, options);
  MatmulOptions o = options;
  if (o.tiles == 0) o.tiles = g.tiles() - o.first_tile;
  const bool transposed = lhs ? o.transpose_a : o.transpose_b;
  const size_t rows = lhs ? (transposed ? shape.k : shape.m) : (transposed ? shape.n : shape.k);
  const size_t columns = lhs ? (transposed ? shape.m : shape.k) : (transposed ? shape.k : shape.n);
  const Tensor t = g.add_variable(DType::kF16, {rows, columns}, name);
  if (spread) {
    g.map_evenly(t, o.first_tile, o.tiles, 2);
    return t;
  }
  // Whole rows, in pairs when a row is odd: every piece the gather moves is whole words.
  g.map_evenly(t, o.first_tile, static_cast<unsigned>(std::min<size_t>(o.tiles, rows)),
               columns % 2 ? 2 * columns : columns);
  return t;
}

namespace {

// The steps of one or several products built side by side (the groups of a grouped product,
// each on its own tiles): one exchange and one compute set a phase for all of them.
struct Phases {
  ComputeSet pack, amp, reduce;
  std::map<unsigned, CopyPairs> gather;  // by the tile a run starts on
  std::vector<CopyPairs> broadcast;      // a list a consumer
  std::vector<CopyPairs> partials;       // a list a reducer
};

Phases start_phases(Graph& g, const std::string& name) {
  Phases ph;
  ph.pack = g.add_compute_set(name + ".pack");
  ph.amp = g.add_compute_set(name + ".amp");
  ph.reduce = g.add_compute_set(name + ".reduce");
  return ph;
}

// The phases' programs, in order. The gather is listed by the tile a run starts on, a run of
// each source a round, then put in rounds that no receiver takes twice either (in_rounds).
void finish_phases(const Graph& g, Program& program, Phases& ph) {
  std::vector<CopyPairs> by_source;
  for (auto& [tile, pairs] : ph.gather) by_source.push_back(std::move(pairs));
  program.body.push_back(Copy(in_rounds(g, interleave(by_source))));
  program.body.push_back(Execute(ph.pack));
  // Every consumer's list in the same order (its A pieces, then its B pieces), not rotated: a
  // piece is one multicast to all the consumers that share it, so they keep in step (rotated,
  // a 1024 x 1024 x 4096 product's broadcast took 116k cycles instead of 43k).
  program.body.push_back(Copy(interleave(ph.broadcast, false)));
  program.body.push_back(Execute(ph.amp));
  if (!ph.partials.empty()) program.body.push_back(Copy(interleave(ph.partials, false)));
  program.body.push_back(Execute(ph.reduce));
}

// A product's operands: A's rows (of a_row elements, from element a_base of `a`, as stored:
// transposed or not) and B's likewise, each staged as f16 or, widened, f32.
struct ProductOperands {
  Tensor a, b;
  size_t a_base = 0, b_base = 0, a_row = 0, b_row = 0;
  DType staged_a = DType::kF16, staged_b = DType::kF16;
};

// The runs of the stored operand that a packing item gathers: (first element, length).
std::vector<std::pair<size_t, size_t>> operand_runs(const MatmulPlan& p, const PackItem& it,
                                                    const ItemShape& s, const ProductOperands& x) {
  (void)p;
  const size_t base = it.lhs ? x.a_base : x.b_base, row = it.lhs ? x.a_row : x.b_row;
  std::vector<std::pair<size_t, size_t>> runs;
  for (size_t r = 0; r < s.rows; ++r)
    runs.emplace_back(base + (s.first_row + r) * row + s.first_column, s.columns);
  return runs;
}

// Reducer l of block (i, j) sums its share (Geometry::reduce_share: whole groups of the
// block's rows, a part of its columns) over the pk tiles' partial sums, in slice order.
struct Reducer {
  unsigned i, j, l;
  Range columns;       // of C
  Range rows;          // of C
  size_t groups;       // of the share
  size_t first_group;  // the share's first, counted from the block's
};
std::vector<Reducer> reducers_of(const MatmulPlan& p) {
  const Geometry geo{p};
  std::vector<Reducer> out;
  for (unsigned i = 0; i < p.pm; ++i)
    for (unsigned j = 0; j < p.pn; ++j)
      for (unsigned l = 0; l < p.pk; ++l) {
        const Geometry::Share share = geo.reduce_share(i, j, l);
        if (share.columns.size() > 0 && share.groups.size() > 0)
          out.push_back({i, j, l, share.columns, geo.rows_of(share.groups), share.groups.size(),
                         share.groups.begin - geo.groups(i).begin});
      }
  return out;
}

// C's pieces (from element c_base) lie where their reducer is: rows of the block's columns, or
// whole rows when a share is whole rows, so that the reduction writes C in place and no
// exchange follows it. Sorted.
// C's pieces, as the reducers leave them: C's element (row, column) at c_base + row x c_row +
// column (c_row: the plan's n, or the whole product's for a slice of a serial plan).
std::vector<Interval> result_mapping(const MatmulPlan& p, size_t c_base, size_t c_row) {
  const Geometry geo{p};
  const size_t n = c_row;
  std::vector<Interval> mapping;
  for (const Reducer& r : reducers_of(p)) {
    const unsigned tile = geo.consumer(r.i, r.j, r.l);
    if (r.columns.size() == p.shape.n && c_row == p.shape.n)
      mapping.push_back({c_base + r.rows.begin * n, c_base + r.rows.end * n, tile});
    else
      for (size_t row = r.rows.begin; row < r.rows.end; ++row)
        mapping.push_back(
            {c_base + row * n + r.columns.begin, c_base + row * n + r.columns.end, tile});
  }
  std::sort(mapping.begin(), mapping.end(),
            [](const Interval& x, const Interval& y) { return x.begin < y.begin; });
  return mapping;
}

// One product of a plan into C's elements from c_base (C's mapping already holds
// result_mapping's pieces), its steps added to `phases`; its tensors are named from `prefix`.
void build_product(Graph& g, const MatmulPlan& p, const ProductOperands& operands, Tensor result,
                   size_t c_base, size_t c_row, const std::string& prefix, Phases& phases) {
  const MatmulOptions& o = p.options;
  const Geometry geo{p};
  const size_t n = c_row;
  const auto items = pack_items(p);
  const auto packers = packer_tiles(p, items);
  // Staging and packed chunks, one per item on its packer tile.
  std::vector<std::pair<unsigned, size_t>> staging_a, staging_b, packed_a, packed_b;
  std::vector<ItemShape> shapes;
  for (size_t i = 0; i < items.size(); ++i) {
    const ItemShape s = item_shape(p, items[i]);
    shapes.push_back(s);
    const unsigned tile = packers[i];
    (items[i].lhs ? staging_a : staging_b).emplace_back(tile, s.rows * s.row_stride);
    (items[i].lhs ? packed_a : packed_b).emplace_back(tile, s.packed);
  }
  const DType staged_type[2] = {operands.staged_a, operands.staged_b};
  const Chunks sa = add_chunked(g, staged_type[0], staging_a, prefix + ".a_staged");
  const Chunks sb = add_chunked(g, staged_type[1], staging_b, prefix + ".b_staged");
  const Chunks pa = add_chunked(g, DType::kF16, packed_a, prefix + ".a_packed");
  const Chunks pb = add_chunked(g, DType::kF16, packed_b, prefix + ".b_packed");
  for (const Chunks* c : {&sa, &sb, &pa, &pb}) g.set_scratch(c->tensor);  // the product's own

  // Gather: each item's rows of the operand into its staging block.
  // Listed by the tile a run starts on: those tiles send more pieces than any packer receives
  // (a row is cut into a piece a block), so each sends one a round.
  std::map<unsigned, CopyPairs>& gather = phases.gather;
  std::vector<size_t> item_index(items.size());  // the item's chunk among its operand's
  {
    size_t na = 0, nb = 0;
    for (size_t i = 0; i < items.size(); ++i) item_index[i] = items[i].lhs ? na++ : nb++;
  }
  for (size_t i = 0; i < items.size(); ++i) {
    const ItemShape& s = shapes[i];
    const bool lhs = items[i].lhs;
    const Chunks& staged = lhs ? sa : sb;
    const size_t base = staged.offsets[item_index[i]];
    size_t r = 0;
    const Tensor source = lhs ? operands.a : operands.b;
    for (const auto& [begin, length] : operand_runs(p, items[i], s, operands)) {
      gather[g.tile_of(source, begin)].push_back(
          {g.region(source, begin, begin + length),
           g.region(staged.tensor, base + r * s.row_stride, base + r * s.row_stride + length)});
      ++r;
    }
  }

  // Pack: weights for A, the stream for B.
  const ComputeSet pack = phases.pack;
  for (size_t i = 0; i < items.size(); ++i) {
    const ItemShape& s = shapes[i];
    const PackItem& it = items[i];
    const Chunks& staged = it.lhs ? sa : sb;
    const Chunks& packed = it.lhs ? pa : pb;
    const size_t in = staged.offsets[item_index[i]], out = packed.offsets[item_index[i]];
    const Region in_region = g.region(staged.tensor, in, in + s.rows * s.row_stride);
    const Region out_region = g.region(packed.tensor, out, out + s.packed);
    const std::string type = staged_type[it.lhs ? 0 : 1] == DType::kF32 ? "_f32" : "_f16";
    const auto u = [](size_t x) { return static_cast<uint32_t>(x); };
    // The fields of each kind of item, then six vertices each a range of its blocks of 16 x 4
    // (weights) or its columns of a pass (the stream).
    std::map<std::string, Binding> fields{{"in", in_region}, {"out", out_region}};
    size_t units = 0;
    if (it.lhs) {
      const bool t = o.transpose_a;  // A^T: 16 k-rows x the block's m, a pass of each group
      const size_t groups = t ? geo.groups(it.y).size() : 1;
      const size_t passes = t ? 1 : geo.piece_passes(it.lhs, it.y, it.z).size();
      fields.insert({{"passes", u(passes)},
                     {"rows", u(t ? s.columns : s.rows)},
                     {"ks", u(t ? s.rows : s.columns)},
                     {"group_stride", u(t ? 16 : 0)},
                     {"row_stride", u(t ? 1 : s.row_stride)},
                     {"k_stride", u(t ? s.row_stride : 1)}});
      units = groups * passes * 4;
    } else {
      const bool t = o.transpose_b;  // B^T: the block's columns as rows x the slice's k
      const size_t passes = t ? geo.piece_passes(it.lhs, it.y, it.z).size() : 1;
      const size_t columns = t ? s.rows : s.columns;
      fields.insert({{"columns", u(columns)},
                     {"ks", u(t ? s.columns : s.rows)},
                     {"column_stride", u(t ? s.row_stride : 1)},
                     {"k_stride", u(t ? 1 : s.row_stride)}});
      units = passes * columns;
    }
    const std::string codelet = (it.lhs ? "pack_weights" : "pack_stream") + type;
    // A as stored: its rows in lane_parts parts, its blocks in the rest (weights_split).
    const WeightsSplit split = packs_rows(p, it) ? weights_split(units) : WeightsSplit{};
    for (unsigned wr = 0; wr < split.lane_parts; ++wr)
      for (unsigned wb = 0; wb < split.block_parts(); ++wb) {
        const Range r = part(units, split.block_parts(), wb);
        const Range lanes = part(16, split.lane_parts, wr);
        if (r.size() == 0) continue;
        auto mine = fields;
        mine[it.lhs ? "first_block" : "first_item"] = u(r.begin);
        mine[it.lhs ? "blocks" : "items"] = u(r.size());
        if (it.lhs) {
          mine["first_lane"] = u(lanes.begin);
          mine["lanes"] = u(lanes.size());
        }
        g.add_vertex(pack, codelet, packers[i], mine);
      }
  }

  // Each consumer's buffers: A packed [gm][pp][256] (transposed A: [pp][gm][256]), B packed
  // [pp][nb][16], and its sums C^T [gm][nb][16].
  std::vector<std::pair<unsigned, size_t>> abuf, bbuf, ctbuf;
  for (unsigned i = 0; i < p.pm; ++i)
    for (unsigned j = 0; j < p.pn; ++j)
      for (unsigned l = 0; l < p.pk; ++l) {
        const size_t gm = geo.groups(i).size(), pp = geo.passes(l).size(),
                     nb = geo.columns(j).size();
        const unsigned tile = geo.consumer(i, j, l);
        abuf.emplace_back(tile, gm * pp * 256);
        bbuf.emplace_back(tile, pp * nb * 16);
        ctbuf.emplace_back(tile, gm * nb * 16);
      }
  const Chunks ab = add_chunked(g, DType::kF16, abuf, prefix + ".a_blocks");
  const Chunks bb = add_chunked(g, DType::kF16, bbuf, prefix + ".b_blocks");
  const Chunks ct = add_chunked(g, DType::kF32, ctbuf, prefix + ".partials");
  for (const Chunks* c : {&ab, &bb, &ct}) g.set_scratch(c->tensor);

  // Where each packed item lies, to find the pieces each consumer needs.
  std::map<std::tuple<bool, unsigned, unsigned, unsigned>, size_t> item_at;
  for (size_t i = 0; i < items.size(); ++i)
    item_at[{items[i].lhs, items[i].x, items[i].y, items[i].z}] =
        (items[i].lhs ? pa : pb).offsets[item_index[i]];
  std::vector<CopyPairs> broadcast(size_t{p.pm} * p.pn * p.pk);  // a list a consumer
  for (unsigned i = 0; i < p.pm; ++i)
    for (unsigned j = 0; j < p.pn; ++j)
      for (unsigned l = 0; l < p.pk; ++l) {
        const size_t c = (size_t{i} * p.pn + j) * p.pk + l;
        const Range gr = geo.groups(i), pr = geo.passes(l);
        const size_t gm = gr.size(), pp = pr.size(), nb = geo.columns(j).size();
        if (gm == 0 || pp == 0 || nb == 0) continue;
        if (!o.transpose_a) {  // items (group, slice l, piece h): [its passes][256] into
                               // [g][pp][256]
          for (size_t gi = 0; gi < gm; ++gi)
            for (unsigned h = 0; h < geo.pieces(true, l); ++h) {
              const Range q = geo.piece_passes(true, l, h);
              const size_t from = item_at.at({true, static_cast<unsigned>(gr.begin + gi), l, h});
              const size_t to = ab.offsets[c] + (gi * pp + q.begin - pr.begin) * 256;
              broadcast[c].push_back({g.region(pa.tensor, from, from + q.size() * 256),
                                      g.region(ab.tensor, to, to + q.size() * 256)});
            }
        } else {  // item (pass, block i): [gm][256] into [pp][gm][256]
          for (size_t q = 0; q < pp; ++q) {
            const size_t from = item_at.at({true, static_cast<unsigned>(pr.begin + q), i, 0});
            const size_t to = ab.offsets[c] + q * gm * 256;
            broadcast[c].push_back({g.region(pa.tensor, from, from + gm * 256),
                                    g.region(ab.tensor, to, to + gm * 256)});
          }
        }
        if (!o.transpose_b) {  // item (pass, block j): [nb][16] into [pp][nb][16]
          for (size_t q = 0; q < pp; ++q) {
            const size_t from = item_at.at({false, static_cast<unsigned>(pr.begin + q), j, 0});
            const size_t to = bb.offsets[c] + q * nb * 16;
            broadcast[c].push_back(
                {g.region(pb.tensor, from, from + nb * 16), g.region(bb.tensor, to, to + nb * 16)});
          }
        } else {  // items (block j, slice l, piece h): [its passes][nb][16], one after another
          for (unsigned h = 0; h < geo.pieces(false, l); ++h) {
            const Range q = geo.piece_passes(false, l, h);
            const size_t from = item_at.at({false, j, l, h}), size = q.size() * nb * 16;
            const size_t to = bb.offsets[c] + (q.begin - pr.begin) * nb * 16;
            broadcast[c].push_back(
                {g.region(pb.tensor, from, from + size), g.region(bb.tensor, to, to + size)});
          }
        }
      }
  for (CopyPairs& list : broadcast) phases.broadcast.push_back(std::move(list));

  // The AMP: six vertices a tile, each a part of the groups and of the columns (amp_split).
  const ComputeSet amp = phases.amp;
  for (unsigned i = 0; i < p.pm; ++i)
    for (unsigned j = 0; j < p.pn; ++j)
      for (unsigned l = 0; l < p.pk; ++l) {
        const size_t c = (size_t{i} * p.pn + j) * p.pk + l;
        const size_t gm = geo.groups(i).size(), pp = geo.passes(l).size(),
                     nb = geo.columns(j).size();
        if (gm == 0 || pp == 0 || nb == 0) continue;
        const size_t a_group_stride = o.transpose_a ? 256 : pp * 256;
        const size_t a_pass_stride = o.transpose_a ? gm * 256 : 256;
        const AmpSplit split = amp_split(gm, pp, nb);
        for (unsigned w = 0; w < 6; ++w) {
          const auto gp = static_cast<unsigned>(split.group_parts);
          const auto cp = static_cast<unsigned>(split.column_parts);
          const Range wg = part(gm, gp, w / cp);
          const Range wc = part(nb, cp, w % cp);
          if (wg.size() == 0 || wc.size() == 0) continue;
          const size_t a0 = ab.offsets[c] + wg.begin * a_group_stride;
          const size_t b0 = bb.offsets[c] + wc.begin * 16;
          const size_t c0 = ct.offsets[c] + (wg.begin * nb + wc.begin) * 16;
          const auto u = [](size_t x) { return static_cast<uint32_t>(x); };
          g.add_vertex(amp, "matmul_amp_f16", geo.consumer(i, j, l),
                       {{"a", g.region(ab.tensor, a0, ab.offsets[c] + gm * pp * 256)},
                        {"b", g.region(bb.tensor, b0, bb.offsets[c] + pp * nb * 16)},
                        {"ct", g.region(ct.tensor, c0, ct.offsets[c] + gm * nb * 16)},
                        {"groups", u(wg.size())},
                        {"passes", u(pp)},
                        {"columns", u(wc.size())},
                        {"a_group_stride", u(a_group_stride)},
                        {"a_pass_stride", u(a_pass_stride)},
                        {"b_pass_stride", u(nb * 16)},
                        {"ct_group_stride", u(nb * 16)}});
        }
      }

  // Reduction: reducer l of block (i, j) sums its share (whole groups of the block's rows, a
  // part of its columns) over the pk tiles' partial sums (in slice order) into C, whose pieces
  // lie where their reducer is (rows of the share's columns; whole rows when a share has every
  // column), so that no exchange follows.
  const std::vector<Reducer> reducers = reducers_of(p);
  std::vector<std::pair<unsigned, size_t>> received;
  for (const Reducer& r : reducers)
    if (p.pk > 1)
      received.emplace_back(geo.consumer(r.i, r.j, r.l),
                            (p.pk - 1) * r.groups * r.columns.size() * 16);
  Chunks recv;
  if (p.pk > 1) recv = add_chunked(g, DType::kF32, received, prefix + ".partials_received");
  if (p.pk > 1) g.set_scratch(recv.tensor);
  if (p.pk > 1) {
    // Reducer (i, j, l) receives, from each of the block's other pk - 1 tiles, each group's
    // columns of its share: [pk - 1][groups][columns][16], in slice order (one run a tile when
    // the share has all the block's columns); its own part it reads in place. Each reducer
    // takes the block's other tiles in turn from its own, so that at each round the block's
    // tiles send to one another, none to two at once.
    std::vector<CopyPairs> partials(reducers.size());
    size_t at = 0;
    for (const Reducer& r : reducers) {
      const size_t nb = geo.columns(r.j).size(), cw = r.columns.size();
      const size_t c0 = r.columns.begin - geo.columns(r.j).begin;
      const size_t runs = cw == nb ? 1 : r.groups, run = cw == nb ? r.groups * nb * 16 : cw * 16;
      for (unsigned s = 1; s < p.pk; ++s) {
        const unsigned l = (r.l + s) % p.pk, m = l - (l > r.l);
        const size_t c = (size_t{r.i} * p.pn + r.j) * p.pk + l;
        for (size_t grp = 0; grp < runs; ++grp) {
          const size_t from = ct.offsets[c] + ((r.first_group + grp) * nb + c0) * 16;
          const size_t to = recv.offsets[at] + ((m * r.groups + grp) * cw) * 16;
          partials[at].push_back(
              {g.region(ct.tensor, from, from + run), g.region(recv.tensor, to, to + run)});
        }
      }
      ++at;
    }
    for (CopyPairs& list : partials) phases.partials.push_back(std::move(list));
  }
  const ComputeSet reduce = phases.reduce;
  for (size_t at = 0; at < reducers.size(); ++at) {
    const Reducer& r = reducers[at];
    const size_t nb = geo.columns(r.j).size(), cw = r.columns.size();
    const size_t c0 = r.columns.begin - geo.columns(r.j).begin;
    const size_t c = (size_t{r.i} * p.pn + r.j) * p.pk + r.l;
    const Region own = g.region(ct.tensor, ct.offsets[c] + (r.first_group * nb + c0) * 16,
                                ct.offsets[c] + geo.groups(r.i).size() * nb * 16);
    const Region in = p.pk > 1 ? g.region(recv.tensor, recv.offsets[at],
                                          recv.offsets[at] + (p.pk - 1) * r.groups * cw * 16)
                               : own;
    // Six ranges of rows when the share is whole rows of C (contiguous), else a vertex a few
    // rows (each row its own interval of C); the workers take them as they come free.
    const bool whole_rows = cw == p.shape.n && c_row == p.shape.n;
    const size_t rows = r.rows.size();
    const auto u = [](size_t x) { return static_cast<uint32_t>(x); };
    const std::map<std::string, Binding> common{{"in", in},
                                                {"own", own},
                                                {"parts", p.pk},
                                                {"part_stride", u(r.groups * cw * 16)},
                                                {"group_stride", u(cw * 16)},
                                                {"own_group_stride", u(nb * 16)},
                                                {"own_part", r.l},
                                                {"columns", u(cw)}};
    if (whole_rows) {
      for (unsigned v = 0; v < 6; ++v) {
        const Range mine = part(rows, 6, v);
        if (mine.size() == 0) continue;
        auto fields = common;
        fields["out"] = g.region(result, c_base + (r.rows.begin + mine.begin) * n,
                                 c_base + (r.rows.begin + mine.end) * n);
        fields["first_row"] = u(mine.begin);
        fields["rows"] = u(mine.size());
        g.add_vertex(reduce, "reduce_rows_f32", geo.consumer(r.i, r.j, r.l), fields);
      }
    } else {
      // A vertex a few rows and a part of the columns: the parts' sums start 16 floats a
      // column further in, in place and received alike.
      const size_t each = reduce_apart_rows_a_vertex(rows);
      const size_t column_parts =
          reduce_apart_column_parts((rows + each - 1) / each, each, cw, p.pk);
      for (size_t row = 0; row < rows; row += each)  // block rows start at multiples of 16
        for (unsigned cp = 0; cp < column_parts; ++cp) {
          const size_t count = std::min(each, rows - row);
          const Range mine = part(cw, static_cast<unsigned>(column_parts), cp);
          if (mine.size() == 0) continue;
          auto fields = common;
          fields["own"] = g.region(own.tensor, own.begin + mine.begin * 16, own.end);
          fields["in"] = g.region(in.tensor, in.begin + mine.begin * 16, in.end);
          fields["columns"] = u(mine.size());
          for (size_t i = 0; i < kReduceApartRows; ++i) {  // the unused ones repeat the first
            const size_t first = c_base + (r.rows.begin + row + (i < count ? i : 0)) * n +
                                 r.columns.begin + mine.begin;
            fields[fmt::format("out{}", i)] = g.region(result, first, first + mine.size());
          }
          fields["first_row"] = u(row);
          fields["rows"] = u(count);
          g.add_vertex(reduce, "reduce_rows_apart_f32", geo.consumer(r.i, r.j, r.l), fields);
        }
    }
  }
}

}  // namespace

namespace {

// C = A B, or C[g] = A[g] B[g] for each of the groups (grouped: three-dimensional operands, each
// group on its own equal share of the tiles, all groups' phases side by side).
Tensor products(Graph& g, Program& program, Tensor a, Tensor b, bool grouped,
                const MatmulOptions& options, const MatmulPlan* given_plan) {
  if (program.kind != Program::Kind::kSequence)
    throw GraphError(fmt::format("{}: the program to append to must be a Sequence", options.name));
  const size_t dims = grouped ? 3 : 2;
  // Copies: adding tensors below moves the graph's own.
  const TensorInfo ai = check_operand(g, a, "A", options, dims);
  const TensorInfo bi = check_operand(g, b, "B", options, dims);
  const size_t groups = grouped ? ai.shape[0] : 1;
  if (grouped && bi.shape[0] != groups)
    throw GraphError(fmt::format("{}: A '{}' has {} groups and B '{}' {}", options.name, ai.name,
                                 groups, bi.name, bi.shape[0]));
  const size_t a0 = ai.shape[dims - 2], a1 = ai.shape[dims - 1];
  const size_t b0 = bi.shape[dims - 2], b1 = bi.shape[dims - 1];
  const size_t m = options.transpose_a ? a1 : a0, k = options.transpose_a ? a0 : a1;
  const size_t kb = options.transpose_b ? b1 : b0, n = options.transpose_b ? b0 : b1;
  if (k != kb)
    throw GraphError(
        fmt::format("{}: A '{}' {}[{} x {}] and B '{}' {}[{} x {}] do not agree in K ({} and {})",
                    options.name, ai.name, options.transpose_a ? "transposed " : "", a0, a1,
                    bi.name, options.transpose_b ? "transposed " : "", b0, b1, k, kb));
  const MatmulShape shape{m, k, n};
  // Each group gets an equal share of the tiles; its plan is the first group's, moved.
  const MatmulPlan p = [&] {
    if (given_plan) return *given_plan;
    const OperandLayout layout = layout_of(g, a, b);  // planned for the operands as they lie
    return grouped ? plan_grouped_matmul(g.target(), shape, groups, options, nullptr, &layout)
                   : plan_matmul(g.target(), shape, options, nullptr, &layout);
  }();
  if (p.shape.m != m || p.shape.k != k || p.shape.n != n)
    throw GraphError(fmt::format("{}: the plan is for {} x {} x {}, the operands {} x {} x {}",
                                 options.name, p.shape.m, p.shape.k, p.shape.n, m, k, n));
  if (grouped && p.serial > 1)
    throw GraphError(fmt::format("{}: a grouped product takes no serial plan ({} slices of N)",
                                 options.name, p.serial));
  // The products to build: each group's on its own tiles, or each of a serial plan's slices of
  // N, one after another on the same tiles. Each with its operands' and C's first elements.
  struct Unit {
    MatmulPlan plan;
    size_t a_base, b_base, c_base;
    std::string name;
  };
  std::vector<Unit> units;
  const MatmulOptions& o = p.options;
  if (p.serial > 1) {
    const size_t w = p.slice_width();
    for (unsigned i = 0; i < p.serial; ++i)
      units.push_back({p.slice(i), 0, options.transpose_b ? i * w * b1 : i * w, i * w,
                       fmt::format("{}.s{}", o.name, i)});
  } else {
    for (size_t group = 0; group < groups; ++group) {
      MatmulPlan mine = p;
      mine.options.first_tile =
          p.options.first_tile + static_cast<unsigned>(group) * p.options.tiles;
      units.push_back({mine, group * a0 * a1, group * b0 * b1, group * m * n,
                       grouped ? fmt::format("{}.g{}", o.name, group) : o.name});
    }
  }
  add_matmul_codelets(g);

  // Whether f16 can move as words or must widen to f32 first.
  ProductOperands x{a, b, 0, 0, a1, b1, DType::kF16, DType::kF16};
  bool widen[2] = {false, false};  // A, B
  for (const Unit& u : units) {
    x.a_base = u.a_base;
    x.b_base = u.b_base;
    for (const PackItem& it : pack_items(u.plan))
      if (!words_align(it.lhs ? ai : bi, operand_runs(u.plan, it, item_shape(u.plan, it), x)))
        widen[it.lhs ? 0 : 1] = true;
  }
  Tensor source[2] = {a, b};
  if (widen[0] || widen[1]) {
    const ComputeSet cs = g.add_compute_set(o.name + ".widen");
    for (int w = 0; w < 2; ++w) {
      if (!widen[w]) continue;
      const TensorInfo& from = w ? bi : ai;
      const Tensor wide = g.add_variable(DType::kF32, from.shape, o.name + (w ? ".b32" : ".a32"));
      g.set_tile_mapping(wide, from.mapping);
      g.set_scratch(wide);
      for (const Interval& piece : from.mapping)
        for (unsigned worker = 0; worker < 6; ++worker) {
          const Range r = part(piece.end - piece.begin, 6, worker);
          if (r.size() == 0) continue;
          const size_t lo = piece.begin + r.begin, hi = piece.begin + r.end;
          g.add_vertex(cs, "cast_f16_f32", piece.tile,
                       {{"in", g.region(source[w], lo, hi)},
                        {"out", g.region(wide, lo, hi)},
                        {"n", static_cast<uint32_t>(hi - lo)}});
        }
      source[w] = wide;
    }
    program.body.push_back(Execute(cs));
  }
  x.a = source[0];
  x.b = source[1];
  x.staged_a = widen[0] ? DType::kF32 : DType::kF16;
  x.staged_b = widen[1] ? DType::kF32 : DType::kF16;

  const Tensor result = g.add_variable(
      DType::kF32, grouped ? std::vector<size_t>{groups, m, n} : std::vector<size_t>{m, n},
      o.name + ".c");
  std::vector<Interval> mapping;
  for (const Unit& u : units) {
    const auto pieces = result_mapping(u.plan, u.c_base, n);
    mapping.insert(mapping.end(), pieces.begin(), pieces.end());
  }
  std::sort(mapping.begin(), mapping.end(),
            [](const Interval& i, const Interval& j) { return i.begin < j.begin; });
  g.set_tile_mapping(result, mapping);
  // A group's phases are shared by every group; a serial plan's slices run one after another,
  // each its own phases, so that each slice's buffers are scratch the next one reuses.
  Phases phases = start_phases(g, p.serial > 1 ? units.front().name : o.name);
  for (size_t i = 0; i < units.size(); ++i) {
    if (p.serial > 1 && i > 0) {
      finish_phases(g, program, phases);
      phases = start_phases(g, units[i].name);
    }
    x.a_base = units[i].a_base;
    x.b_base = units[i].b_base;
    build_product(g, units[i].plan, x, result, units[i].c_base, n, units[i].name, phases);
  }
  finish_phases(g, program, phases);
  Tensor out = result;
  if (options.rows_output) {
    // Each row whole on one tile, the rows spread evenly over the product's tiles; rows too
    // large for that cut into slices (map_rows).
    const unsigned first = options.first_tile,
                   tiles = options.tiles == 0 ? g.tiles() - first : options.tiles;
    out = g.add_variable(DType::kF32, g.tensor(result).shape, o.name + ".rows");
    if (options.row_blocks)
      map_row_blocks(g, out, first, tiles);
    else
      map_rows(g, out, first, tiles);
    program.body.push_back(Copy(relayout(g, result, out)));
    g.set_scratch(result);
  }
  if (options.output == DType::kF16) {
    const Tensor wide = out;
    out = cast(g, program, wide, DType::kF16, o.name + ".c16");
    g.set_scratch(wide);
  }
  return out;
}

}  // namespace

Tensor matmul(Graph& g, Program& program, Tensor a, Tensor b, const MatmulOptions& options,
              const MatmulPlan* plan) {
  return products(g, program, a, b, false, options, plan);
}

Tensor grouped_matmul(Graph& g, Program& program, Tensor a, Tensor b, const MatmulOptions& options,
                      const MatmulPlan* plan) {
  return products(g, program, a, b, true, options, plan);
}

float matmul_reference_at(const MatmulPlan& p, const std::vector<uint16_t>& a,
                          const std::vector<uint16_t>& b, size_t row, size_t column) {
  const MatmulShape& s = p.shape;
  auto wide = [](uint16_t h) {
    const uint32_t sign = (h & 0x8000u) << 16, exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
    float f;
    if (exponent == 0) {
      f = std::ldexp(static_cast<float>(mantissa), -24);
      return sign ? -f : f;
    }
    const uint32_t bits = exponent == 31 ? sign | 0x7f800000u | (mantissa << 13)
                                         : sign | ((exponent + 112) << 23) | (mantissa << 13);
    std::memcpy(&f, &bits, 4);
    return f;
  };
  auto av = [&](size_t k) {
    return wide(p.options.transpose_a ? a[k * s.m + row] : a[row * s.k + k]);
  };
  auto bv = [&](size_t k) {
    return wide(p.options.transpose_b ? b[column * s.k + k] : b[k * s.n + column]);
  };
  const Geometry geo{p};
  float total = 0;
  for (unsigned l = 0; l < p.pk; ++l) {
    const Range passes = geo.passes(l);
    float slice = 0;
    for (size_t q = passes.begin; q < passes.end; ++q) {
      float acc = 0;
      for (size_t k = 16 * q; k < std::min(16 * q + 16, s.k); ++k)
        acc = std::fma(av(k), bv(k), acc);
      slice = q == passes.begin ? acc : slice + acc;
    }
    total = l == 0 ? slice : total + slice;
  }
  return total;
}

std::vector<float> matmul_reference(const MatmulPlan& p, const std::vector<uint16_t>& a,
                                    const std::vector<uint16_t>& b) {
  std::vector<float> c(p.shape.m * p.shape.n);
  for (size_t r = 0; r < p.shape.m; ++r)
    for (size_t col = 0; col < p.shape.n; ++col)
      c[r * p.shape.n + col] = matmul_reference_at(p, a, b, r, col);
  return c;
}

}  // namespace ipu::sdk::ops
