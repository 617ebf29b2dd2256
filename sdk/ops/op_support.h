// Helpers the operator library's elementwise, row and training operations share: operand
// checks that name the operation and the tensor, layouts (whole rows, a tensor laid out as
// another, a vector on every tile) and the split of a tile's work over six vertices. Internal:
// not part of the installed API.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "sdk/graph/graph.h"

namespace ipu::sdk::ops {

uint32_t bits_of(float f);  // an f32 as a scalar field carries it
uint32_t u32(size_t x);

// Declares the codelets of firmware/codelets/ops_elementwise.c and ops_training.c (once a graph).
void add_ops_codelets(Graph& g);

// ---- checks: each throws GraphError naming the operation `op` and the tensor ----
void require_sequence(const Program& program, const std::string& op);
const TensorInfo& mapped(const Graph& g, Tensor t, const std::string& op, const char* which);
void require_type(const TensorInfo& t, DType type, const std::string& op, const char* which);
void require_rows(const TensorInfo& t, const std::string& op);     // two or more dimensions
void require_matrix(const TensorInfo& t, const std::string& op);   // exactly two
void require_indices(const TensorInfo& t, const std::string& op);  // a u32 vector
// A backward pass's operands: an f32 tensor of rows and its gradient of the same shape.
void matrix_and_gradient(const Graph& g, Tensor t, Tensor dy, const std::string& op,
                         const char* which);

// ---- layouts ----
bool same_mapping(const std::vector<Interval>& a, const std::vector<Interval>& b);
// A row operation's f32 operand (two or more dimensions) checked, and laid out by whole rows.
Tensor f32_rows(Graph& g, Program& program, Tensor x, const std::string& op);
// A tensor laid out as `like` (a copy by exchange when it is not already: scratch, for the
// operation that asks alone).
Tensor laid_like(Graph& g, Program& program, Tensor t, const TensorInfo& like_info,
                 const std::string& name);
// One copy of `v` (a vector) on each listed tile: [tiles x n], filled by a multicast of v.
Tensor replicate(Graph& g, Program& program, Tensor v, const std::vector<unsigned>& tiles,
                 const std::string& name);
std::vector<unsigned> tiles_of(const TensorInfo& t);  // in the order of its pieces
// A vector of n elements beside each of `tiles`: v's own copies when v is copies_on_tiles' kind
// ([R x n], each listed tile holding a whole row), else a replicate of it. `at[i]`: the first
// element of tiles[i]'s copy.
struct LocalCopies {
  Tensor tensor;
  std::vector<size_t> at;
};
LocalCopies local_copies(Graph& g, Program& program, Tensor v, size_t n,
                         const std::vector<unsigned>& tiles, const std::string& name);
// x with whole rows on tiles: x itself when every row lies on one tile, else a copy.
Tensor whole_rows(Graph& g, Program& program, Tensor x, const std::string& name);
// Where a new tensor made from t goes: from t's lowest tile to the end of that tile's chip, so
// that an operation of one pipeline stage stays on its chip. {first tile, tiles}.
std::pair<unsigned, unsigned> own_chip_from(const Graph& g, const TensorInfo& t);
// A vector per row: [R], each element on its row's tile.
Tensor row_vector(Graph& g, const TensorInfo& rows_laid, const std::string& name);
// A tensor [rows x columns] laid out by whole rows as `like` ([rows x other]) is.
Tensor rows_like(Graph& g, const TensorInfo& like, size_t columns, const std::string& name);
// A matrix laid out in row slices: each tile's pieces within one row, every row cut at the same
// columns into two or more pieces. starts: the pieces' first columns (from 0); tiles: row r's
// piece p on tiles[r * starts.size() + p]. Empty when t is not laid out so.
struct RowCuts {
  std::vector<size_t> starts;
  std::vector<unsigned> tiles;
};
RowCuts row_cuts(const TensorInfo& t);
// A row operation's [R x C] f32 result on tiles first .. first + tiles - 1: whole rows spread
// evenly, unless there are at least two tiles a row and a row takes more than kSliceRowBytes,
// or there are kSliceRowsTiles tiles a row or more: then each row is cut into up to tiles / R
// slices (of whole f32 pairs, kMinSliceColumns or more), a tile each. BERT-Large's logits are
// 160 rows of 30,522 words: 122 KB a row on 160 tiles, or 13.6 KB on 1,440. Its heads' other
// products have 160 rows of 1,024, whose pieces (a column or two each, where K is large and N
// small) the relayout would gather to 160 tiles: 1,152 receives on one; in 9 slices, 128.
constexpr size_t kSliceRowBytes = 32768;
constexpr size_t kSliceRowsTiles = 8;
constexpr size_t kMinSliceColumns = 64;
void map_rows(Graph& g, Tensor t, unsigned first, unsigned tiles);
// [R x C] in row blocks: with fewer rows than tiles, every row cut at the same columns into up to
// kMostRowBlockSlices slices (of whole f32 pairs, kMinSliceColumns or more), slice s of row r on
// tile first + s x B + floor(r B / R), B = tiles / slices blocks of neighbouring rows, as many
// slices as leave a tile the fewest elements: every tile busy (1,024 rows of BERT-Large's
// feed-forward 4,096 on 1,472 tiles: 4 slices, 3,072 elements a tile where whole rows left 448
// tiles idle), and a block's rows of a slice on one tile, so that a column sum adds them there
// first (reduce_columns). map_rows when no cut saves a tile's elements.
constexpr size_t kMostRowBlockSlices = 8;
void map_row_blocks(Graph& g, Tensor t, unsigned first, unsigned tiles);

// ---- sums across tiles ----
// The column sums of `rows` (regions of `columns` f32 each, on any tiles), by a tree of
// kPartialFanIn rows a group (sdk/ops/partials.cpp): added in order within a group, then the
// groups' sums in order, and so on (reference::sum_partials). Returns [columns], spread over the
// last level's tiles.
Tensor sum_partials(Graph& g, Program& program, std::vector<Region> rows, size_t columns,
                    const std::string& name);
// Several such sums side by side, each level's exchange and compute set shared: problem p's
// rows (regions of columns[p] f32, the same count for every problem) into elements offset[p] ..
// offset[p] + columns[p] - 1 of the result, [total].
struct PartialSums {
  std::vector<Region> rows;
  size_t columns, offset;
};
Tensor sum_partials(Graph& g, Program& program, std::vector<PartialSums> problems, size_t total,
                    const std::string& name);
// The most rows of a slice a tile's partial adds at once (sum_pieces_in_order_f32's inputs).
constexpr size_t kSumPieces = 8;

// ---- a tile's work over six vertices ----
// Six ranges of an interval, each at least `grain` elements apart (f16 pieces start on words).
std::vector<std::pair<size_t, size_t>> six_ranges(const Interval& m, size_t grain = 1);
// The ranges a tensor's elementwise work is split into, one vertex each: six of each piece when
// its tile holds fewer than six pieces of the tensor, else each piece whole (a product's result
// holds a row's share of columns for each of its rows, a hundred pieces a tile: six vertices
// a piece would cost more vertex state than the data).
class WorkSplit {
 public:
  explicit WorkSplit(const TensorInfo& t);
  std::vector<std::pair<size_t, size_t>> ranges(const Interval& m, size_t grain = 1) const;

 private:
  std::map<unsigned, size_t> pieces_;  // by tile
};
// Six ranges of the whole rows of each interval of a rows-laid tensor.
struct RowRange {
  unsigned tile;
  size_t first, rows;
};
std::vector<RowRange> row_ranges(const TensorInfo& t);

// The PRNG state of a random range starting at element `first` (dropout, stochastic rounding):
// splitmix64 of the seed and the element, twice (never all zero).
std::pair<uint64_t, uint64_t> dropout_state(uint64_t seed, size_t first);

}  // namespace ipu::sdk::ops
