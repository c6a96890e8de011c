// Pipeline schedules and model parallelism against hand counts from the layer sizes.
#include <gtest/gtest.h>

#include <algorithm>

#include "run_helpers.h"

namespace shardscope {
namespace {

using testing::make;
using testing::run;

// mlp:8x64 split over p = 4 stages: two Linear(64, 64) each. Batch B = 16 in m = 8 micro-batches of b = 2.
constexpr int kWidth = 64, kBatch = 16, kMicro = 8, kStages = 4;
constexpr Bytes kMicroAct = Bytes{kBatch / kMicro} * kWidth * 4;  // one [2, 64] fp32 activation: 512 B
constexpr Bytes kWholeBatch = Bytes{kBatch} * kWidth * 4;         // x on stage 0, y on the last stage: 4,096 B

Scenario pipeline(StrategyKind strategy) {
  auto s = make("mlp:8x64", strategy, kStages, kBatch, AccountingMode::Exact);
  s.strategy.micro_batches = kMicro;
  return s;
}

Bytes peak_activations(const testing::Run& r, int rank) {
  Bytes peak = 0;
  for (const auto& sample : r.report.ranks.at(static_cast<std::size_t>(rank)).series)
    peak = std::max(peak, sample.by_category[Category::Activations]);
  return peak;
}

// Per micro-batch, stage 0 holds fc0's output (saved by fc1) and fc1's output (kept for the stage's backward):
// 2 activations (fc0's input is a view of x). Middle stages also hold the received input (saved by their first
// Linear): 3. GPipe holds all m micro-batches; 1F1B holds min(p - i, m) on stage i.
TEST(PipelineSchedules, ActivationsHeldAtThePeak) {
  const auto gpipe = run(pipeline(StrategyKind::PipelineGPipe));
  const auto one_f_one_b = run(pipeline(StrategyKind::Pipeline1F1B));
  EXPECT_EQ(peak_activations(gpipe, 0), kWholeBatch + kMicro * 2 * kMicroAct);
  EXPECT_EQ(peak_activations(one_f_one_b, 0), kWholeBatch + kStages * 2 * kMicroAct);
  EXPECT_EQ(peak_activations(gpipe, 1), kMicro * 3 * kMicroAct);
  EXPECT_EQ(peak_activations(one_f_one_b, 1), (kStages - 1) * 3 * kMicroAct);
  EXPECT_EQ(peak_activations(one_f_one_b, 2), (kStages - 2) * 3 * kMicroAct);
  // The last stage: y and each micro-batch's 3 activations held at once (1F1B: one; GPipe: all); their losses
  // (PyTorch 2.x: a buffer the size of the micro-batch's output, kept whole by the 0-dim loss) are temporaries, as
  // no backward saves a loss.
  EXPECT_EQ(peak_activations(one_f_one_b, 3), kWholeBatch + 3 * kMicroAct);
  EXPECT_EQ(peak_activations(gpipe, 3), kWholeBatch + kMicro * 3 * kMicroAct);
}

// With fewer micro-batches than stages, 1F1B holds min(p - i, m) = m: the same as GPipe.
TEST(PipelineSchedules, FewMicroBatchesHoldAll) {
  auto s = pipeline(StrategyKind::Pipeline1F1B);
  s.strategy.micro_batches = 2;
  constexpr Bytes kHalf = Bytes{kBatch / 2} * kWidth * 4;
  EXPECT_EQ(peak_activations(run(s), 0), kWholeBatch + 2 * 2 * kHalf);
}

// One activation forward and one gradient backward per micro-batch and boundary, each [b, 64] fp32.
TEST(PipelineSchedules, MessagesPerMicroBatch) {
  const auto r = run(pipeline(StrategyKind::Pipeline1F1B));
  for (int rank = 0; rank < kStages; ++rank) {
    int sends = 0, recvs = 0;
    for (const auto& op : r.plan.programs[static_cast<std::size_t>(rank)].ops) {
      if (op.kind == OpKind::Send) ++sends;
      if (op.kind == OpKind::Recv) ++recvs;
      if (op.kind == OpKind::Send || op.kind == OpKind::Recv) {
        EXPECT_EQ(op.payload, kMicroAct);
        EXPECT_GE(op.micro_batch, 0);
      }
    }
    const int boundaries = (rank > 0) + (rank < kStages - 1);
    EXPECT_EQ(sends, boundaries * kMicro) << "rank " << rank;
    EXPECT_EQ(recvs, boundaries * kMicro) << "rank " << rank;
  }
}

// The devices of naive model parallelism together hold one replica's parameters: 8 × (64 × 64 + 64) parameters,
// 4 B each in fp32, 2 B in fp16.
TEST(ModelParallel, DevicesTogetherHoldOneReplica) {
  constexpr Bytes kParams = 8 * (64 * 64 + 64);
  for (const Dtype dtype : {Dtype::Fp32, Dtype::Fp16}) {
    auto s = make("mlp:8x64", StrategyKind::ModelParallel, 4, kBatch, AccountingMode::Exact);
    s.training.dtype = dtype;
    const auto r = run(s);
    Bytes total = 0;
    for (int rank = 0; rank < 4; ++rank) {
      const Bytes here = r.phase(rank, "model_created", 0).by_category[Category::Parameters];
      EXPECT_EQ(here, kParams / 4 * (dtype == Dtype::Fp32 ? 4 : 2));  // two equal layers per device
      total += here;
    }
    EXPECT_EQ(total, kParams * (dtype == Dtype::Fp32 ? 4 : 2));
  }
}

// PP × DP with ZeRO-1 in the DP groups (Megatron distributed optimizer), fp16, Adam: each rank holds its stage's
// 16-bit parameters (2 B) and grad buffer (2 B) whole, and 12 B per parameter of optimizer state for 1/dp of them.
// Stage = 2 × (64 × 64 + 64) = 8,320 parameters; dp = 2 → 4,160 owned: 8,320 × 4 + 4,160 × 12 = 83,200 B.
TEST(PipelineDataParallel, ZeroOneShardsOptimizerStateInTheDpGroup) {
  auto s = make("mlp:8x64", StrategyKind::Pipeline1F1B, 8, kBatch, AccountingMode::Exact);
  s.strategy.stages = 4;
  s.strategy.micro_batches = 4;
  s.strategy.dp_zero_stage = 1;
  s.training.dtype = Dtype::Fp16;
  const auto r = run(s);
  EXPECT_EQ(r.scenario.settings.strategy.dp, 2);
  for (int rank = 0; rank < 8; ++rank) {
    const auto& after = r.phase(rank, "after_step", 1).by_category;
    EXPECT_EQ(after[Category::Parameters] + after[Category::Gradients] + after[Category::OptimizerState], 8'320 * 4 + 4'160 * 12);
  }
  s.strategy.dp_zero_stage = 0;  // without ZeRO: 8,320 × 16 B
  const auto plain = run(s);
  const auto& after = plain.phase(0, "after_step", 1).by_category;
  EXPECT_EQ(after[Category::Parameters] + after[Category::Gradients] + after[Category::OptimizerState], 8'320 * 16);
}

}  // namespace
}  // namespace shardscope
