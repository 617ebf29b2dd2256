// The operator library's elementwise and row operations (sdk/ops/elementwise.h) on the tiles
// against their host references, bit for bit, on shapes that are not multiples of anything
// (rows split over tiles, a 1 x 1 matrix), and their refusals. One device runs per process, so
// every operation shares one program.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <tuple>
#include <vector>

#include "firmware/codelets/ops_math.h"
#include "sdk/compiler/compiler.h"
#include "sdk/ops/elementwise.h"
#include "sdk/ops/op_support.h"
#include "sdk/runtime/device.h"
#include "tests/support/f32_values.h"

namespace ipu::test {
namespace {

using namespace ipu::sdk;
using ::testing::HasSubstr;

// Every element of an f32 tensor, as the device holds it.
std::vector<float> read_all(const Device& device, const Graph& g, Tensor t) {
  std::vector<float> out(g.tensor(t).elements);
  device.read_tensor(g.tensor(t).name, out.data(), out.size() * 4);
  return out;
}

// A transpose whose rows lie on many tiles and whose result takes many: its gather goes in two
// exchange phases (row groups to band tiles, regrouped, then to each destination), uneven
// groups and bands included (130 rows, one or two a tile, over 128 tiles; 97 columns). Every
// element lands where the host's transpose puts it, and no tile's actions take as much as the
// one-phase gather's receives alone would: each of the 97 result tiles would receive 130 runs.
TEST(OpsElementwise, ATransposeOverManyTilesGathersInTwoPhases) {
  Graph g(Target::preset("mk2", 128));
  Program p = Sequence({});
  constexpr size_t rows = 130, columns = 97;
  const Tensor x = g.add_variable(DType::kF32, {rows, columns}, "x");
  g.map_evenly(x, 0, 128, columns);
  const Tensor y = ops::transpose(g, p, x, "y");
  ASSERT_EQ(g.tensor(y).shape, (std::vector<size_t>{columns, rows}));
  const Executable exe = compile(g, p);
  EXPECT_LT(exe.most_exchange_table_bytes, 130u * 16u);  // one phase: 130 receives alone
  Device device(exe);
  const std::vector<float> xv = random_f32(rows * columns, 21, -1.0f, 1.0f);
  device.write_tensor("x", xv.data(), xv.size() * 4);
  const DeviceReport& report = device.run();
  std::vector<float> yv(rows * columns);
  device.read_tensor("y", yv.data(), yv.size() * 4);
  size_t wrong = 0;
  for (size_t r = 0; r < rows; ++r)
    for (size_t c = 0; c < columns; ++c) wrong += yv[c * rows + r] != xv[r * columns + c];
  EXPECT_EQ(wrong, 0u);
  EXPECT_EQ(report.run.exchange_words, 2u * rows * columns);  // each element crosses twice
}

// Logits whose rows are too large for a tile each (BERT-Large's 30,522 words) are cut into row
// slices, a tile each (map_rows: 5 rows of 9,001 columns on 32 tiles, 6 slices a row). The
// bias add, the cross-entropy and the gradient's column sums keep them so: the results equal
// the host references bit for bit (the cross-entropy's with the slices it reports), the loss is
// the log-sum-exp worked out in double, and the fullest tile holds under half what it holds
// when the same operations take the rows whole.
TEST(OpsElementwise, LogitsInRowSlicesStayInSlices) {
  constexpr size_t rows = 5, columns = 9001;
  const std::vector<float> xv = random_f32(rows * columns, 31, -4.0f, 4.0f);
  const std::vector<float> bias_values = random_f32(columns, 32, -1.0f, 1.0f);
  // Labels: a slice's first column, the last column, ignored, outside the row, the first.
  const std::vector<uint32_t> label_values = {1502, columns - 1, ops::kIgnoredLabel, columns, 0};
  const auto build = [&](bool sliced, Graph& g, Program& p) {
    const Tensor x = g.add_variable(DType::kF32, {rows, columns}, "x");
    const Tensor bias = g.add_variable(DType::kF32, {columns}, "bias");
    const Tensor labels = g.add_variable(DType::kU32, {rows}, "labels");
    if (sliced)
      ops::map_rows(g, x, 0, 32);
    else
      g.map_evenly(x, 0, rows, columns);
    g.set_tile_mapping(bias, 31);
    g.set_tile_mapping(labels, 30);
    const Tensor biased = ops::binary(g, p, ops::BinaryOp::kAdd, x, bias, "biased");
    const ops::CrossEntropy xent = ops::cross_entropy(g, p, biased, labels, 0.5f, "xent");
    const ops::ColumnSums sums = ops::reduce_columns(g, p, xent.dlogits, "sums");
    return std::tuple{biased, xent, sums};
  };
  Graph whole_graph(Target::preset("mk2", 32));
  Program whole_program = Sequence({});
  build(false, whole_graph, whole_program);
  const uint32_t whole_used = compile(whole_graph, whole_program).fullest_tile.used;

  Graph g(Target::preset("mk2", 32));
  Program p = Sequence({});
  const auto [biased, xent, sums] = build(true, g, p);
  ASSERT_EQ(ops::row_cuts(g.tensor(biased)).starts,
            (std::vector<size_t>{0, 1502, 3004, 4506, 6008, 7510}));
  ASSERT_EQ(xent.slices.size(), 36u);  // each tile's slice over six workers
  EXPECT_EQ(sums.partial_rows, std::vector<size_t>(rows, 1));
  const Executable exe = compile(g, p);
  EXPECT_LT(2 * exe.fullest_tile.used, whole_used) << exe.fullest_tile.used << " " << whole_used;
  Device device(exe);
  device.write_tensor("x", xv.data(), xv.size() * 4);
  device.write_tensor("bias", bias_values.data(), columns * 4);
  device.write_tensor("labels", label_values.data(), rows * 4);
  device.run();
  const auto read = [&](Tensor t) { return read_all(device, g, t); };
  namespace ref = ops::reference;
  const std::vector<float> biased_want = ref::binary(ops::BinaryOp::kAdd, xv, bias_values);
  EXPECT_EQ(count_equal(read(biased), biased_want), rows * columns);
  std::vector<float> loss_want;
  const std::vector<float> dlogits_want =
      ref::cross_entropy(biased_want, label_values, columns, 0.5f, &loss_want, xent.slices);
  EXPECT_EQ(count_equal(read(xent.dlogits), dlogits_want), rows * columns);
  const std::vector<float> loss_got = read(xent.loss);
  EXPECT_EQ(count_equal(loss_got, loss_want), rows);  // the NaN the same quiet NaN
  for (size_t r : {0, 1, 4}) {
    double m = -1e30, s = 0;
    for (size_t c = 0; c < columns; ++c) m = std::max(m, double{biased_want[r * columns + c]});
    for (size_t c = 0; c < columns; ++c) s += std::exp(biased_want[r * columns + c] - m);
    EXPECT_NEAR(loss_got[r], m + std::log(s) - biased_want[r * columns + label_values[r]], 1e-5)
        << r;
  }
  EXPECT_EQ(loss_got[2], 0.0f);
  EXPECT_TRUE(std::isnan(loss_got[3]));
  EXPECT_EQ(
      count_equal(read(sums.sum), ref::reduce_columns(dlogits_want, columns, sums.partial_rows)),
      columns);
}

// Row blocks (map_row_blocks, the feed-forward block's layout): 200 rows of 130 on 24 tiles in
// two slices (66 and 64 columns) of 12 blocks of 16 or 17 rows, a tile each, which leave a tile
// 1,122 elements where whole rows left 1,170 (and 7 tiles idle). The bias, GeLU and GeLU's
// gradient stay in the blocks; the column sums add each tile's rows of its slice first, at most
// 8 rows a partial, then the slices' partials up the tree side by side: the host's sums of the
// same partial rows, bit for bit, and by hand.
TEST(OpsElementwise, RowBlocksKeepTheTilesBusyAndTheirColumnSumsAddATilesRowsFirst) {
  constexpr size_t rows = 200, columns = 130;
  const std::vector<float> xv = random_f32(rows * columns, 41, -3.0f, 3.0f);
  const std::vector<float> dv = random_f32(rows * columns, 42, -1.0f, 1.0f);
  const std::vector<float> bias_values = random_f32(columns, 43, -1.0f, 1.0f);
  Graph g(Target::preset("mk2", 24));
  Program p = Sequence({});
  const Tensor x = g.add_variable(DType::kF32, {rows, columns}, "x");
  const Tensor d = g.add_variable(DType::kF32, {rows, columns}, "d");
  const Tensor bias = g.add_variable(DType::kF32, {columns}, "bias");
  ops::map_row_blocks(g, x, 0, 24);
  ops::map_row_blocks(g, d, 0, 24);
  g.set_tile_mapping(bias, 3);
  const ops::RowCuts cuts = ops::row_cuts(g.tensor(x));
  ASSERT_EQ(cuts.starts, (std::vector<size_t>{0, 66}));
  for (size_t r = 0; r < rows; ++r)  // slice s of row r on tile 12 s + r 12 / 200
    for (size_t slice = 0; slice < 2; ++slice)
      ASSERT_EQ(cuts.tiles[r * 2 + slice], 12 * slice + r * 12 / rows) << r;
  const Tensor biased = ops::binary(g, p, ops::BinaryOp::kAdd, x, bias, "biased");
  const Tensor act = ops::unary(g, p, ops::UnaryOp::kGelu, biased, "act");
  const Tensor dact = ops::binary(g, p, ops::BinaryOp::kMulGeluGrad, d, biased, "dact");
  const ops::ColumnSums sums = ops::reduce_columns(g, p, dact, "sums");
  for (const Tensor t : {biased, act, dact})
    EXPECT_EQ(ops::row_cuts(g.tensor(t)).tiles, cuts.tiles) << g.tensor(t).name;
  // The partials, by hand: block b holds the rows r with r 12 / 200 = b (16 or 17 of them), cut
  // into runs of 8, the last shorter: 8 + 8 (+ 1) a block.
  std::vector<size_t> runs;
  for (size_t block = 0; block < 12; ++block) {
    size_t n = 0;
    for (size_t r = 0; r < rows; ++r) n += r * 12 / rows == block;
    for (; n > 8; n -= 8) runs.push_back(8);
    runs.push_back(n);
  }
  EXPECT_EQ(sums.partial_rows, runs);
  const Executable exe = compile(g, p);
  Device device(exe);
  device.write_tensor("x", xv.data(), xv.size() * 4);
  device.write_tensor("d", dv.data(), dv.size() * 4);
  device.write_tensor("bias", bias_values.data(), columns * 4);
  device.run();
  const auto read = [&](Tensor t) { return read_all(device, g, t); };
  namespace ref = ops::reference;
  const std::vector<float> biased_want = ref::binary(ops::BinaryOp::kAdd, xv, bias_values);
  const std::vector<float> dact_want = ref::binary(ops::BinaryOp::kMulGeluGrad, dv, biased_want);
  EXPECT_EQ(count_equal(read(biased), biased_want), rows * columns);
  EXPECT_EQ(count_equal(read(act), ref::unary(ops::UnaryOp::kGelu, biased_want)), rows * columns);
  EXPECT_EQ(count_equal(read(dact), dact_want), rows * columns);
  const std::vector<float> sums_got = read(sums.sum);
  EXPECT_EQ(count_equal(sums_got, ref::reduce_columns(dact_want, columns, sums.partial_rows)),
            columns);
  // By hand, columns 0 and 129 (one in each slice): each run's rows in order, then the runs'
  // sums in order (32 runs: the tree's one group).
  ASSERT_LE(sums.partial_rows.size(), ops::kPartialFanIn);
  for (const size_t c : {size_t{0}, columns - 1}) {
    float total = 0;
    size_t row = 0;
    for (size_t k = 0; k < sums.partial_rows.size(); ++k) {
      float run = dact_want[row * columns + c];
      for (size_t r = 1; r < sums.partial_rows[k]; ++r) run += dact_want[(row + r) * columns + c];
      total = k == 0 ? run : total + run;
      row += sums.partial_rows[k];
    }
    EXPECT_EQ(sums_got[c], total) << c;
  }
}

// bias_gelu is binary's kAdd of a bias, unary's kGelu and the cast to f16 in one pass: the same
// bits, whichever path its codelet takes (pairs, an element alone first where the operands start
// a word past a pair, one at a time where they do not line up). Row blocks (each piece within a
// row), pieces cut at odd elements (moved to even starts by a copy, as cast moves them) and
// across rows (wrapping round the bias), and one element; the values include zeros,
// infinities, NaN, a subnormal and arguments beyond the exponential's range.
TEST(OpsElementwise, BiasGeluEqualsTheAdditionGeluAndCastBitForBit) {
  Graph g(Target::preset("mk2", 24));
  Program p = Sequence({});
  struct Case {
    size_t rows, columns;
    int layout;  // 0: row blocks; 1: evenly in 7-element grains; 2: evenly, 24 tiles; 3: one tile
  };
  const std::vector<Case> cases = {{200, 130, 0}, {37, 51, 1}, {9, 1000, 2}, {1, 1, 3}};
  struct Made {
    Tensor sum, gelu16;
    std::vector<float> x, bias;
  };
  std::vector<Made> made;
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    const Tensor x = g.add_variable(DType::kF32, {c.rows, c.columns}, fmt::format("x{}", i));
    const Tensor bias = g.add_variable(DType::kF32, {c.columns}, fmt::format("bias{}", i));
    if (c.layout == 0) ops::map_row_blocks(g, x, 0, 24);
    if (c.layout == 1) g.map_evenly(x, 2, 5, 7);
    if (c.layout == 2) g.map_evenly(x, 0, 24);
    if (c.layout == 3) g.set_tile_mapping(x, 23);
    g.set_tile_mapping(bias, static_cast<unsigned>(i));
    const ops::BiasGelu out = ops::bias_gelu(g, p, x, bias, fmt::format("bias_gelu{}", i));
    EXPECT_EQ(g.tensor(out.gelu16).type, DType::kF16);
    const auto pieces = [&](Tensor t) {
      std::vector<std::tuple<size_t, size_t, unsigned>> list;
      for (const Interval& m : g.tensor(t).mapping) list.emplace_back(m.begin, m.end, m.tile);
      return list;
    };
    // Laid out as x, each piece moved to an even start (as cast lays out an f16 result).
    EXPECT_EQ(pieces(out.sum), pieces(out.gelu16));
    for (const Interval& m : g.tensor(out.gelu16).mapping) EXPECT_EQ(m.begin % 2, 0u) << i;
    if (c.layout == 0 || c.layout == 3) {
      EXPECT_EQ(pieces(out.sum), pieces(x)) << i;
    }
    std::vector<float> xv = random_f32(c.rows * c.columns, 50 + static_cast<uint32_t>(i), -6, 6);
    const float inf = std::numeric_limits<float>::infinity();
    const float specials[] = {0.0f, -0.0f, inf, -inf, std::nanf(""), 100.0f, -100.0f, 1e-40f};
    for (size_t k = 0; k < std::size(specials) && 3 * k < xv.size(); ++k) xv[3 * k] = specials[k];
    made.push_back(
        {out.sum, out.gelu16, xv, random_f32(c.columns, 60 + static_cast<uint32_t>(i), -1, 1)});
  }
  const Executable exe = compile(g, p);
  Device device(exe);
  for (size_t i = 0; i < cases.size(); ++i) {
    device.write_tensor(fmt::format("x{}", i), made[i].x.data(), made[i].x.size() * 4);
    device.write_tensor(fmt::format("bias{}", i), made[i].bias.data(), made[i].bias.size() * 4);
  }
  device.run();
  namespace ref = ops::reference;
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::vector<float> sum_want = ref::binary(ops::BinaryOp::kAdd, made[i].x, made[i].bias);
    const std::vector<uint16_t> gelu_want =
        ref::cast_to_f16(ref::unary(ops::UnaryOp::kGelu, sum_want));
    EXPECT_EQ(count_equal(read_all(device, g, made[i].sum), sum_want), sum_want.size()) << i;
    std::vector<uint16_t> gelu_got(gelu_want.size());
    device.read_tensor(g.tensor(made[i].gelu16).name, gelu_got.data(), gelu_got.size() * 2);
    EXPECT_EQ(gelu_got, gelu_want) << i;
  }
}

// bias_residual is binary's kAdd of a bias and then of the residual, in one pass: the same bits,
// whichever path its codelet takes (pairs two a round, a pair alone, an element alone first,
// one at a time where the operands do not line up). Row blocks (each piece within a row),
// pieces cut at odd elements and across rows (wrapping round the bias, whose period is odd in
// one case), one element, and an operand laid out otherwise than the residual (copied to where
// the residual lies).
TEST(OpsElementwise, BiasResidualEqualsTheTwoAdditionsBitForBit) {
  Graph g(Target::preset("mk2", 24));
  Program p = Sequence({});
  struct Case {
    size_t rows, columns;
    int layout;  // 0: row blocks; 1: evenly in 7-element grains; 2: evenly, 24 tiles; 3: one tile
    bool a_elsewhere;  // the operand on one tile, away from the residual
  };
  const std::vector<Case> cases = {
      {200, 130, 0, false}, {37, 51, 1, false}, {9, 1000, 2, true}, {1, 1, 3, false}};
  struct Made {
    Tensor out;
    std::vector<float> a, bias, x;
  };
  std::vector<Made> made;
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    const Tensor a = g.add_variable(DType::kF32, {c.rows, c.columns}, fmt::format("a{}", i));
    const Tensor x = g.add_variable(DType::kF32, {c.rows, c.columns}, fmt::format("x{}", i));
    const Tensor bias = g.add_variable(DType::kF32, {c.columns}, fmt::format("bias{}", i));
    for (const Tensor t : {a, x}) {
      if (c.layout == 0) ops::map_row_blocks(g, t, 0, 24);
      if (c.layout == 1) g.map_evenly(t, 2, 5, 7);
      if (c.layout == 2) g.map_evenly(t, 0, 24);
      if (c.layout == 3) g.set_tile_mapping(t, 23);
    }
    if (c.a_elsewhere) g.set_tile_mapping(a, 3);
    g.set_tile_mapping(bias, static_cast<unsigned>(i));
    const Tensor out = ops::bias_residual(g, p, a, bias, x, fmt::format("residual{}", i));
    std::vector<std::tuple<size_t, size_t, unsigned>> got, want;  // laid out as x
    for (const Interval& m : g.tensor(out).mapping) got.emplace_back(m.begin, m.end, m.tile);
    for (const Interval& m : g.tensor(x).mapping) want.emplace_back(m.begin, m.end, m.tile);
    EXPECT_EQ(got, want) << i;
    const size_t n = c.rows * c.columns;
    std::vector<float> av = random_f32(n, 110 + static_cast<uint32_t>(i), -1e4f, 1e4f);
    const float inf = std::numeric_limits<float>::infinity();
    const float specials[] = {0.0f, -0.0f, inf, -inf, 1e-40f, 3e38f};
    for (size_t k = 0; k < std::size(specials) && 5 * k < av.size(); ++k) av[5 * k] = specials[k];
    made.push_back({out, av, random_f32(c.columns, 120 + static_cast<uint32_t>(i), -1, 1),
                    random_f32(n, 130 + static_cast<uint32_t>(i), -1, 1)});
  }
  const Executable exe = compile(g, p);
  Device device(exe);
  for (size_t i = 0; i < cases.size(); ++i) {
    device.write_tensor(fmt::format("a{}", i), made[i].a.data(), made[i].a.size() * 4);
    device.write_tensor(fmt::format("bias{}", i), made[i].bias.data(), made[i].bias.size() * 4);
    device.write_tensor(fmt::format("x{}", i), made[i].x.data(), made[i].x.size() * 4);
  }
  device.run();
  namespace ref = ops::reference;
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::vector<float> want = ref::binary(
        ops::BinaryOp::kAdd, ref::binary(ops::BinaryOp::kAdd, made[i].a, made[i].bias), made[i].x);
    EXPECT_EQ(count_equal(read_all(device, g, made[i].out), want), want.size()) << i;
  }
}

// gelu_grad is binary's kMulGeluGrad and the cast to f16 in one pass: the same bits, whichever
// path its codelet takes (pairs, an element alone first, one at a time where the operands do
// not line up). Row blocks, pieces cut at odd elements (moved to even starts by a copy), a
// vector, one element, and GeLU's input laid out otherwise than the gradient (copied to where
// the gradient lies); the values include zeros, infinities, NaN, a subnormal and arguments
// beyond the exponential's range.
TEST(OpsElementwise, GeluGradEqualsTheGradientProductAndCastBitForBit) {
  Graph g(Target::preset("mk2", 24));
  Program p = Sequence({});
  struct Case {
    std::vector<size_t> shape;
    int layout;  // 0: row blocks; 1: evenly in 7-element grains; 2: evenly, 24 tiles; 3: one tile
    bool x_elsewhere;  // GeLU's input on one tile, away from the gradient
  };
  const std::vector<Case> cases = {
      {{200, 130}, 0, false}, {{37, 51}, 1, false}, {{1001}, 2, true}, {{1}, 3, false}};
  struct Made {
    ops::GeluGrad out;
    std::vector<float> grad, x;
  };
  std::vector<Made> made;
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    const Tensor grad = g.add_variable(DType::kF32, c.shape, fmt::format("grad{}", i));
    const Tensor x = g.add_variable(DType::kF32, c.shape, fmt::format("x{}", i));
    for (const Tensor t : {grad, x}) {
      if (c.layout == 0) ops::map_row_blocks(g, t, 0, 24);
      if (c.layout == 1) g.map_evenly(t, 2, 5, 7);
      if (c.layout == 2) g.map_evenly(t, 0, 24);
      if (c.layout == 3) g.set_tile_mapping(t, 23);
    }
    if (c.x_elsewhere) g.set_tile_mapping(x, 3);
    const ops::GeluGrad out = ops::gelu_grad(g, p, grad, x, fmt::format("gelu_grad{}", i));
    EXPECT_EQ(g.tensor(out.dx).type, DType::kF32);
    EXPECT_EQ(g.tensor(out.dx16).type, DType::kF16);
    const auto pieces = [&](Tensor t) {
      std::vector<std::tuple<size_t, size_t, unsigned>> list;
      for (const Interval& m : g.tensor(t).mapping) list.emplace_back(m.begin, m.end, m.tile);
      return list;
    };
    EXPECT_EQ(pieces(out.dx), pieces(out.dx16));
    for (const Interval& m : g.tensor(out.dx16).mapping) EXPECT_EQ(m.begin % 2, 0u) << i;
    if (c.layout == 0 || c.layout == 3) {
      EXPECT_EQ(pieces(out.dx), pieces(grad)) << i;
    }
    const size_t n = g.tensor(grad).elements;
    std::vector<float> xv = random_f32(n, 70 + static_cast<uint32_t>(i), -6, 6);
    const float inf = std::numeric_limits<float>::infinity();
    const float specials[] = {0.0f, -0.0f, inf, -inf, std::nanf(""), 100.0f, -100.0f, 1e-40f};
    for (size_t k = 0; k < std::size(specials) && 3 * k < xv.size(); ++k) xv[3 * k] = specials[k];
    std::vector<float> gv = random_f32(n, 80 + static_cast<uint32_t>(i), -2, 2);
    if (gv.size() > 4) gv[4] = 1e-40f;  // a subnormal gradient, beside GeLU's input's
    made.push_back({out, gv, xv});
  }
  const Executable exe = compile(g, p);
  Device device(exe);
  for (size_t i = 0; i < cases.size(); ++i) {
    device.write_tensor(fmt::format("grad{}", i), made[i].grad.data(), made[i].grad.size() * 4);
    device.write_tensor(fmt::format("x{}", i), made[i].x.data(), made[i].x.size() * 4);
  }
  device.run();
  namespace ref = ops::reference;
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::vector<float> dx_want =
        ref::binary(ops::BinaryOp::kMulGeluGrad, made[i].grad, made[i].x);
    const std::vector<uint16_t> dx16_want = ref::cast_to_f16(dx_want);
    // Bit for bit, but for the NaNs GeLU's derivative makes of infinities (inf x 0): the
    // tile's is RISC-V's canonical NaN, the host's x86's default NaN, whose sign differs.
    const std::vector<float> dx_got = read_all(device, g, made[i].out.dx);
    EXPECT_EQ(count_equal_or_both_nan(dx_got, dx_want), dx_want.size()) << i;
    const auto nans = std::count_if(dx_got.begin(), dx_got.end(), [](float v) { return v != v; });
    EXPECT_EQ(nans, made[i].x.size() > 12 ? 3 : 0) << i;  // of +inf, -inf and NaN
    std::vector<uint16_t> dx16_got(dx16_want.size());
    device.read_tensor(g.tensor(made[i].out.dx16).name, dx16_got.data(), dx16_got.size() * 2);
    EXPECT_EQ(dx16_got, dx16_want) << i;
  }
}

// A layer norm's row sums are taken in six column slices added in order (ops_math.h), so one
// worker a row (12 rows on a tile) and six workers a row, a slice each (a row a tile), give the
// same bits, which the reference's. A row of 1e8 and 35 ones, by hand: left to right every one is
// lost (1e8's ulp is 8), but slices 1 to 5 each add 6, which rounds to 8: the sum is 1e8 + 40.
TEST(OpsElementwise, LayerNormTakesTheSameBitsARowAWorkerAsASliceAWorker) {
  namespace ref = ops::reference;
  Graph g(Target::preset("mk2", 16));
  constexpr size_t rows = 12, columns = 36, n = rows * columns;
  Program p = Sequence({});
  const Tensor one_tile = g.add_variable(DType::kF32, {rows, columns}, "one_tile");
  const Tensor spread = g.add_variable(DType::kF32, {rows, columns}, "spread");
  const Tensor dy = g.add_variable(DType::kF32, {rows, columns}, "dy");
  const Tensor gamma = g.add_variable(DType::kF32, {columns}, "gamma");
  const Tensor beta = g.add_variable(DType::kF32, {columns}, "beta");
  g.set_tile_mapping(one_tile, 0);
  g.map_evenly(spread, 1, 12, columns);  // a row a tile
  g.map_evenly(dy, 1, 12, columns);
  g.set_tile_mapping(gamma, 13);
  g.set_tile_mapping(beta, 14);
  const ops::LayerNorm a = ops::layer_norm(g, p, one_tile, gamma, beta, 1e-5f, "a");
  const ops::LayerNorm b = ops::layer_norm(g, p, spread, gamma, beta, 1e-5f, "b");
  const ops::LayerNormGrad da = ops::layer_norm_grad(g, p, one_tile, dy, gamma, a, "da");
  const ops::LayerNormGrad db = ops::layer_norm_grad(g, p, spread, dy, gamma, b, "db");
  // The spread one took the six-slice vertices, the other whole rows.
  const auto& sets = g.compute_sets();
  EXPECT_NE(std::find(sets.begin(), sets.end(), "b.slice_sums"), sets.end());
  EXPECT_NE(std::find(sets.begin(), sets.end(), "db.slice_sums"), sets.end());
  EXPECT_EQ(std::find(sets.begin(), sets.end(), "a.slice_sums"), sets.end());
  EXPECT_EQ(std::find(sets.begin(), sets.end(), "da.slice_sums"), sets.end());
  Device device(compile(g, p));
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  std::vector<float> xv(n), dyv(n), gv(columns), bv(columns);
  for (float& v : xv) v = dist(rng) * 100.0f;
  xv[0] = 1e8f;
  for (size_t c = 1; c < columns; ++c) xv[c] = 1.0f;
  for (float& v : dyv) v = dist(rng);
  for (float& v : gv) v = dist(rng);
  for (float& v : bv) v = dist(rng);
  device.write_tensor("one_tile", xv.data(), n * 4);
  device.write_tensor("spread", xv.data(), n * 4);
  device.write_tensor("dy", dyv.data(), n * 4);
  device.write_tensor("gamma", gv.data(), columns * 4);
  device.write_tensor("beta", bv.data(), columns * 4);
  device.run();
  const auto read = [&](Tensor t) {
    std::vector<float> v(g.tensor(t).elements);
    device.read_tensor(g.tensor(t).name, v.data(), v.size() * 4);
    return v;
  };
  std::vector<float> mean_want, inv_want;
  const std::vector<float> y_want =
      ref::layer_norm(xv, gv, bv, 1e-5f, columns, &mean_want, &inv_want);
  EXPECT_EQ(read(a.mean)[0], (1e8f + 40.0f) / 36.0f);
  EXPECT_NE(read(a.mean)[0], 1e8f / 36.0f);  // the left-to-right sum's mean
  for (const auto& [got, want] :
       {std::pair{read(a.y), y_want}, std::pair{read(b.y), y_want},
        std::pair{read(a.mean), mean_want}, std::pair{read(b.mean), mean_want},
        std::pair{read(a.inv_std), inv_want}, std::pair{read(b.inv_std), inv_want}})
    EXPECT_EQ(count_equal(got, want), want.size());
  for (const ops::LayerNormGrad* d : {&da, &db}) {
    std::vector<float> dgamma_want, dbeta_want;
    const std::vector<float> dx_want = ref::layer_norm_grad(
        xv, dyv, gv, mean_want, inv_want, columns, d->partial_rows, &dgamma_want, &dbeta_want);
    EXPECT_EQ(count_equal(read(d->dx), dx_want), n);
    EXPECT_EQ(count_equal(read(d->dgamma), dgamma_want), columns);
    EXPECT_EQ(count_equal(read(d->dbeta), dbeta_want), columns);
  }
  EXPECT_EQ(da.partial_rows, std::vector<size_t>({2, 2, 2, 2, 2, 2}));  // six vertices' rows
  EXPECT_EQ(db.partial_rows, std::vector<size_t>(12, 1));               // a row a tile
}

TEST(OpsElementwise, EveryOperationEqualsItsHostReferenceBitForBit) {
  Graph g(Target::preset("mk2", 8));
  constexpr size_t rows = 7, columns = 13, n = rows * columns;
  Program p = Sequence({});
  // x spread element by element over 5 tiles: rows cross tiles, so the row operations gather.
  const Tensor x = g.add_variable(DType::kF32, {rows, columns}, "x");
  const Tensor y = g.add_variable(DType::kF32, {rows, columns}, "y");
  const Tensor bias = g.add_variable(DType::kF32, {columns}, "bias");
  const Tensor mask = g.add_variable(DType::kF32, {columns}, "mask");
  const Tensor one = g.add_variable(DType::kF32, {1, 1}, "one");
  g.map_evenly(x, 0, 5);
  g.map_evenly(y, 2, 6);  // another mapping: the binary operation copies it beside x
  g.set_tile_mapping(bias, 7);
  g.set_tile_mapping(mask, 6);
  g.set_tile_mapping(one, 3);
  const Tensor sum = ops::binary(g, p, ops::BinaryOp::kAdd, x, y, "sum");
  const Tensor diff = ops::binary(g, p, ops::BinaryOp::kSub, x, y, "diff");
  const Tensor prod = ops::binary(g, p, ops::BinaryOp::kMul, x, y, "prod");
  const Tensor biased = ops::binary(g, p, ops::BinaryOp::kAdd, x, bias, "biased");
  const Tensor gelu_grad = ops::binary(g, p, ops::BinaryOp::kMulGeluGrad, y, x, "gelu_grad");
  const Tensor relu = ops::unary(g, p, ops::UnaryOp::kRelu, x, "relu");
  const Tensor gelu = ops::unary(g, p, ops::UnaryOp::kGelu, x, "gelu");
  const Tensor scaled = ops::unary(g, p, ops::UnaryOp::kScale, x, "scaled", 0.125f);
  const Tensor exps = ops::unary(g, p, ops::UnaryOp::kExp, x, "exps");
  const Tensor tanhs = ops::unary(g, p, ops::UnaryOp::kTanh, x, "tanhs");
  const Tensor tanh_grad = ops::binary(g, p, ops::BinaryOp::kMulTanhGrad, y, x, "tanh_grad");
  // In place, twice, as a gradient's sum over micro-batches: acc = (acc + y) + y, on tiles of its
  // own (y is copied beside it).
  const Tensor acc = g.add_variable(DType::kF32, {rows, columns}, "acc");
  g.map_evenly(acc, 1, 4);
  ops::binary_in_place(g, p, ops::BinaryOp::kAdd, acc, y, "acc_add");
  ops::binary_in_place(g, p, ops::BinaryOp::kAdd, acc, y, "acc_add_again");
  // Then scaled in place (as a gradient's sum is cleared, by 0).
  ops::unary_in_place(g, p, ops::UnaryOp::kScale, acc, "acc_scaled", -0.75f);
  const Tensor half = ops::cast(g, p, x, DType::kF16, "half");
  const Tensor back = ops::cast(g, p, half, DType::kF32, "back");
  ops::CastOptions sr;
  sr.stochastic = true;
  sr.seed = 9;
  const Tensor half_sr = ops::cast(g, p, x, DType::kF16, "half_sr", sr);
  // The same, its PRNG states salted by a step counter the host writes.
  const Tensor step = g.add_variable(DType::kU32, {1}, "step");
  g.set_tile_mapping(step, 6);
  ops::CastOptions stepped = sr;
  stepped.step = step;
  const Tensor half_step = ops::cast(g, p, x, DType::kF16, "half_step", stepped);
  const Tensor sums = ops::reduce_rows(g, p, ops::ReduceOp::kSum, x, "sums");
  const Tensor maxes = ops::reduce_rows(g, p, ops::ReduceOp::kMax, x, "maxes");
  const Tensor means = ops::reduce_rows(g, p, ops::ReduceOp::kMean, x, "means");
  const Tensor squares = ops::reduce_rows(g, p, ops::ReduceOp::kSumSquares, x, "squares");
  const Tensor soft = ops::softmax_rows(g, p, x, std::nullopt, "soft");
  const Tensor masked = ops::softmax_rows(g, p, x, mask, "masked");
  const ops::LayerNorm norm = ops::layer_norm(g, p, x, bias, mask, 1e-5f, "norm");
  const Tensor one_soft = ops::softmax_rows(g, p, one, std::nullopt, "one_soft");
  // The backward passes, dropout and the loss.
  const Tensor soft_grad = ops::softmax_grad_rows(g, p, soft, y, "soft_grad");
  const ops::LayerNormGrad norm_grad = ops::layer_norm_grad(g, p, x, y, bias, norm, "norm_grad");
  const Tensor dropped = ops::dropout(g, p, x, 0.25f, 42, "dropped");
  // Column sums of 200 rows on 8 tiles: 48 partials, more than a group of the tree's first level.
  const Tensor tall = g.add_variable(DType::kF32, {200, 3}, "tall");
  g.map_evenly(tall, 0, 8, 3);
  const ops::ColumnSums column_sums = ops::reduce_columns(g, p, tall, "column_sums");
  // Packed attention on its rows: row r is the query of token r mod 3, and tokens 0 and 1 are one
  // sequence, token 2 another. Each tile's first row is a different token.
  const Tensor ids = g.add_variable(DType::kF32, {3}, "ids");
  g.set_tile_mapping(ids, 2);
  const Tensor packed_soft = ops::softmax_rows_packed(g, p, tall, ids, "packed_soft");
  const ops::ColumnSums x_columns = ops::reduce_columns(g, p, x, "x_columns");
  const Tensor labels = g.add_variable(DType::kU32, {rows}, "labels");
  g.map_evenly(labels, 1, 3);
  const ops::CrossEntropy xent = ops::cross_entropy(g, p, x, labels, 1.0f / rows, "xent");
  // Embedding lookup and gradient, feature-major: 5 features of 11 entries, 7 indices.
  const Tensor table_t = g.add_variable(DType::kF32, {5, 11}, "table_t");
  const Tensor indices = g.add_variable(DType::kU32, {7}, "indices");
  const Tensor dout_t = g.add_variable(DType::kF32, {5, 7}, "dout_t");
  g.map_evenly(table_t, 0, 4);  // features split over tiles: gathered into whole rows first
  g.set_tile_mapping(indices, 5);
  g.map_evenly(dout_t, 2, 3);
  const Tensor looked_up = ops::embedding_lookup(g, p, table_t, indices, "lookup");
  // The same lookup from an f16 table of 12 entries (whole rows on tiles 1 to 3): widened.
  const Tensor table16_t = g.add_variable(DType::kF16, {3, 12}, "table16_t");
  g.map_evenly(table16_t, 1, 3, 12);
  const Tensor looked_up16 = ops::embedding_lookup(g, p, table16_t, indices, "lookup16");
  const Tensor table_grad = ops::embedding_grad(g, p, dout_t, indices, 11, "lookup_grad");
  // The same gradient laid out as the table, whose pieces cut the feature rows.
  const Tensor table_grad_like =
      ops::embedding_grad(g, p, dout_t, indices, 11, "lookup_grad_like", table_t);
  const Tensor xt = ops::transpose(g, p, x, "xt");
  const Tensor tokens = ops::transpose(g, p, looked_up, "tokens");  // token-major: [7 x 5]
  // One Adam step and one LAMB step (with weight decay) on parameters laid out as x.
  std::vector<Tensor> params;
  for (const char* t : {"w1", "m1", "v1", "w2", "m2", "v2"}) {
    params.push_back(g.add_variable(DType::kF32, {rows, columns}, t));
    g.set_tile_mapping(params.back(), g.tensor(x).mapping);
  }
  const Tensor corrections = g.add_variable(DType::kF32, {2}, "corrections");
  g.set_tile_mapping(corrections, 4);
  ops::AdamOptions adam_options;
  adam_options.learning_rate = 0.01f;
  ops::adam(g, p, params[0], y, params[1], params[2], corrections, adam_options, "adam");
  ops::AdamOptions lamb_options = adam_options;
  lamb_options.lamb = true;
  lamb_options.weight_decay = 0.01f;
  // LAMB reads the corrections from a copy on every tile (copies_on_tiles), made once.
  const std::vector<unsigned> all_tiles = {0, 1, 2, 3, 4, 5, 6, 7};
  const Tensor corrections_here = ops::copies_on_tiles(g, p, corrections, all_tiles, "corr_tiles");
  ops::adam(g, p, params[3], y, params[4], params[5], corrections_here, lamb_options, "lamb");
  // The salted cast again, its step read from copies on the tiles.
  ops::CastOptions stepped_here = sr;
  stepped_here.step = ops::copies_on_tiles(g, p, step, all_tiles, "step_tiles");
  ops::cast(g, p, x, DType::kF16, "half_step_here", stepped_here);
  const Executable exe = compile(g, p);
  Device device(exe);

  // Values over the ranges the functions treat differently: large for e^x's limits and GeLU's
  // tails, exact halves and f16's overflow for the cast.
  std::vector<float> xv = random_f32(n, 1, -12.0f, 12.0f), yv = random_f32(n, 2, -3.0f, 3.0f);
  xv[0] = 100.0f, xv[1] = -100.0f, xv[2] = 70000.0f, xv[3] = -0.0f, xv[4] = 1.0f + 1.0f / 2048;
  xv[5] = 6.1e-5f, xv[6] = 3e-8f, xv[7] = 65519.0f, xv[8] = 65520.0f;
  const std::vector<float> bv = random_f32(columns, 3, -1.0f, 1.0f);
  std::vector<float> mv(columns, 0.0f);
  mv[3] = mv[11] = -10000.0f;  // masked positions
  const float onev = 2.5f;
  device.write_tensor("x", xv.data(), n * 4);
  device.write_tensor("y", yv.data(), n * 4);
  device.write_tensor("bias", bv.data(), columns * 4);
  device.write_tensor("mask", mv.data(), columns * 4);
  device.write_tensor("one", &onev, 4);
  const std::vector<float> accv = random_f32(n, 10, -4.0f, 4.0f);
  device.write_tensor("acc", accv.data(), n * 4);
  // 99: outside a row; the last, ignored.
  const std::vector<uint32_t> label_values = {0, 12, 5, 99, 7, 1, ops::kIgnoredLabel};
  device.write_tensor("labels", label_values.data(), rows * 4);
  std::vector<float> w1 = random_f32(n, 4, -1.0f, 1.0f), m1 = random_f32(n, 5, -0.1f, 0.1f),
                     v1 = random_f32(n, 6, 0.0f, 0.01f);
  std::vector<float> w2 = w1, m2 = m1, v2 = v1;
  const float corr[2] = {1.0f / (1.0f - 0.9f * 0.9f), 1.0f / (1.0f - 0.999f * 0.999f)};  // t = 2
  for (const char* t : {"w1", "w2"}) device.write_tensor(t, w1.data(), n * 4);
  for (const char* t : {"m1", "m2"}) device.write_tensor(t, m1.data(), n * 4);
  for (const char* t : {"v1", "v2"}) device.write_tensor(t, v1.data(), n * 4);
  device.write_tensor("corrections", corr, 8);
  const std::vector<float> tall_values = random_f32(600, 9, -1.0f, 1.0f);
  device.write_tensor("tall", tall_values.data(), 600 * 4);
  const uint32_t step_value = 7;
  device.write_tensor("step", &step_value, 4);
  const std::vector<float> id_values = {1.0f, 1.0f, 2.0f};
  device.write_tensor("ids", id_values.data(), 3 * 4);
  const std::vector<float> table_values = random_f32(55, 7, -1.0f, 1.0f),
                           dout_values = random_f32(35, 8, -1.0f, 1.0f);
  const std::vector<uint32_t> index_values = {3, 0, 10, 3, 12, 7, 3};  // 12: outside the table
  device.write_tensor("table_t", table_values.data(), 55 * 4);
  // Normal, subnormal (0x0001, 0x83ff), zero, infinity and NaN entries among random ones.
  std::vector<uint16_t> table16_values =
      ops::reference::cast_to_f16(random_f32(36, 9, -4.0f, 4.0f));
  table16_values[3] = 0x0001, table16_values[12] = 0x83ff, table16_values[15] = 0x7c00;
  table16_values[24] = 0x7e01, table16_values[27] = 0x8000;
  device.write_tensor("table16_t", table16_values.data(), 36 * 2);
  device.write_tensor("indices", index_values.data(), 7 * 4);
  device.write_tensor("dout_t", dout_values.data(), 35 * 4);
  device.run();
  auto read = [&](Tensor t) {
    const TensorInfo& info = g.tensor(t);
    std::vector<float> out(info.elements);
    device.read_tensor(info.name, out.data(), out.size() * 4);
    return out;
  };
  using ops::BinaryOp;
  using ops::ReduceOp;
  using ops::UnaryOp;
  namespace ref = ops::reference;
  const struct {
    Tensor t;
    std::vector<float> want;
  } checks[] = {
      {sum, ref::binary(BinaryOp::kAdd, xv, yv)},
      {diff, ref::binary(BinaryOp::kSub, xv, yv)},
      {prod, ref::binary(BinaryOp::kMul, xv, yv)},
      {biased, ref::binary(BinaryOp::kAdd, xv, bv)},
      {gelu_grad, ref::binary(BinaryOp::kMulGeluGrad, yv, xv)},
      {relu, ref::unary(UnaryOp::kRelu, xv)},
      {gelu, ref::unary(UnaryOp::kGelu, xv)},
      {scaled, ref::unary(UnaryOp::kScale, xv, 0.125f)},
      {exps, ref::unary(UnaryOp::kExp, xv)},
      {tanhs, ref::unary(UnaryOp::kTanh, xv)},
      {tanh_grad, ref::binary(BinaryOp::kMulTanhGrad, yv, xv)},
      {acc,
       ref::unary(ops::UnaryOp::kScale,
                  ref::binary(BinaryOp::kAdd, ref::binary(BinaryOp::kAdd, accv, yv), yv), -0.75f)},
      {sums, ref::reduce_rows(ReduceOp::kSum, xv, columns)},
      {maxes, ref::reduce_rows(ReduceOp::kMax, xv, columns)},
      {means, ref::reduce_rows(ReduceOp::kMean, xv, columns)},
      {squares, ref::reduce_rows(ReduceOp::kSumSquares, xv, columns)},
      {soft, ref::softmax_rows(xv, nullptr, columns)},
      {masked, ref::softmax_rows(xv, &mv, columns)},
      {one_soft, {1.0f}},
      {packed_soft, ref::softmax_rows_packed(tall_values, id_values, 3)},
  };
  for (const auto& c : checks) {
    const std::vector<float> got = read(c.t);
    ASSERT_EQ(got.size(), c.want.size()) << g.tensor(c.t).name;
    EXPECT_EQ(count_equal(got, c.want), c.want.size()) << g.tensor(c.t).name;
  }
  // The query of token 2 (rows 2, 5, ...) sees only itself; tokens 0 and 1 never see token 2.
  const std::vector<float> packed = read(packed_soft);
  for (size_t r = 0; r < 200; ++r) {
    if (r % 3 == 2) {
      EXPECT_EQ(std::vector<float>(&packed[r * 3], &packed[r * 3] + 3),
                (std::vector<float>{0.0f, 0.0f, 1.0f}));
    } else {
      EXPECT_EQ(packed[r * 3 + 2], 0.0f);
    }
  }
  std::vector<float> mean_want, inv_want;
  const std::vector<float> norm_want =
      ref::layer_norm(xv, bv, mv, 1e-5f, columns, &mean_want, &inv_want);
  EXPECT_EQ(count_equal(read(norm.y), norm_want), n);
  EXPECT_EQ(count_equal(read(norm.mean), mean_want), rows);
  EXPECT_EQ(count_equal(read(norm.inv_std), inv_want), rows);
  const std::vector<float> soft_want = ref::softmax_rows(xv, nullptr, columns);
  EXPECT_EQ(count_equal(read(soft_grad), ref::softmax_grad_rows(soft_want, yv, columns)), n);
  std::vector<float> dgamma_want, dbeta_want;
  const std::vector<float> dx_want = ref::layer_norm_grad(
      xv, yv, bv, mean_want, inv_want, columns, norm_grad.partial_rows, &dgamma_want, &dbeta_want);
  EXPECT_EQ(count_equal(read(norm_grad.dx), dx_want), n);
  EXPECT_EQ(count_equal(read(norm_grad.dgamma), dgamma_want), columns);
  EXPECT_EQ(count_equal(read(norm_grad.dbeta), dbeta_want), columns);
  EXPECT_GT(norm_grad.partial_rows.size(), 1u);  // the rows' sums came from several tiles
  EXPECT_GT(column_sums.partial_rows.size(), ops::kPartialFanIn);
  const std::vector<float> column_want =
      ref::reduce_columns(tall_values, 3, column_sums.partial_rows);
  EXPECT_EQ(count_equal(read(column_sums.sum), column_want), 3u);
  // By hand: the tree's grouping is (first 32 partials in order) + (the other 16 in order).
  std::vector<float> parts;
  size_t row = 0;
  for (size_t rows_in : column_sums.partial_rows) {
    for (size_t c = 0; c < 3; ++c) {
      float s = tall_values[row * 3 + c];
      for (size_t r = 1; r < rows_in; ++r) s += tall_values[(row + r) * 3 + c];
      parts.push_back(s);
    }
    row += rows_in;
  }
  for (size_t c = 0; c < 3; ++c) {
    float first = parts[c], second = parts[32 * 3 + c];
    for (size_t k = 1; k < 32; ++k) first += parts[k * 3 + c];
    for (size_t k = 33; k < column_sums.partial_rows.size(); ++k) second += parts[k * 3 + c];
    EXPECT_EQ(column_want[c], first + second) << c;
  }
  EXPECT_EQ(
      count_equal(read(x_columns.sum), ref::reduce_columns(xv, columns, x_columns.partial_rows)),
      columns);
  const std::vector<float> dropped_got = read(dropped);
  EXPECT_EQ(count_equal(dropped_got, ref::dropout(xv, ops::element_ranges(g, x), 0.25f, 42)), n);
  const size_t kept = static_cast<size_t>(
      std::count_if(dropped_got.begin(), dropped_got.end(), [](float v) { return v != 0.0f; }));
  EXPECT_GT(kept, n / 2);
  EXPECT_LT(kept, n);
  std::vector<float> loss_want;
  const std::vector<float> dlogits_want =
      ref::cross_entropy(xv, label_values, columns, 1.0f / rows, &loss_want);
  EXPECT_EQ(count_equal(read(xent.dlogits), dlogits_want), n);
  const std::vector<float> loss_got = read(xent.loss);
  for (size_t r = 0; r < rows; ++r) {
    if (r == 3) {
      EXPECT_TRUE(std::isnan(loss_got[r]));
    } else if (r == 6) {  // ignored: no loss and no gradient
      EXPECT_EQ(loss_got[r], 0.0f);
      const std::vector<float> dlogits = read(xent.dlogits);
      EXPECT_EQ(std::vector<float>(dlogits.begin() + 6 * columns, dlogits.end()),
                std::vector<float>(columns, 0.0f));
    } else {
      EXPECT_EQ(std::memcmp(&loss_got[r], &loss_want[r], 4), 0) << r;
      EXPECT_GE(loss_got[r], 0.0f);
    }
  }
  const std::vector<float> lookup_got = read(looked_up),
                           lookup_want = ref::embedding_lookup(table_values, 11, index_values);
  for (size_t i = 0; i < 35; ++i) {
    if (i % 7 == 4) {
      EXPECT_TRUE(std::isnan(lookup_got[i])) << i;  // the index outside the table
    } else {
      EXPECT_EQ(std::memcmp(&lookup_got[i], &lookup_want[i], 4), 0) << i;
    }
  }
  EXPECT_EQ(count_equal(read(table_grad), ref::embedding_grad(dout_values, index_values, 11)), 55u);
  EXPECT_TRUE(ops::same_mapping(g.tensor(table_grad_like).mapping, g.tensor(table_t).mapping));
  const std::vector<float> grad_like = read(table_grad_like);
  EXPECT_EQ(count_equal(grad_like, ref::embedding_grad(dout_values, index_values, 11)), 55u);
  // Feature 2, entry 3: rows 0, 3 and 6 looked it up, added from 0 in order; entry 1: none.
  EXPECT_EQ(grad_like[2 * 11 + 3],
            ((0.0f + dout_values[2 * 7 + 0]) + dout_values[2 * 7 + 3]) + dout_values[2 * 7 + 6]);
  EXPECT_EQ(grad_like[2 * 11 + 1], 0.0f);
  const std::vector<float> lookup16_got = read(looked_up16),
                           lookup16_want = ref::embedding_lookup(ref::widen_f16(table16_values), 12,
                                                                 index_values);
  ASSERT_EQ(lookup16_got.size(), 21u);
  for (size_t i = 0; i < 21; ++i) {
    if (i % 7 == 4) {
      EXPECT_TRUE(std::isnan(lookup16_got[i])) << i;  // the index outside the table
    } else {
      EXPECT_EQ(std::memcmp(&lookup16_got[i], &lookup16_want[i], 4), 0) << i;
    }
  }
  // Out [3 x 7]: index 3 (at 0) looks up f16's smallest subnormal in row 0 and infinity in row
  // 1; index 0 (at 1) the largest negative subnormal in row 1, and a NaN in row 2, widened to
  // the canonical NaN.
  EXPECT_EQ(lookup16_got[0], std::ldexp(1.0f, -24));
  EXPECT_EQ(lookup16_got[7], std::numeric_limits<float>::infinity());
  EXPECT_EQ(lookup16_got[8], -1023 * std::ldexp(1.0f, -24));
  uint32_t nan_bits = 0;
  std::memcpy(&nan_bits, &lookup16_got[15], 4);
  EXPECT_EQ(nan_bits, 0x7fc00000u);
  EXPECT_TRUE(std::signbit(lookup16_got[14]) && lookup16_got[14] == 0.0f);  // -0
  const std::vector<float> xt_got = read(xt), tokens_got = read(tokens);
  for (size_t r = 0; r < rows; ++r)
    for (size_t c = 0; c < columns; ++c) EXPECT_EQ(xt_got[c * rows + r], xv[r * columns + c]);
  for (size_t r = 0; r < 7; ++r)
    for (size_t h = 0; h < 5; ++h)
      EXPECT_EQ(std::memcmp(&tokens_got[r * 5 + h], &lookup_got[h * 7 + r], 4), 0);
  const auto ranges = ops::element_ranges(g, params[0]);
  ref::adam(w1, yv, m1, v1, corr, adam_options, ranges);
  ref::adam(w2, yv, m2, v2, corr, lamb_options, ranges);
  const std::pair<const char*, const std::vector<float>*> updated[] = {
      {"w1", &w1}, {"m1", &m1}, {"v1", &v1}, {"w2", &w2}, {"m2", &m2}, {"v2", &v2}};
  for (const auto& [t, want] : updated) {
    std::vector<float> got(n);
    device.read_tensor(t, got.data(), n * 4);
    EXPECT_EQ(count_equal(got, *want), n) << t;
  }
  EXPECT_NE(count_equal(w1, w2), n);  // the trust ratio and decay changed LAMB's step
  // The cast: the reference's rounding, and back exactly.
  std::vector<uint16_t> halves(n);
  device.read_tensor("half", halves.data(), n * 2);
  EXPECT_EQ(halves, ref::cast_to_f16(xv));
  EXPECT_EQ(halves[2], 0x7c00);  // 70000 overflows to infinity
  EXPECT_EQ(halves[3], 0x8000);  // -0 stays negative
  EXPECT_EQ(halves[4], 0x3c00);  // 1 + 2^-11: a tie, to even
  EXPECT_EQ(halves[7], 0x7bff);  // 65519 rounds down to f16's largest
  EXPECT_EQ(halves[8], 0x7c00);  // 65520 rounds up to infinity
  std::vector<uint16_t> stochastic(n);
  device.read_tensor("half_sr", stochastic.data(), n * 2);
  EXPECT_EQ(stochastic, ref::cast_to_f16_stochastic(xv, ops::element_ranges(g, half_sr, 2), 9));
  EXPECT_NE(stochastic, halves);  // some values rounded the other way
  std::vector<uint16_t> salted(n);
  device.read_tensor("half_step", salted.data(), n * 2);
  const auto step_ranges = ops::element_ranges(g, half_step, 2);
  EXPECT_EQ(salted, ref::cast_to_f16_stochastic(xv, step_ranges, 9, 7));
  std::vector<uint16_t> salted_here(n);
  device.read_tensor("half_step_here", salted_here.data(), n * 2);
  EXPECT_EQ(salted_here, salted);
  EXPECT_NE(salted, stochastic);  // other random bits: some values rounded the other way
  EXPECT_NE(ref::cast_to_f16_stochastic(xv, step_ranges, 9, 8), salted);
  EXPECT_EQ(stochastic[4] == 0x3c00 || stochastic[4] == 0x3c01, true);  // a neighbour of 1 + 2^-11
  const std::vector<float> widened = read(back);
  for (size_t i = 0; i < n; ++i)
    if (std::isfinite(widened[i])) {
      EXPECT_LE(std::fabs(widened[i] - xv[i]), std::fabs(xv[i]) / 1024 + 6e-8f) << i;
    }
  // Softmax rows sum to about 1, and the masked positions are 0.
  const std::vector<float> m = read(masked);
  for (size_t r = 0; r < rows; ++r) {
    EXPECT_EQ(m[r * columns + 3], 0.0f);
    EXPECT_EQ(m[r * columns + 11], 0.0f);
  }
}

// LAMB on shards (replicated tensor sharding): each of 4 replicas holds a different shard of
// one tensor, and the trust ratio is the whole tensor's because the shards' sums of squares are
// all-reduced before it. The host: lamb_direction on each shard, the four pairs of sums added in
// the ring's order, lamb_apply; and the ratio differs from a shard's own.
TEST(OpsElementwise, LambOnShardsTakesTheWholeTensorsTrustRatio) {
  constexpr unsigned R = 4;
  constexpr size_t n = 37;  // a replica's shard, over 3 tiles
  Graph g(Target::preset("m2000", 4, R));
  Program p = Sequence({});
  const Tensor w = g.add_variable(DType::kF32, {n}, "w");
  const Tensor grad = g.add_variable(DType::kF32, {n}, "grad");
  const Tensor m = g.add_variable(DType::kF32, {n}, "m");
  const Tensor v = g.add_variable(DType::kF32, {n}, "v");
  const Tensor corrections = g.add_variable(DType::kF32, {2}, "corrections");
  for (Tensor t : {w, grad, m, v}) g.map_evenly(t, 0, 3);
  g.set_tile_mapping(corrections, 3);
  ops::AdamOptions o;
  o.lamb = true;
  o.weight_decay = 0.01f;
  o.learning_rate = 0.05f;
  o.norms_across_replicas = true;
  ops::adam(g, p, w, grad, m, v, corrections, o, "lamb");
  Device device(compile(g, p));
  const float corr[2] = {10.0f, 1000.0f};
  std::vector<std::vector<float>> ws(R), gs(R), ms(R), vs(R), us(R), sums(R);
  for (unsigned r = 0; r < R; ++r) {
    // Shards of different scales, so that each one's own ratio differs from the whole's.
    const float scale = static_cast<float>(r + 1);
    ws[r] = random_f32(n, 10 + r, -scale, scale);
    gs[r] = random_f32(n, 20 + r, -1.0f, 1.0f);
    ms[r] = random_f32(n, 30 + r, -0.1f, 0.1f);
    vs[r] = random_f32(n, 40 + r, 0.0f, 0.01f);
    for (const auto& [name, values] : {std::pair{"w", &ws[r]}, std::pair{"grad", &gs[r]},
                                       std::pair{"m", &ms[r]}, std::pair{"v", &vs[r]}})
      device.write_tensor(name, r, values->data(), n * 4);
    device.write_tensor("corrections", r, corr, 8);
  }
  device.run();
  const auto ranges = ops::element_ranges(g, w);
  std::vector<float> own_ratio_w = ws[0], own_m = ms[0], own_v = vs[0];
  ops::reference::adam(
      own_ratio_w, gs[0], own_m, own_v, corr,
      [&] {
        ops::AdamOptions alone = o;
        alone.norms_across_replicas = false;
        return alone;
      }(),
      ranges);
  for (unsigned r = 0; r < R; ++r)
    sums[r] = ops::reference::lamb_direction(ws[r], gs[r], ms[r], vs[r], us[r], corr, o, ranges);
  const std::vector<float> total = all_reduce_sum_reference(g.target(), sums, {});  // 2 values
  for (unsigned r = 0; r < R; ++r) {
    ops::reference::lamb_apply(ws[r], us[r], total, o);
    for (const auto& [name, want] :
         {std::pair{"w", &ws[r]}, std::pair{"m", &ms[r]}, std::pair{"v", &vs[r]}}) {
      std::vector<float> got(n);
      device.read_tensor(name, r, got.data(), n * 4);
      EXPECT_EQ(count_equal(got, *want), n) << name << " of replica " << r;
    }
  }
  EXPECT_NE(count_equal(own_ratio_w, ws[0]), n) << "the whole tensor's ratio is not the shard's";
}

TEST(OpsElementwise, TheMathFunctionsAreCloseToTheLibraryOnes) {
  // e^x is the tile's ipu.f32exp, rounded to nearest from double: equal to double's e^x
  // rounded to f32 on a grid (double's own error is far below a tie's distance), up to the top
  // of f32's range and down through its subnormals.
  for (float x = -103.0f; x <= 88.7f; x += 0.37f) {
    const float want = static_cast<float>(std::exp(static_cast<double>(x)));
    EXPECT_EQ(ops::reference::unary(ops::UnaryOp::kExp, {x})[0], want) << x;
  }
  EXPECT_EQ(ops::reference::unary(ops::UnaryOp::kExp, {88.8f})[0], INFINITY);
  EXPECT_GT(ops::reference::unary(ops::UnaryOp::kExp, {-87.4f})[0], 0.0f);  // subnormal
  EXPECT_EQ(ops::reference::unary(ops::UnaryOp::kExp, {-104.0f})[0], 0.0f);
  for (float x = 1e-30f; x < 1e30f; x *= 3.7f)
    EXPECT_NEAR(ipu_ops_logf(x), std::log(static_cast<double>(x)),
                4e-7 * std::fabs(std::log(x)) + 2e-7)
        << x;
  for (float x = -6.0f; x <= 6.0f; x += 0.05f) {
    const double want = 0.5 * x * (1 + std::tanh(0.7978845608 * (x + 0.044715 * x * x * x)));
    EXPECT_NEAR(ops::reference::unary(ops::UnaryOp::kGelu, {x})[0], want,
                1e-6 + std::fabs(want) * 1e-6)
        << x;
    // Its derivative, from tanh in double: 0.5 (1 + t) + 0.5 x (1 - t^2) u'.
    const double u = 0.7978845608 * (x + 0.044715 * x * x * x), t = std::tanh(u);
    const double slope =
        0.5 * (1 + t) + 0.5 * x * (1 - t * t) * 0.7978845608 * (1 + 3 * 0.044715 * x * x);
    EXPECT_NEAR(ops::reference::binary(ops::BinaryOp::kMulGeluGrad, {1.0f}, {x})[0], slope,
                2e-6 + std::fabs(slope) * 1e-6)
        << x;
  }
  // Far out, GeLU is x or -0 and its derivative 1 or 0, with no NaN from e^x's overflow.
  EXPECT_EQ(ops::reference::unary(ops::UnaryOp::kGelu, {30.0f})[0], 30.0f);
  EXPECT_EQ(ops::reference::unary(ops::UnaryOp::kGelu, {-30.0f})[0], 0.0f);
  EXPECT_EQ(ops::reference::binary(ops::BinaryOp::kMulGeluGrad, {1.0f}, {30.0f})[0], 1.0f);
  EXPECT_EQ(ops::reference::binary(ops::BinaryOp::kMulGeluGrad, {1.0f}, {-30.0f})[0], 0.0f);
}

// Gradients added to their sums over three micro-batches (three runs of one program), each
// sum's bits against the host's after every run: an f16 sum rounded to nearest and one rounded
// stochastically (its random bits new each run: the ranges' counts of earlier calls salt
// them), an f32 sum, a gradient laid out otherwise (copied beside its sum first), and an f16
// and an f32 tensor cleared. 1,001 elements over 5 tiles (uneven pieces of whole words, an odd
// end).
TEST(OpsElementwise, GradientSumsAccumulateInF16AsTheHostDoes) {
  constexpr size_t n = 1001;
  Graph g(Target::preset("mk2", 8));
  Program p = Sequence({});
  const Tensor grad = g.add_variable(DType::kF32, {n}, "grad");
  const Tensor grad_elsewhere = g.add_variable(DType::kF32, {n}, "grad_elsewhere");
  const Tensor nearest = g.add_variable(DType::kF16, {n}, "nearest");
  const Tensor stochastic = g.add_variable(DType::kF16, {n}, "stochastic");
  const Tensor wide = g.add_variable(DType::kF32, {n}, "wide");
  const Tensor cleared = g.add_variable(DType::kF16, {n}, "cleared");
  const Tensor cleared_wide = g.add_variable(DType::kF32, {n}, "cleared_wide");
  for (Tensor t : {grad, nearest, stochastic, wide, cleared, cleared_wide})
    g.map_evenly(t, 0, 5, 2);
  g.map_evenly(grad_elsewhere, 5, 3);
  ops::accumulate(g, p, nearest, grad, "add_nearest");
  ops::AccumulateOptions sr;
  sr.stochastic = true;
  sr.seed = 21;
  ops::accumulate(g, p, stochastic, grad_elsewhere, "add_stochastic", sr);
  ops::accumulate(g, p, wide, grad, "add_wide");
  ops::zero(g, p, cleared, "clear");
  ops::zero(g, p, cleared_wide, "clear_wide");
  Device device(compile(g, p));
  namespace ref = ops::reference;
  // Sums near 1 with gradients far below their last place: rounding to nearest loses them all,
  // stochastic rounding keeps them on average.
  std::vector<uint16_t> want_nearest(n, 0x3c00), want_stochastic(n, 0x3c00), ones(n, 0x3c00);
  std::vector<float> want_wide(n, 0.0f);
  device.write_tensor("nearest", want_nearest.data(), n * 2);
  device.write_tensor("stochastic", want_stochastic.data(), n * 2);
  device.write_tensor("cleared", ones.data(), n * 2);
  // An f32 sum that overflowed is cleared too: NaN, infinities, a negative value all become +0.
  const float specials[] = {std::nanf(""), INFINITY, -INFINITY, -1.5f, 1e-45f};
  std::vector<float> wide_specials(n);
  for (size_t i = 0; i < n; ++i) wide_specials[i] = specials[i % 5];
  device.write_tensor("cleared_wide", wide_specials.data(), n * 4);
  const auto ranges = ops::element_ranges(g, stochastic, 2);
  for (uint32_t call = 0; call < 3; ++call) {
    const std::vector<float> gv = random_f32(n, 50 + call, -2e-4f, 2e-4f);
    device.write_tensor("grad", gv.data(), n * 4);
    device.write_tensor("grad_elsewhere", gv.data(), n * 4);
    device.run();
    want_nearest = ref::accumulate_f16(want_nearest, gv, ranges, false, 0, call);
    want_stochastic = ref::accumulate_f16(want_stochastic, gv, ranges, true, 21, call);
    want_wide = ref::binary(ops::BinaryOp::kAdd, want_wide, gv);
    std::vector<uint16_t> got_nearest(n), got_stochastic(n), got_cleared(n);
    std::vector<float> got_wide(n);
    device.read_tensor("nearest", got_nearest.data(), n * 2);
    device.read_tensor("stochastic", got_stochastic.data(), n * 2);
    device.read_tensor("wide", got_wide.data(), n * 4);
    device.read_tensor("cleared", got_cleared.data(), n * 2);
    EXPECT_EQ(got_nearest, want_nearest) << "call " << call;
    EXPECT_EQ(got_stochastic, want_stochastic) << "call " << call;
    EXPECT_EQ(count_equal(got_wide, want_wide), n) << "call " << call;
    EXPECT_EQ(got_cleared, std::vector<uint16_t>(n, 0)) << "call " << call;
    std::vector<uint32_t> got_cleared_wide(n);
    device.read_tensor("cleared_wide", got_cleared_wide.data(), n * 4);
    EXPECT_EQ(got_cleared_wide, std::vector<uint32_t>(n, 0)) << "call " << call;
  }
  // Each call drew new bits: the same additions salted with another count round otherwise.
  EXPECT_NE(want_stochastic,
            ref::accumulate_f16(
                ref::accumulate_f16(ref::accumulate_f16(ones, random_f32(n, 50, -2e-4f, 2e-4f),
                                                        ranges, true, 21, 0),
                                    random_f32(n, 51, -2e-4f, 2e-4f), ranges, true, 21, 0),
                random_f32(n, 52, -2e-4f, 2e-4f), ranges, true, 21, 0));
  // Below half of 1's last place (2^-11), every nearest addition left the sum at 1; the
  // stochastic sums moved, and their mean stays within a last place of 1 + the gradients' sum.
  EXPECT_EQ(want_nearest, ones);
  double drift = 0;
  size_t moved = 0;
  const std::vector<float> got = ref::widen_f16(want_stochastic);
  for (size_t i = 0; i < n; ++i) {
    drift += got[i] - 1.0 - want_wide[i];
    moved += want_stochastic[i] != 0x3c00;
  }
  EXPECT_GT(moved, n / 10);
  EXPECT_LT(std::fabs(drift / n), 1e-4);
}

TEST(OpsElementwise, BadOperandsAreRefused) {
  Graph g(Target::preset("mk2", 4));
  Program p = Sequence({});
  const Tensor a = g.add_variable(DType::kF32, {4, 6}, "a");
  const Tensor b = g.add_variable(DType::kF32, {5}, "b");
  const Tensor h = g.add_variable(DType::kF16, {4, 6}, "h");
  const Tensor v = g.add_variable(DType::kF32, {6}, "v");
  const Tensor unmapped = g.add_variable(DType::kF32, {4, 6}, "unmapped");
  for (Tensor t : {a, b, h, v}) g.map_evenly(t, 0, 2, 2);
  auto message = [&](auto&& f) {
    try {
      f();
    } catch (const GraphError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message([&] { ops::binary(g, p, ops::BinaryOp::kAdd, a, b, "add"); }),
            "add: 'a' [4 x 6] and 'b' [5] do not match: b must have a's shape or be a vector of "
            "a's last dimension");
  EXPECT_EQ(message([&] { ops::binary(g, p, ops::BinaryOp::kAdd, a, h, "add"); }),
            "add: operand b 'h' is f16; the operation takes f32");
  EXPECT_EQ(message([&] { ops::unary(g, p, ops::UnaryOp::kRelu, unmapped, "relu"); }),
            "relu: operand 'unmapped' is not mapped to tiles");
  EXPECT_EQ(message([&] { ops::bias_gelu(g, p, a, b, "ffn"); }),
            "ffn: bias 'b' [5] must be a vector of 'a' [4 x 6]'s last dimension");
  EXPECT_EQ(message([&] { ops::bias_gelu(g, p, a, a, "ffn"); }),
            "ffn: bias 'a' [4 x 6] must be a vector of 'a' [4 x 6]'s last dimension");
  EXPECT_EQ(message([&] { ops::bias_gelu(g, p, h, v, "ffn"); }),
            "ffn: operand 'h' is f16; the operation takes f32");
  EXPECT_EQ(message([&] { ops::bias_residual(g, p, a, b, a, "res"); }),
            "res: bias 'b' [5] must be a vector of 'a' [4 x 6]'s last dimension");
  EXPECT_EQ(message([&] { ops::bias_residual(g, p, a, v, v, "res"); }),
            "res: residual 'v' [6] and operand 'a' [4 x 6] must have one shape");
  EXPECT_EQ(message([&] { ops::bias_residual(g, p, a, v, h, "res"); }),
            "res: residual 'h' is f16; the operation takes f32");
  EXPECT_EQ(message([&] { ops::gelu_grad(g, p, a, v, "dgelu"); }),
            "dgelu: gradient 'a' [4 x 6] and GeLU's input 'v' [6] must have one shape");
  EXPECT_EQ(message([&] { ops::gelu_grad(g, p, h, h, "dgelu"); }),
            "dgelu: gradient 'h' is f16; the operation takes f32");
  EXPECT_EQ(message([&] { ops::gelu_grad(g, p, a, unmapped, "dgelu"); }),
            "dgelu: GeLU's input 'unmapped' is not mapped to tiles");
  EXPECT_EQ(message([&] { ops::cast(g, p, v, DType::kI32, "cast"); }),
            "cast: no cast from f32 to i32 ('v'); the casts are f32 <-> f16");
  // Side-by-side column sums whose columns leave a gap in the result, or differ in rows.
  const auto rows_of_a = [&](size_t n) {
    std::vector<Region> out;
    for (size_t r = 0; r < n; ++r) out.push_back(g.region(a, r * 6, r * 6 + 3));
    return out;
  };
  EXPECT_EQ(message([&] {
              ops::sum_partials(g, p, {{rows_of_a(4), 3, 0}, {rows_of_a(4), 3, 4}}, 7, "sums");
            }),
            "sums: the partial sums' columns do not cover the 7 result columns once each (from "
            "3)");
  EXPECT_EQ(message([&] {
              ops::sum_partials(g, p, {{rows_of_a(4), 3, 0}, {rows_of_a(2), 3, 3}}, 6, "sums");
            }),
            "sums: partial sums 1 have 2 rows of 3 columns, where the first have 4 rows");
  EXPECT_EQ(message([&] { ops::reduce_rows(g, p, ops::ReduceOp::kSum, v, "sum"); }),
            "sum: 'v' must be a matrix [rows x columns], not 1 dimensions");
  EXPECT_EQ(message([&] { ops::softmax_rows(g, p, a, b, "soft"); }),
            "soft: mask 'b' must be a vector of 6 (a row of 'a')");
  EXPECT_EQ(message([&] { ops::softmax_grad_rows(g, p, a, a, "dsoft", 0.5f, DType::kI32); }),
            "dsoft: the gradient's type must be f32 or f16, not i32");
  EXPECT_EQ(message([&] { ops::layer_norm(g, p, a, v, v, 0.0f, "norm"); }),
            "norm: eps must be positive, not 0");
  EXPECT_EQ(message([&] { ops::accumulate(g, p, h, h, "acc"); }),
            "acc: gradient 'h' is f16; the operation takes f32");
  EXPECT_EQ(message([&] { ops::accumulate(g, p, h, b, "acc"); }),
            "acc: gradient 'b' is [5], its sum 'h' [4 x 6]");
  const Tensor u = g.add_variable(DType::kU32, {2}, "u");
  g.set_tile_mapping(u, 0);
  EXPECT_EQ(message([&] { ops::zero(g, p, u, "clear"); }),
            "clear: operand 'u' is u32; the operation takes f16");
  const Tensor m_other = g.add_variable(DType::kF32, {4, 6}, "m_other");
  const Tensor corr = g.add_variable(DType::kF32, {2}, "corr");
  g.map_evenly(m_other, 1, 3);
  g.set_tile_mapping(corr, 0);
  EXPECT_EQ(message([&] { ops::adam(g, p, a, a, m_other, a, corr, {}, "adam"); }),
            "adam: w, m and v must be three tensors");
  const Tensor v2 = g.add_variable(DType::kF32, {4, 6}, "v2");
  g.map_evenly(v2, 0, 2, 2);
  EXPECT_EQ(message([&] { ops::adam(g, p, a, a, m_other, v2, corr, {}, "adam"); }),
            "adam: m 'm_other' must be laid out as w 'a' (the moments are updated in place)");
  // Corrections copied to tile 0 only, for a w on tiles 0 and 1: the tile without one is named.
  const Tensor m2 = g.add_variable(DType::kF32, {4, 6}, "m2");
  g.map_evenly(m2, 0, 2, 2);
  Program copies = Sequence({});  // a program of its own: the refusals must add nothing to p
  const Tensor corr_on_0 = ops::copies_on_tiles(g, copies, corr, {0}, "corr_on_0");
  EXPECT_EQ(message([&] { ops::adam(g, p, a, a, m2, v2, corr_on_0, {}, "adam"); }),
            fmt::format("adam.corrections: 'corr_on_0' [1 x 2] holds no copy on {}, which needs "
                        "one (copies_on_tiles lays out one a tile)",
                        g.describe_tile(1)));
  EXPECT_EQ(message([&] { ops::adam(g, p, a, a, v2, m_other, b, {}, "adam"); }),
            "adam: corrections 'b' must hold 2 values (1 / (1 - b1^t), 1 / (1 - b2^t)), not 5");
  const Tensor idx_f32 = g.add_variable(DType::kF32, {3}, "idx_f32");
  g.set_tile_mapping(idx_f32, 0);
  EXPECT_EQ(message([&] { ops::embedding_lookup(g, p, a, idx_f32, "lookup"); }),
            "lookup: indices 'idx_f32' must be a u32 vector, not f32 [3]");
  const Tensor u32_table = g.add_variable(DType::kU32, {2, 4}, "u32_table");
  const Tensor idx = g.add_variable(DType::kU32, {3}, "idx");
  g.set_tile_mapping(u32_table, 0);
  g.set_tile_mapping(idx, 0);
  EXPECT_EQ(message([&] { ops::embedding_lookup(g, p, u32_table, idx, "lookup"); }),
            "lookup: table 'u32_table' is u32; a table is f32 or f16");
  EXPECT_EQ(p.body.size(), 0u);
}

}  // namespace
}  // namespace ipu::test
