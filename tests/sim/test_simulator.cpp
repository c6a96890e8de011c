// The event loop on tiny hand-built plans: exact integer-ns timelines computed by hand in the comments,
// waiting at collectives and messages, DDP-style overlap, memory events and determinism.
#include <gtest/gtest.h>

#include "memory/accounting.h"
#include "plan/validate.h"
#include "sim/simulator.h"
#include "sim_test_helpers.h"
#include "strategy/lower.h"

namespace shardscope {
namespace {

using testing::flops_for_ns;
using testing::round_number_scenario;

const TraceEvent* find_event(const std::vector<TraceEvent>& events, TraceEventKind kind, int rank, OpIndex op) {
  for (const auto& e : events)
    if (e.kind == kind && e.rank == rank && e.op == op) return &e;
  return nullptr;
}

// Two ranks: compute (rank 0: 1,000 ns; rank 1: 3,000 ns), an all-reduce of 10^6 B, then 500 ns of compute that
// needs the all-reduce. Links 100 B/ns, α = 1 µs: all-reduce 2·(1/2)·10^6/100 + 2·1000 = 12,000 ns.
//   rank 0 arrives at 1,000, rank 1 at 3,000 → the all-reduce runs 3,000–15,000 on both (rank 0 waits 2,000);
//   the last compute runs 15,000–15,500. Step time 15,500.
TEST(Simulator, CollectiveStartsWhenTheLastMemberArrives) {
  Plan plan;
  plan.groups = {{0, 1}};
  OpIndex all_reduce = -1;
  for (int r = 0; r < 2; ++r) {
    ProgramBuilder b(r);
    b.set_step(1);
    b.compute(ComputeKind::Backward, "backward", flops_for_ns(r == 0 ? 1000 : 3000), 0);
    all_reduce = b.collective(CollectiveKind::AllReduce, 0, 1'000'000, "all-reduce", -1, {b.last_compute()});
    const OpIndex after = b.compute(ComputeKind::Optimizer, "step", flops_for_ns(500), 0);
    b.add_dep(after, all_reduce);
    plan.programs.push_back(b.finish());
  }
  ASSERT_TRUE(validate_plan(plan).ok());
  VectorTraceSink sink;
  const auto result = simulate(round_number_scenario(100, 1), plan, sink);
  ASSERT_TRUE(result.error.empty()) << result.error;
  EXPECT_EQ(result.step_time_ns, 15'500);
  EXPECT_EQ(find_event(sink.events(), TraceEventKind::OpBegin, 0, all_reduce)->t_ns, 3'000);
  EXPECT_EQ(find_event(sink.events(), TraceEventKind::OpEnd, 1, all_reduce)->t_ns, 15'000);
  EXPECT_EQ(result.ranks[0].wait_ns, 2'000);
  EXPECT_EQ(result.ranks[1].wait_ns, 0);
  EXPECT_EQ(result.ranks[0].comm_ns, 12'000);
  EXPECT_EQ(result.ranks[0].exposed_comm_ns, 12'000);  // nothing computes while it runs
  EXPECT_EQ(result.ranks[0].compute_busy_ns, 1'500);
  EXPECT_DOUBLE_EQ(result.ranks[1].utilisation, 3'500.0 / 15'500);
  // Idle: rank 0 14,000 / 15,500, rank 1 12,000 / 15,500; mean 13,000 / 15,500.
  EXPECT_DOUBLE_EQ(result.bubble_fraction, 13'000.0 / 15'500);
  ASSERT_EQ(result.collectives.size(), 1u);
  // busbw = S / t × 2(n−1)/n = 10^6 / 12,000 × 1 = 83.33 GB/s.
  EXPECT_NEAR(result.collectives[0].busbw_gbps, 1e6 / 12'000.0, 1e-9);
}

// Rank 0 computes 2,000 ns then sends 500,000 B to rank 1, which receives then computes 1,000 ns.
// Message: 500,000/100 + 1,000 = 6,000 ns. The receive is posted at 0, the send at 2,000: both run 2,000–8,000
// (the receiver waits 2,000); rank 1 computes 8,000–9,000.
TEST(Simulator, SendAndReceiveMeet) {
  Plan plan;
  ProgramBuilder sender(0), receiver(1);
  sender.set_step(1);
  receiver.set_step(1);
  sender.compute(ComputeKind::Forward, "stage 0", flops_for_ns(2000), 0);
  const OpIndex send = sender.send(1, 500'000, "activation", {sender.last_compute()});
  const OpIndex recv = receiver.recv(0, 500'000, "activation");
  const OpIndex compute = receiver.compute(ComputeKind::Forward, "stage 1", flops_for_ns(1000), 0);
  receiver.add_dep(compute, recv);
  plan.programs.push_back(sender.finish());
  plan.programs.push_back(receiver.finish());
  ASSERT_TRUE(validate_plan(plan).ok());
  VectorTraceSink sink;
  const auto result = simulate(round_number_scenario(100, 1), plan, sink);
  EXPECT_EQ(result.step_time_ns, 9'000);
  EXPECT_EQ(find_event(sink.events(), TraceEventKind::OpBegin, 1, recv)->t_ns, 2'000);
  EXPECT_EQ(find_event(sink.events(), TraceEventKind::OpEnd, 0, send)->t_ns, 8'000);
  EXPECT_EQ(result.ranks[1].wait_ns, 2'000);
  EXPECT_EQ(result.ranks[0].wait_ns, 0);
  EXPECT_EQ(result.critical_rank, 1);
  EXPECT_EQ(result.total_comm_ns, 6'000);
}

// DDP-style overlap, 2 ranks: 4 forwards and 4 backwards of 10,000 ns; gradients of the last two layers form
// bucket 0, the first two bucket 1 (10^6 B each, all-reduce 12,000 ns as above); a zero-work "wait" op needs
// both all-reduces, then a 1,000 ns optimizer step.
//   forward 0–40,000; backward L3 40,000–50,000, L2 50,000–60,000; bucket 0 60,000–72,000 hidden behind
//   L1 60,000–70,000 and L0 70,000–80,000; bucket 1 80,000–92,000 with nothing to hide it; step 92,000–93,000.
//   Step time = compute 81,000 + the last bucket's all-reduce 12,000 = 93,000; exposed = 12,000 of 24,000.
TEST(Simulator, DdpBucketsOverlapTheRemainingBackward) {
  Plan plan;
  plan.groups = {{0, 1}};
  for (int r = 0; r < 2; ++r) {
    ProgramBuilder b(r);
    b.set_step(1);
    for (int layer = 0; layer < 4; ++layer) b.compute(ComputeKind::Forward, "forward", flops_for_ns(10'000), 0, layer);
    std::vector<OpIndex> all_reduces;
    for (int layer = 3; layer >= 0; --layer) {
      b.compute(ComputeKind::Backward, "backward", flops_for_ns(10'000), 0, layer);
      if (layer % 2 == 0)
        all_reduces.push_back(b.collective(CollectiveKind::AllReduce, 0, 1'000'000, "bucket", -1, {b.last_compute()}));
    }
    const OpIndex wait = b.compute(ComputeKind::Copy, "wait for all-reduces", 0, 0);
    for (OpIndex op : all_reduces) b.add_dep(wait, op);
    b.compute(ComputeKind::Optimizer, "step", flops_for_ns(1'000), 0);
    plan.programs.push_back(b.finish());
  }
  ASSERT_TRUE(validate_plan(plan).ok());
  VectorTraceSink sink;
  const auto result = simulate(round_number_scenario(100, 1), plan, sink);
  EXPECT_EQ(result.step_time_ns, 81'000 + 12'000);
  EXPECT_EQ(result.total_comm_ns, 24'000);
  EXPECT_EQ(result.exposed_comm_ns, 12'000);
  EXPECT_EQ(result.ranks[1].compute_busy_ns, 81'000);
}

// The real DDP lowering, one step: PyTorch 2.x makes a single bucket for the first iteration, all-reduced after
// the whole backward, so all of it is exposed. 20 × Linear(2000, 2000) in fp32: S = 20·(2000·2000 + 2000)·4 =
// 320,160,000 B; 2 ranks over NVLink 4 (450 GB/s, α 1 µs): 320,160,000/450 + 2·1,000 = 713,466.67 → 713,467 ns.
TEST(Simulator, FirstDdpStepExposesItsSingleBucket) {
  Scenario s;
  s.cluster.world = 2;
  const ResolvedScenario r = resolve_scenario(s);
  const Plan plan = lower_plan(r);
  VectorTraceSink sink;
  const auto result = simulate(r, plan, sink);
  ASSERT_TRUE(result.error.empty()) << result.error;
  EXPECT_EQ(result.step, 1);
  EXPECT_EQ(result.total_comm_ns, 713'467);
  EXPECT_EQ(result.exposed_comm_ns, 713'467);
  EXPECT_EQ(result.ranks[0].peak_bytes, account_memory(plan, s.accounting.mode, r.device.capacity).ranks[0].peak_allocated);
}

// Alloc / Free events carry the accounted block and the totals after it: 1,000 B rounds up to a 1,024 B block
// under the PyTorch caching allocator's 512 B rounding, and 3,000 B to 3,072 B.
TEST(Simulator, MemoryEventsCarryAccountedBytes) {
  Scenario s;
  s.cluster.world = 1;
  s.strategy.kind = StrategyKind::Single;
  s.accounting.mode = AccountingMode::PyTorch2;
  const ResolvedScenario r = resolve_scenario(s);
  Plan plan;
  ProgramBuilder b(0);
  b.set_step(1);
  const TensorId a = b.alloc("a", 1000, Category::Activations);
  const TensorId c = b.alloc("c", 3000, Category::Temporaries);
  b.compute(ComputeKind::Forward, "f", flops_for_ns(100), 0);
  b.release(a);
  b.release(c);
  plan.programs.push_back(b.finish());
  VectorTraceSink sink;
  simulate(r, plan, sink);
  std::vector<std::pair<Bytes, Bytes>> seen;  // (bytes, allocated after)
  for (const auto& e : sink.events())
    if (e.kind == TraceEventKind::Alloc || e.kind == TraceEventKind::Free) seen.emplace_back(e.bytes, e.allocated_after);
  const std::vector<std::pair<Bytes, Bytes>> expected = {{1024, 1024}, {3072, 4096}, {1024, 3072}, {3072, 0}};
  EXPECT_EQ(seen, expected);
  EXPECT_EQ(sink.events().back().kind, TraceEventKind::RunEnd);
  EXPECT_EQ(sink.events().back().text, "ok");
}

bool same_event(const TraceEvent& a, const TraceEvent& b) {
  return a.kind == b.kind && a.rank == b.rank && a.t_ns == b.t_ns && a.step == b.step && a.op == b.op && a.stream == b.stream &&
         a.category == b.category && a.bytes == b.bytes && a.allocated_after == b.allocated_after &&
         a.reserved_after == b.reserved_after && a.tensor == b.tensor && a.text == b.text;
}

TEST(Simulator, SamePlanSameEventsInTimeOrder) {
  Scenario s;
  s.cluster.world = 8;
  s.training.steps = 2;
  s.simulation.gpus_per_node = 4;
  const ResolvedScenario r = resolve_scenario(s);
  const Plan plan = lower_plan(r);
  VectorTraceSink first, second;
  simulate(r, plan, first);
  simulate(r, plan, second);
  ASSERT_EQ(first.events().size(), second.events().size());
  for (std::size_t i = 0; i < first.events().size(); ++i) ASSERT_TRUE(same_event(first.events()[i], second.events()[i])) << i;
  // Time-sorted; at equal times by rank, then op index.
  const auto& events = first.events();
  for (std::size_t i = 1; i + 1 < events.size(); ++i) {
    const auto& a = events[i - 1];
    const auto& b = events[i];
    ASSERT_LE(a.t_ns, b.t_ns) << i;
    if (a.t_ns == b.t_ns) {
      ASSERT_TRUE(a.rank < b.rank || (a.rank == b.rank && a.op <= b.op)) << i;
    }
  }
  // Every op of the plan appears: one begin and one end per compute / communication op, one event per other op.
  EXPECT_EQ(events.size(), 1 + [&] {
    std::size_t n = 0;
    for (const auto& p : plan.programs)
      for (const auto& op : p.ops) n += (op.kind == OpKind::Alloc || op.kind == OpKind::Free || op.kind == OpKind::Phase) ? 1 : 2;
    return n;
  }());
}

// A sink that drops events unread gets none built (TraceSink::keeps_events), yet the figures and the event count are
// those of the same run with its events kept.
TEST(Simulator, DroppedEventsAreCountedNotBuilt) {
  Scenario s;
  s.cluster.world = 4;
  s.training.steps = 2;
  const ResolvedScenario r = resolve_scenario(s);
  const Plan plan = lower_plan(r);
  VectorTraceSink kept;
  DiscardTraceSink dropped;
  ASSERT_FALSE(dropped.keeps_events());
  const SimulationResult with_events = simulate(r, plan, kept);
  const SimulationResult counted = simulate(r, plan, dropped);
  EXPECT_EQ(counted.event_count, kept.events().size());
  EXPECT_EQ(counted.step_time_ns, with_events.step_time_ns);
  EXPECT_EQ(counted.exposed_comm_ns, with_events.exposed_comm_ns);
  ASSERT_EQ(counted.ranks.size(), with_events.ranks.size());
  for (std::size_t i = 0; i < counted.ranks.size(); ++i) {
    EXPECT_EQ(counted.ranks[i].peak_bytes, with_events.ranks[i].peak_bytes);
    EXPECT_EQ(counted.ranks[i].wait_ns, with_events.ranks[i].wait_ns);
  }
  // A tee keeps events if any of its sinks does.
  VectorTraceSink vector;
  EXPECT_TRUE(TeeTraceSink({&dropped, &vector}).keeps_events());
  EXPECT_FALSE(TeeTraceSink({&dropped}).keeps_events());
}

// 4 ranks, 2 per node; links 100 B/ns inside a node, 10 B/ns between nodes, α = 0. An all-reduce of 4·10^6 B
// within node 0 ({0, 1}) takes 2·(1/2)·4·10^6/100 = 40,000 ns; then one over all four ranks crosses nodes:
// 2·(3/4)·4·10^6/10 = 600,000 ns. Step time 640,000.
TEST(Simulator, GroupsAcrossNodesRunAtTheInterNodePace) {
  Scenario s;
  s.cluster.world = 4;
  s.accounting.mode = AccountingMode::Exact;
  s.simulation.gpus_per_node = 2;
  s.simulation.link_gbps = 100;
  s.simulation.link_latency_us = 0;
  s.simulation.inter_node_gbps = 10;
  Plan plan;
  plan.groups = {{0, 1}, {2, 3}, {0, 1, 2, 3}};
  for (int r = 0; r < 4; ++r) {
    ProgramBuilder b(r);
    b.set_step(1);
    b.collective(CollectiveKind::AllReduce, r < 2 ? 0 : 1, 4'000'000, "node all-reduce");
    b.collective(CollectiveKind::AllReduce, 2, 4'000'000, "world all-reduce");
    plan.programs.push_back(b.finish());
  }
  ASSERT_TRUE(validate_plan(plan).ok());
  VectorTraceSink sink;
  const auto result = simulate(resolve_scenario(s), plan, sink);
  EXPECT_EQ(result.step_time_ns, 640'000);
  EXPECT_EQ(result.total_comm_ns, 640'000);
}

TEST(Simulator, UnmatchedCollectiveIsReportedNotHung) {
  Plan plan;
  plan.groups = {{0, 1}};
  ProgramBuilder a(0), b(1);
  a.collective(CollectiveKind::AllReduce, 0, 1000, "lonely all-reduce");
  b.compute(ComputeKind::Forward, "f", flops_for_ns(10), 0);
  plan.programs.push_back(a.finish());
  plan.programs.push_back(b.finish());
  VectorTraceSink sink;
  const auto result = simulate(round_number_scenario(100, 1), plan, sink);
  EXPECT_NE(result.error.find("lonely all-reduce"), std::string::npos) << result.error;
  EXPECT_EQ(sink.events()[sink.events().size() - 2].kind, TraceEventKind::Error);
}

}  // namespace
}  // namespace shardscope
