// Issue 18: simulated times saturate at kMaxTimeNs instead of overflowing int64, wherever a cost is formed or
// times are added: compute ops, collectives, messages, the event loop, the step's figures.
#include <gtest/gtest.h>

#include <limits>

#include "sim/collective_cost.h"
#include "sim/cost_model.h"
#include "sim/simulator.h"
#include "strategy/lower.h"

namespace shardscope {
namespace {

TEST(TimeSaturation, ComputeOpsSaturate) {
  ComputeRates rates;
  rates.peak_tflops = 1;
  rates.compute_efficiency = 1e-3;
  rates.hbm_gbps = 1;
  rates.memory_efficiency = 1e-3;
  rates.kernel_overhead_ns = kMaxTimeNs;  // even with the largest overhead on top
  const CostModel costs(rates, ClusterLinks{});
  Op op;
  op.kind = OpKind::Compute;
  op.flops = 1e30;  // 10^30 FLOP at 10^-3 FLOP per ns: 10^33 ns
  EXPECT_EQ(costs.compute_ns(op), kMaxTimeNs);
  op.flops = 0;
  op.bytes_accessed = std::numeric_limits<Bytes>::max();
  EXPECT_EQ(costs.compute_ns(op), kMaxTimeNs);
}

TEST(TimeSaturation, CollectivesSaturate) {
  const LinkCost slow{1e-3, 1e9};  // 1 MB/s, 1 s per hop: the slowest link the scenario fields allow
  const Bytes huge = std::numeric_limits<Bytes>::max();
  for (const auto kind : {CollectiveKind::AllReduce, CollectiveKind::ReduceScatter, CollectiveKind::AllGather,
                          CollectiveKind::Broadcast, CollectiveKind::Reduce, CollectiveKind::Scatter}) {
    EXPECT_EQ(collective_time_ns({kind, 65536, huge, 0}, slow), kMaxTimeNs) << collective_kind_name(kind);
  }
  EXPECT_EQ(collective_time_ns({CollectiveKind::AllReduce, 2, 1'000'000, 0}, {100, 1000}), 12'000);  // unchanged below
}

// A model-states-only model so large that each bucket's all-reduce over a 1 MB/s link takes longer than kMaxTimeNs:
// the run ends at kMaxTimeNs, every figure stays in [0, kMaxTimeNs] (before, they wrapped to INT64_MIN).
TEST(TimeSaturation, AWholeRunSaturatesInsteadOfWrapping) {
  Scenario s;
  s.model.spec = "params:1e15";
  s.simulation.link_gbps = 1e-3;
  s.accounting.mode = AccountingMode::Exact;
  const ResolvedScenario resolved = resolve_scenario(s);
  const Plan plan = lower_validated_plan(resolved);
  DiscardTraceSink sink;
  const SimulationResult result = simulate(resolved, plan, sink);
  EXPECT_EQ(result.run_time_ns, kMaxTimeNs);
  for (const TimeNs t : {result.step_begin_ns, result.step_end_ns, result.step_time_ns, result.total_comm_ns, result.exposed_comm_ns}) {
    EXPECT_GE(t, 0);
    EXPECT_LE(t, kMaxTimeNs);
  }
  for (const auto& rank : result.ranks)
    for (const TimeNs t : {rank.begin_ns, rank.end_ns, rank.comm_ns, rank.wait_ns, rank.compute_busy_ns}) {
      EXPECT_GE(t, 0) << rank.rank;
      EXPECT_LE(t, kMaxTimeNs) << rank.rank;
    }
  for (const auto& collective : result.collectives) {
    EXPECT_GE(collective.time_ns, 0);
    EXPECT_LE(collective.time_ns, kMaxTimeNs);
  }
  EXPECT_FALSE(format_duration(result.step_time_ns).empty());
}

}  // namespace
}  // namespace shardscope
