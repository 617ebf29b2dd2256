// The planned matmul (sdk/ops/matmul.h) against its host reference, bit for bit, on shapes that
// are not multiples of the AMP's grains or of the tile count, in both layouts of each operand
// and over splits that reduce partial sums across tiles; and its refusals. One device runs per
// process, so the products share one program.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <tuple>
#include <vector>

#include "firmware/include/ipu_program.h"
#include "sdk/compiler/compiler.h"
#include "sdk/ops/elementwise.h"
#include "sdk/ops/matmul.h"
#include "sdk/runtime/device.h"

namespace ipu::test {
namespace {

using namespace ipu::sdk;
using ::testing::HasSubstr;

// Random f16 values of magnitude 2^-6 .. 2^3 with full mantissas: their products' sums round,
// so a different order of accumulation gives different bits.
std::vector<uint16_t> random_f16(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint16_t> out(n);
  for (uint16_t& h : out) {
    const uint32_t sign = rng() & 1, exponent = 15 - 6 + rng() % 10, mantissa = rng() & 0x3ff;
    h = static_cast<uint16_t>(sign << 15 | exponent << 10 | mantissa);
  }
  return out;
}

struct Product {
  ops::MatmulPlan plan;
  Tensor a, b, c;
  std::vector<uint16_t> a_host, b_host;
  std::vector<float> c_host;
};

TEST(OpsMatmul, ProductsEqualTheHostReferenceBitForBit) {
  Graph g(Target::preset("mk2", 24));
  Program program = Sequence({});
  std::vector<Product> products;
  auto add = [&](const std::string& name, ops::MatmulShape s, bool ta, bool tb, unsigned pm,
                 unsigned pn, unsigned pk, bool planner_layout, unsigned reduce_groups = 1,
                 bool rows_output = false, unsigned a_item_passes = 0) {
    ops::MatmulOptions o;
    o.transpose_a = ta;
    o.transpose_b = tb;
    o.rows_output = rows_output;
    o.name = name;
    Product p;
    p.plan = pm == 0 ? ops::plan_matmul(g.target(), s, o)
                     : ops::plan_matmul_split(g.target(), s, pm, pn, pk, o, reduce_groups,
                                              a_item_passes);
    const std::vector<size_t> a_shape =
        ta ? std::vector<size_t>{s.k, s.m} : std::vector<size_t>{s.m, s.k};
    const std::vector<size_t> b_shape =
        tb ? std::vector<size_t>{s.n, s.k} : std::vector<size_t>{s.k, s.n};
    if (planner_layout) {
      p.a = ops::create_matmul_input(g, s, true, name + "_a", o);
      p.b = ops::create_matmul_input(g, s, false, name + "_b", o);
    } else {  // spread element by element: odd pieces, so f16 must widen to move
      p.a = g.add_variable(DType::kF16, a_shape, name + "_a");
      p.b = g.add_variable(DType::kF16, b_shape, name + "_b");
      g.map_evenly(p.a, 0, 7);
      g.map_evenly(p.b, 3, 5);
    }
    p.c = ops::matmul(g, program, p.a, p.b, o, &p.plan);
    p.a_host = random_f16(s.m * s.k, 11 + static_cast<uint32_t>(products.size()));
    p.b_host = random_f16(s.k * s.n, 71 + static_cast<uint32_t>(products.size()));
    p.c_host.assign(s.m * s.n, -1.0f);
    products.push_back(std::move(p));
  };
  add("one", {1, 1, 1}, false, false, 0, 0, 0, false);
  add("odd", {37, 45, 29}, false, false, 0, 0, 0, false);
  add("at", {20, 33, 18}, true, false, 2, 2, 3, false);  // partial sums and scattered rows
  add("bt", {48, 64, 40}, false, true, 3, 1, 2, true);   // partial sums into C's own rows
  add("both", {33, 17, 35}, true, true, 2, 3, 1, true);
  // The reduction's unrolled kernels (2 to 6 parts, 2 columns a round and an odd one left), its
  // loop for more parts, and past 16 parts its sums into the output a part at a time; a share
  // of whole rows (one column) summed over 3 parts.
  add("four", {34, 70, 23}, false, false, 2, 1, 4, true);
  add("deep", {18, 150, 13}, false, false, 1, 1, 9, true);
  add("deeper", {17, 290, 5}, false, true, 1, 1, 18, true);
  add("column", {21, 40, 1}, false, false, 1, 1, 3, true);
  // Reducers of whole groups: 2 x 2 shares of blocks of 2 and 3 groups (one run a part where
  // a share has every column of its block, a run a group where not); 7 groups in 3 parts by
  // half the columns, with C relaid out by rows; 4 parts of whole rows of C.
  add("groups2", {70, 70, 40}, false, false, 2, 2, 4, true, 2);
  add("groups3", {100, 90, 30}, false, true, 1, 1, 6, true, 3, true);
  add("groups4", {64, 64, 21}, false, false, 1, 1, 4, true, 4);
  add("groups_blocks", {80, 40, 44}, true, false, 1, 3, 3, false, 3, true);
  // C's pieces where the reducers leave them: a row's piece a share it crosses (groups2: 70
  // rows x 2 column blocks x 2 column parts, where reducers of all of a block's rows would cut
  // each row into 2 x 4), and groups4's four shares of whole rows one piece each.
  EXPECT_EQ(g.tensor(products[9].c).mapping.size(), 70u * 2 * 2);
  EXPECT_EQ(g.tensor(products[11].c).mapping.size(), 4u);
  // B^T's slices of 10 and 9 passes, each packed in pieces of at most 8 on their own tiles.
  add("bt_pieces", {20, 300, 12}, false, true, 1, 2, 2, true);
  // A's slices of 10 and 9 passes in pieces of 8 (8 + 2, 8 + 1), with B^T's, with B's, and
  // from operands spread element by element (widened first); 37 rows, a short group.
  add("a_pieces_bt", {37, 300, 12}, false, true, 2, 2, 2, true, 1, false, 8);
  add("a_pieces", {37, 300, 13}, false, false, 1, 3, 2, true, 1, false, 8);
  add("a_pieces_spread", {21, 290, 9}, false, false, 1, 1, 2, false, 1, false, 8);
  EXPECT_THAT(products.back().plan.describe(), HasSubstr("(A packed in pieces of 8 passes)"));
  // A^T in whole blocks of 16 rows x 4 k-values, packed two rows a word, and a partial block.
  add("at_words", {40, 64, 24}, true, false, 1, 1, 2, true);
  // A's blocks moved 16 bytes a load (f16 staged on 8-byte rows): 37 rows of K = 45 (a short
  // group, a block short of k).
  add("wide_odd", {37, 45, 29}, false, false, 1, 1, 1, true);
  // An f16 result: the f32 one rounded by the hardware's conversion.
  ops::MatmulOptions half_options;
  half_options.output = DType::kF16;
  half_options.name = "half";
  const ops::MatmulShape half_shape{40, 48, 30};
  const ops::MatmulPlan half_plan = ops::plan_matmul(g.target(), half_shape, half_options);
  const Tensor half_a = ops::create_matmul_input(g, half_shape, true, "half_a", half_options);
  const Tensor half_b = ops::create_matmul_input(g, half_shape, false, "half_b", half_options);
  const Tensor half_c = ops::matmul(g, program, half_a, half_b, half_options, &half_plan);
  ASSERT_EQ(g.tensor(half_c).type, DType::kF16);
  // Three groups (attention's heads) of 20 x 33 x 18, A transposed, each on 8 of the 24 tiles.
  ops::MatmulOptions grouped_options;
  grouped_options.transpose_a = true;
  grouped_options.name = "heads";
  const Tensor ga = g.add_variable(DType::kF16, {3, 33, 20}, "heads_a");
  const Tensor gb = g.add_variable(DType::kF16, {3, 33, 18}, "heads_b");
  g.map_evenly(ga, 0, 24, 2);
  g.map_evenly(gb, 0, 24, 2);
  const Tensor gc = ops::grouped_matmul(g, program, ga, gb, grouped_options);
  ops::MatmulOptions one_group = grouped_options;
  one_group.tiles = 8;
  const ops::MatmulPlan group_plan = ops::plan_matmul(g.target(), {20, 33, 18}, one_group);
  std::vector<uint16_t> ga_host = random_f16(3 * 33 * 20, 301),
                        gb_host = random_f16(3 * 33 * 18, 302);
  std::vector<float> gc_host(3 * 20 * 18, -1.0f);
  Program whole = Sequence({});
  g.add_host_stream("heads_a", DType::kF16, ga_host.size(), StreamDirection::kHostToDevice);
  g.add_host_stream("heads_b", DType::kF16, gb_host.size(), StreamDirection::kHostToDevice);
  g.add_host_stream("heads_c", DType::kF32, gc_host.size(), StreamDirection::kDeviceToHost);
  whole.body.push_back(HostWrite("heads_a", ga));
  whole.body.push_back(HostWrite("heads_b", gb));
  for (const Product& p : products) {
    const std::string a = g.tensor(p.a).name, b = g.tensor(p.b).name, c = g.tensor(p.c).name;
    g.add_host_stream(a, DType::kF16, p.a_host.size(), StreamDirection::kHostToDevice);
    g.add_host_stream(b, DType::kF16, p.b_host.size(), StreamDirection::kHostToDevice);
    g.add_host_stream(c, DType::kF32, p.c_host.size(), StreamDirection::kDeviceToHost);
    whole.body.push_back(HostWrite(a, p.a));
    whole.body.push_back(HostWrite(b, p.b));
  }
  whole.body.push_back(program);
  for (const Product& p : products) whole.body.push_back(HostRead(p.c, g.tensor(p.c).name));
  whole.body.push_back(HostRead(gc, "heads_c"));
  const Executable exe = compile(g, whole);
  Device device(exe);
  for (Product& p : products) {
    device.connect_stream(g.tensor(p.a).name, p.a_host.data(), p.a_host.size() * 2);
    device.connect_stream(g.tensor(p.b).name, p.b_host.data(), p.b_host.size() * 2);
    device.connect_stream(g.tensor(p.c).name, p.c_host.data(), p.c_host.size() * 4);
  }
  device.connect_stream("heads_a", ga_host.data(), ga_host.size() * 2);
  device.connect_stream("heads_b", gb_host.data(), gb_host.size() * 2);
  device.connect_stream("heads_c", gc_host.data(), gc_host.size() * 4);
  std::vector<uint16_t> half_a_host = random_f16(40 * 48, 501),
                        half_b_host = random_f16(48 * 30, 502);
  device.write_tensor("half_a", half_a_host.data(), half_a_host.size() * 2);
  device.write_tensor("half_b", half_b_host.data(), half_b_host.size() * 2);
  device.run();
  std::vector<uint16_t> half_got(40 * 30);
  device.read_tensor(g.tensor(half_c).name, half_got.data(), half_got.size() * 2);
  EXPECT_EQ(half_got, ops::reference::cast_to_f16(
                          ops::matmul_reference(half_plan, half_a_host, half_b_host)));
  for (size_t head = 0; head < 3; ++head) {
    const std::vector<uint16_t> a(ga_host.begin() + head * 660, ga_host.begin() + (head + 1) * 660);
    const std::vector<uint16_t> b(gb_host.begin() + head * 594, gb_host.begin() + (head + 1) * 594);
    const std::vector<float> want = ops::matmul_reference(group_plan, a, b);
    EXPECT_EQ(std::memcmp(want.data(), gc_host.data() + head * 360, 360 * 4), 0) << "head " << head;
  }
  for (const Product& p : products) {
    const std::vector<float> expected = ops::matmul_reference(p.plan, p.a_host, p.b_host);
    size_t equal = 0;
    for (size_t i = 0; i < expected.size(); ++i)
      equal += std::memcmp(&expected[i], &p.c_host[i], 4) == 0;
    EXPECT_EQ(equal, expected.size()) << p.plan.describe();
  }
  // The order matters: summing the slices' partial sums in another order changes some bits,
  // so the comparison above checks the order the plan says.
  const Product& at = products[3];  // 4 passes in 2 slices: (p0 + p1) + (p2 + p3)
  ops::MatmulPlan one_slice = at.plan;
  one_slice.pk = 1;
  const std::vector<float> other = ops::matmul_reference(one_slice, at.a_host, at.b_host);
  EXPECT_NE(std::memcmp(other.data(), at.c_host.data(), other.size() * 4), 0);
}

// K's padding packs as zeros whatever the staging holds past a row: 16 rows of K = 20 (two
// passes, eight blocks of 4 k-values over six vertices, the last two wholly past K), staged on
// 8-byte rows of 20, so that row 0's blocks at k = 24 and 28 would read row 1's k = 4 .. 11.
// With A all 1 but A[1][4] = +inf and B all 1, C's row 1 is +inf and every other row 20 (an
// inf packed into row 0's padding would meet B's zero padding: 0 x inf, a NaN).
TEST(OpsMatmul, KsPaddingPacksAsZerosWhateverTheStagingHolds) {
  Graph g(Target::preset("mk2", 4));
  Program program = Sequence({});
  const ops::MatmulShape s{16, 20, 8};
  ops::MatmulOptions o;
  o.name = "padded";
  const ops::MatmulPlan plan = ops::plan_matmul_split(g.target(), s, 1, 1, 1, o);
  const Tensor a = ops::create_matmul_input(g, s, true, "padded_a", o);
  const Tensor b = ops::create_matmul_input(g, s, false, "padded_b", o);
  const Tensor c = ops::matmul(g, program, a, b, o, &plan);
  Device device(compile(g, program));
  std::vector<uint16_t> a_host(16 * 20, 0x3c00), b_host(20 * 8, 0x3c00);
  a_host[24] = 0x7c00;  // A[1][4] = +inf
  device.write_tensor("padded_a", a_host.data(), a_host.size() * 2);
  device.write_tensor("padded_b", b_host.data(), b_host.size() * 2);
  device.run();
  std::vector<float> got(16 * 8);
  device.read_tensor(g.tensor(c).name, got.data(), got.size() * 4);
  for (size_t row = 0; row < 16; ++row)
    for (size_t column = 0; column < 8; ++column)
      EXPECT_EQ(got[row * 8 + column], row == 1 ? INFINITY : 20.0f)
          << "C[" << row << "][" << column << "]";
}

TEST(OpsMatmul, ThePlannerIsDeterministicAndExplainsItsChoice) {
  const Target target = Target::preset("mk2", 368);  // a quarter chip: planning is quicker
  std::ostringstream first, second;
  const ops::MatmulPlan a = ops::plan_matmul(target, {512, 512, 1024}, {}, &first);
  const ops::MatmulPlan b = ops::plan_matmul(target, {512, 512, 1024}, {}, &second);
  EXPECT_EQ(first.str(), second.str());
  EXPECT_EQ(a.describe(), b.describe());
  EXPECT_THAT(first.str(), HasSubstr("chosen: " + a.describe()));
  EXPECT_THAT(first.str(), HasSubstr("plans considered"));
  EXPECT_LE(a.tiles(), 368u);
  EXPECT_TRUE(a.exchange_scheduled);
  // Without `explain` the plan comes from the process's cache: the same plan.
  EXPECT_EQ(ops::plan_matmul(target, {512, 512, 1024}).describe(), a.describe());
  EXPECT_LE(a.tile_bytes, a.budget_bytes);
}

// The planner times its best candidates' gathers from the operands as they lie. With all of A
// on one tile, that tile sends every run of A the packers gather (a row's piece a slice of K:
// M x pk runs), each a send's gap (78 cycles, the runtime's: ipu_program.h) from the last: a
// floor the estimate from create_matmul_input's even layout knows nothing of.
TEST(OpsMatmul, ThePlannerTimesTheGatherFromTheOperandsAsTheyLie) {
  const Target target = Target::preset("m2000", 64);  // 4 chips of 64 tiles
  const ops::MatmulShape shape{96, 128, 160};
  const double gap = IPU_ACTION_LEAD_SEND + 6;
  const auto product = [&](unsigned first_tile, unsigned a_tile, Graph& g) {
    ops::MatmulOptions o;
    o.first_tile = first_tile;
    o.tiles = 64;
    o.name = fmt::format("on_{}", a_tile);
    const Tensor a = g.add_variable(DType::kF16, {shape.m, shape.k}, o.name + ".a");
    g.set_tile_mapping(a, a_tile);
    const Tensor b = ops::create_matmul_input(g, shape, false, o.name + ".b", o);
    return std::make_tuple(a, b, o);
  };
  Graph g(target);
  const auto [a, b, o] = product(0, 0, g);
  const ops::OperandLayout layout = ops::layout_of(g, a, b);
  const ops::MatmulPlan as_laid = ops::plan_matmul(target, shape, o, nullptr, &layout);
  const ops::MatmulPlan even = ops::plan_matmul(target, shape, o);
  EXPECT_GE(as_laid.estimate.gather, shape.m * as_laid.pk * gap) << as_laid.describe();
  const ops::MatmulPlan same_split_even = ops::plan_matmul_split(
      target, shape, as_laid.pm, as_laid.pn, as_laid.pk, o, as_laid.reduce_groups);
  EXPECT_LT(same_split_even.estimate.gather, shape.m * as_laid.pk * gap);
  // Its choice is another split: fewer slices of K, so fewer runs from the one tile.
  EXPECT_LT(as_laid.pk, even.pk) << as_laid.describe() << "\n" << even.describe();

  // matmul() without a plan plans for its operands as they lie: C as that plan leaves it.
  Program program = Sequence({});
  const TensorInfo c = g.tensor(ops::matmul(g, program, a, b, o));
  Graph given(target);
  const auto [ga, gb, go] = product(0, 0, given);
  Program given_program = Sequence({});
  const TensorInfo want = given.tensor(ops::matmul(given, given_program, ga, gb, go, &as_laid));
  ASSERT_EQ(c.mapping.size(), want.mapping.size());
  for (size_t i = 0; i < c.mapping.size(); ++i) {
    EXPECT_EQ(c.mapping[i].begin, want.mapping[i].begin);
    EXPECT_EQ(c.mapping[i].tile, want.mapping[i].tile);
  }

  // A layout is keyed from the product's first tile: the same product on chip 2, A on its
  // first tile, takes the plan; A on another of chip 0's tiles is planned for itself.
  Graph other(target);
  const auto [oa, ob, oo] = product(128, 128, other);
  const ops::OperandLayout moved = ops::layout_of(other, oa, ob);
  std::ostringstream reasons;
  const ops::MatmulPlan on_chip2 = ops::plan_matmul(target, shape, oo, nullptr, &moved);
  EXPECT_EQ(on_chip2.describe(), as_laid.describe());
  EXPECT_EQ(on_chip2.options.first_tile, 128u);

  // A layout that does not map its operand is refused, naming the product.
  ops::OperandLayout gap_in_a = layout;
  gap_in_a.a.front().begin = 2;
  ops::MatmulOptions bad = o;
  bad.name = "gapped";
  bad.available_memory_proportion = 0.5;  // another key: not the cached plan
  try {
    ops::plan_matmul(target, shape, bad, nullptr, &gap_in_a);
    ADD_FAILURE() << "a layout with a gap was taken";
  } catch (const GraphError& e) {
    EXPECT_THAT(e.what(), HasSubstr("gapped: the operands' layout given to the planner"));
    EXPECT_THAT(e.what(), HasSubstr("tensor 'operand A': mapping interval [2, "));
    EXPECT_THAT(e.what(), HasSubstr("leaves a gap"));
  }
}

// Every chip's tiles are alike: a product on chip 2 takes the plan of the same product on chip
// 0 (a pipeline's stages plan their layers once), under its own name and tiles; what changes the
// product (its output) is planned again.
TEST(OpsMatmul, ThePlanCacheSharesPlansAcrossChipsAndNamesButNotOutputs) {
  const Target target = Target::preset("m2000", 32);  // 4 chips of 32 tiles
  ops::MatmulOptions on_chip0, on_chip2;
  on_chip0.tiles = on_chip2.tiles = 32;
  on_chip0.name = "layer0.ffn";
  on_chip2.first_tile = 64;
  on_chip2.name = "layer5.ffn";
  std::ostringstream reasons;  // planned afresh, not from the cache
  const ops::MatmulPlan fresh = ops::plan_matmul(target, {64, 96, 128}, on_chip2, &reasons);
  const ops::MatmulPlan a = ops::plan_matmul(target, {64, 96, 128}, on_chip0);
  const ops::MatmulPlan b = ops::plan_matmul(target, {64, 96, 128}, on_chip2);
  EXPECT_EQ(a.describe(), b.describe());
  EXPECT_EQ(fresh.describe(), b.describe());
  EXPECT_EQ(b.options.first_tile, 64u);
  EXPECT_EQ(b.options.name, "layer5.ffn");
  EXPECT_EQ(a.options.name, "layer0.ffn");
  ops::MatmulOptions rows = on_chip2;
  rows.rows_output = true;
  EXPECT_TRUE(ops::plan_matmul(target, {64, 96, 128}, rows).options.rows_output);
  EXPECT_FALSE(ops::plan_matmul(target, {64, 96, 128}, on_chip2).options.rows_output);
}

// A product on one chip's tiles is planned once for every machine built of that chip, at any
// clock and on any of its chips (an M2000's one-chip replica, a Bow POD16's second chip); one
// across chips, once for each machine.
TEST(OpsMatmul, MachinesOfOneChipShareItsProductsPlans) {
  const std::string path = ::testing::TempDir() + "/shared_plan_choices.json";
  std::filesystem::remove(path);
  ops::MatmulOptions chip1;
  chip1.first_tile = 64, chip1.tiles = 64;
  ops::MatmulOptions across = chip1;
  across.first_tile = 32;  // tiles 32 to 95: half on chip 0, half on chip 1
  const Target m2000 = Target::preset("m2000", 64, 4), pod16 = Target::preset("pod16", 64, 4);
  const Target bow = Target::preset("bow-pod16", 64, 4);
  const ops::MatmulPlan on_m2000 = ops::plan_matmul(m2000, {98, 80, 112});
  const ops::MatmulPlan on_bow = ops::plan_matmul(bow, {98, 80, 112}, chip1);
  EXPECT_EQ(on_bow.describe(), on_m2000.describe());
  ops::plan_matmul(pod16, {99, 80, 112}, across);
  ops::plan_matmul(bow, {99, 80, 112}, across);
  ops::save_plan_choices(path);
  nlohmann::json saved;
  std::ifstream(path) >> saved;
  std::map<std::string, unsigned> keys;  // by shape
  for (const auto& [k, v] : saved["plans"].items())
    for (const char* shape : {";98x80x112;", ";99x80x112;"})
      if (k.find(shape) != std::string::npos) {
        ++keys[shape];
        EXPECT_EQ(k.find("tile.clock-hz") == std::string::npos, shape[2] == '8') << k;
      }
  EXPECT_EQ(keys[";98x80x112;"], 1u);
  EXPECT_EQ(keys[";99x80x112;"], 2u);
  std::filesystem::remove(path);
}

// Another process's choices (load_plan_choices): a split read from a file is taken, estimated
// and scheduled as plan_matmul_split gives it, not weighed against the others; one that does
// not fit its product is planned anew; a file that is not one of choices is refused by name.
TEST(OpsMatmul, PlanChoicesSavedByOneProcessAreTakenByAnother) {
  const Target target = Target::preset("mk2", 64);
  const std::string path = ::testing::TempDir() + "/plan_choices.json";
  std::filesystem::remove(path);
  std::ostringstream reasons;  // chosen by weighing every candidate
  const ops::MatmulPlan chosen = ops::plan_matmul(target, {96, 80, 112}, {}, &reasons);
  ops::save_plan_choices(path);
  nlohmann::json saved;
  std::ifstream(path) >> saved;
  EXPECT_EQ(saved["format"], "virtual-ipu matmul plan choices");
  std::string key;
  for (const auto& [k, v] : saved["plans"].items())
    if (k.find(";96x80x112;") != std::string::npos) {
      key = k;
      EXPECT_EQ(v, nlohmann::json::array({chosen.serial, chosen.pm, chosen.pn, chosen.pk,
                                          chosen.reduce_groups, chosen.estimate.total(),
                                          chosen.a_item_passes}));
    }
  ASSERT_FALSE(key.empty()) << saved.dump(1);

  // As another process would have chosen them: products this one has not planned, one with a
  // small split the planner would not pick, one whose split does not fit its shape, and one
  // whose estimate is not what this build's model gives (another build's planner).
  const auto key_of = [&key](const std::string& shape) {
    std::string k = key;
    return k.replace(k.find(";96x80x112;") + 1, 9, shape);
  };
  const ops::MatmulPlan split = ops::plan_matmul_split(target, {48, 64, 100}, 1, 2, 1);
  const double other_cycles =
      ops::plan_matmul_split(target, {52, 64, 100}, 1, 2, 1).estimate.total();
  saved["plans"][key_of("48x64x100")] = {1, 1, 2, 1, 1, split.estimate.total()};
  saved["plans"][key_of("50x64x100")] = {1, 9, 2, 1, 1, 1000.0};  // 9 row groups of 16: M is 50
  saved["plans"][key_of("52x64x100")] = {1, 1, 2, 1, 1, other_cycles + 1};
  // And one saved before plans had reducers' group parts: [serial, pm, pn, pk, cycles].
  const ops::MatmulPlan older = ops::plan_matmul_split(target, {44, 64, 100}, 1, 2, 1);
  saved["plans"][key_of("44x64x100")] = {1, 1, 2, 1, older.estimate.total()};
  std::ofstream(path) << saved.dump();
  ops::load_plan_choices(path);
  const ops::MatmulPlan taken = ops::plan_matmul(target, {48, 64, 100});
  EXPECT_EQ(taken.describe(), split.describe());
  EXPECT_EQ(ops::plan_matmul(target, {44, 64, 100}).describe(), older.describe());
  std::ostringstream best44;  // and it was not the planner's own choice
  EXPECT_NE(ops::plan_matmul(target, {44, 64, 100}, {}, &best44).describe(), older.describe());
  EXPECT_TRUE(taken.exchange_scheduled);
  std::ostringstream why;
  const ops::MatmulPlan best = ops::plan_matmul(target, {48, 64, 100}, {}, &why);
  EXPECT_NE(best.describe(), taken.describe());  // the file's choice was not the planner's
  for (const size_t m : {50, 52}) {
    std::ostringstream anew;
    EXPECT_EQ(ops::plan_matmul(target, {m, 64, 100}).describe(),
              ops::plan_matmul(target, {m, 64, 100}, {}, &anew).describe());
  }
  std::ostringstream best52;
  EXPECT_NE(ops::plan_matmul(target, {52, 64, 100}, {}, &best52).describe(),
            ops::plan_matmul_split(target, {52, 64, 100}, 1, 2, 1).describe());

  // A file of another version's choices adds none; one that is not JSON is refused by name and
  // byte; a missing file adds none.
  std::ofstream(path) << R"({"format": "virtual-ipu matmul plan choices", "sdk": "0.0.0",)"
                      << R"( "plans": {"x": [1, 1, 1, 1, 1, 0]}})";
  EXPECT_NO_THROW(ops::load_plan_choices(path));
  std::ofstream(path) << R"({"format": "virtual-ipu matmul plan choices", "plans": [1,)";
  try {
    ops::load_plan_choices(path);
    ADD_FAILURE() << "a broken file was read";
  } catch (const GraphError& e) {
    EXPECT_THAT(e.what(), HasSubstr(path + ": not a file of plan choices"));
    EXPECT_THAT(e.what(), HasSubstr("at byte"));
  }
  std::ofstream(path) << R"({"format": "virtual-ipu matmul plan choices", "sdk": ")"
                      << saved["sdk"].get<std::string>() << R"(", "plans": {"x": [1, 1, 1, 1]}})";
  try {
    ops::load_plan_choices(path);
    ADD_FAILURE() << "a plan without its estimate was read";
  } catch (const GraphError& e) {
    EXPECT_THAT(e.what(), HasSubstr("the plan 'x' is not [serial, pm, pn, pk, reduce_groups, "
                                    "estimated cycles, a_item_passes]"));
  }
  std::ofstream(path) << R"({"format": "something else", "plans": {}})";
  EXPECT_THROW(ops::load_plan_choices(path), GraphError);
  std::filesystem::remove(path);
  EXPECT_NO_THROW(ops::load_plan_choices(path));
}

TEST(OpsMatmul, BadOperandsAreRefusedBeforeAnythingRuns) {
  Graph g(Target::preset("mk2", 8));
  Program program = Sequence({});
  const Tensor a = g.add_variable(DType::kF16, {8, 5}, "a");
  const Tensor b = g.add_variable(DType::kF16, {6, 3}, "b");
  const Tensor f = g.add_variable(DType::kF32, {5, 3}, "f");
  const Tensor v = g.add_variable(DType::kF16, {5}, "v");
  for (Tensor t : {a, b, f, v}) g.map_evenly(t, 0, 2);
  auto message = [&](Tensor x, Tensor y, const ops::MatmulOptions& o = {}) {
    try {
      ops::matmul(g, program, x, y, o);
    } catch (const GraphError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message(a, b), "matmul: A 'a' [8 x 5] and B 'b' [6 x 3] do not agree in K (5 and 6)");
  EXPECT_EQ(message(a, f), "matmul: operand B 'f' is f32; the AMP product takes f16");
  EXPECT_EQ(message(a, v), "matmul: operand B 'v' has 1 dimensions; a matrix has 2");
  const Tensor g3 = g.add_variable(DType::kF16, {2, 8, 5}, "g3"),
               g4 = g.add_variable(DType::kF16, {3, 5, 3}, "g4");
  g.map_evenly(g3, 0, 2, 2);
  g.map_evenly(g4, 0, 2, 2);
  try {
    ops::grouped_matmul(g, program, g3, g4);
    ADD_FAILURE() << "no error";
  } catch (const GraphError& e) {
    EXPECT_STREQ(e.what(), "matmul: A 'g3' has 2 groups and B 'g4' 3");
  }
  const Tensor unmapped = g.add_variable(DType::kF16, {5, 3}, "unmapped");
  EXPECT_EQ(message(a, unmapped), "matmul: operand B 'unmapped' is not mapped to tiles");
  ops::MatmulOptions tiny;
  tiny.available_memory_proportion = 0.0001;
  const Tensor b5 = g.add_variable(DType::kF16, {5, 3}, "b5");
  g.map_evenly(b5, 0, 2);
  EXPECT_THAT(message(a, b5, tiny),
              HasSubstr("matmul: no split of 8 x 5 x 3 fits 63 bytes a tile"));
  ops::MatmulOptions int_result;
  int_result.output = DType::kI32;
  EXPECT_EQ(message(a, b5, int_result), "matmul: the result is f32 or f16, not i32");
  ops::MatmulOptions none;
  none.available_memory_proportion = 0;
  EXPECT_EQ(message(a, b5, none), "matmul: available_memory_proportion must be in (0, 1], not 0");
  EXPECT_EQ(program.body.size(), 0u);  // nothing was added by a refused product
  try {
    ops::plan_matmul_split(g.target(), {8, 5, 3}, 1, 4, 1);
    ADD_FAILURE() << "no error";
  } catch (const GraphError& e) {
    EXPECT_STREQ(e.what(),
                 "matmul: split pm 1 x pn 4 x pk 1 does not fit 8 x 5 x 3 (1 row groups of 16, 2 "
                 "column pairs, 1 passes of 16) on 8 tiles");
  }
}

}  // namespace
// The planner counts its exchange's tables (an action's 16 bytes, a distinct destination
// list's words) in a plan's memory: they stay for the whole program, and a large program's
// tables weigh as much as its scratch. The count is the compiled executable's, on its fullest
// tile, for a product compiled alone; within 5 % where a tile's rows of A^T go to packers the
// model counts as one list, and 15 % where the gather's pieces of odd shapes fall on tiles a
// little differently.
TEST(OpsMatmul, APlansExchangeTablesAreCountedInItsMemory) {
  for (const auto& [shape, ta, exact] :
       std::vector<std::tuple<ops::MatmulShape, bool, bool>>{{{512, 512, 1024}, false, true},
                                                             {{256, 1024, 512}, true, false},
                                                             {{1024, 64, 512}, false, false}}) {
    Graph g(Target::preset("mk2", 368));
    Program program = Sequence({});
    ops::MatmulOptions o;
    o.transpose_a = ta;
    const ops::MatmulPlan plan = ops::plan_matmul(g.target(), shape, o);
    const Tensor a = ops::create_matmul_input(g, shape, true, "a", o);
    const Tensor b = ops::create_matmul_input(g, shape, false, "b", o);
    ops::matmul(g, program, a, b, o, &plan);
    const Executable exe = compile(g, program);
    const std::string what = plan.describe();
    ASSERT_GT(exe.most_exchange_table_bytes, 0u) << what;
    if (exact)
      EXPECT_EQ(plan.table_bytes, exe.most_exchange_table_bytes) << what;
    else
      EXPECT_NEAR(static_cast<double>(plan.table_bytes), exe.most_exchange_table_bytes,
                  (ta ? 0.05 : 0.15) * exe.most_exchange_table_bytes)
          << what;
    EXPECT_GE(plan.tile_bytes, plan.table_bytes);
    EXPECT_THAT(what, HasSubstr(fmt::format("({} of it exchange tables)",
                                            (plan.table_bytes + 1023) / 1024)));
  }
}

// A product no parallel split fits under its budget (B [128 x 1530] f16 is 96 KB on each of 4
// tiles, and 0.15 of a tile is 94 KB) takes a serial plan: N in slices, one product after
// another on the same tiles, their buffers shared. C equals the host reference bit for bit
// (a serial split leaves each element's arithmetic as it is) and the double-precision product
// within f32 rounding, B stored as it is and transposed.
void expect_a_serial_plan(bool tb) {
  {
    Graph g(Target::preset("mk2", 4));
    Program program = Sequence({});
    const ops::MatmulShape shape{16, 128, 1530};
    ops::MatmulOptions o;
    o.transpose_b = tb;
    o.available_memory_proportion = 0.15;
    std::ostringstream why;
    const ops::MatmulPlan plan = ops::plan_matmul(g.target(), shape, o, &why);
    ASSERT_GT(plan.serial, 1u) << plan.describe();
    size_t columns = 0;
    for (unsigned i = 0; i < plan.serial; ++i) {
      EXPECT_EQ(plan.slice(i).shape.n, std::min(plan.slice_width(), shape.n - columns)) << i;
      columns += plan.slice(i).shape.n;
    }
    EXPECT_EQ(columns, shape.n);
    // 1,530 columns in 4 slices of 384: the last takes the 378 left (B as stored).
    if (!tb) {
      EXPECT_LT(plan.slice(plan.serial - 1).shape.n, plan.slice_width());
    }
    EXPECT_EQ(plan.slice_width() % 2, 0u);
    EXPECT_LE(plan.tile_bytes, plan.budget_bytes);
    EXPECT_THAT(why.str(), HasSubstr(fmt::format("serial {} (N in slices of {})", plan.serial,
                                                 plan.slice_width())));
    const Tensor a = ops::create_matmul_input(g, shape, true, "a", o);
    const Tensor b = ops::create_matmul_input(g, shape, false, "b", o);
    const Tensor c = ops::matmul(g, program, a, b, o, &plan);
    const std::vector<uint16_t> av = random_f16(shape.m * shape.k, 5);
    const std::vector<uint16_t> bv = random_f16(shape.k * shape.n, 6);
    Device device(compile(g, program));
    device.write_tensor("a", av.data(), av.size() * 2);
    device.write_tensor("b", bv.data(), bv.size() * 2);
    device.run();
    std::vector<float> got(shape.m * shape.n);
    device.read_tensor(g.tensor(c).name, got.data(), got.size() * 4);
    const std::vector<float> want = ops::matmul_reference(plan, av, bv);
    EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * 4), 0) << plan.describe();
    const std::vector<float> wa = ops::reference::widen_f16(av), wb = ops::reference::widen_f16(bv);
    size_t far = 0;
    for (size_t r = 0; r < shape.m; ++r)
      for (size_t col = 0; col < shape.n; ++col) {
        double exact = 0, size = 0;
        for (size_t k = 0; k < shape.k; ++k) {
          const double x =
              wa[r * shape.k + k] * double{tb ? wb[col * shape.k + k] : wb[k * shape.n + col]};
          exact += x, size += std::fabs(x);
        }
        far += std::fabs(got[r * shape.n + col] - exact) > 1e-6 * size + 1e-30;
      }
    EXPECT_EQ(far, 0u);
  }
}

TEST(OpsMatmul, AProductNoParallelSplitFitsTakesASerialPlan) { expect_a_serial_plan(false); }
TEST(OpsMatmul, ASerialPlanTakesBTransposed) { expect_a_serial_plan(true); }

}  // namespace ipu::test
