// Alpha-beta collective costs against the closed forms (NCCL ring; nccl-tests' bus bandwidth), and the
// roofline compute cost and link choice of CostModel, with expectations worked out by hand.
#include <gtest/gtest.h>

#include <cmath>

#include "sim/collective_cost.h"
#include "sim/cost_model.h"
#include "sim_test_helpers.h"

namespace shardscope {
namespace {

struct RingCase {
  int n;
  Bytes size;
  double gbps;
  double alpha_ns;
};

// Ring all-reduce = 2(n−1)/n · S/B + 2(n−1)·α (Patarasuk & Yuan 2009; NCCL's ring).
TEST(CollectiveCost, RingAllReduceMatchesTheClosedForm) {
  const RingCase cases[] = {{2, 1'000'000, 100, 1000}, {8, 1 * kGiB, 450, 1000}, {16, 64 * kMiB, 50, 5000}, {1024, 100 * kMiB, 25, 5000}};
  for (const auto& c : cases) {
    const double expected = 2.0 * (c.n - 1) / c.n * static_cast<double>(c.size) / c.gbps + 2.0 * (c.n - 1) * c.alpha_ns;
    EXPECT_NEAR(ring_all_reduce_ns(c.n, c.size, {c.gbps, c.alpha_ns}), expected, 1e-6 * expected) << c.n;
    EXPECT_EQ(collective_time_ns({CollectiveKind::AllReduce, c.n, c.size, 0}, {c.gbps, c.alpha_ns}), std::llround(expected));
  }
  // By hand: n = 2, S = 10^6 B, B = 100 B/ns, α = 1 µs: 1·10^6/100 + 2·1000 = 12,000 ns.
  EXPECT_EQ(collective_time_ns({CollectiveKind::AllReduce, 2, 1'000'000, 0}, {100, 1000}), 12'000);
  // n = 4, S = 4·10^6 B, B = 100, α = 500 ns: 2·3/4·40,000 + 6·500 = 60,000 + 3,000 = 63,000 ns.
  EXPECT_EQ(collective_time_ns({CollectiveKind::AllReduce, 4, 4'000'000, 0}, {100, 500}), 63'000);
}

// Reduce-scatter and all-gather = (n−1)/n · S/B + (n−1)·α, S the full buffer.
TEST(CollectiveCost, ReduceScatterAndAllGatherMatchTheClosedForm) {
  const RingCase cases[] = {{2, 1'000'000, 100, 1000}, {8, 1 * kGiB, 450, 1000}, {64, 256 * kMiB, 50, 5000}};
  for (const auto& c : cases) {
    const double expected = static_cast<double>(c.n - 1) / c.n * static_cast<double>(c.size) / c.gbps + (c.n - 1) * c.alpha_ns;
    EXPECT_NEAR(ring_reduce_scatter_ns(c.n, c.size, {c.gbps, c.alpha_ns}), expected, 1e-6 * expected);
    EXPECT_NEAR(ring_all_gather_ns(c.n, c.size, {c.gbps, c.alpha_ns}), expected, 1e-6 * expected);
  }
  // By hand: n = 4, S = 4·10^6 B, B = 100, α = 500 ns: 3/4·40,000 + 3·500 = 31,500 ns.
  EXPECT_EQ(collective_time_ns({CollectiveKind::ReduceScatter, 4, 4'000'000, 0}, {100, 500}), 31'500);
  EXPECT_EQ(collective_time_ns({CollectiveKind::AllGather, 4, 4'000'000, 0}, {100, 500}), 31'500);
}

TEST(CollectiveCost, RootedCollectivesAndMessages) {
  // Pipelined broadcast / reduce: S/B + (n−1)α = 4·10^6/100 + 3·500 = 41,500 ns.
  EXPECT_EQ(collective_time_ns({CollectiveKind::Broadcast, 4, 4'000'000, 0}, {100, 500}), 41'500);
  EXPECT_EQ(collective_time_ns({CollectiveKind::Reduce, 4, 4'000'000, 0}, {100, 500}), 41'500);
  // Scatter of chunks 1, 2, 3, 4 ·10^6 B from the root holding the 1·10^6 chunk: (10 − 1)·10^6/100 + 3·500 = 91,500 ns.
  EXPECT_EQ(collective_time_ns({CollectiveKind::Scatter, 4, 10'000'000, 1'000'000}, {100, 500}), 91'500);
  EXPECT_EQ(collective_time_ns({CollectiveKind::Gather, 4, 10'000'000, 1'000'000}, {100, 500}), 91'500);
  // Send / recv: S/B + α = 500,000/100 + 1000 = 6,000 ns.
  EXPECT_DOUBLE_EQ(point_to_point_ns(500'000, {100, 1000}), 6'000);
  // One rank: nothing to move.
  EXPECT_EQ(collective_time_ns({CollectiveKind::AllReduce, 1, 1'000'000, 0}, {100, 1000}), 0);
}

// nccl-tests doc/PERFORMANCE.md: with a perfect ring (α = 0) the bus bandwidth equals the link bandwidth for
// every collective; algbw = S / t.
TEST(CollectiveCost, BusBandwidthOfAPerfectRingIsTheLinkBandwidth) {
  const LinkCost link{450, 0};
  for (CollectiveKind kind : {CollectiveKind::AllReduce, CollectiveKind::ReduceScatter, CollectiveKind::AllGather,
                              CollectiveKind::Broadcast, CollectiveKind::Reduce}) {
    const CollectiveShape shape{kind, 8, 8 * kGiB, 0};
    EXPECT_NEAR(bus_bandwidth_gbps(shape, collective_time_ns(shape, link)), 450, 1e-3) << collective_kind_name(kind);
  }
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveKind::AllReduce, 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveKind::AllGather, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveKind::Broadcast, 8), 1.0);
}

TEST(CostModel, RooflineComputeTime) {
  Scenario s;
  s.simulation.compute_efficiency = 0.5;
  s.simulation.memory_efficiency = 0.8;
  s.simulation.kernel_overhead_us = 5;
  const CostModel costs = CostModel::from_scenario(resolve_scenario(s));
  Op op;
  // Compute-bound: H100 fp32 67 TFLOP/s × 0.5 = 33,500 FLOP/ns; 3.35·10^9 FLOP → 100,000 ns, + 5,000 ns launch.
  op.flops = 3.35e9;
  op.bytes_accessed = 1'000'000;  // 1e6 / (3350 × 0.8 = 2,680 B/ns) = 373 ns: not the bound
  EXPECT_EQ(costs.compute_ns(op), 105'000);
  // Memory-bound: 2.68·10^9 B / 2,680 B/ns = 1,000,000 ns, + 5,000.
  op.flops = 1e6;
  op.bytes_accessed = 2'680'000'000;
  EXPECT_EQ(costs.compute_ns(op), 1'005'000);
  // No work: bookkeeping, no kernel.
  op.flops = 0;
  op.bytes_accessed = 0;
  EXPECT_EQ(costs.compute_ns(op), 0);
}

TEST(CostModel, MixedPrecisionUsesTheTensorCorePeak) {
  Scenario s;
  s.simulation.compute_efficiency = 1;
  s.simulation.kernel_overhead_us = 0;
  ResolvedScenario r = resolve_scenario(s);
  r.settings.training.dtype = Dtype::Bf16;  // set after resolving: bf16 lowering is another issue's
  Op op;
  op.flops = 989e9;  // H100 bf16 dense peak 989 TFLOP/s → 1 ms
  EXPECT_EQ(CostModel::from_scenario(r).compute_ns(op), 1'000'000);
}

TEST(CostModel, GroupsSpanningNodesUseTheInterNodeLink) {
  Scenario s;
  s.cluster.world = 16;
  s.simulation.gpus_per_node = 4;
  const CostModel costs = CostModel::from_scenario(resolve_scenario(s));
  // H100 defaults: NVLink 4 (450 GB/s, 1 µs) inside a node, InfiniBand NDR (50 GB/s, 5 µs) between nodes.
  EXPECT_DOUBLE_EQ(costs.link_for_group({0, 1, 2, 3}).bytes_per_ns, 450);
  EXPECT_DOUBLE_EQ(costs.link_for_group({4, 5, 6, 7}).alpha_ns, 1000);
  EXPECT_DOUBLE_EQ(costs.link_for_group({2, 3, 4, 5}).bytes_per_ns, 50);
  EXPECT_DOUBLE_EQ(costs.link_for_group({2, 3, 4, 5}).alpha_ns, 5000);
  EXPECT_DOUBLE_EQ(costs.link_between(3, 4).bytes_per_ns, 50);
  EXPECT_DOUBLE_EQ(costs.link_between(4, 7).bytes_per_ns, 450);
}

}  // namespace
}  // namespace shardscope
