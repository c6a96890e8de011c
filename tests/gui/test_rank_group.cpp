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
  EXPECT_EQ(each[0].label, "r0 tp0·pp0·dp0");
  EXPECT_EQ(each[3].label, "r3 tp1·pp0·dp1");
  EXPECT_EQ(each[5].label, "r5 tp1·pp1·dp0");
  const auto stages = group_identical_ranks(trace(json, 8, by_stage));
  ASSERT_EQ(stages.size(), 2u);
  EXPECT_EQ(stages[1].label, "r4–7 tp0–1·pp1·dp0–1");  // stage 1's two replicas of two tensor-parallel halves
}

// Dimensions of size 1 are left out (tp alone: no pipeline, one replica), and a run of ranks that is not a whole box
// of coordinates keeps the plain label: ranks 1–2 of tp 2 × dp 2 are (tp1, dp0) and (tp0, dp1), not tp0–1·dp0–1.
TEST(RankGroup, CoordinatesAreCompactAndNeverClaimRanksTheGroupLacks) {
  const auto tp_only = group_identical_ranks(trace(R"({"cluster": {"world": 8}, "strategy": {"name": "single", "tp": 8}})", 8,
                                                   [](int) { return std::uint64_t{1}; }));
  ASSERT_EQ(tp_only.size(), 1u);
  EXPECT_EQ(tp_only[0].label, "r0–7 tp0–7");
  const auto middle = group_identical_ranks(trace(R"({"cluster": {"world": 4}, "strategy": {"name": "ddp", "tp": 2}})", 4,
                                                  [](int r) { return std::uint64_t(r == 1 || r == 2 ? 7 : r); }));
  ASSERT_EQ(middle.size(), 3u);
  EXPECT_EQ(middle[0].label, "r0 tp0·dp0");
  EXPECT_EQ(middle[1].label, "ranks 1–2");
  EXPECT_EQ(middle[2].label, "r3 tp1·dp1");
}

TEST(RankGroup, OtherRunsKeepPlainNumbers) {
  const auto ddp = group_identical_ranks(trace(R"({"cluster": {"world": 2}, "strategy": {"name": "ddp"}})", 2, distinct));
  EXPECT_EQ(ddp[1].label, "rank 1");
  const auto unreadable = group_identical_ranks(trace("not json", 2, by_stage));
  EXPECT_EQ(unreadable[0].label, "ranks 0–1");
}

}  // namespace
}  // namespace shardscope::gui
