// Rank group labels: plain numbers for every run, and under tensor parallelism each rank's coordinates as
// Megatron-LM orders ranks (tp fastest, then dp, then pp), read from the trace header's resolved scenario.
#include <gtest/gtest.h>

#include "gui/logic/rank_group.h"

namespace shardscope::gui {
namespace {

// `world` ranks whose memory signatures are `signature(r)`.
TraceData trace(const std::string& scenario_json, int world, std::uint64_t (*signature)(int)) {
  TraceData data;
  data.header.scenario_json = scenario_json;
  for (int r = 0; r < world; ++r) {
    RankTimeline rank;
    rank.rank = r;
    rank.memory_signature = signature(r);
    data.ranks.push_back(std::move(rank));
  }
  return data;
}

std::uint64_t distinct(int r) { return static_cast<std::uint64_t>(r) + 1; }
std::uint64_t by_stage(int r) { return static_cast<std::uint64_t>(r / 4); }  // tp 2 × dp 2 ranks of a stage alike

TEST(RankGroup, TensorParallelRanksAreNamedByTheirCoordinates) {
  // pp-1f1b, 2 stages × dp 2 × tp 2: rank = (stage · 2 + replica) · 2 + tp index.
  const std::string json = R"({"cluster": {"world": 8}, "strategy": {"name": "pp-1f1b", "stages": 2, "dp": 2, "tp": 2}})";
  const auto each = group_identical_ranks(trace(json, 8, distinct));
  ASSERT_EQ(each.size(), 8u);
  EXPECT_EQ(each[0].label, "rank 0 (tp0·pp0·dp0)");
  EXPECT_EQ(each[3].label, "rank 3 (tp1·pp0·dp1)");
  EXPECT_EQ(each[5].label, "rank 5 (tp1·pp1·dp0)");
  const auto stages = group_identical_ranks(trace(json, 8, by_stage));
  ASSERT_EQ(stages.size(), 2u);
  EXPECT_EQ(stages[1].label, "ranks 4–7 (tp0·pp1·dp0 … tp1·pp1·dp1)");
}

TEST(RankGroup, OtherRunsKeepPlainNumbers) {
  const auto ddp = group_identical_ranks(trace(R"({"cluster": {"world": 2}, "strategy": {"name": "ddp"}})", 2, distinct));
  EXPECT_EQ(ddp[1].label, "rank 1");
  const auto unreadable = group_identical_ranks(trace("not json", 2, by_stage));
  EXPECT_EQ(unreadable[0].label, "ranks 0–1");
}

}  // namespace
}  // namespace shardscope::gui
