// max_batch_that_fits: the largest batch is one that fits while the next one tried does not; a model with no
// activations fits any batch or none, by its states alone (worked out by hand); pipelines search whole micro-batches.
#include <gtest/gtest.h>

#include "memory/accounting.h"
#include "strategy/batch_fit.h"
#include "strategy/lower.h"

namespace shardscope {
namespace {

bool fits(Scenario s, int batch) {
  s.training.batch = batch;
  const ResolvedScenario r = resolve_scenario(s);
  for (const RankMemory& rank : account_memory(lower_plan(r), r.settings.accounting.mode, r.device.capacity, false).ranks)
    if (rank.oom) return false;
  return true;
}

TEST(BatchFit, TheLargestFitsAndTheNextDoesNot) {
  Scenario s;
  s.model.spec = "mlp:4x256:relu";
  s.cluster.device = "custom";
  s.cluster.capacity_gib = 0.25;
  s.accounting.mode = AccountingMode::Exact;
  const BatchFit fit = max_batch_that_fits(s);
  ASSERT_TRUE(fit.batch.has_value());
  EXPECT_TRUE(fits(s, *fit.batch));
  EXPECT_FALSE(fits(s, *fit.batch + 1));
  EXPECT_EQ(fit.multiple_of, 1);
  EXPECT_GE(fit.limiting_rank, 0);
}

// params:1e6 with Adam in fp32: 4 (parameters) + 4 (gradients) + 8 (exp_avg, exp_avg_sq) = 16 B a parameter, 16 MB,
// and no activations: a 1 GiB device fits any batch (up to the search's limit), a 10 MiB one none.
TEST(BatchFit, StatesAloneDecideForAModelWithoutActivations) {
  Scenario s;
  s.model.spec = "params:1e6";
  s.strategy.kind = StrategyKind::Single;
  s.cluster.device = "custom";
  s.accounting.mode = AccountingMode::Exact;
  s.cluster.capacity_gib = 1;
  const BatchFit roomy = max_batch_that_fits(s, 4096);
  EXPECT_EQ(roomy.batch, 4096);
  EXPECT_EQ(roomy.limiting_rank, -1);
  s.cluster.capacity_gib = 10.0 / 1024;
  const BatchFit tight = max_batch_that_fits(s, 4096);
  EXPECT_FALSE(tight.batch.has_value());
  EXPECT_EQ(tight.limiting_rank, 0);
}

TEST(BatchFit, PipelinesSearchWholeMicroBatches) {
  Scenario s;
  s.model.spec = "mlp:4x256:relu";
  s.strategy.kind = StrategyKind::PipelineGPipe;
  s.strategy.micro_batches = 4;
  s.training.batch = 8;
  s.cluster.device = "custom";
  s.cluster.capacity_gib = 0.25;
  s.accounting.mode = AccountingMode::Exact;
  const BatchFit fit = max_batch_that_fits(s);
  ASSERT_TRUE(fit.batch.has_value());
  EXPECT_EQ(fit.multiple_of, 4);
  EXPECT_EQ(*fit.batch % 4, 0);
  EXPECT_TRUE(fits(s, *fit.batch));
  EXPECT_FALSE(fits(s, *fit.batch + 4));
}

}  // namespace
}  // namespace shardscope
