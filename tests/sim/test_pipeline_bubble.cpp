// Pipeline bubbles on hand-built GPipe and 1F1B schedules with uniform stages and free communication: both
// take (m + p − 1)(f + b) and leave each stage idle for (p − 1)/(m + p − 1) of the step (Huang et al. 2019,
// GPipe §2.3; Narayanan et al. 2021 for 1F1B's equal bubble).
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
  for (const auto& rank : result.ranks) EXPECT_EQ(rank.compute_busy_ns, m * (f + b)) << rank.rank;
}

INSTANTIATE_TEST_SUITE_P(Schedules, PipelineBubble,
                         ::testing::Values(BubbleCase{PipelineSchedule::GPipe, 4, 8},  // 3/11
                                           BubbleCase{PipelineSchedule::OneForwardOneBackward, 4, 8},
                                           BubbleCase{PipelineSchedule::GPipe, 2, 1},  // 1/2
                                           BubbleCase{PipelineSchedule::OneForwardOneBackward, 8, 3},
                                           BubbleCase{PipelineSchedule::OneForwardOneBackward, 3, 16}),
                         [](const ::testing::TestParamInfo<BubbleCase>& info) {
                           return std::string(info.param.schedule == PipelineSchedule::GPipe ? "GPipe" : "OneFOneB") + "_p" +
                                  std::to_string(info.param.stages) + "_m" + std::to_string(info.param.micro_batches);
                         });

TEST(PipelineBubble, FourStagesEightMicroBatchesIsThreeElevenths) {
  const Plan plan = testing::pipeline_plan(PipelineSchedule::OneForwardOneBackward, 4, 8, 1'000, 2'000);
  VectorTraceSink sink;
  const auto result = simulate(testing::round_number_scenario(100, 0, 4), plan, sink);
  EXPECT_NEAR(result.bubble_fraction, 3.0 / 11.0, 1e-12);
}

}  // namespace
}  // namespace shardscope
