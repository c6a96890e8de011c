// Strategy lowering in exact accounting, against hand counts: P = parameter bytes, activations B × width × 4 B.
#include <gtest/gtest.h>

#include "run_helpers.h"

namespace shardscope {
namespace {

using testing::make;
using testing::run;

constexpr int kLayers = 20, kWidth = 2000, kBatch = 20;
constexpr Bytes kP = kLayers * (Bytes{kWidth} * kWidth + kWidth) * 4;  // 320,160,000 B
constexpr Bytes kAct = Bytes{kBatch} * kWidth * 4;                    // one [20, 2000] fp32 tensor
constexpr Bytes kWorkspaceSm80 = 4096 * 1024 * 2 + 16 * 1024 * 8;       // cuBLAS workspace, PyTorch 2.x, not sm90
constexpr Bytes kCublasLt = 1024 * 1024;  // forward's cuBLASLt workspace (biased Linear, batch > 1), PyTorch 2.x

Scenario exact(StrategyKind strategy, int world) {
  auto s = make("mlp:20x2000", strategy, world, kBatch, AccountingMode::Exact);
  s.cluster.device = "A100-80";
  return s;
}

// Single device, Adam, PyTorch 2.x behaviour. forward: parameters, x, y, the loss (2.x: an output-sized buffer),
// every layer's output (each saved by the next layer or the MSE node), the forward thread's cuBLAS and cuBLASLt
// workspaces. before_step: all activations freed, gradients = P, the autograd thread's workspace too. after_step:
// Adam's exp_avg + exp_avg_sq = 2P. Peak: the foreach sqrt list (P) on top of all that. The loss is a temporary (no
// backward saves it: derivatives.yaml's mse_loss backward takes self and target).
TEST(ExactSingle, HandCountedPhases) {
  const auto r = run(exact(StrategyKind::Single, 1));
  const Bytes user = 3 * kAct;  // x, y, loss
  const Bytes forward_workspaces = kWorkspaceSm80 + kCublasLt;
  EXPECT_EQ(r.phase(0, "model_created", 0).allocated, kP);
  EXPECT_EQ(r.phase(0, "forward", 1).allocated, kP + user + kLayers * kAct + forward_workspaces);
  EXPECT_EQ(r.phase(0, "before_step", 1).allocated, 2 * kP + user + forward_workspaces + kWorkspaceSm80);
  EXPECT_EQ(r.phase(0, "after_step", 1).allocated, 4 * kP + user + forward_workspaces + kWorkspaceSm80);
  EXPECT_EQ(r.report.ranks[0].peak_allocated, 5 * kP + user + forward_workspaces + kWorkspaceSm80);
  EXPECT_EQ(r.report.ranks[0].peak_by_category[Category::Temporaries], kP + forward_workspaces + kWorkspaceSm80 + kAct);
}

TEST(ExactSingle, AdamStateIsTwiceParametersCreatedAtFirstStep) {
  const auto r = run(exact(StrategyKind::Single, 1));
  EXPECT_EQ(r.phase(0, "before_step", 1).by_category[Category::OptimizerState], 0);
  EXPECT_EQ(r.phase(0, "after_step", 1).by_category[Category::OptimizerState], 2 * kP);
  EXPECT_EQ(r.phase(0, "after_step", 1).allocated - r.phase(0, "before_step", 1).allocated, 2 * kP);
}

TEST(ExactSingle, SgdHasNoStateMomentumOneCopy) {
  auto s = exact(StrategyKind::Single, 1);
  s.training.optimizer = OptimizerKind::Sgd;
  EXPECT_EQ(run(s).phase(0, "after_step", 1).by_category[Category::OptimizerState], 0);
  s.training.optimizer = OptimizerKind::Momentum;
  EXPECT_EQ(run(s).phase(0, "after_step", 1).by_category[Category::OptimizerState], kP);
}

// 1.8 zeroes .grad in place (memory stays); 2.x zero_grad(set_to_none=True) frees it before the next forward.
TEST(ExactSingle, ZeroGradDiffersBetweenVersions) {
  auto s = exact(StrategyKind::Single, 1);
  s.training.steps = 2;
  EXPECT_EQ(run(s).phase(0, "forward", 2).by_category[Category::Gradients], 0);
  s.accounting.mode = AccountingMode::PyTorch18;  // PyTorch 1.8 rules also add allocator rounding; counts still ≥ P
  EXPECT_GE(run(s).phase(0, "forward", 2).by_category[Category::Gradients], kP);
}

TEST(ExactDdp, BucketsDoubleParametersAndGradientAsBucketViewDropsGradients) {
  auto s = exact(StrategyKind::Ddp, 2);
  const auto plain = run(s);
  s.strategy.gradient_as_bucket_view = true;
  const auto view = run(s);
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_EQ(plain.phase(rank, "wrapped", 0).allocated, 2 * kP);
    EXPECT_EQ(plain.phase(rank, "before_step", 1).by_category[Category::Gradients], kP);
    EXPECT_EQ(view.phase(rank, "before_step", 1).by_category[Category::Gradients], 0);
    EXPECT_EQ(plain.phase(rank, "before_step", 1).allocated - view.phase(rank, "before_step", 1).allocated, kP);
  }
}

int all_reduces_in_step(const Plan& plan, int step) {
  int count = 0;
  for (const auto& op : plan.programs[0].ops)
    if (op.kind == OpKind::Collective && op.collective_kind == CollectiveKind::AllReduce && op.step == step) ++count;
  return count;
}

// 2.x: one bucket in the first iteration, then rebuilt in gradient-ready order (b20 W20 | b19 W19 b18 W18 | ... |
// b1 W1) with [1 MiB, 25 MiB]: 1 + 9 + 1 = 11 buckets. 1.8 starts with 11 buckets ([W1], nine [b W b W], [b19 W20 b20]).
TEST(ExactDdp, BucketCountsFollowTheVersion) {
  auto s = exact(StrategyKind::Ddp, 2);
  s.training.steps = 2;
  const auto v2 = run(s);
  EXPECT_EQ(all_reduces_in_step(v2.plan, 1), 1);
  EXPECT_EQ(all_reduces_in_step(v2.plan, 2), 11);
  EXPECT_EQ(v2.phase(0, "forward", 2).by_category[Category::DdpBuckets], kP);
  s.accounting.mode = AccountingMode::PyTorch18;
  EXPECT_EQ(all_reduces_in_step(run(s).plan, 1), 11);
  s.strategy.bucket_cap_mb = 100;  // [b19 W20 b20] 16 MB; then buckets of 100 MiB = 7 layers (112 MB ≥ 104.9 MB)
  EXPECT_EQ(all_reduces_in_step(run(s).plan, 1), 4);  // [W1], [b1..W8], [b8..W15], [b15..b20]
}

// ZeroRedundancyOptimizer, 4 ranks: 20 equal weights go 5 per rank, then the 20 equal biases likewise, so each
// rank owns exactly P/4 and holds 2P/4 of Adam state.
TEST(ExactZero1, OptimizerStateIsShardedEvenly) {
  const auto r = run(exact(StrategyKind::Zero1, 4));
  for (int rank = 0; rank < 4; ++rank) {
    EXPECT_EQ(r.phase(rank, "after_step", 1).by_category[Category::OptimizerState], 2 * kP / 4);
    EXPECT_EQ(r.phase(rank, "wrapped", 0).allocated, 2 * kP);  // parameters + DDP buckets, unchanged
  }
  const auto ddp = run(exact(StrategyKind::Ddp, 4));
  EXPECT_EQ(ddp.report.ranks[0].peak_allocated - r.report.ranks[0].peak_allocated, 3 * (2 * kP + kP) / 4);  // state + sqrt
}

// DataParallel: device 0 holds the optimizer state, the final .grad beside replica 0's gradients, the gathered output
// and the loss (2.x: as large as the gathered output); devices 1.. hold a replica (P) and its gradients (P) only.
TEST(ExactDataParallel, DeviceZeroHoldsMoreAndBalancedNarrowsTheGap) {
  const auto dp = run(exact(StrategyKind::DataParallel, 4));
  const auto& ranks = dp.report.ranks;
  EXPECT_EQ(ranks[1].peak_by_category[Category::OptimizerState], 0);
  EXPECT_EQ(dp.phase(0, "after_step", 1).by_category[Category::OptimizerState], 2 * kP);
  for (int d = 1; d < 4; ++d) EXPECT_GT(ranks[0].peak_allocated, ranks[static_cast<std::size_t>(d)].peak_allocated);
  // Activations at the end of forward: 20 outputs of the device's chunk each; device 0 also has the whole x, y and
  // the gathered output [80, 2000], its own chunk being a view of x (the loss, output-sized too, is a temporary).
  const Bytes per_sample = kWidth * 4;
  // Device 1: its input chunk and 19 saved layer outputs (the last output is freed once gathered).
  EXPECT_EQ(dp.phase(1, "forward", 1).by_category[Category::Activations], (1 + kLayers - 1) * kBatch * per_sample);
  EXPECT_EQ(dp.phase(0, "forward", 1).by_category[Category::Activations],
            3 * (4 * kBatch) * per_sample + kLayers * kBatch * per_sample - kBatch * per_sample);

  auto s = exact(StrategyKind::BalancedDataParallel, 4);
  s.training.batch = 64;  // global 256
  s.strategy.gpu0_batch = 16;
  const auto balanced = run(s);
  s.strategy.kind = StrategyKind::DataParallel;
  s.strategy.gpu0_batch.reset();
  const auto even = run(s);
  auto gap = [](const testing::Run& r) {
    return r.phase(0, "forward", 1).allocated - r.phase(1, "forward", 1).allocated;
  };
  EXPECT_LT(gap(balanced), gap(even));
  // Only device 0's activation share shrinks: 64 − 16 = 48 fewer samples × 20 layer outputs.
  EXPECT_EQ(even.phase(0, "forward", 1).by_category[Category::Activations] -
                balanced.phase(0, "forward", 1).by_category[Category::Activations],
            (64 - 16) * kLayers * per_sample - (64 - 16) * per_sample);
}

TEST(ExactNoGrad, HoldsNoGradientsNoStateNoSavedActivations) {
  for (auto strategy : {StrategyKind::Single, StrategyKind::Ddp, StrategyKind::DataParallel}) {
    auto s = exact(strategy, strategy == StrategyKind::Single ? 1 : 2);
    s.training.no_grad = true;
    const auto r = run(s);
    for (const auto& rank : r.report.ranks) {
      ASSERT_EQ(rank.phases.size(), 3u);  // model_created, wrapped, forward
      EXPECT_EQ(rank.phases.back().name, "forward");
      EXPECT_EQ(rank.peak_by_category[Category::Gradients], 0);
      EXPECT_EQ(rank.peak_by_category[Category::OptimizerState], 0);
    }
    if (strategy == StrategyKind::Single) {  // after forward only x, y (activations) and the loss (an output-sized
      // buffer, a temporary beside forward's cuBLAS and cuBLASLt workspaces) remain
      EXPECT_EQ(r.phase(0, "forward", 1).by_category[Category::Activations], 2 * kAct);
      EXPECT_EQ(r.phase(0, "forward", 1).by_category[Category::Temporaries], kAct + kWorkspaceSm80 + kCublasLt);
    }
  }
}

}  // namespace
}  // namespace shardscope
