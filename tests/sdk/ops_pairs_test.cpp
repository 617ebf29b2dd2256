// The elementwise and row codelets' paths in the f32x2 lanes (firmware/codelets/ops_pairs.h),
// bit for bit against the host references, and their way out to the scalar functions.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "sdk/compiler/compiler.h"
#include "sdk/ops/elementwise.h"
#include "sdk/ops/op_support.h"
#include "sdk/runtime/device.h"
#include "tests/support/f32_values.h"

namespace ipu::test {
namespace {

using namespace ipu::sdk;

std::vector<float> read_f32(Device& device, const Graph& g, Tensor t, size_t size) {
  std::vector<float> v(size);
  device.read_tensor(g.tensor(t).name, v.data(), size * 4);
  return v;
}

// GeLU and its gradient on the tiles take pairs in the f32x2 lanes (ops_pairs.h), a pair
// whose e^x argument leaves its main range the scalar functions: a grid across both edges of
// that range (x near -7.3 and 7.3), with NaN, infinities and far values among ordinary ones so
// that scalar pairs fall between fast ones, and odd pieces on three tiles (a range that ends
// on an odd element, one that starts unaligned), bit for bit against the host's functions.
TEST(OpsPairs, GeluInPairsEqualsTheScalarFunctionsBitForBit) {
  constexpr size_t n = 1001;
  Graph g(Target::preset("mk2", 8));
  Program p = Sequence({});
  const Tensor x = g.add_variable(DType::kF32, {n}, "x");
  const Tensor dy = g.add_variable(DType::kF32, {n}, "dy");
  g.map_evenly(x, 0, 3);
  g.map_evenly(dy, 0, 3);
  const Tensor gelu = ops::unary(g, p, ops::UnaryOp::kGelu, x, "gelu");
  const Tensor grad = ops::binary(g, p, ops::BinaryOp::kMulGeluGrad, dy, x, "grad");
  Device device(compile(g, p));
  std::vector<float> xv(n), dyv = random_f32(n, 9, -2.0f, 2.0f);
  const float specials[] = {std::nanf(""), INFINITY, -INFINITY, 30.0f, -30.0f, 7.3f, -7.3f};
  for (size_t i = 0; i < n; ++i)
    xv[i] = i % 13 == 5 ? specials[(i / 13) % 7] : -9.0f + 18.0f * static_cast<float>(i) / n;
  device.write_tensor("x", xv.data(), n * 4);
  device.write_tensor("dy", dyv.data(), n * 4);
  device.run();
  std::vector<float> got_gelu(n), got_grad(n);
  device.read_tensor(g.tensor(gelu).name, got_gelu.data(), n * 4);
  device.read_tensor(g.tensor(grad).name, got_grad.data(), n * 4);
  const std::vector<float> want_gelu = ops::reference::unary(ops::UnaryOp::kGelu, xv),
                           want_grad = ops::reference::binary(ops::BinaryOp::kMulGeluGrad, dyv, xv);
  // Equal bits, or both NaN: -inf gives -inf x 0, whose NaN is canonical (positive) on the
  // tiles (RISC-V) and negative on an x86 host.
  EXPECT_EQ(count_equal_or_both_nan(got_gelu, want_gelu), n);
  EXPECT_EQ(count_equal_or_both_nan(got_grad, want_grad), n);
  EXPECT_TRUE(std::isnan(got_gelu[5]));   // NaN in, NaN out
  EXPECT_EQ(got_gelu[18], INFINITY);      // +inf: e^x's argument -inf, s = 1
  EXPECT_EQ(got_gelu[n - 1], xv[n - 1]);  // near 9: s rounds to 1
  EXPECT_TRUE(got_gelu[57] == 0.0f && std::signbit(got_gelu[57]));  // -30: x / inf = -0
  EXPECT_LT(got_gelu[0], 0.0f);                                     // -9: x e^-(...), tiny
}

// Addition, subtraction and product take pairs where they line up, a trailing vector's pairs
// too when its length is even: [37 x 6] by a bias of 6 over 3 tiles (pieces that start at an
// even and at an odd element of the bias, and end on an odd one), and two operands of one shape
// of odd length; bit for bit against the host.
TEST(OpsPairs, PairedArithmeticWrapsATrailingVector) {
  constexpr size_t rows = 37, columns = 6, n = rows * columns;
  Graph g(Target::preset("mk2", 8));
  Program p = Sequence({});
  const Tensor x = g.add_variable(DType::kF32, {rows, columns}, "x");
  const Tensor y = g.add_variable(DType::kF32, {rows, columns}, "y");
  const Tensor bias = g.add_variable(DType::kF32, {columns}, "bias");
  g.map_evenly(x, 0, 3);
  g.map_evenly(y, 0, 3);
  g.set_tile_mapping(bias, 4);
  const Tensor biased = ops::binary(g, p, ops::BinaryOp::kAdd, x, bias, "biased");
  const Tensor scaled = ops::binary(g, p, ops::BinaryOp::kMul, x, bias, "scaled");
  const Tensor diff = ops::binary(g, p, ops::BinaryOp::kSub, x, y, "diff");
  Device device(compile(g, p));
  const std::vector<float> xv = random_f32(n, 31, -3.0f, 3.0f), yv = random_f32(n, 32, -3.0f, 3.0f),
                           bv = random_f32(columns, 33, -1.0f, 1.0f);
  device.write_tensor("x", xv.data(), n * 4);
  device.write_tensor("y", yv.data(), n * 4);
  device.write_tensor("bias", bv.data(), columns * 4);
  device.run();
  const auto read = [&](Tensor t) {
    std::vector<float> out(n);
    device.read_tensor(g.tensor(t).name, out.data(), n * 4);
    return out;
  };
  namespace ref = ops::reference;
  EXPECT_EQ(count_equal(read(biased), ref::binary(ops::BinaryOp::kAdd, xv, bv)), n);
  EXPECT_EQ(count_equal(read(scaled), ref::binary(ops::BinaryOp::kMul, xv, bv)), n);
  EXPECT_EQ(count_equal(read(diff), ref::binary(ops::BinaryOp::kSub, xv, yv)), n);
}

// A run of rows' column sums on its tile (sum_pieces_in_order_f32, what reduce_columns does with
// rows in blocks first) takes four columns a round in the lanes where every row and the output
// lie on pairs alike, after one column alone where all start a word past a pair, and the scalar
// loop where they do not line up: 2 to 8 rows, rows and output at even and odd elements of
// 8-byte-aligned tensors, column counts from 1 to 37 (the rounds' tails), each vertex's sums
// bit for bit against the host's in the same order (row 0, then each next row).
TEST(OpsPairs, ARunsColumnSumsInPairsEqualTheHostsInOrder) {
  Graph g(Target::preset("mk2", 2));
  Program p = Sequence({});
  ops::add_ops_codelets(g);
  constexpr size_t kStride = 48;  // elements a row apart: even, so rows at one parity share it
  struct Case {
    size_t rows, columns, in_at, out_at;  // in_at: row 0's first element; odd rows add `skew`
    size_t skew;
  };
  const std::vector<Case> cases = {{2, 37, 0, 0, 0}, {3, 36, 1, 1, 0}, {4, 1, 0, 0, 0},
                                   {5, 7, 1, 1, 0},  {6, 20, 0, 0, 0}, {7, 33, 0, 1, 0},
                                   {8, 37, 1, 1, 0}, {3, 24, 0, 0, 1}, {8, 5, 0, 0, 0}};
  const ComputeSet cs = g.add_compute_set("sums");
  std::vector<Tensor> ins, outs;
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    ins.push_back(g.add_variable(DType::kF32, {8 * kStride + 2}, fmt::format("in{}", i)));
    outs.push_back(g.add_variable(DType::kF32, {40}, fmt::format("out{}", i)));
    g.set_tile_mapping(ins.back(), i % 2);
    g.set_tile_mapping(outs.back(), i % 2);
    std::map<std::string, Binding> fields{
        {"out", g.region(outs.back(), c.out_at, c.out_at + c.columns)},
        {"rows", static_cast<uint32_t>(c.rows)},
        {"columns", static_cast<uint32_t>(c.columns)}};
    for (size_t r = 0; r < ops::kSumPieces; ++r) {  // the unused ones repeat the first
      const size_t row = r < c.rows ? r : 0, at = c.in_at + row * kStride + (row % 2) * c.skew;
      fields[fmt::format("in{}", r)] = g.region(ins.back(), at, at + c.columns);
    }
    g.add_vertex(cs, "sum_pieces_in_order_f32", static_cast<unsigned>(i % 2), fields);
  }
  p.body.push_back(Execute(cs));
  Device device(compile(g, p));
  std::vector<std::vector<float>> values;
  for (size_t i = 0; i < cases.size(); ++i) {
    // Values of many magnitudes, so that another order of additions would round otherwise.
    std::vector<float> v = random_f32(8 * kStride + 2, 90 + static_cast<uint32_t>(i), -1, 1);
    for (size_t k = 0; k < v.size(); k += 3) v[k] *= 1e7f;
    device.write_tensor(fmt::format("in{}", i), v.data(), v.size() * 4);
    values.push_back(std::move(v));
  }
  device.run();
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    std::vector<float> got(40), want(c.columns);
    device.read_tensor(fmt::format("out{}", i), got.data(), got.size() * 4);
    for (size_t col = 0; col < c.columns; ++col) {
      float s = values[i][c.in_at + col];
      for (size_t r = 1; r < c.rows; ++r)
        s += values[i][c.in_at + r * kStride + (r % 2) * c.skew + col];
      want[col] = s;
    }
    EXPECT_EQ(count_equal(std::vector<float>(got.begin() + static_cast<long>(c.out_at),
                                             got.begin() + static_cast<long>(c.out_at + c.columns)),
                          want),
              c.columns)
        << "case " << i;
  }
}

// Softmax's rows of even length take pairs: the scores (scaled, masked) and their largest, e^x of
// each pair with the constants in registers, the division. Rows of 64 over 3 tiles, scaled by
// 0.125 with a mask whose -10000 makes some pairs 0, 0 and one lane of others 0 (the scalar way
// out), and a row with a large score (e^x of the others tiny, some below its range); unscaled,
// masked by sequence ids (the scalar scores, paired e^x), an odd row length (all scalar), and
// rows of 6 (the loops' rounds of two pairs, then one pair alone): bit for bit against the
// host, and the scale taken (the unscaled result differs).
TEST(OpsPairs, SoftmaxRowsInPairsEqualTheHostBitForBit) {
  namespace ref = ops::reference;
  constexpr size_t rows = 10, columns = 64, n = rows * columns;
  Graph g(Target::preset("mk2", 8));
  Program p = Sequence({});
  const Tensor x = g.add_variable(DType::kF32, {rows, columns}, "x");
  const Tensor mask = g.add_variable(DType::kF32, {columns}, "mask");
  const Tensor ids = g.add_variable(DType::kF32, {columns}, "ids");
  const Tensor odd = g.add_variable(DType::kF32, {7, 9}, "odd");
  const Tensor six = g.add_variable(DType::kF32, {5, 6}, "six");  // a round of two pairs and one
  g.map_evenly(x, 0, 3, columns);
  g.set_tile_mapping(six, 6);
  g.set_tile_mapping(mask, 4);
  g.set_tile_mapping(ids, 5);
  g.map_evenly(odd, 0, 2, 9);
  // Each also rounded to f16 (attention's probabilities for their product): in the division's
  // pass where a row starts on a word of it, by a cast after it for rows of 9.
  Tensor scaled16, packed16, odd16, six16;
  const Tensor scaled = ops::softmax_rows(g, p, x, mask, "scaled", 0.125f, &scaled16);
  const Tensor plain = ops::softmax_rows(g, p, x, mask, "plain");
  const Tensor packed = ops::softmax_rows_packed(g, p, x, ids, "packed", 0.125f, &packed16);
  const Tensor odd_soft = ops::softmax_rows(g, p, odd, std::nullopt, "odd_soft", 0.5f, &odd16);
  const Tensor six_soft = ops::softmax_rows(g, p, six, std::nullopt, "six_soft", 1.0f, &six16);
  ASSERT_EQ(g.tensor(scaled16).mapping.size(), g.tensor(scaled).mapping.size());
  for (size_t i = 0; i < g.tensor(scaled).mapping.size(); ++i)
    EXPECT_EQ(g.tensor(scaled16).mapping[i].tile, g.tensor(scaled).mapping[i].tile) << i;
  Device device(compile(g, p));
  std::vector<float> xv = random_f32(n, 41, -8.0f, 8.0f), mv(columns), iv(columns);
  xv[3 * columns + 4] = 900.0f;  // row 3: the others' e^x below its range
  for (size_t c = 0; c < columns; ++c) {
    mv[c] = c % 8 == 2 || c % 8 == 3 ? -10000.0f : (c % 8 == 5 ? -10000.0f : 0.0f);
    iv[c] = static_cast<float>(c / 20);
  }
  const std::vector<float> ov = random_f32(63, 42, -4.0f, 4.0f),
                           sv = random_f32(30, 43, -4.0f, 4.0f);
  device.write_tensor("x", xv.data(), n * 4);
  device.write_tensor("mask", mv.data(), columns * 4);
  device.write_tensor("ids", iv.data(), columns * 4);
  device.write_tensor("odd", ov.data(), ov.size() * 4);
  device.write_tensor("six", sv.data(), sv.size() * 4);
  device.run();
  const auto read = [&](Tensor t, size_t size) { return read_f32(device, g, t, size); };
  const std::vector<float> got = read(scaled, n);
  EXPECT_EQ(count_equal(got, ref::softmax_rows(xv, &mv, columns, 0.125f)), n);
  EXPECT_EQ(count_equal(read(plain, n), ref::softmax_rows(xv, &mv, columns)), n);
  EXPECT_EQ(count_equal(read(packed, n), ref::softmax_rows_packed(xv, iv, columns, 0.125f)), n);
  EXPECT_EQ(count_equal(read(odd_soft, 63), ref::softmax_rows(ov, nullptr, 9, 0.5f)), 63u);
  EXPECT_EQ(count_equal(read(six_soft, 30), ref::softmax_rows(sv, nullptr, 6)), 30u);
  const auto read16 = [&](Tensor t, size_t size) {
    std::vector<uint16_t> out(size);
    device.read_tensor(g.tensor(t).name, out.data(), size * 2);
    return out;
  };
  EXPECT_EQ(read16(scaled16, n), ref::cast_to_f16(ref::softmax_rows(xv, &mv, columns, 0.125f)));
  EXPECT_EQ(read16(packed16, n),
            ref::cast_to_f16(ref::softmax_rows_packed(xv, iv, columns, 0.125f)));
  EXPECT_EQ(read16(odd16, 63), ref::cast_to_f16(ref::softmax_rows(ov, nullptr, 9, 0.5f)));
  EXPECT_EQ(read16(six16, 30), ref::cast_to_f16(ref::softmax_rows(sv, nullptr, 6)));
  EXPECT_LT(count_equal(got, read(plain, n)), n / 2);  // the scale was taken (3/8 masked)
  EXPECT_EQ(got[2], 0.0f);                             // masked pair: 0, 0
  EXPECT_EQ(got[3 * columns + 4], 1.0f);               // the large score takes it all
}

// Softmax's gradient in pairs, scaled and rounded to f16 in the same pass (attention's), beside
// the f32 one and a scale of 1, over rows of 64 on 3 tiles; rows of 9 on 2 tiles, the second's
// from an odd element (the f16 result then takes the f32 one and a cast); rows of 6 on one tile
// (the loops' rounds of two pairs, then one alone): bit for bit against the host's f32 result
// and its cast.
TEST(OpsPairs, SoftmaxGradientInPairsScalesAndRoundsAsTheHost) {
  namespace ref = ops::reference;
  constexpr size_t rows = 10, columns = 64, n = rows * columns;
  Graph g(Target::preset("mk2", 8));
  Program p = Sequence({});
  const Tensor y = g.add_variable(DType::kF32, {rows, columns}, "y");
  const Tensor dy = g.add_variable(DType::kF32, {rows, columns}, "dy");
  const Tensor oy = g.add_variable(DType::kF32, {7, 9}, "oy");
  const Tensor ody = g.add_variable(DType::kF32, {7, 9}, "ody");
  const Tensor sy = g.add_variable(DType::kF32, {5, 6}, "sy");  // a round of two pairs and one
  const Tensor sdy = g.add_variable(DType::kF32, {5, 6}, "sdy");
  g.set_tile_mapping(sy, 6);
  g.set_tile_mapping(sdy, 6);
  g.map_evenly(y, 0, 3, columns);
  g.map_evenly(dy, 3, 2, columns);  // laid out otherwise: moved beside y first
  g.set_tile_mapping(oy, {{0, 27, 0}, {27, 63, 1}});
  g.set_tile_mapping(ody, {{0, 27, 0}, {27, 63, 1}});
  const Tensor plain = ops::softmax_grad_rows(g, p, y, dy, "plain");
  const Tensor scaled = ops::softmax_grad_rows(g, p, y, dy, "scaled", 0.125f);
  const Tensor half = ops::softmax_grad_rows(g, p, y, dy, "half", 0.125f, DType::kF16);
  const Tensor odd_half = ops::softmax_grad_rows(g, p, oy, ody, "odd_half", 0.5f, DType::kF16);
  const Tensor six = ops::softmax_grad_rows(g, p, sy, sdy, "six");
  const Tensor six_half = ops::softmax_grad_rows(g, p, sy, sdy, "six_half", 0.5f, DType::kF16);
  Device device(compile(g, p));
  const std::vector<float> yv = random_f32(n, 51, 0.0f, 0.05f),
                           dyv = random_f32(n, 52, -2.0f, 2.0f),
                           oyv = random_f32(63, 53, 0.0f, 0.2f),
                           odyv = random_f32(63, 54, -2.0f, 2.0f),
                           syv = random_f32(30, 55, 0.0f, 0.3f),
                           sdyv = random_f32(30, 56, -2.0f, 2.0f);
  device.write_tensor("y", yv.data(), n * 4);
  device.write_tensor("dy", dyv.data(), n * 4);
  device.write_tensor("oy", oyv.data(), 63 * 4);
  device.write_tensor("ody", odyv.data(), 63 * 4);
  device.write_tensor("sy", syv.data(), 30 * 4);
  device.write_tensor("sdy", sdyv.data(), 30 * 4);
  device.run();
  const auto read = [&](Tensor t, size_t size) { return read_f32(device, g, t, size); };
  const auto read16 = [&](Tensor t, size_t size) {
    std::vector<uint16_t> v(size);
    device.read_tensor(g.tensor(t).name, v.data(), size * 2);
    return v;
  };
  EXPECT_EQ(count_equal(read(plain, n), ref::softmax_grad_rows(yv, dyv, columns)), n);
  const std::vector<float> want = ref::softmax_grad_rows(yv, dyv, columns, 0.125f);
  EXPECT_EQ(count_equal(read(scaled, n), want), n);
  EXPECT_EQ(read16(half, n), ref::cast_to_f16(want));
  EXPECT_EQ(read16(odd_half, 63), ref::cast_to_f16(ref::softmax_grad_rows(oyv, odyv, 9, 0.5f)));
  EXPECT_EQ(count_equal(read(six, 30), ref::softmax_grad_rows(syv, sdyv, 6)), 30u);
  EXPECT_EQ(read16(six_half, 30), ref::cast_to_f16(ref::softmax_grad_rows(syv, sdyv, 6, 0.5f)));
  EXPECT_LT(count_equal(read(plain, n), want), n / 8);  // the scale was taken
}

}  // namespace
}  // namespace ipu::test
