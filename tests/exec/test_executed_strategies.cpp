// The real lowerings executed on CPU threads: DDP and ZeRO-1 over 2 ranks × batch 8 must train exactly as one rank
// on the whole batch of 16 (DistributedSampler's shares of the same samples; DDP averages gradients, so the update is
// the large-batch update), for each optimizer, loss, bucket setting and framework behaviour; all ranks end with
// identical parameters; and every byte the executor allocated is what the exact accounting predicted. ZeRO-2 and
// ZeRO-3: test_executed_zero.cpp.
#include "executed_run.h"
#include "model/layers_common.h"

namespace shardscope::exec {
namespace {

using test::Executed;
using test::Variant;
using test::expect_measured_equals_predicted;
using test::expect_same_model;
Executed run(const Scenario& s) { return test::execute_scenario(s); }
Scenario mlp(StrategyKind strategy, int world, int batch) { return test::executable_mlp(strategy, world, batch); }

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
        expect_same_model(executed.result, reference.result);
        for (const auto& rank : executed.result.ranks) EXPECT_EQ(rank.parameters.size(), reference.result.ranks[0].parameters.size());
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
    expect_same_model(result, reference.result);
  }
}

TEST(ExecutedStrategies, MeasuredMemoryEqualsTheExactAccounting) {
  for (StrategyKind strategy : {StrategyKind::Single, StrategyKind::Ddp}) {
    Scenario s = mlp(strategy, strategy == StrategyKind::Single ? 1 : 2, 8);
    s.strategy.gradient_as_bucket_view = strategy == StrategyKind::Ddp;
    expect_measured_equals_predicted(run(s));
  }
}

TEST(ExecutedStrategies, LayersTheCpuBackendLacksAreRefusedByName) {
  // Dropout in training (a random mask the CPU backend does not draw) is refused before anything runs, whatever the
  // strategy; in eval (--no-grad) it is the identity and runs.
  for (StrategyKind strategy : {StrategyKind::Single, StrategyKind::Ddp, StrategyKind::Zero2, StrategyKind::Zero3}) {
    ResolvedScenario resolved = resolve_scenario(mlp(strategy, strategy == StrategyKind::Single ? 1 : 2, 8));
    resolved.model.layers.insert(resolved.model.layers.begin() + 2, make_dropout("drop", 16));
    const Plan plan = lower_validated_plan(resolved);
    VectorTraceSink sink;
    try {
      execute(resolved, plan, sink);
      FAIL() << "Dropout in training ran under " << strategy_name(strategy);
    } catch (const UnsupportedPlanError& error) {
      EXPECT_NE(std::string(error.what()).find("layer 'drop' is Dropout in training mode"), std::string::npos) << error.what();
    }
    EXPECT_TRUE(sink.events().empty());
  }
}

}  // namespace
}  // namespace shardscope::exec

namespace shardscope::exec {
namespace {

TEST(ExecutedStrategies, TheDeviceCapacityStopsACpuRunWhereTheAccountingPredictsOutOfMemory) {
  // Half the predicted peak: the exact accounting names the first allocation that does not fit; the CPU run, which
  // holds each rank to the device's capacity, must fail at that same tensor, cleanly, with an error in the trace.
  Scenario s = test::executable_mlp(StrategyKind::Ddp, 2, 8);
  const ResolvedScenario full = resolve_scenario(s);
  const Plan full_plan = lower_validated_plan(full);
  const Bytes peak = account_memory(full_plan, AccountingMode::Exact, full.device.capacity).ranks[0].peak_allocated;
  s.cluster.capacity_gib = static_cast<double>(peak / 2) / static_cast<double>(kGiB);
  const ResolvedScenario resolved = resolve_scenario(s);
  const Plan plan = lower_validated_plan(resolved);
  const MemoryReport predicted = account_memory(plan, AccountingMode::Exact, resolved.device.capacity);
  ASSERT_TRUE(predicted.ranks[0].oom.has_value());

  VectorTraceSink sink;
  const ExecutionResult result = execute(resolved, plan, sink);
  ASSERT_FALSE(result.ok);
  EXPECT_NE(result.error.find("out of memory allocating '" + predicted.ranks[0].oom->tensor + "'"), std::string::npos)
      << result.error << " — predicted: " << predicted.ranks[0].oom->tensor;
  EXPECT_NE(result.error.find("capacity (emulated on the CPU)"), std::string::npos) << result.error;
  ASSERT_FALSE(sink.events().empty());
  EXPECT_EQ(sink.events().back().kind, TraceEventKind::RunEnd);
}

TEST(ExecutedStrategies, ARunLargerThanTheHostsMemoryIsRefusedBeforeItStarts) {
  // 1,000,000² fp32 weights are 4 TB each: no machine running these tests has that much available.
  Scenario s = shardscope::testing::make("mlp:2x1000000", StrategyKind::Single, 1, 1, AccountingMode::Exact);
  s.cluster.capacity_gib = 65536;  // the largest capacity a scenario may give (64 TiB): the plan fits it
  const ResolvedScenario resolved = resolve_scenario(s);
  const Plan plan = lower_validated_plan(resolved);
  VectorTraceSink sink;
  try {
    execute(resolved, plan, sink);
    FAIL() << "an 8 TB run started";
  } catch (const UnsupportedPlanError& error) {
    EXPECT_NE(std::string(error.what()).find("of host memory at their peaks"), std::string::npos) << error.what();
  }
  EXPECT_TRUE(sink.events().empty());
}

}  // namespace
}  // namespace shardscope::exec
