// The training main job (examples/train_app.h) at reduced sizes: every loss and the trained
// weights equal the host's run of the same codelets bit for bit, the loss falls, and the
// step's traffic is what the model implies. One device per process (SystemC elaborates once).
#include <gtest/gtest.h>

#include "examples/train_app.h"

namespace ipu::test {
namespace {

using ipu::examples::run_training;
using ipu::examples::TrainConfig;

// An M2000: 4 replicas of 32 tiles (192 hidden units).
TEST(TrainExample, M2000IsBitExactAndTheLossFalls) {
  TrainConfig c;
  c.tiles = 32;
  c.steps = 6;
  const auto r = run_training(c);
  ASSERT_EQ(r.steps.size(), 6u);
  EXPECT_TRUE(r.identical);
  for (const auto& s : r.steps) EXPECT_EQ(s.loss, s.expected_loss);
  EXPECT_EQ(r.weights, r.expected_weights);
  EXPECT_LT(r.steps.back().loss, 0.5f * r.steps.front().loss);
  EXPECT_EQ(r.replicas, 4u);
  EXPECT_EQ(r.parameters, 32u * 6 * (12 + 4));
  // Adam's two moments, each replica's quarter of them, in and out of streaming memory; and the
  // host's streams, which reach the tiles through it: each replica's batch (12 x 12 inputs and
  // 12 x 4 targets, f32) read by the tiles, its loss written.
  const uint64_t shard_bytes = r.parameters / 4 * 4, adam = 2u * 2 * 4 * shard_bytes;
  EXPECT_EQ(r.adam_streaming_bytes, adam);
  for (const auto& s : r.steps)
    EXPECT_EQ(s.streaming_bytes, adam + 4 * ((12 * 12 + 12 * 4) * 4 + 4));
  // Reduce-scatter then all-gather on a 4-chip ring: each replica sends 3 of 4 chunks of the f32
  // gradients and 3 of 4 chunks of the f16 weights, one IPU-Link hop each.
  const uint64_t n = r.parameters;
  EXPECT_EQ(r.steps.back().ipulink_bytes, 4 * (3 * n / 4 * 4 + 3 * n / 4 * 2));
  EXPECT_GT(r.collective_cycles, 0u);
  EXPECT_GT(r.streaming_cycles, 0u);
  EXPECT_GT(r.host_io_cycles, 0u);
  EXPECT_LT(r.collective_cycles + r.streaming_cycles + r.host_io_cycles, r.steps.back().cycles);
}

// A POD16: 16 replicas round the ladder's ring; the host follows the ring's summation order.
TEST(TrainExample, Pod16IsBitExact) {
  TrainConfig c;
  c.machine = ipu::hw::machine_preset("pod16");
  c.tiles = 32;
  c.steps = 2;
  const auto r = run_training(c);
  EXPECT_EQ(r.replicas, 16u);
  EXPECT_TRUE(r.identical);
  EXPECT_EQ(r.master, r.expected_master);
}

TEST(TrainExample, ATileCountTheSumsCannotGroupIsRefused) {
  TrainConfig c;
  c.tiles = 40;
  EXPECT_THROW(
      {
        try {
          run_training(c);
        } catch (const std::invalid_argument& e) {
          EXPECT_STREQ(e.what(),
                       "40 tiles per replica: the partial outputs are summed in groups of 32 "
                       "tiles, so the tile count must be a multiple of 32 (or at most 32)");
          throw;
        }
      },
      std::invalid_argument);
}

}  // namespace
}  // namespace ipu::test
