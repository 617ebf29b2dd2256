// A BERT step's time composed from its parts (examples/bert/step_time.h): the schedule's slots
// and the composition against hand-worked cases, and the composed pipeline against a whole
// simulated one.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <sstream>
#include <string>

#include "examples/bert/bert_app.h"
#include "examples/bert/step_time.h"

namespace ipu::examples::bert {
namespace {

TEST(PipelineSlots, FollowEachMicroBatchThroughTheStagesAndBack) {
  // Two stages, two micro-batches: m's forward on stage k in slot m + k, its heads in slot
  // m + 2, its backward on stage k in slot m + 4 - k.
  const std::vector<PipelineSlot> slots = pipeline_slots(2, 2);
  ASSERT_EQ(slots.size(), 6u);
  const std::vector<std::vector<int>> forward = {{0, -1},  {1, 0},   {-1, 1},
                                                 {-1, -1}, {-1, -1}, {-1, -1}};
  const std::vector<std::vector<int>> backward = {{-1, -1}, {-1, -1}, {-1, -1},
                                                  {-1, 0},  {0, 1},   {1, -1}};
  const std::vector<int> heads = {-1, -1, 0, 1, -1, -1};
  const std::vector<std::string> sends = {"f0", "f0f1", "f1h", "d1h", "d1", ""};
  for (size_t t = 0; t < slots.size(); ++t) {
    SCOPED_TRACE(t);
    EXPECT_EQ(slots[t].forward, forward[t]);
    EXPECT_EQ(slots[t].backward, backward[t]);
    EXPECT_EQ(slots[t].heads, heads[t]);
    EXPECT_EQ(slot_sends(slots[t]), sends[t]);
  }
  // One stage: a slot a micro-batch, nothing copied.
  const std::vector<PipelineSlot> one = pipeline_slots(1, 3);
  ASSERT_EQ(one.size(), 3u);
  for (int m = 0; m < 3; ++m) {
    EXPECT_EQ(one[m].forward, std::vector<int>{m});
    EXPECT_EQ(one[m].backward, std::vector<int>{m});
    EXPECT_EQ(one[m].heads, m);
    EXPECT_EQ(slot_sends(one[m]), "");
  }
}

TEST(ComposePipeline, AddsTheBusiestChipAndTheCopiesOfEverySlot) {
  PipelineParts p;
  p.forward = {10, 30};
  p.backward = {20, 50};
  p.heads = 40;
  p.sends = {{"f0", 1}, {"f0f1", 2}, {"f1h", 3}, {"d1h", 4}, {"d1", 5}};
  p.host_io = 7;
  // By hand, chip 0's and chip 1's work in each slot (a backward pass recomputes its forward):
  //   slot 0: F0 = 10, 0;  1: F0 = 10, F1 = 30;  2: H = 40, F1 = 30;
  //   3: H = 40, F1 + B1 = 80;  4: F0 + B0 = 30, 80;  5: 30, 0.
  // The busiest: 10 + 30 + 40 + 80 + 80 + 30 = 270; both chips: 380, a mean of 190.
  const PipelineTime t = compose_pipeline(p, 2, 2);
  EXPECT_EQ(t.slots, 6u);
  EXPECT_EQ(t.compute, 190u);
  EXPECT_EQ(t.bubble, 80u);
  EXPECT_EQ(t.sends, 15u);
  EXPECT_EQ(t.host_io, 7u);
  EXPECT_EQ(t.cycles, 292u);

  // One stage: forward, heads and backward a micro-batch, no bubble, no copies.
  PipelineParts one;
  one.forward = {10};
  one.backward = {20};
  one.heads = 5;
  one.host_io = 3;
  const PipelineTime u = compose_pipeline(one, 1, 4);
  EXPECT_EQ(u.compute, 4u * 35u);
  EXPECT_EQ(u.bubble, 0u);
  EXPECT_EQ(u.cycles, 4u * 35u + 3u);
}

TEST(ComposePipeline, RefusesAScheduleItsPartsDoNotCover) {
  PipelineParts p;
  p.forward = {10, 30};
  p.backward = {20, 50};
  p.sends = {{"f0", 1}};
  try {
    compose_pipeline(p, 2, 2);
    FAIL() << "a missing copy was not refused";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "slot 1 of the schedule copies 'f0f1', a set of copies not measured");
  }
  EXPECT_THROW(compose_pipeline(p, 3, 2), std::invalid_argument);
}

// A small model in two stages of a layer each, 2 replicas on an M2000 of 16 tiles a chip, four
// micro-batches a step.
BertConfig two_stages() {
  BertConfig c;
  c.machine = hw::machine_preset("m2000");
  c.tiles = 16;
  c.shape.hidden = 32, c.shape.layers = 2, c.shape.heads = 2, c.shape.ffn = 64;
  c.shape.seq = 32, c.shape.vocab = 96;
  c.layers_per_chip = {1, 1};
  c.accumulate = 4;
  return c;
}

// The method the throughput bench rests on: the pipeline composed from its parts, each run
// alone, against the same pipeline simulated whole (two stages, four micro-batches, two
// replicas with LAMB sharded). The parts of four micro-batches (two stages' fill and drain)
// cover any longer schedule.
TEST(BertStepTime, TheComposedPipelineIsWithinFivePercentOfTheSimulatedOne) {
  BertConfig c = two_stages();
  c.steps = 1;
  c.measure_parts = true;
  const BertResult r = run_bert(c);
  ASSERT_TRUE(r.identical);
  ASSERT_TRUE(r.parts.has_value());
  const double simulated = static_cast<double>(r.steps[0].pipeline_cycles);
  const double composed = static_cast<double>(r.composed.cycles);
  EXPECT_LT(std::abs(composed / simulated - 1.0), 0.05)
      << "composed " << composed << " cycles, simulated " << simulated;
  EXPECT_EQ(r.composed.slots, 8u);
  EXPECT_GT(r.composed.bubble, 0u);
  EXPECT_GT(r.composed.sends, 0u);
  // The update streams the shards' state and gathers the new weights: both take part of it.
  const BertStep& step = r.steps[0];
  EXPECT_GT(step.update_streaming_cycles, 0u);
  EXPECT_GT(step.update_cross_chip_cycles, 0u);
  EXPECT_LT(step.update_streaming_cycles + step.update_cross_chip_cycles, step.update_cycles);
  // Every copy a longer schedule needs was measured; its bubble's share is smaller.
  const PipelineTime longer = compose_pipeline(*r.parts, 2, 192);
  EXPECT_EQ(longer.slots, 196u);
  EXPECT_LT(static_cast<double>(longer.bubble) / longer.cycles,
            static_cast<double>(r.composed.bubble) / r.composed.cycles);
}

// Each tile's bytes in a run's memory report ("tile 17 (chip 1 tile 1):    1234 bytes of ...").
std::map<unsigned, uint64_t> tile_bytes(const std::string& report) {
  std::map<unsigned, uint64_t> bytes;
  std::istringstream lines(report);
  for (std::string line; std::getline(lines, line);) {
    const size_t name = line.find("tile "), colon = line.find(": "), of = line.find(" bytes of");
    if (name == std::string::npos || colon == std::string::npos || of == std::string::npos)
      continue;
    bytes[std::stoul(line.substr(name + 5))] = std::stoull(line.substr(colon + 2, of - colon - 2));
  }
  return bytes;
}

// The throughput bench runs one layer a stage and holds the others' memory: a stage holding 3
// more layers keeps 3 more of its layer's f16 weights, f32 vectors, f32 gradient sums and
// output, on its own chip alone; one holding far more than its tiles can keep is refused, naming a
// tile of its chip and a held tensor.
TEST(BertStepTime, AStageHoldsItsOtherLayersMemory) {
  BertConfig c = two_stages();
  c.parts_only = true;
  c.parts = {"stage1.forward"};
  c.compile_only = true;
  const std::map<unsigned, uint64_t> one = tile_bytes(run_bert(c).memory_report);
  c.held_layers = {0, 3};
  const std::map<unsigned, uint64_t> four = tile_bytes(run_bert(c).memory_report);
  ASSERT_EQ(one.size(), 32u);
  ASSERT_EQ(four.size(), 32u);
  uint64_t added = 0;
  for (const auto& [tile, bytes] : four) {
    SCOPED_TRACE(tile);
    ASSERT_GE(bytes, one.at(tile));
    if (tile < 16) {
      EXPECT_EQ(bytes, one.at(tile)) << "chip 0 holds no more layers";
    }
    added += bytes - one.at(tile);
  }
  // A layer's weights by hand (hidden 32, FFN 64): the products' 32 x 96, 32 x 32, 32 x 64 and
  // 64 x 32 in f16; the biases 32 + 64 + 32 (this encoder's projections of Q, K and V have
  // none) and two norms' 2 x 32 each in f32; every parameter's f32 sum.
  const uint64_t matrices = 32 * 96 + 32 * 32 + 32 * 64 + 64 * 32, vectors = 128 + 128;
  const uint64_t layer = 2 * matrices + 4 * vectors + 4 * (matrices + vectors);
  EXPECT_EQ(layer, 51200u);
  // Of the activations, a layer keeps its output (f32 [T x H]) for its backward pass; its input
  // gradient passes from one layer's backward pass to the next one's and is not held.
  const uint64_t activation = 4 * c.shape.rows * c.shape.seq * c.shape.hidden;
  EXPECT_EQ(activation, 8192u);
  EXPECT_EQ(added, 3 * (layer + activation)) << "held: a layer's tensors, not the chip's";

  c.held_layers = {0, 400};  // 400 x 52 KB over 16 tiles: 1.3 MB a tile
  try {
    run_bert(c);
    FAIL() << "400 held layers fit 16 tiles";
  } catch (const std::exception& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("(chip 1 tile"), std::string::npos) << what;
    EXPECT_NE(what.find(".held"), std::string::npos) << what;
  }
  c.held_layers = {3};
  EXPECT_THROW(run_bert(c), std::invalid_argument);  // one count for two stages
}

}  // namespace
}  // namespace ipu::examples::bert
