// The planned matrix product on the AMP (docs/ops.md): C [M x N] = A [M x K] x B [K x N] across
// the tiles of a graph, as poplin's matMul does for the IPU.
//
// A planner splits the product into pm x pn x pk blocks, one a tile: pm groups of 16-row blocks
// of A, pn column blocks of B, pk slices of the K passes (16 k-values each). Each tile gathers
// its blocks of A and B by exchange, packs them into the AMP's layouts (weights 16 rows x 4 a
// phase, the stream 16 k-values a column), multiplies on the AMP, and, with pk > 1, the pk
// tiles of a block exchange their f32 partial sums so that each reduces a share of the
// block's columns. A cost model of those phases (exchange, pack, AMP, reduction) and of each
// tile's memory picks the split; every candidate can be printed with its estimate.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "sdk/graph/graph.h"

namespace ipu::sdk::ops {

struct MatmulOptions {
  // A is given transposed (a tensor [K x M]) / B is given transposed ([N x K]): the backward
  // passes' products (dA = dC B^T, dB = A^T dC) without the caller moving data.
  bool transpose_a = false, transpose_b = false;
  // The share of each tile's memory the product's tensors may take (poplin's
  // availableMemoryProportion), from 0 (exclusive) to 1.
  double available_memory_proportion = 0.6;
  // The tiles the product may use: first_tile .. first_tile + tiles - 1 (0: every tile of the
  // graph from first_tile).
  unsigned first_tile = 0, tiles = 0;
  // Prefix of the tensors, compute sets and errors of this product.
  std::string name = "matmul";
  // The result's type: f32, or f16 (the f32 result rounded to nearest even by the hardware's
  // conversion, a cast step after the reduction).
  DType output = DType::kF32;
  // The result laid out by whole rows spread evenly over the product's tiles, as
  // create_matmul_input lays out an operand, by one more exchange: what row operations and later
  // products read at their best; a row of more than 32 KB, with two tiles or more a row, is cut
  // into a slice a tile instead (a vocabulary's logits). Otherwise the result stays where the
  // reduction left it, each row's columns in pieces over the tiles of its blocks.
  bool rows_output = false;
  // With rows_output, fewer rows than tiles are laid out in row blocks (map_row_blocks: each
  // row cut at the same columns, a tile holding neighbouring rows of one slice) when that
  // leaves a tile fewer elements: every tile busy in the elementwise operations that follow
  // (BERT-Large's feed-forward [1024 x 4096] on 1,472 tiles).
  bool row_blocks = false;
};

struct MatmulShape {
  size_t m = 0, k = 0, n = 0;
};

// The cycles of each phase of a plan, from the planner's model (or measured, by a benchmark).
struct MatmulCycles {
  double gather = 0;     // exchange: the operands' rows to the tiles that pack them
  double pack = 0;       // compute: into the AMP's layouts
  double broadcast = 0;  // exchange: the packed pieces to the tiles that multiply them
  double amp = 0;        // compute: the AMP's products
  double partials = 0;   // exchange: partial sums to the tiles that reduce them (pk > 1)
  double reduce = 0;     // compute: the sums, into C's rows
  double relayout = 0;   // exchange: C's pieces to whole rows (MatmulOptions::rows_output)
  double syncs = 0;      // the syncs between the phases
  double total() const {
    return gather + pack + broadcast + amp + partials + reduce + relayout + syncs;
  }
};

struct MatmulPlan {
  MatmulShape shape;
  MatmulOptions options;
  unsigned pm = 1, pn = 1, pk = 1;  // blocks of 16-row groups, of columns, of K passes
  // A serial plan (poplin's serial split): N in `serial` slices of slice_width() columns (the
  // last one the rest), one product after another on the same tiles, each by this split with
  // its own exchange tables, sharing its buffers with the next; chosen only when no parallel
  // split fits the budget. The estimate is the slices' (each counted as wide as the first).
  unsigned serial = 1;
  // The pk reducers of a block split its row groups into `reduce_groups` parts (a divisor of
  // pk) and its columns into pk / reduce_groups: each sums a share of whole groups of the
  // block's columns (1: every reducer all the block's rows, a pk-th of its columns). Whole
  // groups make each reducer's received parts one run a tile, and C's rows fewer pieces.
  unsigned reduce_groups = 1;
  // A's packing items: each a row group's slice of K whole (0), or in pieces of this many
  // passes (more items, each smaller, to share among the packers; each a run more for its
  // consumers to receive).
  unsigned a_item_passes = 0;
  unsigned row_groups = 0, passes = 0;  // ceil(M / 16), ceil(K / 16)
  MatmulCycles estimate;
  // The most memory the plan takes on one tile: its tensors, and its exchange's tables (action
  // entries and destination lists), which stay for the whole program (table_bytes: the most
  // of those on one tile).
  uint64_t tile_bytes = 0, table_bytes = 0;
  uint64_t result_bytes = 0;  // the most of C on one tile
  uint64_t budget_bytes = 0;  // what the options allow a tile
  // The exchange phases' estimates are their schedule, as the compiler will make it (only the
  // best few plans by the model get one: it takes a scratch build of the product).
  bool exchange_scheduled = false;
  unsigned tiles() const { return pm * pn * pk; }
  // A serial plan's slices' width: ceil(N / serial), even (so that an f16 B's slice starts on a
  // word); N when not serial.
  size_t slice_width() const;
  // Slice i of a serial plan (the first, as wide as any, by default); the plan itself when not
  // serial.
  MatmulPlan slice(unsigned i = 0) const;
  double flops() const { return 2.0 * shape.m * shape.n * shape.k; }
  // "pm 4 x pn 92 x pk 4 on 1472 tiles: 81234 cycles (gather 20000, ...), 200 KB a tile".
  std::string describe() const;
};

// Where a product's operands lie: A's and B's tile mappings (TensorInfo::mapping; a grouped
// product's of its whole [G x ...] tensors). The operation before a product lays its result out
// for itself (rows for a row operation, row blocks, a product's own), so what the gather costs
// depends on it, not only on the split.
struct OperandLayout {
  std::vector<Interval> a, b;
};
OperandLayout layout_of(const Graph& graph, Tensor a, Tensor b);

// Chooses the plan with the fewest estimated cycles among those whose tensors fit every tile's
// budget; ties go to the smaller split (pm, then pn, then pk), so the choice is deterministic.
// With `explain`, writes each kind of candidate it rejected and the best ones it kept, with
// their estimates. With `layout`, the best candidates' gathers are timed from the operands as
// they lie (without, as create_matmul_input lays them out). Throws GraphError for an empty
// shape, a budget outside (0, 1], tiles the graph lacks, or when no split fits (naming the
// smallest plan's tile bytes and the budget).
MatmulPlan plan_matmul(const Target& target, MatmulShape shape, const MatmulOptions& options = {},
                       std::ostream* explain = nullptr, const OperandLayout* layout = nullptr);

// The splits chosen in other processes, for this one's plan_matmul to take instead of weighing
// every candidate again (a bench's children each build BERT-Large's graph: planning its
// products, 16 scratch builds each, took 35 % of a child's host time). A split taken from the file
// is estimated and scheduled again, so the plan is the one the planner would give; one that does
// not fit its product, or whose estimate is not the one it was chosen with (another build's
// planner), is planned anew. The file is JSON: {"format", "sdk" (the version that chose;
// another's choices are not read), "plans": {key: [serial, pm, pn, pk, reduce_groups, estimated
// cycles]}} (a file of [serial, pm, pn, pk, estimated cycles], saved before reduce_groups, is read
// as reduce_groups 1). load: a missing or empty file adds nothing; one that is not such a file
// throws GraphError naming it and where. save: this process's choices (and those it loaded) joined
// with the file's, under a lock (PATH.lock), the file replaced whole.
void load_plan_choices(const std::string& path);
void save_plan_choices(const std::string& path);

// Adds C = op(A) x op(B) to `program` (a Sequence: the product's steps are appended) and
// returns C, an f32 tensor [M x N] named options.name + ".c", spread over the plan's tiles.
// A and B are f16, mapped, two-dimensional and agree in K; anything else is refused with a
// GraphError naming the tensor. `plan` (from plan_matmul for the same shape and options)
// skips the planning; without one, the product is planned for its operands as they lie.
Tensor matmul(Graph& graph, Program& program, Tensor a, Tensor b, const MatmulOptions& options = {},
              const MatmulPlan* plan = nullptr);

// G independent products, as attention's heads need: A [G x M x K] (transposed: [G x K x M]) and
// B [G x K x N] ([G x N x K]) give C [G x M x N]. Each group runs on its own equal share of the
// options' tiles (at least one each), all groups' phases side by side; `plan` (for one group's
// shape on its share, as plan_matmul gives it) skips the planning.
Tensor grouped_matmul(Graph& graph, Program& program, Tensor a, Tensor b,
                      const MatmulOptions& options = {}, const MatmulPlan* plan = nullptr);
// That plan: one group's on its share of the tiles, its exchange phases scheduled with every
// group's transfers in them (the groups share each phase).
MatmulPlan plan_grouped_matmul(const Target& target, MatmulShape shape, size_t groups,
                               const MatmulOptions& options = {}, std::ostream* explain = nullptr,
                               const OperandLayout* layout = nullptr);

// An f16 operand A (`lhs`) or B of the product, as op(A) or op(B) is stored, laid out by whole
// rows spread evenly over the options' tiles (in pairs when a row is odd), so that the
// gathering exchange moves pieces of whole rows. With `spread`, its elements are spread evenly
// over every one of those tiles instead (whole f16 pairs a tile): a matrix of fewer rows than
// tiles then takes all of them, not one a row (a chip holding many layers' weights).
Tensor create_matmul_input(Graph& graph, MatmulShape shape, bool lhs, const std::string& name,
                           const MatmulOptions& options = {}, bool spread = false);

// The given split, estimated, as plan_matmul would weigh it (for tests and benchmarks that
// compare splits; a_item_passes as MatmulPlan has it); throws GraphError for a split the shape
// or the tiles cannot take.
MatmulPlan plan_matmul_split(const Target& target, MatmulShape shape, unsigned pm, unsigned pn,
                             unsigned pk, const MatmulOptions& options = {},
                             unsigned reduce_groups = 1, unsigned a_item_passes = 0);

// The codelets the product runs (firmware/codelets/matmul_planned.c); matmul() adds them to a
// graph that lacks them.
void add_matmul_codelets(Graph& graph);

// C's value as the tiles compute it, on the host: per slice of the plan's K passes, per pass,
// fma over its 16 k-values in order from 0 (f32), the passes' sums added in order, then the
// slices' sums added in order. `a` and `b` are f16 bits, in the layouts the options say.
std::vector<float> matmul_reference(const MatmulPlan& plan, const std::vector<uint16_t>& a,
                                    const std::vector<uint16_t>& b);
// One element of it, C[row][column].
float matmul_reference_at(const MatmulPlan& plan, const std::vector<uint16_t>& a,
                          const std::vector<uint16_t>& b, size_t row, size_t column);

}  // namespace ipu::sdk::ops
