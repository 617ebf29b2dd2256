// The planned matmul's planner: the cost model's estimate of a split, the best candidates'
// exchange phases timed by the compiler's own scheduler, the choice and its cache
// (sdk/ops/matmul.h, docs/ops.md).
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <tuple>

#include "base/fnv1a.h"
#include "sdk/compiler/compiler.h"
#include "sdk/compiler/exchange_schedule.h"
#include "sdk/ops/matmul.h"
#include "sdk/ops/matmul_geometry.h"

namespace ipu::sdk::ops {
namespace detail {

OperandRows operand_rows(const OperandLayout& layout, size_t a_rows, size_t a_row, size_t b_rows,
                         size_t b_row) {
  unsigned first = UINT32_MAX, last_end = 0;
  const auto index = [&](const std::vector<Interval>& mapping, size_t rows, size_t row) {
    std::vector<std::vector<RowPiece>> out(rows);
    for (const Interval& m : mapping)
      for (size_t at = m.begin; at < m.end && at < rows * row;) {
        first = std::min(first, m.tile);
        last_end = std::max(last_end, m.tile + 1);
        const size_t r = at / row, end = std::min(m.end, (r + 1) * row);
        out[r].push_back({at - r * row, end - r * row, m.tile});
        at = end;
      }
    return out;
  };
  OperandRows out{index(layout.a, a_rows, a_row), index(layout.b, b_rows, b_row), 0, 0};
  out.first = std::min(first, last_end);  // 0 for no pieces at all
  out.end = last_end;
  return out;
}

// The plan's estimate and its largest tile's bytes, from the geometry above: each phase lasts
// as long as its busiest tile.
void estimate(MatmulPlan& p, size_t operand_bytes, const OperandRows* laid) {
  const Geometry geo{p};
  const unsigned tiles = p.tiles();
  std::vector<double> gather(tiles), pack(tiles), send(tiles), packed_items(tiles);
  // Each tile's buffers by the steps they live through (all scratch, so the compiler gives one
  // step's memory to the next's): staged rows (gather, pack), packed pieces (pack, broadcast),
  // received blocks (broadcast, amp), partial sums (amp to reduce), received partials (partials,
  // reduce); C's rows stay.
  std::vector<uint64_t> staged(tiles), packed(tiles), blocks(tiles), sums(tiles), received(tiles),
      result(tiles);
  // The exchange's tables, which stay for the whole program: each action's entry, and each
  // distinct destination list of its sends (a count and a word a destination; a tile keeps a
  // list once however many sends use it).
  std::vector<uint64_t> tables(tiles);
  std::vector<double> relayout_sends(tiles);  // rows_output: C's pieces this tile sends
  const auto actions = [&](unsigned t, double receives, double sends, double lists,
                           double destinations) {
    tables[t] +=
        static_cast<uint64_t>((receives + sends) * kActionBytes + lists * 4 + destinations * 4);
  };
  const auto items = pack_items(p);
  const auto packers = packer_tiles(p, items);
  // From a layout: each tile's runs received for its packing and pieces sent, by machine tile
  // from `low` (an operand may lie beyond the product's tiles).
  const unsigned low = laid ? std::min(laid->first, p.options.first_tile) : 0;
  const unsigned laid_tiles = laid ? std::max(laid->end, p.options.first_tile + tiles) - low : 0;
  std::vector<double> laid_receives(laid_tiles), laid_sends(laid_tiles);
  for (size_t n = 0; n < items.size(); ++n) {
    const ItemShape s = item_shape(p, items[n]);
    const unsigned t = packers[n] - p.options.first_tile;
    double runs = static_cast<double>(s.rows);
    if (laid) {  // a run a piece of each gathered row
      const auto& stored = items[n].lhs ? laid->a : laid->b;
      runs = 0;
      const size_t end = s.first_column + s.columns;
      for (size_t r = s.first_row; r < s.first_row + s.rows && r < stored.size(); ++r)
        for (const RowPiece& piece : stored[r])
          if (piece.begin < end && piece.end > s.first_column) {
            ++runs;
            ++laid_sends[piece.tile - low];
          }
      laid_receives[packers[n] - low] += runs;
    }
    gather[t] += runs * kReceiveGap + s.rows * std::ceil(s.columns * operand_bytes / 4.0);
    pack[t] += 6 * pack_vertex_instructions(p, items[n], s);  // six vertices side by side
    send[t] += std::max(kSendGap, s.packed / 2.0);            // once, to every consumer
    packed_items[t] += 1;
    staged[t] += s.rows * s.row_stride * operand_bytes;
    packed[t] += s.packed * 2;
    // Its rows' receives; its piece's multicast to the blocks that use it.
    const double users = items[n].lhs ? p.pn : p.pm;
    actions(t, runs, 1, 1, users);
  }
  // The operands' tiles send those rows: with the rows spread evenly over the tiles (as
  // create_matmul_input lays them out), each cut into a piece a block that uses it. Every send
  // and every receive is an action of the tile's runtime, at least an action gap from its next:
  // a tile that both sends pieces and receives runs for its packing takes the sum.
  // A tile's rows are neighbours, most in the same packers' items: its sends go to about
  // `pieces` distinct tiles, a destination list each.
  const auto pieces = [&](bool lhs) {
    const bool t = lhs ? p.options.transpose_a : p.options.transpose_b;
    return static_cast<double>(lhs ? (t ? p.pm : geo.slice_pieces(true))
                                   : (t ? geo.slice_pieces(false) : p.pn));
  };
  auto sends_a_tile = [&](bool lhs) {
    const bool t = lhs ? p.options.transpose_a : p.options.transpose_b;
    const size_t rows = lhs ? (t ? p.shape.k : p.shape.m) : (t ? p.shape.n : p.shape.k);
    return std::ceil(static_cast<double>(rows) / std::min<size_t>(rows, p.options.tiles)) *
           pieces(lhs);
  };
  const double sends = sends_a_tile(true) + sends_a_tile(false);
  const double lists = std::min(sends, pieces(true) + pieces(false));
  double gather_actions = 0;
  if (laid) {
    for (unsigned at = 0; at < laid_tiles; ++at) {
      const double sent = laid_sends[at];
      const unsigned tile = low + at;
      gather_actions = std::max(gather_actions, laid_receives[at] + sent);
      if (sent > 0 && tile >= p.options.first_tile && tile - p.options.first_tile < tiles)
        actions(tile - p.options.first_tile, 0, sent, std::min(sent, pieces(true) + pieces(false)),
                std::min(sent, pieces(true) + pieces(false)));
    }
  } else {
    std::vector<double> receives(tiles);
    for (size_t n = 0; n < items.size(); ++n)
      receives[packers[n] - p.options.first_tile] += item_shape(p, items[n]).rows;
    for (unsigned t = 0; t < tiles; ++t) {
      gather_actions = std::max(gather_actions, receives[t] + sends);
      actions(t, 0, sends, lists, lists);
    }
  }
  MatmulCycles c;
  c.gather = gather_actions * kSendGap;
  for (unsigned t = 0; t < tiles; ++t) {
    c.gather = std::max(c.gather, gather[t]);
    c.pack = std::max(c.pack, pack[t] > 0 ? pack[t] + kDispatchCycles : 0);
    c.broadcast = std::max(c.broadcast, send[t]);
  }
  for (unsigned i = 0; i < p.pm; ++i)
    for (unsigned j = 0; j < p.pn; ++j)
      for (unsigned l = 0; l < p.pk; ++l) {
        const unsigned t = geo.consumer(i, j, l) - p.options.first_tile;
        const size_t gm = geo.groups(i).size(), pp = geo.passes(l).size(),
                     nb = geo.columns(j).size();
        // The packed pieces it receives: a run a piece of a slice a group (a run a pass, for A^T)
        // and a run a pass (a run a piece, for B^T).
        const size_t runs = (p.options.transpose_a ? pp : gm * geo.pieces(true, l)) +
                            (p.options.transpose_b ? geo.pieces(false, l) : pp);
        const double words = (gm * pp * 256.0 + pp * nb * 16.0) / 2;
        actions(t, static_cast<double>(runs), 0, 0, 0);
        // Its partial sums to the block's other pk - 1 tiles: a run a reducer whose share has
        // every column of the block, else a run a group of its share.
        const unsigned column_parts = p.pk / p.reduce_groups;
        const double runs_a_reducer =
            column_parts == 1 ? 1 : std::ceil(static_cast<double>(gm) / p.reduce_groups);
        if (p.pk > 1) actions(t, 0, (p.pk - 1) * runs_a_reducer, p.pk - 1, p.pk - 1);
        c.broadcast = std::max(
            c.broadcast, std::max(words + runs * kReceiveGap, (runs + packed_items[t]) * kSendGap));
        // The AMP: six workers, each a part of the groups and of the columns.
        c.amp = std::max(
            c.amp, kDispatchCycles + 6 * amp_split(gm, pp, nb).worker_instructions(gm, pp, nb));
        blocks[t] += (gm * pp * 256 + pp * nb * 16) * 2;
        sums[t] += gm * nb * 16 * 4;
        // Reducer l of this block: its share (whole groups, a part of the columns), pk parts
        // (the pk tiles' sums: its own in place, pk - 1 received), written into C on this tile.
        const Geometry::Share share = geo.reduce_share(i, j, l);
        const size_t cw = share.columns.size(), gs = share.groups.size();
        if (cw == 0 || gs == 0) continue;
        const size_t rows = geo.rows_of(share.groups).size();
        if (p.pk > 1) {
          const double share_runs = cw == nb ? 1 : static_cast<double>(gs);
          c.partials =
              std::max(c.partials, (p.pk - 1) * (share_runs * kReceiveGap + gs * cw * 16.0));
          received[t] += (p.pk - 1) * gs * cw * 16 * 4;
          actions(t, (p.pk - 1) * share_runs, 0, 0, 0);
        }
        if (p.options.rows_output && cw < p.shape.n) {
          relayout_sends[t] += static_cast<double>(rows);  // a row's piece a send
          actions(t, 0, static_cast<double>(rows), static_cast<double>(rows),
                  static_cast<double>(rows));
        }
        // Six vertices of a sixth of the rows each when the share is whole rows of C, else a
        // vertex a few rows apart in C (build_product's split), six at a time.
        // A vertex apart in C takes a part of the columns too (reduce_apart_column_parts).
        const double row_vertices =
            cw == p.shape.n
                ? 6
                : std::ceil(static_cast<double>(rows) / reduce_apart_rows_a_vertex(rows));
        const double rows_a_vertex = std::ceil(rows / row_vertices);
        const double vertex_columns = cw == p.shape.n
                                          ? 1
                                          : static_cast<double>(reduce_apart_column_parts(
                                                static_cast<size_t>(row_vertices),
                                                static_cast<size_t>(rows_a_vertex), cw, p.pk));
        const double vertices = row_vertices * vertex_columns;
        const double per_vertex =
            reduce_apart_vertex_instructions(rows_a_vertex, std::ceil(cw / vertex_columns), p.pk);
        c.reduce = std::max(c.reduce, kDispatchCycles + std::ceil(vertices / 6) * 6 * per_vertex);
        result[t] += rows * cw * 4;
      }
  // With rows_output, C's pieces to whole rows spread evenly over the product's tiles (map_rows):
  // each row tile receives a piece of each of its rows from every reducer whose share the row
  // crosses (pn x the column parts), each at least an action gap after its last, and a tile's
  // sends and receives are actions of one runtime.
  if (p.options.rows_output) {
    const size_t row_tiles = std::min<size_t>(p.options.tiles, p.shape.m);
    const double rows_a_tile = std::ceil(static_cast<double>(p.shape.m) / row_tiles);
    const unsigned column_parts = p.pk / p.reduce_groups;
    const bool whole = p.pn == 1 && column_parts == 1;
    const double row_pieces = whole ? 2 : rows_a_tile * p.pn * column_parts;
    const double words = rows_a_tile * static_cast<double>(p.shape.n);
    for (unsigned t = 0; t < std::max<size_t>(tiles, row_tiles); ++t) {
      const double sent = t < tiles ? (whole ? 2 : relayout_sends[t]) : 0;
      const double received_here = t < row_tiles ? row_pieces : 0;
      c.relayout = std::max({c.relayout, (sent + received_here) * kSendGap,
                             t < row_tiles ? words + row_pieces * kReceiveGap : 0.0});
      if (t < tiles) actions(t, received_here, 0, 0, 0);
    }
  }
  // Steps: gather, pack, broadcast, amp, [partials], reduce, [relayout].
  const unsigned steps = 5 + (p.pk > 1 ? 1 : 0) + (p.options.rows_output ? 1 : 0);
  c.syncs = steps * kStepCycles;
  p.estimate = c;
  p.tile_bytes = p.table_bytes = 0;
  const unsigned exchanges = 2 + (p.pk > 1 ? 1 : 0) + (p.options.rows_output ? 1 : 0);
  for (unsigned t = 0; t < tiles; ++t) {
    if (tables[t] != 0) tables[t] += exchanges * kPhaseEndBytes + kTableTailBytes;
    const uint64_t live[] = {staged[t] + packed[t], packed[t] + blocks[t], blocks[t] + sums[t],
                             sums[t] + received[t]};
    p.tile_bytes = std::max(
        p.tile_bytes, tables[t] + result[t] + *std::max_element(std::begin(live), std::end(live)));
    p.table_bytes = std::max(p.table_bytes, tables[t]);
    p.result_bytes = std::max(p.result_bytes, result[t]);
  }
}

void check_options(const Target& target, MatmulShape shape, const MatmulOptions& o) {
  if (shape.m == 0 || shape.k == 0 || shape.n == 0)
    throw GraphError(fmt::format("{}: an empty product ({} x {} times {} x {})", o.name, shape.m,
                                 shape.k, shape.k, shape.n));
  if (o.output != DType::kF32 && o.output != DType::kF16)
    throw GraphError(
        fmt::format("{}: the result is f32 or f16, not {}", o.name, dtype_name(o.output)));
  if (!(o.available_memory_proportion > 0 && o.available_memory_proportion <= 1))
    throw GraphError(fmt::format("{}: available_memory_proportion must be in (0, 1], not {}",
                                 o.name, o.available_memory_proportion));
  const unsigned tiles = target.replica_tiles();
  if (o.first_tile >= tiles || (o.tiles != 0 && o.first_tile + o.tiles > tiles))
    throw GraphError(fmt::format("{}: tiles {} to {} are not all in the graph's {} tiles", o.name,
                                 o.first_tile, o.first_tile + std::max(o.tiles, 1u) - 1, tiles));
}

}  // namespace detail

using namespace detail;

namespace {

// How many of the model's best plans have their exchanges scheduled before the choice (about
// a quarter of a second each on a full chip): the model misses how multicasts to many tiles
// wait on one another, by up to 5x in the broadcast, so its ranking is only a first cut.
constexpr size_t kScheduledCandidates = 16;
// The most slices a serial plan cuts N into.
constexpr unsigned kMostSerialSlices = 16;

}  // namespace

namespace {

MatmulCycles scaled(MatmulCycles c, double k) {
  for (double* x :
       {&c.gather, &c.pack, &c.broadcast, &c.amp, &c.partials, &c.reduce, &c.relayout, &c.syncs})
    *x *= k;
  return c;
}

// A plan of one slice as the serial plan of `serial` such slices: the slices' cycles, their
// exchange tables and results side by side, and one slice's buffers (shared by all).
MatmulPlan as_serial(MatmulPlan slice, MatmulShape whole, unsigned serial) {
  if (serial == 1) return slice;
  MatmulPlan p = std::move(slice);
  p.shape = whole;
  p.serial = serial;
  p.estimate = scaled(p.estimate, serial);
  p.tile_bytes += (serial - 1) * (p.table_bytes + p.result_bytes);
  p.table_bytes *= serial;
  p.result_bytes *= serial;
  return p;
}

size_t serial_width(size_t n, unsigned serial) {
  return serial <= 1 ? n : ((n + serial - 1) / serial + 1) & ~size_t{1};
}

}  // namespace

size_t MatmulPlan::slice_width() const { return serial_width(shape.n, serial); }

MatmulPlan MatmulPlan::slice(unsigned i) const {
  if (serial <= 1) return *this;
  MatmulPlan s = *this;
  const size_t w = slice_width();
  s.shape.n = std::min(w, shape.n - i * w);
  s.serial = 1;
  s.estimate = scaled(estimate, 1.0 / serial);
  s.table_bytes = table_bytes / serial;
  s.result_bytes = result_bytes / serial;
  s.tile_bytes = tile_bytes - (serial - 1) * (s.table_bytes + s.result_bytes);
  return s;
}

std::string MatmulPlan::describe() const {
  const MatmulCycles& e = estimate;
  return fmt::format(
      "{}pm {} x pn {} x pk {}{}{} on {} tiles: {:.0f} cycles (gather {:.0f}, pack {:.0f}, "
      "broadcast "
      "{:.0f}, amp {:.0f}, partials {:.0f}, reduce {:.0f}{}, syncs {:.0f}{}), {} KiB a tile ({} of "
      "it exchange tables)",
      serial > 1 ? fmt::format("serial {} (N in slices of {}) x ", serial, slice_width()) : "", pm,
      pn, pk, reduce_groups > 1 ? fmt::format(" (reduced in {} group parts)", reduce_groups) : "",
      a_item_passes > 0 ? fmt::format(" (A packed in pieces of {} passes)", a_item_passes) : "",
      tiles(), e.total(), e.gather, e.pack, e.broadcast, e.amp, e.partials, e.reduce,
      options.rows_output ? fmt::format(", relayout {:.0f}", e.relayout) : "", e.syncs,
      exchange_scheduled ? "; exchanges scheduled" : "", (tile_bytes + 1023) / 1024,
      (table_bytes + 1023) / 1024);
}

namespace {

std::vector<double> scheduled_exchanges(const Target& target, const MatmulPlan& plan, size_t groups,
                                        const OperandLayout* layout);

// The exchange phases' cycles replaced by their schedule (gather, broadcast, partials), from
// the operands as `layout` has them (or as create_matmul_input lays them out).
void schedule_exchanges(const Target& target, MatmulPlan& p, size_t groups = 1,
                        const OperandLayout* layout = nullptr) {
  // A serial plan's slices are alike: one is scheduled, and its phases counted for each (as
  // create_matmul_input lays out its operands: a layout is of the whole product's).
  // Phases in program order: gather, broadcast, [partials], [relayout].
  const std::vector<double> phases =
      scheduled_exchanges(target, p.slice(), groups, p.serial > 1 ? nullptr : layout);
  const auto phase = [&](size_t i) { return p.serial * (i < phases.size() ? phases[i] : 0); };
  MatmulCycles& e = p.estimate;
  e.gather = phase(0);
  e.broadcast = phase(1);
  e.partials = p.pk > 1 ? phase(2) : 0;
  if (p.options.rows_output) e.relayout = phase(p.pk > 1 ? 3 : 2);
  p.exchange_scheduled = true;
}

MatmulPlan make_plan(const Target& target, MatmulShape shape, const MatmulOptions& o, unsigned pm,
                     unsigned pn, unsigned pk, unsigned reduce_groups = 1,
                     const OperandRows* rows = nullptr, unsigned a_item_passes = 0) {
  MatmulPlan p;
  p.shape = shape;
  p.options = o;
  p.pm = pm;
  p.pn = pn;
  p.pk = pk;
  p.reduce_groups = reduce_groups;
  p.a_item_passes = a_item_passes;
  p.row_groups = static_cast<unsigned>((shape.m + 15) / 16);
  p.passes = static_cast<unsigned>((shape.k + 15) / 16);
  p.budget_bytes = static_cast<uint64_t>(
      std::floor(o.available_memory_proportion * target.chip().tile.sram_bytes));
  estimate(p, 2, rows);
  return p;
}

// The stored rows of a product's operands (a grouped product's first group) as `layout` has
// them; none without a layout.
std::optional<OperandRows> rows_of(MatmulShape s, const MatmulOptions& o,
                                   const OperandLayout* layout) {
  if (!layout) return std::nullopt;
  return operand_rows(*layout, o.transpose_a ? s.k : s.m, o.transpose_a ? s.m : s.k,
                      o.transpose_b ? s.n : s.k, o.transpose_b ? s.k : s.n);
}

MatmulOptions with_tiles(const Target& target, const MatmulOptions& options) {
  MatmulOptions o = options;
  if (o.tiles == 0) o.tiles = target.replica_tiles() - o.first_tile;
  return o;
}

}  // namespace

MatmulPlan plan_matmul_split(const Target& target, MatmulShape shape, unsigned pm, unsigned pn,
                             unsigned pk, const MatmulOptions& options, unsigned reduce_groups,
                             unsigned a_item_passes) {
  check_options(target, shape, options);
  const MatmulOptions o = with_tiles(target, options);
  const size_t row_groups = (shape.m + 15) / 16, passes = (shape.k + 15) / 16;
  if (pm == 0 || pn == 0 || pk == 0 || pm > row_groups || pn > (shape.n + 1) / 2 || pk > passes ||
      size_t{pm} * pn * pk > o.tiles)
    throw GraphError(fmt::format(
        "{}: split pm {} x pn {} x pk {} does not fit {} x {} x {} ({} row groups of 16, {} "
        "column pairs, {} passes of 16) on {} tiles",
        o.name, pm, pn, pk, shape.m, shape.k, shape.n, row_groups, (shape.n + 1) / 2, passes,
        o.tiles));
  if (reduce_groups == 0 || pk % reduce_groups != 0)
    throw GraphError(
        fmt::format("{}: reduce_groups {} does not divide pk {}", o.name, reduce_groups, pk));
  MatmulPlan p = make_plan(target, shape, o, pm, pn, pk, reduce_groups, nullptr, a_item_passes);
  schedule_exchanges(target, p);
  return p;
}

namespace {
MatmulPlan choose_plan(const Target& target, MatmulShape shape, const MatmulOptions& options,
                       std::ostream* explain, const OperandLayout* layout, size_t groups);
}  // namespace

namespace {

// The splits chosen so far, by a product's key: this process's and those read from files
// (load_plan_choices). The plans themselves, in this process.
struct PlanChoice {
  unsigned serial = 1, pm = 1, pn = 1, pk = 1, reduce_groups = 1;
  double cycles = 0;  // its estimate when chosen
  unsigned a_item_passes = 0;
};
std::mutex cache_mutex;
std::map<std::string, MatmulPlan> plan_cache;
std::map<std::string, PlanChoice> choice_cache;

// A product on one chip's tiles is keyed on that chip's figures alone, and its first tile
// within its chip: its estimates read nothing else (the machine's chips, IPU-Links, gateways and
// replicas, and the clock, which only the IPU-Links' bytes a cycle read), so every stage of a
// pipeline, and every machine built of the same chip at any clock (a replica of an M2000, a
// POD16 whole, a Bow POD16), shares its plans; a choice whose estimate differs is planned anew
// all the same (remake_plan). A product across chips is keyed on every parameter of the machine
// and its replicas. Never the product's name.
// A layout is keyed on its pieces' tiles counted from the product's first tile, so that every
// stage of a pipeline whose operands lie alike on its own tiles shares its plans too.
std::string plan_key(const Target& target, MatmulShape shape, const MatmulOptions& options,
                     const OperandLayout* layout, size_t groups) {
  std::string key;
  const auto add = [&key](const base::Parameter& p, const auto& value) {
    key += fmt::format("{}={};", p.name, value);
  };
  const unsigned chip_tiles = target.chip().tiles;
  const unsigned tiles = with_tiles(target, options).tiles;
  const bool on_one_chip = options.first_tile % chip_tiles + tiles <= chip_tiles;
  if (on_one_chip) {
    hw::visit_parameters(target.chip(), [&add](const base::Parameter& p, const auto& value) {
      if (std::string_view(p.name) != "tile.clock-hz") add(p, value);
    });
  } else {
    hw::visit_parameters(target.machine, add);
    key += fmt::format("replicas={};", target.replicas);
  }
  const unsigned first = on_one_chip ? options.first_tile % chip_tiles : options.first_tile;
  key += fmt::format("{}x{}x{};transposed={}{};memory={};first={};tiles={};{};{}", shape.m, shape.k,
                     shape.n, options.transpose_a ? 1 : 0, options.transpose_b ? 1 : 0,
                     options.available_memory_proportion, first, tiles, dtype_name(options.output),
                     !options.rows_output ? "blocks"
                     : options.row_blocks ? "row blocks"
                                          : "rows");
  if (layout) {
    base::Fnv1a hash;
    for (const std::vector<Interval>* operand : {&layout->a, &layout->b}) {
      hash.add(uint64_t{operand->size()});
      for (const Interval& m : *operand) {
        hash.add(uint64_t{m.begin});
        hash.add(uint64_t{m.end});
        hash.add(static_cast<uint64_t>(int64_t{m.tile} - int64_t{options.first_tile}));
      }
    }
    key += fmt::format(";groups={};layout={:016x}", groups, hash.value);
  }
  return key;
}

// The chosen split again, estimated and scheduled as choose_plan left it; nothing when the
// choice does not fit the shape, the tiles or the budget, or its estimate is not the one it
// was chosen with (a file of another build's choices: its planner's model differed).
std::optional<MatmulPlan> remake_plan(const Target& target, MatmulShape shape,
                                      const MatmulOptions& options, const PlanChoice& c,
                                      const OperandLayout* layout, size_t groups) {
  const MatmulOptions o = with_tiles(target, options);
  if (c.serial < 1 || c.serial > kMostSerialSlices || c.pm < 1 || c.pn < 1 || c.pk < 1 ||
      c.reduce_groups < 1 || c.pk % c.reduce_groups != 0)
    return std::nullopt;
  const size_t width = serial_width(shape.n, c.serial);
  if (c.serial > 1 && (c.serial - 1) * width >= shape.n) return std::nullopt;
  const size_t last = shape.n - (c.serial - 1) * width;
  if (c.pm > (shape.m + 15) / 16 || c.pk > (shape.k + 15) / 16 || c.pn > (last + 1) / 2 ||
      uint64_t{c.pm} * c.pn * c.pk > o.tiles)
    return std::nullopt;
  const std::optional<OperandRows> rows = rows_of(shape, o, layout);
  MatmulPlan p =
      as_serial(make_plan(target, {shape.m, shape.k, width}, o, c.pm, c.pn, c.pk, c.reduce_groups,
                          c.serial == 1 && rows ? &*rows : nullptr, c.a_item_passes),
                shape, c.serial);
  if (p.tile_bytes > p.budget_bytes) return std::nullopt;
  schedule_exchanges(target, p, groups, layout);
  if (p.estimate.total() != c.cycles) return std::nullopt;
  return p;
}

constexpr const char* kPlanChoicesFormat = "virtual-ipu matmul plan choices";

// The choices a file holds (none when it is absent or empty); throws GraphError naming the
// file and where for one that is not such a file.
std::map<std::string, PlanChoice> read_plan_choices(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::map<std::string, PlanChoice> out;
  if (!in || in.peek() == std::ifstream::traits_type::eof()) return out;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw GraphError(
        fmt::format("{}: not a file of plan choices: {} (at byte {})", path, e.what(), e.byte));
  }
  const auto bad = [&path](const std::string& what) {
    return GraphError(fmt::format("{}: not a file of plan choices: {}", path, what));
  };
  if (!j.is_object() || j.value("format", "") != kPlanChoicesFormat)
    throw bad(fmt::format("its \"format\" is not \"{}\"", kPlanChoicesFormat));
  // Another build's planner may choose otherwise: its choices are not taken.
  if (j.value("sdk", "") != IPU_SDK_VERSION) return out;
  const auto plans = j.find("plans");
  if (plans == j.end() || !plans->is_object()) throw bad("no \"plans\" object");
  for (const auto& [key, v] : plans->items()) {
    // A file saved before plans had reducers' group parts holds [serial, pm, pn, pk, cycles]:
    // taken as reduce_groups 1, and one saved before A's packing items could be pieces has no
    // a_item_passes after the cycles: taken as 0, A's slices whole (either planned anew if its
    // estimate is not this build's).
    const size_t whole = v.is_array() && v.size() == 5 ? 4 : 5;
    const auto is_unsigned = [](const nlohmann::json& x) {
      return x.is_number_unsigned() && x.get<uint64_t>() <= UINT32_MAX;
    };
    if (!v.is_array() || v.size() < 5 || v.size() > 7 ||
        !std::all_of(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(whole), is_unsigned) ||
        !v[whole].is_number() || (v.size() == 7 && !is_unsigned(v[6])))
      throw bad(
          fmt::format("the plan '{}' is not [serial, pm, pn, pk, reduce_groups, estimated cycles, "
                      "a_item_passes]",
                      key));
    out[key] = {v[0].get<unsigned>(),
                v[1].get<unsigned>(),
                v[2].get<unsigned>(),
                v[3].get<unsigned>(),
                whole == 5 ? v[4].get<unsigned>() : 1u,
                v[whole].get<double>(),
                v.size() == 7 ? v[6].get<unsigned>() : 0u};
  }
  return out;
}

}  // namespace

void load_plan_choices(const std::string& path) {
  const std::map<std::string, PlanChoice> read = read_plan_choices(path);
  const std::lock_guard<std::mutex> lock(cache_mutex);
  choice_cache.insert(read.begin(), read.end());
}

void save_plan_choices(const std::string& path) {
  // Under a lock on the file's own lock file, this process's choices join the file's (another
  // process may have written some since this one read it), then replace it whole.
  const std::string lock_path = path + ".lock";
  const int fd = ::open(lock_path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
  if (fd < 0 || ::flock(fd, LOCK_EX) != 0) {
    if (fd >= 0) ::close(fd);
    throw GraphError(fmt::format("{}: cannot lock it to save plan choices: {}", lock_path,
                                 std::strerror(errno)));
  }
  struct Unlock {
    int fd;
    ~Unlock() { ::close(fd); }
  } unlock{fd};
  std::map<std::string, PlanChoice> all = read_plan_choices(path);
  {
    const std::lock_guard<std::mutex> lock(cache_mutex);
    for (const auto& [key, c] : choice_cache) all[key] = c;
  }
  nlohmann::json plans = nlohmann::json::object();
  for (const auto& [key, c] : all)
    plans[key] = {c.serial, c.pm, c.pn, c.pk, c.reduce_groups, c.cycles, c.a_item_passes};
  const nlohmann::json j = {
      {"format", kPlanChoicesFormat}, {"sdk", IPU_SDK_VERSION}, {"plans", plans}};
  const std::string temporary = path + ".partial";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << j.dump(1) << '\n';
    if (!out.flush())
      throw GraphError(
          fmt::format("{}: cannot write the plan choices: {}", temporary, std::strerror(errno)));
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0)
    throw GraphError(
        fmt::format("{}: cannot replace it with {}: {}", path, temporary, std::strerror(errno)));
}

OperandLayout layout_of(const Graph& g, Tensor a, Tensor b) {
  return {g.tensor(a).mapping, g.tensor(b).mapping};
}

namespace {

// A product's plan (one group's, on its share of the tiles, whose candidates are scheduled with
// every group's transfers when their layout is given), from this process's cache, a loaded
// choice or the planner.
MatmulPlan plan_product(const Target& target, MatmulShape shape, const MatmulOptions& options,
                        std::ostream* explain, const OperandLayout* layout, size_t groups) {
  // Plans are deterministic: one per process for each target, shape and options (a model's
  // layers ask for the same products again and again), unless the caller wants the reasons;
  // a split chosen by another process (load_plan_choices) is estimated again, not weighed
  // against the others.
  const std::string key = plan_key(target, shape, options, layout, groups);
  const auto as_asked = [&](MatmulPlan p) {  // the cached plan under this product's options
    p.options.name = options.name;
    p.options.first_tile = options.first_tile;
    return p;
  };
  if (explain == nullptr) {
    std::optional<PlanChoice> chosen_before;
    {
      const std::lock_guard<std::mutex> lock(cache_mutex);
      const auto hit = plan_cache.find(key);
      if (hit != plan_cache.end()) return as_asked(hit->second);
      const auto choice = choice_cache.find(key);
      if (choice != choice_cache.end()) chosen_before = choice->second;
    }
    if (chosen_before)
      if (std::optional<MatmulPlan> p =
              remake_plan(target, shape, options, *chosen_before, layout, groups)) {
        const std::lock_guard<std::mutex> lock(cache_mutex);
        plan_cache.emplace(key, *p);
        return as_asked(*p);
      }
  }
  MatmulPlan chosen = choose_plan(target, shape, options, explain, layout, groups);
  const std::lock_guard<std::mutex> lock(cache_mutex);
  plan_cache.emplace(key, chosen);
  choice_cache[key] = {
      chosen.serial,           chosen.pm,           chosen.pn, chosen.pk, chosen.reduce_groups,
      chosen.estimate.total(), chosen.a_item_passes};
  return chosen;
}

}  // namespace

MatmulPlan plan_matmul(const Target& target, MatmulShape shape, const MatmulOptions& options,
                       std::ostream* explain, const OperandLayout* layout) {
  check_options(target, shape, options);
  return plan_product(target, shape, options, explain, layout, 1);
}

namespace {

MatmulPlan choose_plan(const Target& target, MatmulShape shape, const MatmulOptions& options,
                       std::ostream* explain, const OperandLayout* layout, size_t groups) {
  const MatmulOptions o = with_tiles(target, options);
  const unsigned row_groups = static_cast<unsigned>((shape.m + 15) / 16);
  const unsigned passes = static_cast<unsigned>((shape.k + 15) / 16);
  const uint64_t budget = static_cast<uint64_t>(
      std::floor(o.available_memory_proportion * target.chip().tile.sram_bytes));
  std::vector<MatmulPlan> fitting;
  std::optional<MatmulPlan> smallest_overflow;
  // A serial plan's slices are weighed as create_matmul_input lays out their operands (each
  // slice gathers its own columns of B), a parallel one's from the layout.
  const std::optional<OperandRows> rows = rows_of(shape, o, layout);
  size_t considered = 0, overflowing = 0;
  // Parallel splits first; only when none fits, serial ones: N in 2, 3, ... slices of an even
  // width (each slice's columns start on a word of f16, so B moves without widening), the last
  // the rest, which must take the split too.
  for (unsigned serial = 1; serial <= kMostSerialSlices && fitting.empty(); ++serial) {
    const size_t width = serial_width(shape.n, serial);
    if (serial > 1 && (serial - 1) * width >= shape.n) continue;
    const size_t last = shape.n - (serial - 1) * width;
    const MatmulShape slice{shape.m, shape.k, width};
    for (unsigned pm = 1; pm <= row_groups && pm <= o.tiles; ++pm)
      for (unsigned pk = 1; pk <= passes && pm * pk <= o.tiles; ++pk) {
        const unsigned most_pn =
            static_cast<unsigned>(std::min<size_t>((last + 1) / 2, o.tiles / (pm * pk)));
        // The most column blocks the tiles allow, and fewer by halves (fewer exchange runs).
        // The reducers' shares: a part of each block's columns (1), or whole groups, in as
        // many parts as divide pk and leave no reducer of the smallest block without a group.
        unsigned most_groups = 1;
        for (unsigned d = 1; d <= pk && d <= row_groups / pm; ++d)
          if (pk % d == 0) most_groups = d;
        // A's items a slice whole, or in pieces where a slice has more passes than a piece
        // (not for A^T, whose items are a pass each).
        const bool a_pieces = !o.transpose_a && (passes + pk - 1) / pk > kItemPasses;
        for (unsigned pn = most_pn; pn >= 1; pn /= 2)
          for (unsigned reduce_groups : {1u, most_groups}) {
            if (reduce_groups == most_groups && most_groups == 1 && reduce_groups != 1) continue;
            for (unsigned a_item_passes : {0u, kItemPasses}) {
              if (a_item_passes != 0 && !a_pieces) break;
              const MatmulPlan p =
                  as_serial(make_plan(target, slice, o, pm, pn, pk, reduce_groups,
                                      serial == 1 && rows ? &*rows : nullptr, a_item_passes),
                            shape, serial);
              ++considered;
              if (p.tile_bytes > budget) {
                ++overflowing;
                if (!smallest_overflow || p.tile_bytes < smallest_overflow->tile_bytes)
                  smallest_overflow = p;
              } else {
                fitting.push_back(p);
              }
            }
            if (most_groups == 1) break;
          }
      }
  }
  if (fitting.empty())
    throw GraphError(fmt::format(
        "{}: no split of {} x {} x {} fits {} bytes a tile (available_memory_proportion {} of "
        "{}): the smallest, {}, needs {} bytes on its fullest tile",
        o.name, shape.m, shape.k, shape.n, budget, o.available_memory_proportion,
        target.chip().tile.sram_bytes, smallest_overflow->describe(),
        smallest_overflow->tile_bytes));
  auto by_estimate = [](const MatmulPlan& a, const MatmulPlan& b) {
    return std::make_tuple(a.estimate.total(), a.serial, a.pm, a.pn, a.pk, a.reduce_groups,
                           a.a_item_passes) < std::make_tuple(b.estimate.total(), b.serial, b.pm,
                                                              b.pn, b.pk, b.reduce_groups,
                                                              b.a_item_passes);
  };
  std::sort(fitting.begin(), fitting.end(), by_estimate);
  // The best few by the model have their exchanges scheduled as the compiler will (a scratch
  // build of each), and are ranked again: the model counts exchange actions but not the waits
  // the greedy schedule leaves between them.
  const size_t refined = std::min<size_t>(fitting.size(), kScheduledCandidates);
  for (size_t i = 0; i < refined; ++i) schedule_exchanges(target, fitting[i], groups, layout);
  std::sort(fitting.begin(), fitting.begin() + static_cast<std::ptrdiff_t>(refined), by_estimate);
  if (explain) {
    *explain << fmt::format(
        "{}: {} x {} x {}{}{} on up to {} tiles: {} plans considered, {} over the {}-byte budget; "
        "the best:\n",
        o.name, shape.m, shape.k, shape.n, o.transpose_a ? ", A transposed" : "",
        o.transpose_b ? ", B transposed" : "", o.tiles, considered, overflowing, budget);
    for (size_t i = 0; i < std::min<size_t>(fitting.size(), 8); ++i)
      *explain << (i == 0 ? "  chosen: " : "          ") << fitting[i].describe() << '\n';
  }
  return fitting.front();
}

}  // namespace

MatmulPlan plan_grouped_matmul(const Target& target, MatmulShape shape, size_t groups,
                               const MatmulOptions& options, std::ostream* explain,
                               const OperandLayout* layout) {
  check_options(target, shape, options);
  const unsigned tiles =
      options.tiles != 0
          ? options.tiles
          : target.replica_tiles() - std::min(options.first_tile, target.replica_tiles());
  if (groups == 0 || tiles < groups)
    throw GraphError(fmt::format("{}: {} groups need at least as many tiles, not {}", options.name,
                                 groups, tiles));
  MatmulOptions one = options;
  one.tiles = static_cast<unsigned>(tiles / groups);
  // From a layout, every candidate is timed with all the groups' transfers; without one, only
  // the choice (its candidates alone on their tiles).
  if (layout) return plan_product(target, shape, one, explain, layout, groups);
  MatmulPlan p = plan_matmul(target, shape, one, explain);
  if (groups > 1) schedule_exchanges(target, p, groups);
  return p;
}

namespace {

// The cycles of each exchange phase of the plan (in program order) as the compiler will schedule
// them: the product built in a scratch graph on operands laid out as `layout` has them (or by
// create_matmul_input), each Copy's pairs cut at tile intervals and joined into multicasts by
// the compiler's own TransferList, and timed by its ExchangeScheduler.
std::vector<double> scheduled_exchanges(const Target& target, const MatmulPlan& plan, size_t groups,
                                        const OperandLayout* layout) {
  Graph g(target);
  Program program = Sequence({});
  const MatmulShape& s = plan.shape;
  const bool ta = plan.options.transpose_a, tb = plan.options.transpose_b;
  if (layout) {
    std::vector<size_t> a_shape{ta ? s.k : s.m, ta ? s.m : s.k};
    std::vector<size_t> b_shape{tb ? s.n : s.k, tb ? s.k : s.n};
    if (groups > 1) {
      a_shape.insert(a_shape.begin(), groups);
      b_shape.insert(b_shape.begin(), groups);
    }
    const Tensor a = g.add_variable(DType::kF16, a_shape, "operand A");
    const Tensor b = g.add_variable(DType::kF16, b_shape, "operand B");
    try {
      g.set_tile_mapping(a, layout->a);
      g.set_tile_mapping(b, layout->b);
    } catch (const GraphError& e) {
      throw GraphError(fmt::format("{}: the operands' layout given to the planner: {}",
                                   plan.options.name, e.what()));
    }
    MatmulOptions all = plan.options;
    all.tiles = static_cast<unsigned>(plan.options.tiles * groups);
    if (groups > 1)
      grouped_matmul(g, program, a, b, all, &plan);
    else
      matmul(g, program, a, b, all, &plan);
  } else if (groups == 1) {
    const Tensor a = create_matmul_input(g, plan.shape, true, "a", plan.options);
    const Tensor b = create_matmul_input(g, plan.shape, false, "b", plan.options);
    matmul(g, program, a, b, plan.options, &plan);
  } else {  // every group's transfers share each phase: schedule them together
    const Tensor a = g.add_variable(DType::kF16, {groups, ta ? s.k : s.m, ta ? s.m : s.k}, "a");
    const Tensor b = g.add_variable(DType::kF16, {groups, tb ? s.n : s.k, tb ? s.k : s.n}, "b");
    for (const Tensor t : {a, b}) {
      const size_t row = g.tensor(t).shape[2];
      g.map_evenly(t, 0, g.tiles(), row % 2 ? 2 * row : row);
    }
    MatmulOptions all = plan.options;
    all.first_tile = 0;
    all.tiles = static_cast<unsigned>(plan.options.tiles * groups);
    grouped_matmul(g, program, a, b, all, &plan);
  }
  const ExchangeScheduler scheduler(target.machine, ScheduleMargins::of(CompileOptions{}));
  // Each tensor placed as the compiler would (each piece at a word-aligned address of its
  // own on its tile), so that TransferList cuts and joins the copies as the compilation will.
  std::vector<std::vector<Placement>> placed(g.tensors().size());
  std::map<unsigned, uint32_t> next;
  for (size_t i = 0; i < g.tensors().size(); ++i) {
    const TensorInfo& t = g.tensors()[i];
    for (const Interval& m : t.mapping) {
      uint32_t& at = next[m.tile];
      placed[i].push_back({m.tile, m.begin, m.end, at});
      at += static_cast<uint32_t>(((m.end - m.begin) * dtype_size(t.type) + 3) & ~size_t{3});
    }
  }
  std::vector<double> out;
  for (const Program& step : program.body) {
    if (step.kind != Program::Kind::kCopy) continue;
    TransferList transfers;
    for (const auto& [from, to] : step.pairs) {
      const TensorInfo& src = g.tensor(from.tensor);
      const TensorInfo& dst = g.tensor(to.tensor);
      transfers.add_copy({src.name, placed[from.tensor.id], from.begin, 0},
                         {dst.name, placed[to.tensor.id], to.begin, 0}, from.end - from.begin,
                         src.type, [&g](unsigned tile) { return g.describe_tile(tile); });
    }
    out.push_back(scheduler.schedule(transfers.list).end);
  }
  return out;
}

}  // namespace

}  // namespace ipu::sdk::ops
