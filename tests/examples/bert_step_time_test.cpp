// A BERT step's time composed from its parts (examples/bert/step_time.h): the schedule's slots
// and the composition against hand-worked cases, and the composed pipeline against a whole
// simulated one.
#include <gtest/gtest.h>

#include <cmath>

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

// The method the throughput bench rests on: the pipeline composed from its parts, each run
// alone, against the same pipeline simulated whole (two stages, four micro-batches, two
// replicas with LAMB sharded). The parts of four micro-batches (two stages' fill and drain)
// cover any longer schedule.
TEST(BertStepTime, TheComposedPipelineIsWithinFivePercentOfTheSimulatedOne) {
  BertConfig c;
  c.machine = hw::machine_preset("m2000");
  c.tiles = 16;
  c.shape.hidden = 32, c.shape.layers = 2, c.shape.heads = 2, c.shape.ffn = 64;
  c.shape.seq = 32, c.shape.vocab = 96;
  c.layers_per_chip = {1, 1};
  c.accumulate = 4;
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
  EXPECT_GT(r.lamb_streaming_cycles, 0u);
  EXPECT_GT(r.lamb_gather_cycles, 0u);
  // Every copy a longer schedule needs was measured; its bubble's share is smaller.
  const PipelineTime longer = compose_pipeline(*r.parts, 2, 192);
  EXPECT_EQ(longer.slots, 196u);
  EXPECT_LT(static_cast<double>(longer.bubble) / longer.cycles,
            static_cast<double>(r.composed.bubble) / r.composed.cycles);
}

}  // namespace
}  // namespace ipu::examples::bert
