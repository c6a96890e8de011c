// The real lowerings executed on CPU threads: DDP and ZeRO-1 over 2 ranks × batch 8 must train exactly as one rank
// on the whole batch of 16 (DistributedSampler's shares of the same samples; DDP averages gradients, so the update is
// the large-batch update), for each optimizer, loss, bucket setting and framework behaviour; all ranks end with
// identical parameters; and every byte the executor allocated is what the exact accounting predicted.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/run_helpers.h"
#include "exec/executor.h"

namespace shardscope::exec {
namespace {

struct Executed {
  ExecutionResult result;
  MemoryReport predicted;
};

Executed run(Scenario s) {
  s.accounting.mode = s.accounting.mode == AccountingMode::PyTorch18 ? AccountingMode::PyTorch18 : AccountingMode::Exact;
  const ResolvedScenario resolved = resolve_scenario(s);
  const Plan plan = lower_validated_plan(resolved);
  VectorTraceSink sink;
  ExecutionOptions options;
  options.keep_parameters = true;
  Executed out{execute(resolved, plan, sink, options), account_memory(plan, AccountingMode::Exact, resolved.device.capacity)};
  EXPECT_TRUE(out.result.ok) << out.result.error;
  return out;
}

Scenario mlp(StrategyKind strategy, int world, int batch) {
  Scenario s = shardscope::testing::make("mlp:3x16:relu", strategy, world, batch, AccountingMode::Exact);
  s.training.steps = 3;
  return s;
}

// fp32 sums of 8 and 16 rows in different orders: agreement to a few ulps of the parameters' size.
void expect_same_parameters(const RankExecution& a, const RankExecution& b) {
  ASSERT_EQ(a.parameters.size(), b.parameters.size());
  for (const auto& [name, values] : a.parameters) {
    const auto& other = b.parameters.at(name);
    ASSERT_EQ(values.size(), other.size()) << name;
    for (std::size_t i = 0; i < values.size(); ++i)
      ASSERT_NEAR(values[i], other[i], 1e-5 * std::max(1.0f, std::fabs(values[i]))) << name << "[" << i << "]";
  }
}

struct Variant {
  const char* what;
  void (*apply)(Scenario&);
};

TEST(ExecutedStrategies, DdpAndZero1OnTwoRanksTrainAsOneRankOnTheWholeBatch) {
  const std::vector<Variant> variants = {
      {"adam", [](Scenario&) {}},
      {"sgd", [](Scenario& s) { s.training.optimizer = OptimizerKind::Sgd; }},
      {"momentum", [](Scenario& s) { s.training.optimizer = OptimizerKind::Momentum; }},
      {"adamw", [](Scenario& s) { s.training.optimizer = OptimizerKind::AdamW; }},
      {"cross-entropy", [](Scenario& s) { s.training.loss = LossKind::CrossEntropy; }},
      {"in-place relu", [](Scenario& s) { s.model.inplace_relu = true; }},
      {"pytorch-1.8 (zero_grad in place, gradients accumulated)", [](Scenario& s) { s.accounting.mode = AccountingMode::PyTorch18; }},
  };
  for (const auto& variant : variants) {
    SCOPED_TRACE(variant.what);
    Scenario single = mlp(StrategyKind::Single, 1, 16);
    variant.apply(single);
    const Executed reference = run(single);
    for (StrategyKind strategy : {StrategyKind::Ddp, StrategyKind::Zero1})
    for (bool bucket_view : {false, true})
      for (double cap_mb : {25.0, 0.001}) {  // one bucket; one bucket per parameter
        SCOPED_TRACE(strategy_name(strategy));
        Scenario ddp = mlp(strategy, 2, 8);
        variant.apply(ddp);
        ddp.strategy.gradient_as_bucket_view = bucket_view;
        ddp.strategy.bucket_cap_mb = cap_mb;
        const Executed executed = run(ddp);
        ASSERT_EQ(executed.result.ranks.size(), 2u);
        for (const auto& rank : executed.result.ranks) expect_same_parameters(rank, reference.result.ranks[0]);
        // Replicas hold bit-identical parameters: both applied the same all-reduced gradient.
        EXPECT_EQ(executed.result.ranks[0].param_checksum, executed.result.ranks[1].param_checksum);
      }
  }
}

TEST(ExecutedStrategies, DdpConstructionBroadcastMakesDifferentlyInitialisedReplicasAgree) {
  // Rank 1 starts from other parameters; DDP's _sync_module_states broadcasts rank 0's (every tensor of each
  // coalesced bucket, one bucket per parameter or all in one), so training must still match one rank on the
  // whole batch starting from rank 0's values.
  const Executed reference = run(mlp(StrategyKind::Single, 1, 16));
  for (double cap_mb : {25.0, 0.001}) {
    Scenario s = mlp(StrategyKind::Ddp, 2, 8);
    s.strategy.bucket_cap_mb = cap_mb;
    const ResolvedScenario resolved = resolve_scenario(s);
    const Plan plan = lower_validated_plan(resolved);
    VectorTraceSink sink;
    ExecutionOptions options;
    options.keep_parameters = true;
    options.distinct_replica_init = true;
    const ExecutionResult result = execute(resolved, plan, sink, options);
    ASSERT_TRUE(result.ok) << result.error;
    for (const auto& rank : result.ranks) expect_same_parameters(rank, reference.result.ranks[0]);
  }
}

TEST(ExecutedStrategies, MeasuredMemoryEqualsTheExactAccounting) {
  for (StrategyKind strategy : {StrategyKind::Single, StrategyKind::Ddp}) {
    Scenario s = mlp(strategy, strategy == StrategyKind::Single ? 1 : 2, 8);
    s.strategy.gradient_as_bucket_view = strategy == StrategyKind::Ddp;
    const Executed executed = run(s);
    for (std::size_t r = 0; r < executed.result.ranks.size(); ++r) {
      const RankExecution& measured = executed.result.ranks[r];
      const RankMemory& predicted = executed.predicted.ranks[r];
      EXPECT_EQ(measured.measured_peak_bytes, predicted.peak_allocated);
      ASSERT_EQ(measured.phases.size(), predicted.phases.size());
      for (std::size_t p = 0; p < predicted.phases.size(); ++p) {
        EXPECT_EQ(measured.phases[p].allocated, predicted.phases[p].allocated) << predicted.phases[p].name;
        for (Category c : kAllCategories)
          EXPECT_EQ(measured.phases[p].by_category[c], predicted.phases[p].by_category[c])
              << predicted.phases[p].name << " " << category_key(c);
      }
    }
  }
}

TEST(ExecutedStrategies, StrategiesNotYetAnnotatedAreRefusedByName) {
  const ResolvedScenario resolved = resolve_scenario(mlp(StrategyKind::Zero2, 2, 8));
  const Plan plan = lower_validated_plan(resolved);
  VectorTraceSink sink;
  try {
    execute(resolved, plan, sink);
    FAIL() << "zero2 ran without kernels";
  } catch (const UnsupportedPlanError& error) {
    EXPECT_NE(std::string(error.what()).find("zero2"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace shardscope::exec
