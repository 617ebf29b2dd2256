// The pipelined example (examples/pipeline_app.h): bit-exact with the host, the loss falls,
// recomputation changes time and memory but not one bit, and the IPU-Link traffic is what the
// ladder implies. One device per process (SystemC elaborates once).
#include <gtest/gtest.h>

#include "examples/pipeline_app.h"

namespace ipu::test {
namespace {

using ipu::examples::PipelineConfig;
using ipu::examples::run_pipeline;

TEST(PipelineExample, FourStagesOnAnM2000AreBitExactAndLearn) {
  PipelineConfig c;
  c.steps = 3;
  const auto r = run_pipeline(c);
  EXPECT_EQ(r.stages, 4u);
  EXPECT_TRUE(r.identical);
  EXPECT_EQ(r.losses, r.expected_losses);
  EXPECT_LT(r.losses.back(), r.losses.front());
  // Per micro-batch (64 x 8 floats = 2 KiB of activations): forward, each stage's output goes
  // once to the next chip's tiles (multicast): 0 -> 1 on a rung, 1 -> 2 two hops (no link joins
  // them), 2 -> 3 on a rung: 4 hops of 2 KiB. Backward, each of the 16 tiles of a stage sends
  // its partial gradient (2 KiB in all) back over the same hops: 16 x 4 hops of 2 KiB.
  EXPECT_EQ(r.ipulink_bytes, 4u * (4 + 16 * 4) * 2048);
  // One sync per slot with a copy (6 forward, 6 backward) and the dispatch.
  EXPECT_EQ(r.supersteps, 13u);
}

TEST(PipelineExample, RecomputationGivesTheSameBitsForLessMemory) {
  PipelineConfig c;
  c.steps = 2;
  c.recompute = true;
  const auto r = run_pipeline(c);
  EXPECT_TRUE(r.identical);
  // The host reference keeps z; the device recomputes it: the same losses.
  EXPECT_EQ(r.losses, r.expected_losses);
  EXPECT_EQ(r.stored_activation_bytes, 4u * 64 * 8 * 4);  // inputs only, 4 micro-batches
}

TEST(PipelineExample, AWidthTheTilesCannotSplitIsRefused) {
  PipelineConfig c;
  c.width = 60;
  EXPECT_THROW(run_pipeline(c), std::invalid_argument);
}

}  // namespace
}  // namespace ipu::test
