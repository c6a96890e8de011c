// Pipeline bubbles on hand-built GPipe and 1F1B schedules with uniform stages and free communication: both
// take (m + p − 1)(f + b) and leave each stage idle for (p − 1)/(m + p − 1) of the step (Huang et al. 2019,
// GPipe §2.3; Narayanan et al. 2021 for 1F1B's equal bubble). These plans hold nothing but forwards and
// backwards, so bubble_fraction and schedule_bubble_fraction both meet the formula; over two steps only the
// schedule figure still does (bubble_fraction then also counts each stage's wait for the previous step's drain).
#include <gtest/gtest.h>

#include "plan/validate.h"
#include "sim/simulator.h"
#include "sim_test_helpers.h"

namespace shardscope {
namespace {

using testing::PipelineSchedule;

struct BubbleCase {
  PipelineSchedule schedule;
  int stages;
  int micro_batches;
};

class PipelineBubble : public ::testing::TestWithParam<BubbleCase> {};

TEST_P(PipelineBubble, MatchesGPipeFormula) {
  const auto [schedule, p, m] = GetParam();
  constexpr TimeNs f = 1'000, b = 2'000;
  const Plan plan = testing::pipeline_plan(schedule, p, m, f, b);
  ASSERT_TRUE(validate_plan(plan).ok());
  VectorTraceSink sink;
  const auto result = simulate(testing::round_number_scenario(100, 0, p), plan, sink);
  ASSERT_TRUE(result.error.empty()) << result.error;
  EXPECT_EQ(result.step_time_ns, (m + p - 1) * (f + b));
  EXPECT_NEAR(result.bubble_fraction, static_cast<double>(p - 1) / (m + p - 1), 1e-12);
  // The schedule region is the whole step here: stage 0's first forward at 0 to its last backward at the end.
  EXPECT_NEAR(result.schedule_bubble_fraction, static_cast<double>(p - 1) / (m + p - 1), 1e-12);
  for (const auto& rank : result.ranks) EXPECT_EQ(rank.compute_busy_ns, m * (f + b)) << rank.rank;
}

// Two steps back to back, T = (m + p − 1)(f + b). Stage r's last backward of step 1 ends at T − r·b (the
// gradient of the last micro-batch still has r backwards to go down to stage 0), which is where its step 2
// starts; stage 0 starts step 2's first forward at T, and step 2 repeats step 1 shifted by T, ending at 2T.
// - schedule_bubble_fraction: region [T, 2T], every stage busy m(f + b) in it: (p − 1)/(m + p − 1) again.
// - bubble_fraction: stage r's window runs from its own start T − r·b to the step's end 2T, so it counts r·b
//   of waiting for stage 0 to finish step 1: mean over r of 1 − m(f + b)/(T + r·b). (A single window for all
//   ranks would start at the first step-2 op anywhere.)
TEST_P(PipelineBubble, SecondStepPerRankWindows) {
  const auto [schedule, p, m] = GetParam();
  constexpr TimeNs f = 1'000, b = 2'000;
  const TimeNs T = (m + p - 1) * (f + b);
  const Plan plan = testing::pipeline_plan(schedule, p, m, f, b, 2);
  ASSERT_TRUE(validate_plan(plan).ok());
  VectorTraceSink sink;
  const auto result = simulate(testing::round_number_scenario(100, 0, p), plan, sink);
  ASSERT_TRUE(result.error.empty()) << result.error;
  ASSERT_EQ(result.step, 2);
  EXPECT_EQ(result.step_end_ns, 2 * T);
  EXPECT_NEAR(result.schedule_bubble_fraction, static_cast<double>(p - 1) / (m + p - 1), 1e-12);
  double idle = 0;
  for (int r = 0; r < p; ++r) {
    const auto& rank = result.ranks[static_cast<std::size_t>(r)];
    EXPECT_EQ(rank.begin_ns, T - r * b) << r;
    EXPECT_EQ(rank.compute_busy_ns, m * (f + b)) << r;
    idle += 1 - static_cast<double>(m * (f + b)) / static_cast<double>(T + r * b);
  }
  EXPECT_NEAR(result.bubble_fraction, idle / p, 1e-12);
}

INSTANTIATE_TEST_SUITE_P(Schedules, PipelineBubble,
                         ::testing::Values(BubbleCase{PipelineSchedule::GPipe, 4, 8},  // 3/11
                                           BubbleCase{PipelineSchedule::OneForwardOneBackward, 4, 8},
                                           BubbleCase{PipelineSchedule::GPipe, 2, 1},  // 1/2
                                           BubbleCase{PipelineSchedule::OneForwardOneBackward, 8, 3},
                                           BubbleCase{PipelineSchedule::OneForwardOneBackward, 3, 16},
                                           BubbleCase{PipelineSchedule::GPipe, 8, 32},  // 7/39
                                           BubbleCase{PipelineSchedule::GPipe, 3, 5}),
                         [](const ::testing::TestParamInfo<BubbleCase>& info) {
                           return std::string(info.param.schedule == PipelineSchedule::GPipe ? "GPipe" : "OneFOneB") + "_p" +
                                  std::to_string(info.param.stages) + "_m" + std::to_string(info.param.micro_batches);
                         });

// With an optimizer step on every stage (issue 42): a stage that finishes its backwards early (stage r of GPipe
// r·b before stage 0, 1F1B likewise) runs its optimizer while stage 0 still drains, inside the schedule region.
// That is not the schedule's work, so the schedule bubble is still (p − 1)/(m + p − 1), to rounding (1e-9), however
// long the optimizer step is (counted as busy, as it was before, it would take GPipe at p 4, m 8 to 3/11 − (2 + 4 +
// 6)·b / (4 · 11(f + b)) = 0.182). o = 7,000 ns is more than any stage's (p − 1)·b = 6,000 ns of drain, so it overlaps as much as it can.
TEST_P(PipelineBubble, ScheduleBubbleIgnoresTheOptimizerStep) {
  const auto [schedule, p, m] = GetParam();
  constexpr TimeNs f = 1'000, b = 2'000, o = 7'000;
  for (int steps : {1, 2}) {
    const Plan plan = testing::pipeline_plan(schedule, p, m, f, b, steps, o);
    ASSERT_TRUE(validate_plan(plan).ok());
    VectorTraceSink sink;
    const auto result = simulate(testing::round_number_scenario(100, 0, p), plan, sink);
    ASSERT_TRUE(result.error.empty()) << result.error;
    EXPECT_NEAR(result.schedule_bubble_fraction, static_cast<double>(p - 1) / (m + p - 1), 1e-9) << steps << " steps";
  }
}

TEST(PipelineBubble, FourStagesEightMicroBatchesIsThreeElevenths) {
  const Plan plan = testing::pipeline_plan(PipelineSchedule::OneForwardOneBackward, 4, 8, 1'000, 2'000);
  VectorTraceSink sink;
  const auto result = simulate(testing::round_number_scenario(100, 0, 4), plan, sink);
  EXPECT_NEAR(result.bubble_fraction, 3.0 / 11.0, 1e-12);
  EXPECT_NEAR(result.schedule_bubble_fraction, 3.0 / 11.0, 1e-12);
}

}  // namespace
}  // namespace shardscope
