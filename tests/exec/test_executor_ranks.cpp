// The executor with two rank threads: gradients all-reduced on the communication stream while the compute stream
// goes on (ordering read from the trace, results against plain loops), and an injected allocation failure on
// rank 1 that ends the run with an Error event instead of a hang.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "exec/backends/backend_factory.h"
#include "exec/data/model_parameters.h"
#include "executor_test_plans.h"
#include "trace/events/trace_sink.h"

namespace shardscope::exec::test {
namespace {

constexpr int kRows = 2;  // per rank

struct RankOps {
  OpIndex all_reduce_weight = -1, other_compute = -1, scale_weight = -1;
};

// Per rank: forward / backward of fc0, then the weight and bias gradients all-reduced (communication stream),
// averaged (Scale 0.5) and an SGD step. Rank 0 runs `other compute` on its compute stream after issuing the
// all-reduces and then sends a token (copy stream) that rank 1 receives before its all-reduces: rank 0's all-reduce
// can only finish after `other compute` did, which proves the compute stream went on while it was pending.
Plan two_rank_plan(std::vector<RankOps>& marks) {
  Plan plan;
  plan.strategy = "hand-built ddp";
  plan.groups = {{0, 1}};
  marks.assign(2, {});
  for (int rank = 0; rank < 2; ++rank) {
    ProgramBuilder b(rank);
    const LinearStepTensors t = build_forward_backward(b, kRows);
    const TensorId token = b.alloc("token", 4, Category::CommunicationBuffers, true);
    if (rank == 1) b.set_kernel(b.recv(0, 4, "recv token"), Kernel::None, {whole(token)});
    RankOps& ops = marks[static_cast<std::size_t>(rank)];
    ops.all_reduce_weight = b.collective(CollectiveKind::AllReduce, 0, 64, "all-reduce fc0.weight.grad");
    b.set_kernel(ops.all_reduce_weight, Kernel::None, {whole(t.grad_weight)});
    const OpIndex all_reduce_bias = b.collective(CollectiveKind::AllReduce, 0, 16, "all-reduce fc0.bias.grad");
    b.set_kernel(all_reduce_bias, Kernel::None, {whole(t.grad_bias)});
    OpIndex send = -1;
    if (rank == 0) {
      ops.other_compute = b.compute(ComputeKind::Copy, "other compute", 0, 0);
      send = b.send(1, 4, "send token");
      b.set_kernel(send, Kernel::None, {whole(token)});
    }
    b.wait(ops.all_reduce_weight);
    b.wait(all_reduce_bias);
    ops.scale_weight = b.compute(ComputeKind::Backward, "average fc0.weight.grad", 0, 0);
    b.set_kernel(ops.scale_weight, Kernel::Scale, {whole(t.grad_weight)});
    const OpIndex scale_bias = b.compute(ComputeKind::Backward, "average fc0.bias.grad", 0, 0);
    b.set_kernel(scale_bias, Kernel::Scale, {whole(t.grad_bias)});
    build_sgd_step(b, t);
    Program program = b.finish();
    program.data = {rank, 2};  // DistributedSampler: rank r of 2 loads its half of the step's samples
    program.ops[static_cast<std::size_t>(ops.scale_weight)].scale = 0.5;
    program.ops[static_cast<std::size_t>(scale_bias)].scale = 0.5;
    if (send >= 0) program.ops[static_cast<std::size_t>(send)].stream = Stream::Copy;  // not behind the all-reduces
    plan.programs.push_back(std::move(program));
  }
  return plan;
}

TimeNs event_time(const VectorTraceSink& sink, int rank, OpIndex op, TraceEventKind kind) {
  for (const auto& e : sink.events())
    if (e.rank == rank && e.op == op && e.kind == kind) return e.t_ns;
  ADD_FAILURE() << "no event for rank " << rank << " op " << op;
  return -1;
}

TEST(ExecutorRanks, AllReduceOnTheCommunicationStreamOverlapsComputeAndSums) {
  const ResolvedScenario scenario = tiny_scenario(StrategyKind::Ddp, 2, kRows);
  std::vector<RankOps> marks;
  const Plan plan = two_rank_plan(marks);
  VectorTraceSink sink;
  ExecutionOptions options;
  options.keep_parameters = true;
  const ExecutionResult result = execute(scenario, plan, sink, options);
  ASSERT_TRUE(result.ok) << result.error;

  // Ordering on rank 0: the all-reduce ran on the communication stream, `other compute` on the compute stream
  // finished before it (the token it releases is what lets rank 1 join), and the averaging waited for it.
  const RankOps& r0 = marks[0];
  for (const auto& e : sink.events()) {
    if (e.rank == 0 && e.op == r0.all_reduce_weight && e.kind == TraceEventKind::OpBegin) {
      EXPECT_EQ(e.stream, Stream::Communication);
    }
  }
  const TimeNs all_reduce_end = event_time(sink, 0, r0.all_reduce_weight, TraceEventKind::OpEnd);
  EXPECT_LE(event_time(sink, 0, r0.other_compute, TraceEventKind::OpEnd), all_reduce_end);
  EXPECT_GE(event_time(sink, 0, r0.scale_weight, TraceEventKind::OpBegin), all_reduce_end);

  // DistributedSampler split of the step's 4 samples: rank 0 holds samples 0 and 2, rank 1 samples 1 and 3.
  const LinearMseStep s0 = reference_step({0, 2});
  const LinearMseStep s1 = reference_step({1, 3});
  EXPECT_NEAR(*result.ranks[0].loss, s0.loss, 1e-6 * s0.loss);
  EXPECT_NEAR(*result.ranks[1].loss, s1.loss, 1e-6 * s1.loss);
  for (int rank = 0; rank < 2; ++rank) {
    const auto held = whole_parameters(result.ranks[static_cast<std::size_t>(rank)]);
    const auto& weight = held.at("fc0.weight");
    const auto& bias = held.at("fc0.bias");
    for (std::size_t i = 0; i < weight.size(); ++i)
      EXPECT_NEAR(weight[i], s0.weight[i] - 0.01 * (s0.grad_weight[i] + s1.grad_weight[i]) / 2, 1e-6) << rank << " " << i;
    for (std::size_t o = 0; o < bias.size(); ++o)
      EXPECT_NEAR(bias[o], s0.bias[o] - 0.01 * (s0.grad_bias[o] + s1.grad_bias[o]) / 2, 1e-6) << rank << " " << o;
  }
  // All-reduce leaves identical bits on both ranks, so both replicas hold the same parameters.
  EXPECT_EQ(result.ranks[0].param_checksum, result.ranks[1].param_checksum);
}

TEST(ExecutorRanks, AllocationFailureOnRankOneEndsTheRunCleanly) {
  const ResolvedScenario scenario = tiny_scenario(StrategyKind::Ddp, 2, kRows);
  std::vector<RankOps> marks;
  const Plan plan = two_rank_plan(marks);
  VectorTraceSink sink;
  ExecutionOptions options;
  // Rank 1 allocates fc0.weight, fc0.bias, input x, target y, ...: the 4th allocation is the target.
  options.allocation_failures[1] = AllocationFailurePlan{4, std::nullopt};
  const ExecutionResult result = execute(scenario, plan, sink, options);  // returns: rank 0 was not left waiting
  EXPECT_FALSE(result.ok);
  EXPECT_EQ(result.failed_rank, 1);
  EXPECT_NE(result.error.find("rank 1 failed"), std::string::npos) << result.error;
  EXPECT_NE(result.error.find("target y"), std::string::npos) << result.error;

  const auto& events = sink.events();
  const auto errors = std::count_if(events.begin(), events.end(), [](const TraceEvent& e) { return e.kind == TraceEventKind::Error; });
  EXPECT_EQ(errors, 1);
  const auto error = std::find_if(events.begin(), events.end(), [](const TraceEvent& e) { return e.kind == TraceEventKind::Error; });
  ASSERT_NE(error, events.end());
  EXPECT_EQ(error->rank, 1);
  EXPECT_NE(error->text.find("target y"), std::string::npos);
  ASSERT_EQ(events.back().kind, TraceEventKind::RunEnd);
  EXPECT_EQ(events.back().text, result.error);
  // Rank 0's all-reduce never completed: rank 1 never joined it.
  for (const auto& e : events)
    EXPECT_FALSE(e.rank == 0 && e.op == marks[0].all_reduce_weight && e.kind == TraceEventKind::OpEnd);
}

}  // namespace
}  // namespace shardscope::exec::test
