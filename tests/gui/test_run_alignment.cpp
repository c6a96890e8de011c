// Two runs compared by step and phase: the second run's times map onto the first's between matched phase markers,
// so a run twice as fast lines up phase for phase; the comparison table pairs ranks by number and keeps a rank
// only one run has.
#include <gtest/gtest.h>

#include "gui/logic/run_alignment.h"
#include "engine/trace_test_helpers.h"

namespace shardscope::gui {
namespace {

std::vector<TracePhaseMarker> phases(std::initializer_list<TracePhaseMarker> list) { return list; }

TEST(RunAlignment, MapsTheSecondRunOntoTheFirstByPhase) {
  // The first run takes 100 ns to its forward and 300 ns to after_step; the second, twice as fast, 50 and 150.
  const auto first = phases({{"wrapped", 0, 0}, {"forward", 1, 100}, {"after_step", 1, 300}});
  const auto second = phases({{"wrapped", 0, 0}, {"forward", 1, 50}, {"after_step", 1, 150}});
  const PhaseAlignment alignment(first, second);
  EXPECT_EQ(alignment.matched(), 3u);
  EXPECT_EQ(alignment.first_time_of(0), 0);
  EXPECT_EQ(alignment.first_time_of(25), 50);    // half way to forward
  EXPECT_EQ(alignment.first_time_of(50), 100);   // forward on forward
  EXPECT_EQ(alignment.first_time_of(100), 200);  // half way from forward to after_step
  EXPECT_EQ(alignment.first_time_of(150), 300);
  EXPECT_EQ(alignment.first_time_of(170), 320);  // past the last match: shifted by its offset
}

// A marker only one run has (a second step) is skipped, not matched with another phase of the same name.
TEST(RunAlignment, MatchesOnlyTheSameNameAndStep) {
  const auto first = phases({{"forward", 1, 100}, {"forward", 2, 400}});
  const auto second = phases({{"forward", 2, 40}});
  const PhaseAlignment alignment(first, second);
  EXPECT_EQ(alignment.matched(), 1u);
  EXPECT_EQ(alignment.first_time_of(40), 400);
  EXPECT_EQ(PhaseAlignment(first, phases({{"backward", 7, 5}})).first_time_of(5), 5);  // nothing shared: as is
}

TEST(RunAlignment, PairsRanksByNumberAndKeepsTheOnesOnlyOneRunHas) {
  using K = TraceEventKind;
  TraceStore a, b;
  a.begin(TraceHeader{});
  b.begin(TraceHeader{});
  a.emit(shardscope::testing::mem(K::Alloc, 0, 10, 0, 0, Category::Parameters, 100, 100, 100));
  b.emit(shardscope::testing::mem(K::Alloc, 0, 10, 0, 0, Category::Parameters, 60, 60, 60));
  b.emit(shardscope::testing::mem(K::Alloc, 1, 10, 0, 0, Category::Parameters, 70, 70, 70));
  a.read([&](const TraceData& first) {
    b.read([&](const TraceData& second) {
      const auto rows = compare_ranks(first, second);
      ASSERT_EQ(rows.size(), 2u);
      ASSERT_TRUE(rows[0].first && rows[0].second);
      EXPECT_EQ(rows[0].first->allocated - rows[0].second->allocated, 40);
      EXPECT_EQ(rows[0].first->by_category[Category::Parameters], 100);
      EXPECT_EQ(rows[1].first, nullptr);
      ASSERT_TRUE(rows[1].second);
      EXPECT_EQ(rows[1].second->allocated, 70);
    });
  });
}

}  // namespace
}  // namespace shardscope::gui
