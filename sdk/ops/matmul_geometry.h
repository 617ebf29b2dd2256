// The planned matmul's geometry and cost figures, which its planner (matmul_plan.cpp) and its
// graph building (matmul.cpp) share: how a plan cuts the product into blocks, packing items and
// AMP work, and the cost model's measured figures. Internal: not part of the installed API.
#pragma once

#include <algorithm>
#include <cmath>
#include <functional>
#include <queue>
#include <utility>
#include <vector>

#include "firmware/include/ipu_program.h"
#include "iss/isa.h"
#include "sdk/compiler/compiler.h"
#include "sdk/compiler/exchange_schedule.h"
#include "sdk/ops/matmul.h"

namespace ipu::sdk::ops::detail {

// Part i of n items split into `parts` nearly equal contiguous parts.
struct Range {
  size_t begin = 0, end = 0;
  size_t size() const { return end - begin; }
};
inline Range part(size_t n, unsigned parts, unsigned i) {
  return {n * i / parts, n * (i + 1) / parts};
}

// The cost model's figures (docs/ops.md says where each comes from).
// Exchange: a tile receives one word a cycle, and its actions are at least the runtime's gap
// apart (action_gap, from firmware/include/ipu_program.h): a receive's or a send's, by the
// later one's kind.
inline const double kReceiveGap = action_gap(IPU_ACTION_RECEIVE, ScheduleMargins::of({}));
inline const double kSendGap = action_gap(IPU_ACTION_SEND, ScheduleMargins::of({}));
// An exchange action's entry in its tile's table (firmware/include/ipu_program.h), the end word
// after each phase's on a tile, and the three words after a program's last end word (counted
// with each product).
constexpr double kActionBytes = sizeof(ipu_action);
constexpr uint64_t kPhaseEndBytes = 4, kTableTailBytes = 12;
// A step of the program beyond its exchange's schedule or its compute set's vertices: its sync
// and the runtime's dispatch (bench/matmul_planned: 4306 cycles over the 7 steps of every
// case with pk > 1, whatever the shape).
constexpr double kStepCycles = 615;
// Compute, in worker instructions (a worker issues one every 6 cycles; six run side by side),
// fitted to the codelets' instructions a run as bench/matmul_planned's verbose profile counts
// them on three shapes: a vertex's entry and exit, then per packed element; per AMP (group,
// pass), four weight loads (ipu.ampw's issue slots from the instruction table) and the set-up,
// and per column 4 ipu.amp and the loop; the reduction's below.
// Packing moves neighbouring f16 by ipu.ld128 and ipu.st64 where the stored operand has them
// (A's k-values, B^T's k-values: ten issues for 16 elements, about one an element with the rows'
// and edges' set-ups, where as words it took 1.6), two columns' k-values a pair of words down
// the columns of B, and two rows' a word for each k of A^T.
constexpr double kPackVertex = 40, kPackWordsElement = 1.0, kPackPairedElement = 2.3,
                 kPackStridedElement = 2.1;
// A's rows as stored (pack_rows_wide, counted from its compiled loops): per row its set-up, per
// four blocks two ipu.ld128, four ipu.st64 and the loop's five, per block left one ipu.ld64, one
// ipu.st64 and four.
constexpr double kPackRow = 8, kPackRowQuad = 11, kPackRowBlock = 6;
constexpr double kAmpVertex = 70, kAmpColumn = 4.13;
inline const double kAmpPass = 4.0 * iss::spec_of(iss::Op::ipu_ampw)->issue_slots + 14;
// Up to kReduceQuadParts parts, four rows at a time (one ipu.ld128 a part and column): per quad
// of rows and its parts' pointers, per column and per column and part (four columns a round;
// up to kReduceUnrolledParts parts unrolled, more with a test a part and pointers that spill).
// Beyond, two rows at a time, a part at a time in a loop.
constexpr double kReduceQuad = 37, kReduceQuadPart = 24;
constexpr double kReduceQuadColumn = 3.8, kReduceQuadColumnPart = 3.4,
                 kReduceQuadColumnPartTested = 4.5;
constexpr unsigned kReduceUnrolledParts = 8;              // reduce_quads_any's last unrolled case
constexpr unsigned kReduceQuadParts = 16;                 // REDUCE_MOST_PARTS
constexpr double kReducePair = 60, kReducePairPart = 10;  // 2 rows
constexpr double kReduceColumnPartLooped = 7.1;
constexpr size_t kReduceApartRows = 8;  // REDUCE_APART_ROWS: rows a reduce_rows_apart_f32
// The rows a reduce_rows_apart_f32 takes of a reducer's `rows` (rows apart in C): as many as
// share them evenly among six workers, a multiple of 4 (four neighbouring rows are one load of
// each part), 4 or 8.
inline size_t reduce_apart_rows_a_vertex(size_t rows) {
  return std::clamp<size_t>((rows + 23) / 24 * 4, 4, kReduceApartRows);
}
// A reduce_rows_apart_f32 vertex's instructions: `rows` of `columns` over `parts` parts.
inline double reduce_apart_vertex_instructions(double rows, double columns, unsigned parts) {
  if (parts > kReduceQuadParts)
    return std::ceil(rows / 2) *
           (kReducePair + parts * kReducePairPart + columns * parts * kReduceColumnPartLooped);
  return std::ceil(rows / 4) *
         (kReduceQuad + parts * kReduceQuadPart +
          columns * (kReduceQuadColumn + parts * (parts <= kReduceUnrolledParts
                                                      ? kReduceQuadColumnPart
                                                      : kReduceQuadColumnPartTested)));
}
// How many parts of its columns each such vertex's rows take (a reducer's `row_vertices` of
// `rows_a_vertex` rows each), so that the six workers share the work: the fewest that take the
// least time in waves of six vertices, each vertex's set-up counted (a reducer of 16 rows, four
// vertices of 4, left two workers idle; in three parts of the columns, twelve vertices).
inline size_t reduce_apart_column_parts(size_t row_vertices, size_t rows_a_vertex, size_t columns,
                                        unsigned parts) {
  const auto time = [&](size_t cp) {
    return static_cast<double>((row_vertices * cp + 5) / 6) *
           reduce_apart_vertex_instructions(static_cast<double>(rows_a_vertex),
                                            std::ceil(static_cast<double>(columns) / cp), parts);
  };
  size_t best = 1;
  for (size_t cp = 2; cp <= 6 && cp <= columns; ++cp)
    if (time(cp) < time(best) - 1e-9) best = cp;
  return best;
}
// The supervisor starting a compute set's first six vertices one after another.
constexpr double kDispatchCycles = 510;

// B^T's packing items take at most this many passes of a slice, and A's as many where the plan
// says (MatmulPlan::a_item_passes): a slice a block whole was one tile's packing of up to 32k
// elements (B^T's alone took 42k cycles of the 1024 x 1024 x 4096 input gradient's 238k; A's
// 16 rows of a 256-k slice made its forward pass's 256 tiles with an item of each operand pack
// twice as long as the rest) while most tiles packed little.
constexpr unsigned kItemPasses = 8;

// The geometry of one plan: which rows, columns and passes each block covers.
struct Geometry {
  const MatmulPlan& p;
  Range groups(unsigned i) const { return part(p.row_groups, p.pm, i); }
  Range rows(unsigned i) const { return rows_of(groups(i)); }
  // Column blocks start at even columns, so a block's f16 pieces are whole words.
  Range columns(unsigned j) const {
    const Range pairs = part((p.shape.n + 1) / 2, p.pn, j);
    return {2 * pairs.begin, std::min<size_t>(2 * pairs.end, p.shape.n)};
  }
  Range passes(unsigned l) const { return part(p.passes, p.pk, l); }
  Range ks(unsigned l) const { return ks_of(passes(l)); }
  Range ks_of(Range q) const { return {16 * q.begin, std::min<size_t>(16 * q.end, p.shape.k)}; }
  // Piece h of slice l's passes as A's (lhs) or B^T's packing items take them: B^T's
  // kItemPasses each, A's the plan's a_item_passes (0: the slice whole).
  Range piece_passes(bool lhs, unsigned l, unsigned h) const;
  unsigned pieces(bool lhs, unsigned l) const;
  unsigned slice_pieces(bool lhs) const;  // over all slices
  size_t item_passes(bool lhs, unsigned l) const {
    if (!lhs) return kItemPasses;
    return p.a_item_passes > 0 ? p.a_item_passes : std::max<size_t>(passes(l).size(), 1);
  }
  // What reducer c of block (i, j)'s pk tiles sums: group part c / (pk / reduce_groups) of the
  // block's groups (of A's row groups) and column part c % (pk / reduce_groups) of its columns.
  struct Share {
    Range groups, columns;
  };
  Share reduce_share(unsigned i, unsigned j, unsigned c) const {
    const unsigned column_parts = p.pk / p.reduce_groups;
    const Range g = groups(i), block = columns(j);
    const Range gs = part(g.size(), p.reduce_groups, c / column_parts);
    const Range cs = part(block.size(), column_parts, c % column_parts);
    return {{g.begin + gs.begin, g.begin + gs.end}, {block.begin + cs.begin, block.begin + cs.end}};
  }
  Range rows_of(Range group_range) const {
    return {16 * group_range.begin, std::min<size_t>(16 * group_range.end, p.shape.m)};
  }
  unsigned consumer(unsigned i, unsigned j, unsigned l) const {
    return p.options.first_tile + (i * p.pn + j) * p.pk + l;
  }
};

inline unsigned Geometry::pieces(bool lhs, unsigned l) const {
  const size_t per = item_passes(lhs, l);
  return static_cast<unsigned>((passes(l).size() + per - 1) / per);
}
inline unsigned Geometry::slice_pieces(bool lhs) const {
  unsigned n = 0;
  for (unsigned l = 0; l < p.pk; ++l) n += pieces(lhs, l);
  return n;
}
inline Range Geometry::piece_passes(bool lhs, unsigned l, unsigned h) const {
  const Range q = passes(l);
  const size_t per = item_passes(lhs, l);
  const size_t begin = q.begin + h * per;
  return {begin, std::min<size_t>(begin + per, q.end)};
}

// The packing work: an item packs one piece of A or B on one tile (a "packer") after gathering
// it in rows of the operand as stored.
struct PackItem {
  bool lhs;
  unsigned x, y;   // A: (group, slice) or, transposed, (pass, block); B: (pass, block) or,
                   // transposed, (block, slice)
  unsigned z = 0;  // A, B^T: the piece of the slice's passes
};

inline std::vector<PackItem> pack_items(const MatmulPlan& p) {
  std::vector<PackItem> items;
  if (!p.options.transpose_a) {
    for (unsigned g = 0; g < p.row_groups; ++g)
      for (unsigned l = 0; l < p.pk; ++l)
        for (unsigned h = 0; h < Geometry{p}.pieces(true, l); ++h) items.push_back({true, g, l, h});
  } else {
    for (unsigned q = 0; q < p.passes; ++q)
      for (unsigned i = 0; i < p.pm; ++i)
        if (Geometry{p}.groups(i).size() > 0) items.push_back({true, q, i});
  }
  if (!p.options.transpose_b) {
    for (unsigned q = 0; q < p.passes; ++q)
      for (unsigned j = 0; j < p.pn; ++j)
        if (Geometry{p}.columns(j).size() > 0) items.push_back({false, q, j});
  } else {
    for (unsigned j = 0; j < p.pn; ++j)
      for (unsigned l = 0; l < p.pk; ++l)
        if (Geometry{p}.columns(j).size() > 0)
          for (unsigned h = 0; h < Geometry{p}.pieces(false, l); ++h)
            items.push_back({false, j, l, h});
  }
  return items;
}

// One packing item's shape: the operand rows it gathers (runs of the stored matrix), its
// staging block (rows x row_stride elements) and its packed output (elements).
struct ItemShape {
  size_t first_row, rows;        // rows of the stored operand
  size_t first_column, columns;  // the part of each row gathered
  size_t row_stride;             // in the staging block (a multiple of 4: 8-byte f16 rows)
  size_t packed;                 // f16 elements out
};

inline ItemShape item_shape(const MatmulPlan& p, const PackItem& it) {
  const Geometry geo{p};
  const MatmulShape& s = p.shape;
  ItemShape out{};
  if (it.lhs && !p.options.transpose_a) {  // A [M,K]: rows of group x, the k of piece z of slice y
    const Range q = geo.piece_passes(it.lhs, it.y, it.z);
    const Range k = geo.ks_of(q);
    out.first_row = 16 * size_t{it.x};
    out.rows = std::min<size_t>(16, s.m - out.first_row);
    out.first_column = k.begin;
    out.columns = k.size();
    out.packed = q.size() * 256;
  } else if (it.lhs) {  // A^T [K,M]: the 16 k-rows of pass x, the m of block y
    const Range r = geo.rows(it.y);
    out.first_row = 16 * size_t{it.x};
    out.rows = std::min<size_t>(16, s.k - out.first_row);
    out.first_column = r.begin;
    out.columns = r.size();
    out.packed = geo.groups(it.y).size() * 256;
  } else if (!p.options.transpose_b) {  // B [K,N]: the 16 k-rows of pass x, columns of block y
    const Range c = geo.columns(it.y);
    out.first_row = 16 * size_t{it.x};
    out.rows = std::min<size_t>(16, s.k - out.first_row);
    out.first_column = c.begin;
    out.columns = c.size();
    out.packed = c.size() * 16;
  } else {  // B^T [N,K]: the rows of block x's columns, the k of piece z of slice y
    const Range c = geo.columns(it.x);
    const Range q = geo.piece_passes(it.lhs, it.y, it.z);
    const Range k = geo.ks_of(q);
    out.first_row = c.begin;
    out.rows = c.size();
    out.first_column = k.begin;
    out.columns = k.size();
    out.packed = q.size() * c.size() * 16;
  }
  // A multiple of 4 elements: f16 rows on 8-byte boundaries, which the packing's wide moves
  // take (firmware/codelets/matmul_planned.c).
  out.row_stride = (out.columns + 3) & ~size_t{3};
  return out;
}

// A packing vertex's instructions an element: k-values side by side in the stored operand (A,
// B^T) move as wide words, A^T two rows a word, B two columns a pair of words.
inline double pack_element_instructions(const MatmulPlan& p, bool lhs) {
  const bool words = lhs ? !p.options.transpose_a : p.options.transpose_b;
  return words ? kPackWordsElement : lhs ? kPackStridedElement : kPackPairedElement;
}

// A packing vertex of A as stored: `lanes` rows of each of `blocks` blocks.
inline double pack_rows_instructions(size_t lanes, size_t blocks) {
  return kPackVertex +
         static_cast<double>(lanes) * (kPackRow + static_cast<double>(blocks / 4) * kPackRowQuad +
                                       static_cast<double>(blocks % 4) * kPackRowBlock);
}

// How the six vertices of an item of A as stored share its 16 rows and its blocks: the rows in
// lane_parts parts (1, 2, 3 or 6) and the blocks in 6 / lane_parts, whichever leaves the
// busiest vertex least. A row's set-up and its last blocks are paid by each vertex that packs
// the row: a piece of 32 blocks takes 6 blocks of 16 rows a vertex (536 instructions) by blocks,
// 3 rows of 32 blocks (328) by rows.
struct WeightsSplit {
  unsigned lane_parts = 1;
  unsigned block_parts() const { return 6 / lane_parts; }
  size_t most_lanes() const { return (16 + lane_parts - 1) / lane_parts; }
  size_t most_blocks(size_t blocks) const { return (blocks + block_parts() - 1) / block_parts(); }
};
inline WeightsSplit weights_split(size_t blocks) {
  WeightsSplit best;
  const auto cost = [&](const WeightsSplit& w) {
    return pack_rows_instructions(w.most_lanes(), w.most_blocks(blocks));
  };
  for (const unsigned lanes : {2u, 3u, 6u})
    if (cost(WeightsSplit{lanes}) < cost(best)) best = WeightsSplit{lanes};
  return best;
}

// Whether an item is A as stored, whose vertices share rows and blocks (weights_split); any
// other item's vertices each take a sixth of its units: blocks of 64 (A^T) or columns of 16.
inline bool packs_rows(const MatmulPlan& p, const PackItem& it) {
  return it.lhs && !p.options.transpose_a;
}

// The busiest of an item's six packing vertices, in instructions.
inline double pack_vertex_instructions(const MatmulPlan& p, const PackItem& it,
                                       const ItemShape& s) {
  if (packs_rows(p, it)) {
    const size_t blocks = s.packed / 64;
    const WeightsSplit w = weights_split(blocks);
    return pack_rows_instructions(w.most_lanes(), w.most_blocks(blocks));
  }
  const double unit = it.lhs ? 64 : 16;
  return kPackVertex + std::ceil(s.packed / unit / 6) * unit * pack_element_instructions(p, it.lhs);
}

// A packing item's work on its packer, in cycles: its rows' receives and words, its six
// vertices (a worker issues once in six cycles), its piece's send. Only to balance the packers
// (packer_tiles).
inline double pack_item_cycles(const MatmulPlan& p, const PackItem& it, const ItemShape& s) {
  return static_cast<double>(s.rows) * (kReceiveGap + std::ceil(s.columns / 2.0)) +
         6 * pack_vertex_instructions(p, it, s) + std::max(kSendGap, s.packed / 2.0);
}

// Each item's packer: the longest items first, each on the tile with the least packing so far
// (the lowest such tile). Item i on tile i mod tiles gave 1024 x 1024 x 4096's first 256 tiles
// one of A's items and one of B's each, twice the others' packing.
inline std::vector<unsigned> packer_tiles(const MatmulPlan& p, const std::vector<PackItem>& items) {
  std::vector<double> work(items.size());
  for (size_t i = 0; i < items.size(); ++i)
    work[i] = pack_item_cycles(p, items[i], item_shape(p, items[i]));
  std::vector<size_t> order(items.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t x, size_t y) { return work[x] > work[y]; });
  using Load = std::pair<double, unsigned>;  // (packing so far, tile): least first
  std::priority_queue<Load, std::vector<Load>, std::greater<Load>> least;
  for (unsigned t = 0; t < p.tiles(); ++t) least.push({0.0, t});
  std::vector<unsigned> tiles(items.size());
  for (const size_t i : order) {
    const auto [load, t] = least.top();
    least.pop();
    tiles[i] = p.options.first_tile + t;
    least.push({load + work[i], t});
  }
  return tiles;
}

// How a tile's six AMP vertices share its block of gm row groups x nb columns: the groups in
// gs parts and the columns in 6 / gs, so that a worker's (group, pass) set-ups and weight loads
// (kAmpPass) weigh least against its columns (kAmpColumn each).
struct AmpSplit {
  size_t group_parts, column_parts;
  double worker_instructions(size_t gm, size_t pp, size_t nb) const {
    const double groups = std::ceil(static_cast<double>(gm) / group_parts);
    const double columns = std::ceil(static_cast<double>(nb) / column_parts);
    return kAmpVertex + groups * pp * (kAmpPass + columns * kAmpColumn);
  }
};
inline AmpSplit amp_split(size_t gm, size_t pp, size_t nb) {
  AmpSplit best{1, 6};
  for (const AmpSplit candidate : {AmpSplit{2, 3}, AmpSplit{3, 2}, AmpSplit{6, 1}})
    if (candidate.group_parts <= gm &&
        candidate.worker_instructions(gm, pp, nb) < best.worker_instructions(gm, pp, nb))
      best = candidate;
  return best;
}

// Throws GraphError for an empty shape, a budget outside (0, 1], a result type other than f32
// and f16, or tiles the target lacks.
void check_options(const Target& target, MatmulShape shape, const MatmulOptions& o);

// Where each row of an operand, as stored, lies: its pieces (first and end column, tile), for
// the cost model to count the gather's actions from the operands as they lie (OperandLayout;
// a grouped product's first group, whose tiles the others' repeat).
struct RowPiece {
  size_t begin, end;
  unsigned tile;
};
struct OperandRows {
  std::vector<std::vector<RowPiece>> a, b;  // by stored row
  unsigned first = 0, end = 0;              // the tiles the pieces lie on: first .. end - 1
};
// From a layout of operands whose stored rows are a_row and b_row elements long.
OperandRows operand_rows(const OperandLayout& layout, size_t a_rows, size_t a_row, size_t b_rows,
                         size_t b_row);

// The plan's estimate and its largest tile's bytes (matmul_plan.cpp); the gather counted from
// `rows` where given, else as create_matmul_input lays the operands out.
void estimate(MatmulPlan& p, size_t operand_bytes, const OperandRows* rows = nullptr);

}  // namespace ipu::sdk::ops::detail
