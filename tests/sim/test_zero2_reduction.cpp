// ZeRO-2's strategy.zero2_reduce through lowering, accounting and simulation: reduce-scatter moves half the gradient
// traffic of all-reduce (NCCL's ring: an all-reduce moves 2(n−1)/n·S per rank, a reduce-scatter (n−1)/n·S), in half
// the time when latency is zero, with the same memory.
#include <gtest/gtest.h>

#include "engine/run_helpers.h"
#include "sim/simulator.h"

namespace shardscope {
namespace {

constexpr int kWorld = 4;

// mlp:8x512 (8 × 262,656 parameters, fp32) on 4 ranks with a 1.5 MiB bucket: a bucket holds one layer, so each
// step reduces 8 buckets; every link 100 GB/s without latency, so a collective's time is its bytes over B.
Scenario zero2(Zero2Reduce reduce) {
  Scenario s = testing::make("mlp:8x512", StrategyKind::Zero2, kWorld, 16, AccountingMode::Exact);
  s.strategy.reduce_bucket_mb = 1.5;
  s.strategy.zero2_reduce = reduce;
  s.simulation.link_gbps = 100;
  s.simulation.link_latency_us = 0;
  return s;
}

struct Simulated {
  testing::Run run;
  SimulationResult result;
};

Simulated simulate_scenario(const Scenario& scenario) {
  Simulated out{testing::run(scenario), {}};
  VectorTraceSink sink;
  out.result = simulate(out.run.scenario, out.run.plan, sink);
  EXPECT_TRUE(out.result.error.empty()) << out.result.error;
  return out;
}

const CollectiveTiming* timing_of(const SimulationResult& result, const std::string& kind) {
  for (const auto& c : result.collectives)
    if (c.kind == kind) return &c;
  return nullptr;
}

// Bytes one rank sends (nccl-tests' bus bytes: S × the busbw factor) over the step's collectives of `kind`.
double bus_bytes(const CollectiveTiming& c) { return c.busbw_gbps * static_cast<double>(c.time_ns); }

TEST(Zero2Reduction, ReduceScatterMovesHalfTheGradientTrafficOfAllReduce) {
  const Simulated scatter = simulate_scenario(zero2(Zero2Reduce::ReduceScatter));
  const Simulated all = simulate_scenario(zero2(Zero2Reduce::AllReduce));
  const CollectiveTiming* rs = timing_of(scatter.result, "reduce-scatter");
  const CollectiveTiming* ar = timing_of(all.result, "all-reduce");
  ASSERT_NE(rs, nullptr);
  ASSERT_NE(ar, nullptr);
  EXPECT_EQ(timing_of(scatter.result, "all-reduce"), nullptr);  // every gradient goes through the reduce-scatters
  EXPECT_EQ(timing_of(all.result, "reduce-scatter"), nullptr);

  // Both reduce every gradient once: S = the model's 8 × 262,656 fp32 gradients, in 8 buckets.
  constexpr double kGradientBytes = 8.0 * 262'656 * 4;
  constexpr double n = kWorld;
  EXPECT_EQ(rs->count, 8);
  EXPECT_EQ(ar->count, 8);
  EXPECT_EQ(rs->size_bytes, static_cast<Bytes>(kGradientBytes));
  EXPECT_EQ(ar->size_bytes, rs->size_bytes);
  EXPECT_NEAR(bus_bytes(*rs), (n - 1) / n * kGradientBytes, 1e-6 * kGradientBytes);
  EXPECT_NEAR(bus_bytes(*ar), 2 * (n - 1) / n * kGradientBytes, 1e-6 * kGradientBytes);
  EXPECT_NEAR(bus_bytes(*rs) / bus_bytes(*ar), 0.5, 1e-9);
  // 100 GB/s = 100 B/ns, no latency: (n−1)/n·S/B and 2(n−1)/n·S/B, each collective rounded to a nanosecond.
  EXPECT_NEAR(static_cast<double>(rs->time_ns), (n - 1) / n * kGradientBytes / 100, 8);
  EXPECT_NEAR(static_cast<double>(ar->time_ns), 2 * (n - 1) / n * kGradientBytes / 100, 8);
  // The post-step all-gather of the parameters is the same either way.
  const CollectiveTiming* gather_rs = timing_of(scatter.result, "all-gather");
  const CollectiveTiming* gather_ar = timing_of(all.result, "all-gather");
  ASSERT_NE(gather_rs, nullptr);
  ASSERT_NE(gather_ar, nullptr);
  EXPECT_EQ(gather_rs->size_bytes, gather_ar->size_bytes);
  EXPECT_EQ(gather_rs->time_ns, gather_ar->time_ns);
  // With overlap_comm off nothing hides the reductions: the step is shorter by the time saved.
  EXPECT_NEAR(static_cast<double>(all.result.step_time_ns - scatter.result.step_time_ns),
              static_cast<double>(ar->time_ns - rs->time_ns), 16);
}

// Both reduce in place on the ipg bucket (DeepSpeed up to v0.12.3: dist.reduce on its slices, or dist.all_reduce on
// it; zero2.cpp), so every rank's memory is the same byte for byte.
TEST(Zero2Reduction, MemoryIsTheSameForBothReductions) {
  const testing::Run scatter = testing::run(zero2(Zero2Reduce::ReduceScatter));
  const testing::Run all = testing::run(zero2(Zero2Reduce::AllReduce));
  ASSERT_EQ(scatter.report.ranks.size(), all.report.ranks.size());
  for (std::size_t r = 0; r < scatter.report.ranks.size(); ++r) {
    const auto& a = scatter.report.ranks[r];
    const auto& b = all.report.ranks[r];
    EXPECT_EQ(a.peak_allocated, b.peak_allocated) << "rank " << r;
    EXPECT_EQ(a.peak_reserved, b.peak_reserved) << "rank " << r;
    ASSERT_EQ(a.phases.size(), b.phases.size());
    for (std::size_t p = 0; p < a.phases.size(); ++p) EXPECT_EQ(a.phases[p].allocated, b.phases[p].allocated) << a.phases[p].name;
  }
}

}  // namespace
}  // namespace shardscope
