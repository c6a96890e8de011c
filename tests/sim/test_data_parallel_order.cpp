// nn.DataParallel's order in a simulated run: worker devices have no program of their own; device 0's thread
// scatters the input, replicates, gathers, scatters the output gradient and reduces (torch/nn/parallel/
// data_parallel.py, _functions.py). So a worker's memory for the next call can appear only once device 0 has got
// there: step 2's input chunk not before device 0's step-1 optimizer step has ended, the output-gradient chunk not
// before device 0's loss backward has ended, the reduce_add buffers not before every replica's backward has ended.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "sim/simulator.h"
#include "strategy/lower.h"

namespace shardscope {
namespace {

struct Run {
  Plan plan;
  std::vector<TraceEvent> events;
};

Run simulate_dp(StrategyKind kind, int world, std::optional<int> gpu0_batch) {
  Scenario s;
  s.strategy.kind = kind;
  s.strategy.gpu0_batch = gpu0_batch;
  s.cluster.world = world;
  s.training.batch = 512;
  s.training.steps = 2;
  s.accounting.mode = AccountingMode::Exact;
  const ResolvedScenario resolved = resolve_scenario(s);
  Run run{lower_validated_plan(resolved), {}};
  VectorTraceSink sink;
  simulate(resolved, run.plan, sink);
  run.events = sink.events();
  return run;
}

const Op& op_of(const Run& run, const TraceEvent& e) {
  return run.plan.programs[static_cast<std::size_t>(e.rank)].ops[static_cast<std::size_t>(e.op)];
}

std::string tensor_name(const Run& run, const TraceEvent& e) {
  return run.plan.programs[static_cast<std::size_t>(e.rank)].tensors[static_cast<std::size_t>(e.tensor)].name;
}

// The last end time of a compute op of `kind` in `step` on `rank` (all ranks when rank < 0).
TimeNs last_end(const Run& run, int rank, int step, ComputeKind kind) {
  TimeNs t = -1;
  for (const TraceEvent& e : run.events)
    if (e.kind == TraceEventKind::OpEnd && (rank < 0 || e.rank == rank) && e.step == step && e.op >= 0) {
      const Op& op = op_of(run, e);
      if (op.kind == OpKind::Compute && op.compute_kind == kind) t = std::max(t, e.t_ns);
    }
  return t;
}

// Each rank's first allocation in `step` of a tensor whose name contains `part`.
std::map<int, TimeNs> first_alloc(const Run& run, int step, const std::string& part) {
  std::map<int, TimeNs> t;
  for (const TraceEvent& e : run.events)
    if (e.kind == TraceEventKind::Alloc && e.step == step && tensor_name(run, e).find(part) != std::string::npos &&
        !t.contains(e.rank))
      t[e.rank] = e.t_ns;
  return t;
}

void expect_device0_order(const Run& run, int world) {
  const TimeNs optimizer_end = last_end(run, 0, 1, ComputeKind::Optimizer);
  ASSERT_GT(optimizer_end, 0);
  const auto inputs = first_alloc(run, 2, "input chunk");
  ASSERT_EQ(static_cast<int>(inputs.size()), world - 1);  // device 0's chunk is a view of x
  for (const auto& [rank, t] : inputs)
    EXPECT_GE(t, optimizer_end) << "rank " << rank << " allocates step 2's input before device 0's optimizer ends";

  for (int step = 1; step <= 2; ++step) {
    const TimeNs loss_backward_end = last_end(run, 0, step, ComputeKind::LossBackward);
    ASSERT_GT(loss_backward_end, 0);
    const auto grads = first_alloc(run, step, "output grad chunk");
    ASSERT_EQ(static_cast<int>(grads.size()), world - 1);
    for (const auto& [rank, t] : grads)
      EXPECT_GE(t, loss_backward_end) << "rank " << rank << " step " << step;

    const TimeNs backward_end = last_end(run, -1, step, ComputeKind::Backward);
    const auto flats = first_alloc(run, step, "reduce_add chunk");
    ASSERT_FALSE(flats.empty());
    for (const auto& [rank, t] : flats) EXPECT_GE(t, backward_end) << "rank " << rank << " step " << step;
  }
}

TEST(DataParallelOrder, WorkersWaitForDeviceZerosThread) {
  expect_device0_order(simulate_dp(StrategyKind::DataParallel, 4, std::nullopt), 4);
}

// BalancedDataParallel with a small device-0 share: device 0's replica finishes its backward first, yet reduce_add
// starts (and allocates its buffers) only after the slowest replica.
TEST(DataParallelOrder, BalancedWorkersWaitForDeviceZerosThread) {
  expect_device0_order(simulate_dp(StrategyKind::BalancedDataParallel, 3, 100), 3);
}

// The gathered output appears on device 0 with the gather, after the slowest replica's forward: with a small device-0
// share its own forward ends long before, and the output (and the loss after it) must not fill its memory meanwhile.
TEST(DataParallelOrder, GatheredOutputAppearsWithTheGather) {
  const auto run = simulate_dp(StrategyKind::BalancedDataParallel, 3, 100);
  for (int step = 1; step <= 2; ++step) {
    const TimeNs device0_forward_end = last_end(run, 0, step, ComputeKind::Forward);
    const TimeNs slowest_forward_end = last_end(run, -1, step, ComputeKind::Forward);
    ASSERT_GT(slowest_forward_end, device0_forward_end) << "the scenario must make device 0 finish first";
    const auto gathered = first_alloc(run, step, "gathered output");
    ASSERT_EQ(gathered.count(0), 1u);
    EXPECT_GE(gathered.at(0), slowest_forward_end) << "step " << step;
  }
}

// A barrier moves nothing: no traffic in the step's collective summary.
TEST(DataParallelOrder, BarriersAreNotTraffic) {
  Scenario s;
  s.strategy.kind = StrategyKind::DataParallel;
  s.cluster.world = 2;
  const ResolvedScenario resolved = resolve_scenario(s);
  const Plan plan = lower_validated_plan(resolved);
  VectorTraceSink sink;
  const SimulationResult result = simulate(resolved, plan, sink);
  for (const auto& c : result.collectives) EXPECT_NE(c.kind, "barrier");
}

}  // namespace
}  // namespace shardscope
