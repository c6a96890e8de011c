// Step times of a plan-less trace (run/planless_step_timing.h), on a hand-made recording whose figures are counted
// by hand from the rules: the window over every rank, the critical rank's spans by kind, overlapping compute counted
// once, exposed communication, idle the rest.
#include <gtest/gtest.h>

#include "run/planless_step_timing.h"
#include "trace/store/trace_store.h"

namespace shardscope {
namespace {

struct SpanSpec {
  int rank, step;
  Stream stream;
  const char* text;
  TimeNs begin, end;  // end < 0: never ends
};

TraceData recorded(const std::vector<SpanSpec>& spans) {
  TraceStore store;
  TraceHeader header;  // no plan: recorded from PyTorch
  header.source = "pytorch 1.13.0 cpu";
  header.devices = {{0, "CPU", 0}, {1, "CPU", 0}};
  store.begin(header);
  OpIndex op = 0;
  for (const SpanSpec& s : spans) {
    TraceEvent e;
    e.kind = TraceEventKind::OpBegin;
    e.rank = s.rank;
    e.step = s.step;
    e.stream = s.stream;
    e.op = op;
    e.t_ns = s.begin;
    e.text = s.text;
    store.emit(e);
    if (s.end >= 0) {
      e.kind = TraceEventKind::OpEnd;
      e.t_ns = s.end;
      e.text.clear();
      store.emit(e);
    }
    ++op;
  }
  store.end();
  return store.read([](const TraceData& d) { return d; });
}

TimeNs kind(const StepTiming& t, TimeKind k) { return t.by_kind[static_cast<std::size_t>(k)]; }

TEST(PlanlessStepTiming, CountsARecordedStepByTheRules) {
  constexpr Stream C = Stream::Compute, N = Stream::Communication;
  const TraceData data = recorded({
      {0, 0, C, "forward fc1 (Linear)", 0, 50},         // set-up: no step
      {0, 1, C, "forward fc1 (Linear)", 100, 200},      // gemm 100
      {0, 1, C, "forward act (ReLU)", 200, 230},        // elementwise 30
      {0, 1, C, "backward fc1 (Linear)", 250, 400},     // gemm 150
      {0, 1, C, "my_kernel", 380, 420},                 // overlaps the backward by 20: elementwise 20
      {0, 1, N, "all_reduce DDP bucket 0 4.00 KiB", 300, 440},  // under compute until 420: 20 exposed
      {0, 1, C, "optimizer step (SGD)", 450, 500},      // optimizer 50
      {1, 1, C, "forward fc1 (Linear)", 90, 300},       // rank 1 starts the step first and ends first
      {0, 2, C, "forward fc1 (Linear)", 600, 700},
      {0, 2, C, "backward fc1 (Linear)", 700, -1},      // never ended: left out
  });
  const std::vector<StepTiming> steps = planless_step_timings(data);
  ASSERT_EQ(steps.size(), 2u);
  const StepTiming& first = steps[0];
  EXPECT_EQ(first.step, 1);
  EXPECT_EQ(first.critical_rank, 0);
  EXPECT_EQ(first.step_ns, 500 - 90);  // from rank 1's first begin to rank 0's last end
  EXPECT_EQ(first.load_batch_ns, 0);
  EXPECT_EQ(kind(first, TimeKind::Gemm), 100 + 150);
  EXPECT_EQ(kind(first, TimeKind::Elementwise), 30 + 20);
  EXPECT_EQ(kind(first, TimeKind::Optimizer), 50);
  EXPECT_EQ(kind(first, TimeKind::Communication), 20);
  EXPECT_EQ(kind(first, TimeKind::Idle), 410 - (250 + 50 + 50 + 20));  // 90..100, 230..250, 440..450
  const StepTiming& second = steps[1];
  EXPECT_EQ(second.step, 2);
  EXPECT_EQ(second.step_ns, 100);
  EXPECT_EQ(kind(second, TimeKind::Gemm), 100);
  EXPECT_EQ(kind(second, TimeKind::Idle), 0);
}

TEST(PlanlessStepTiming, ARunThatNeverSteppedHasNoSteps) {
  EXPECT_TRUE(planless_step_timings(recorded({{0, 0, Stream::Compute, "forward fc1 (Linear)", 0, 50}})).empty());
  EXPECT_TRUE(planless_step_timings(recorded({})).empty());
}

}  // namespace
}  // namespace shardscope
