// Step times and their breakdown (run/step_timing.h) on hand-made plans and intervals, every figure counted by hand.
#include <gtest/gtest.h>

#include <limits>
#include <memory>

#include "run/step_timing.h"

namespace shardscope {
namespace {

Op compute(int step, Kernel kernel, ComputeKind kind = ComputeKind::Forward) {
  Op op;
  op.kind = OpKind::Compute;
  op.step = step;
  op.kernel = kernel;
  op.compute_kind = kind;
  op.flops = 1;
  return op;
}

Op all_reduce(int step, int sequence) {
  Op op;
  op.kind = OpKind::Collective;
  op.stream = Stream::Communication;
  op.step = step;
  op.group = 0;
  op.sequence = sequence;
  return op;
}

// Two ranks, one step: load, forward (GEMM), ReLU (elementwise), an all-reduce, the optimizer.
Plan two_rank_plan() {
  Plan plan;
  plan.groups = {{0, 1}};
  for (int r = 0; r < 2; ++r) {
    Program p;
    p.rank = r;
    p.ops = {compute(1, Kernel::LoadBatch, ComputeKind::Copy), compute(1, Kernel::LinearForward),
             compute(1, Kernel::ReluForward), all_reduce(1, 0), compute(1, Kernel::OptimizerStep, ComputeKind::Optimizer)};
    plan.programs.push_back(p);
  }
  return plan;
}

TEST(StepTiming, BatchLoadingIsLeftOutAndTheCriticalRankBrokenDown) {
  const Plan plan = two_rank_plan();
  // Rank 0 loads [0, 10), computes [10, 40) and [40, 50), arrives at the all-reduce at 50, which starts at 70
  // (rank 1's arrival) and ends at 90, then steps [90, 100). Rank 1 loads longer, [0, 30): its load lies inside
  // the window (which starts at rank 0's first compute, 10) for 20 ns. It computes [30, 60) and [60, 70).
  const std::vector<OpInterval> intervals = {
      {0, 0, 0, 10}, {0, 1, 10, 40}, {0, 2, 40, 50}, {0, 3, 50, 90}, {0, 4, 90, 100},
      {1, 0, 0, 30}, {1, 1, 30, 60}, {1, 2, 60, 70}, {1, 3, 70, 90}, {1, 4, 90, 99}};
  const std::vector<StepTiming> steps = step_timings(plan, intervals);
  ASSERT_EQ(steps.size(), 1u);
  const StepTiming& t = steps[0];
  EXPECT_EQ(t.step, 1);
  EXPECT_EQ(t.load_batch_ns, 30);          // the longest load
  EXPECT_EQ(t.step_ns, (100 - 10) - 20);   // the window less rank 1's load inside it
  EXPECT_EQ(t.critical_rank, 0);           // its last op ends last (100)
  const auto kind = [&](TimeKind k) { return t.by_kind[static_cast<std::size_t>(k)]; };
  EXPECT_EQ(kind(TimeKind::Gemm), 30);
  EXPECT_EQ(kind(TimeKind::Elementwise), 10);
  EXPECT_EQ(kind(TimeKind::Optimizer), 10);
  EXPECT_EQ(kind(TimeKind::Communication), 20);  // from the last arrival (70), not rank 0's own (50)
  EXPECT_EQ(kind(TimeKind::Idle), 70 - 30 - 10 - 10 - 20);  // what is left: the wait at the all-reduce, less the load
  TimeNs sum = 0;
  for (TimeNs v : t.by_kind) sum += v;
  EXPECT_EQ(sum, t.step_ns);
}

TEST(StepTiming, CommunicationHiddenBehindComputeIsNotExposed) {
  Plan plan = two_rank_plan();
  // Rank 0's all-reduce runs [20, 45) while its forward runs [10, 40): 5 ns exposed, [40, 45).
  const std::vector<OpInterval> intervals = {
      {0, 1, 10, 40}, {0, 3, 20, 45}, {0, 2, 45, 50}, {0, 4, 50, 60},
      {1, 1, 10, 15}, {1, 3, 20, 45}, {1, 2, 45, 46}, {1, 4, 46, 47}};
  const StepTiming t = step_timings(plan, intervals).at(0);
  EXPECT_EQ(t.by_kind[static_cast<std::size_t>(TimeKind::Communication)], 5);
}

Op message(OpKind kind, int peer) {
  Op op;
  op.kind = kind;
  op.stream = Stream::Communication;
  op.step = 1;
  op.peer = peer;
  op.sequence = 0;
  return op;
}

TEST(StepTiming, AReceivePostedEarlyDoesNotStartTheStep) {
  // Two pipeline stages: rank 1 posts its receive at 0 (as soon as its previous step ended); rank 0 computes
  // [5, 25) and sends [25, 27); rank 1 receives until 27, then computes [27, 37). The step begins with rank 0's
  // forward at 5, not at rank 1's post: the transfer starts at 25, when the sender arrives.
  Plan plan;
  Program sender, receiver;
  sender.rank = 0;
  sender.ops = {compute(1, Kernel::LinearForward), message(OpKind::Send, 1)};
  receiver.rank = 1;
  receiver.ops = {message(OpKind::Recv, 0), compute(1, Kernel::LinearForward)};
  plan.programs = {sender, receiver};
  const std::vector<OpInterval> intervals = {{0, 0, 5, 25}, {0, 1, 25, 27}, {1, 0, 0, 27}, {1, 1, 27, 37}};
  const StepTiming t = step_timings(plan, intervals).at(0);
  EXPECT_EQ(t.step_ns, 37 - 5);
  EXPECT_EQ(t.critical_rank, 1);
  const auto kind = [&](TimeKind k) { return t.by_kind[static_cast<std::size_t>(k)]; };
  EXPECT_EQ(kind(TimeKind::Gemm), 10);
  EXPECT_EQ(kind(TimeKind::Communication), 27 - 25);
  EXPECT_EQ(kind(TimeKind::Idle), (37 - 5) - 10 - 2);  // rank 1 waiting for rank 0's forward, [5, 25)
}

TEST(StepTiming, TheMedianStepLeavesOutTheFirst) {
  std::vector<StepTiming> steps(5);
  const TimeNs times[] = {500, 40, 10, 30, 20};  // step 1 is the slow one-off
  for (int s = 0; s < 5; ++s) {
    steps[static_cast<std::size_t>(s)].step = s + 1;
    steps[static_cast<std::size_t>(s)].step_ns = times[s];
  }
  EXPECT_EQ(median_step(steps).step_ns, 20);  // steps 2-5: 10, 20, 30, 40; the lower median
  EXPECT_EQ(median_step({steps[0]}).step_ns, 500);
  EXPECT_THROW(median_step({}), std::invalid_argument);
}

TEST(StepTiming, TheSinkPairsBeginsWithEnds) {
  OpIntervalSink sink;
  TraceEvent e;
  e.rank = 1;
  e.op = 3;
  e.kind = TraceEventKind::OpBegin;
  e.t_ns = 5;
  sink.emit(e);
  e.kind = TraceEventKind::Alloc;  // ignored
  e.t_ns = 6;
  sink.emit(e);
  e.kind = TraceEventKind::OpEnd;
  e.t_ns = 9;
  sink.emit(e);
  const auto intervals = sink.intervals();
  ASSERT_EQ(intervals.size(), 1u);
  EXPECT_EQ(intervals[0].rank, 1);
  EXPECT_EQ(intervals[0].op, 3);
  EXPECT_EQ(intervals[0].begin_ns, 5);
  EXPECT_EQ(intervals[0].end_ns, 9);
}

// One OpBegin or OpEnd into the sink.
void emit_op_event(OpIntervalSink& sink, int rank, OpIndex op, TraceEventKind kind, TimeNs t) {
  TraceEvent e;
  e.rank = rank;
  e.op = op;
  e.kind = kind;
  e.t_ns = t;
  sink.emit(e);
}

TEST(StepTiming, ThePlanlessSinkTakesAnyIndexWithoutATableItSizes) {
  // A recorded or imported trace has no plan: its op ids and ranks are whatever the file says. An id near 2^31 once
  // sized a table of 16 GiB here; now it is one interval like any other.
  OpIntervalSink sink;
  sink.begin(TraceHeader{});
  const auto at = [&](int rank, OpIndex op, TraceEventKind kind, TimeNs t) { emit_op_event(sink, rank, op, kind, t); };
  constexpr OpIndex kFar = std::numeric_limits<OpIndex>::max();
  at(kMaxTraceRanks, kFar, TraceEventKind::OpBegin, 10);
  at(kMaxTraceRanks, kFar, TraceEventKind::OpEnd, 5);   // before its begin: ignored, the op stays open
  at(kMaxTraceRanks, kFar, TraceEventKind::OpEnd, 30);
  at(kMaxTraceRanks, kFar, TraceEventKind::OpEnd, 40);  // no open op left
  const auto intervals = sink.intervals();
  ASSERT_EQ(intervals.size(), 1u);
  EXPECT_EQ(intervals[0].rank, kMaxTraceRanks);
  EXPECT_EQ(intervals[0].op, kFar);
  EXPECT_EQ(intervals[0].begin_ns, 10);
  EXPECT_EQ(intervals[0].end_ns, 30);
}

TEST(StepTiming, TheSinkIgnoresEventsThePlanInTheHeaderLacks) {
  // A trace file is untrusted: an op index far past the plan must not size the sink's table, and an end before its
  // begin is no interval.
  TraceHeader header;
  header.plan = std::make_shared<const Plan>(two_rank_plan());  // 2 ranks of 5 ops
  OpIntervalSink sink;
  sink.begin(header);
  const auto at = [&](int rank, OpIndex op, TraceEventKind kind, TimeNs t) { emit_op_event(sink, rank, op, kind, t); };
  at(0, std::numeric_limits<OpIndex>::max(), TraceEventKind::OpBegin, 1);  // past rank 0's 5 ops
  at(0, std::numeric_limits<OpIndex>::max(), TraceEventKind::OpEnd, 2);
  at(0, -1, TraceEventKind::OpBegin, 1);  // before them
  at(0, -1, TraceEventKind::OpEnd, 2);
  at(7, 0, TraceEventKind::OpBegin, 1);  // no rank 7
  at(7, 0, TraceEventKind::OpEnd, 2);
  at(1, 2, TraceEventKind::OpBegin, 50);
  at(1, 2, TraceEventKind::OpEnd, 40);  // ends before it began
  at(1, 4, TraceEventKind::OpBegin, 60);
  at(1, 4, TraceEventKind::OpEnd, 70);
  const auto intervals = sink.intervals();
  ASSERT_EQ(intervals.size(), 1u);
  EXPECT_EQ(intervals[0].rank, 1);
  EXPECT_EQ(intervals[0].op, 4);
}

}  // namespace
}  // namespace shardscope
