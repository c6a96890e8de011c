// A simulated run that runs out of memory says where: each rank's first failed allocation (from the accounting) is
// located at the simulated time of its op, and recorded as an Error event there, as an executed run records one.
#include <gtest/gtest.h>

#include "memory/accounting.h"
#include "sim/simulator.h"
#include "strategy/lower.h"

namespace shardscope {
namespace {

TEST(SimulatedOutOfMemory, LocatedAtTheFailingAllocation) {
  Scenario s;
  s.training.batch = 2048;
  s.cluster.device = "custom";
  s.cluster.capacity_gib = 1.5;  // DDP of 20 × Linear(2000): parameters, bucket and gradients fit, Adam's state does not
  s.accounting.mode = AccountingMode::Exact;
  const ResolvedScenario resolved = resolve_scenario(s);
  const Plan plan = lower_validated_plan(resolved);
  VectorTraceSink sink;
  const SimulationResult result = simulate(resolved, plan, sink);
  const MemoryReport memory = account_memory(plan, AccountingMode::Exact, resolved.device.capacity, false);
  for (const RankTiming& rank : result.ranks) {
    const auto& expected = memory.ranks[static_cast<std::size_t>(rank.rank)].oom;
    ASSERT_TRUE(expected.has_value()) << "rank " << rank.rank;
    ASSERT_TRUE(rank.oom.has_value());
    EXPECT_EQ(rank.oom->tensor, expected->tensor);
    EXPECT_EQ(rank.oom->requested_bytes, expected->requested);
    EXPECT_GT(rank.oom->allocated_bytes + rank.oom->requested_bytes, rank.oom->capacity_bytes);
    // The allocation's own time: the OpBegin / Alloc event of that op on that rank.
    TimeNs alloc_time = -1;
    int errors = 0;
    for (const TraceEvent& e : sink.events()) {
      if (e.rank == rank.rank && e.op == expected->op && e.kind == TraceEventKind::Alloc) alloc_time = e.t_ns;
      if (e.rank == rank.rank && e.kind == TraceEventKind::Error && e.text.find("out of memory") != std::string::npos) {
        ++errors;
        EXPECT_EQ(e.t_ns, rank.oom->time_ns);
      }
    }
    EXPECT_EQ(alloc_time, rank.oom->time_ns);
    EXPECT_EQ(errors, 1);
  }
}

}  // namespace
}  // namespace shardscope
