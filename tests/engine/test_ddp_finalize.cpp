// DDP's finalize_backward after the last bucket all-reduce (strategy/ddp.cpp): without gradient_as_bucket_view it
// copies every averaged gradient from its bucket back into .grad (torch/csrc/distributed/c10d/reducer.cpp
// copy_bucket_to_grad), so the op moves each gradient byte twice (read, write), which the cost model times; with
// bucket views .grad already is the bucket and the op only waits. Bytes counted by hand.
#include <gtest/gtest.h>

#include "run_helpers.h"

namespace shardscope {
namespace {

// The bytes of every "DDP: wait for bucket all-reduces" op of rank 0, one per step.
std::vector<Bytes> finalize_bytes(bool bucket_views) {
  Scenario s = testing::make("mlp:3x16:relu", StrategyKind::Ddp, 2, 4, AccountingMode::Exact);
  s.training.steps = 2;
  s.strategy.gradient_as_bucket_view = bucket_views;
  const Plan plan = lower_validated_plan(resolve_scenario(s));
  std::vector<Bytes> bytes;
  for (const Op& op : plan.programs.at(0).ops)
    if (op.label.str().rfind("DDP: wait for bucket all-reduces", 0) == 0) bytes.push_back(op.bytes_accessed);
  return bytes;
}

TEST(DdpFinalize, CopyingBucketsBackIntoGradMovesEveryGradientTwice) {
  // mlp:3x16: 3 × (16·16 weights + 16 biases) = 816 fp32 gradients = 3,264 B, read from the buckets and written
  // into .grad: 6,528 B a step.
  EXPECT_EQ(finalize_bytes(false), (std::vector<Bytes>{6528, 6528}));
  EXPECT_EQ(finalize_bytes(true), (std::vector<Bytes>{0, 0}));
}

}  // namespace
}  // namespace shardscope
