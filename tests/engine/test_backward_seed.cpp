// Backward's seed gradient: loss.backward() makes ones_like(loss) and torch.autograd.backward keeps it in its
// grad_tensors until the call returns (torch/autograd/__init__.py, 1.8 and 2.x), i.e. after the last layer's
// backward and its AccumulateGrad. So in every plan the seed is still allocated when the step's last Backward op
// runs and is freed before the optimizer step (under PyTorch's rules its 4 bytes take one 512-byte block).
#include <gtest/gtest.h>

#include "strategy/lower.h"

namespace shardscope {
namespace {

constexpr const char* kSeedName = "grad of loss (ones)";

Plan lowered(StrategyKind kind, int world) {
  Scenario s;
  s.strategy.kind = kind;
  s.cluster.world = world;
  s.training.batch = 64;
  if (kind == StrategyKind::Pipeline1F1B || kind == StrategyKind::PipelineGPipe) s.strategy.micro_batches = 2;
  return lower_validated_plan(resolve_scenario(s));
}

// For each micro-batch / step whose loss is backpropagated on this rank: the seed's alloc and free op indices, and
// the last Backward compute op between them and the next optimizer op.
void expect_seed_outlives_backward(const Program& program, const std::string& what) {
  int seeds = 0;
  for (std::size_t i = 0; i < program.ops.size(); ++i) {
    const Op& alloc = program.ops[i];
    if (alloc.kind != OpKind::Alloc || program.tensors[static_cast<std::size_t>(alloc.tensor)].name != kSeedName) continue;
    ++seeds;
    std::size_t free_at = 0, last_backward = 0, optimizer = program.ops.size();
    for (std::size_t j = i + 1; j < program.ops.size(); ++j) {
      const Op& op = program.ops[j];
      if (op.kind == OpKind::Free && op.tensor == alloc.tensor && free_at == 0) free_at = j;
      if (op.kind == OpKind::Compute && op.compute_kind == ComputeKind::Optimizer && optimizer == program.ops.size()) optimizer = j;
      const bool same_micro_batch = op.micro_batch == alloc.micro_batch;
      if (op.kind == OpKind::Compute && op.compute_kind == ComputeKind::Backward && same_micro_batch && op.step == alloc.step &&
          j < optimizer)
        last_backward = j;
    }
    ASSERT_GT(free_at, 0u) << what << ": the seed is never freed";
    EXPECT_GT(free_at, last_backward) << what << ": seed freed before the last backward op";
    EXPECT_LT(free_at, optimizer) << what << ": seed outlives backward";
    EXPECT_EQ(program.tensors[static_cast<std::size_t>(alloc.tensor)].bytes, 4) << what;
  }
  EXPECT_GT(seeds, 0) << what;
}

TEST(BackwardSeed, LivesUntilBackwardReturns) {
  expect_seed_outlives_backward(lowered(StrategyKind::Single, 1).programs[0], "single");
  for (StrategyKind kind : {StrategyKind::Ddp, StrategyKind::Zero1, StrategyKind::Zero2, StrategyKind::Zero3}) {
    const Plan plan = lowered(kind, 2);
    for (const Program& p : plan.programs) expect_seed_outlives_backward(p, plan.strategy + " rank " + std::to_string(p.rank));
  }
  const Plan pipeline = lowered(StrategyKind::Pipeline1F1B, 2);
  expect_seed_outlives_backward(pipeline.programs.back(), "pp-1f1b last stage");
}

// DataParallel: loss.backward() on device 0 covers the replicas' backward and reduce_add, so the seed outlives every
// replica's backward and the reduction into device 0's .grad.
TEST(BackwardSeed, DataParallelSeedOutlivesReduceAdd) {
  const Plan plan = lowered(StrategyKind::DataParallel, 2);
  const Program& device0 = plan.programs[0];
  std::size_t seed_free = 0, last_reduce = 0;
  TensorId seed = -1;
  for (std::size_t i = 0; i < device0.ops.size(); ++i) {
    const Op& op = device0.ops[i];
    if (op.step != 1) continue;
    if (op.kind == OpKind::Alloc && device0.tensors[static_cast<std::size_t>(op.tensor)].name == kSeedName) seed = op.tensor;
    if (op.kind == OpKind::Free && op.tensor == seed && seed >= 0) seed_free = i;
    if (op.kind == OpKind::Collective && op.collective_kind == CollectiveKind::Reduce) last_reduce = i;
  }
  ASSERT_GE(seed, 0);
  EXPECT_GT(seed_free, last_reduce);
}

}  // namespace
}  // namespace shardscope
