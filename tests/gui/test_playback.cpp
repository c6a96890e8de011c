// Playhead logic: stepping between op boundaries, phase jumps, play to the end, and --at time parsing.
#include <gtest/gtest.h>

#include "gui/logic/playback.h"

namespace shardscope::gui {
namespace {

Playback three_ops() {
  // Ops [0,100), [100,250), [400,1000): boundaries 0, 100, 250, 400, 1000; phases at 100 and 400.
  Playback p;
  p.set_timeline({0, 100, 250, 400, 1000}, {{"forward", 1, 100}, {"before_step", 1, 400}}, 1000);
  return p;
}

TEST(Playback, StepsOpByOpForwardAndBack) {
  Playback p = three_ops();
  p.step_forward();
  EXPECT_EQ(p.now_ns(), 100);
  p.step_forward();
  EXPECT_EQ(p.now_ns(), 250);
  p.seek(300);  // between boundaries: back goes to 250, forward to 400
  p.step_back();
  EXPECT_EQ(p.now_ns(), 250);
  p.seek(300);
  p.step_forward();
  EXPECT_EQ(p.now_ns(), 400);
  p.seek(1000);
  p.step_forward();
  EXPECT_EQ(p.now_ns(), 1000);  // stays at the end
}

// The window's way: the boundaries stay in the store and are looked up (here the same five, in a vector the lookups
// search); a run that stopped at 300 ends there, so stepping past 250 stops at 300 although 400 follows.
TEST(Playback, StepsThroughBoundariesLookedUpElsewhere) {
  const std::vector<TimeNs> boundaries{0, 100, 250, 400, 1000};
  Playback::BoundaryLookup lookup;
  lookup.next_after = [&](TimeNs t) -> std::optional<TimeNs> {
    for (TimeNs b : boundaries)
      if (b > t) return b;
    return std::nullopt;
  };
  lookup.last_before = [&](TimeNs t) -> std::optional<TimeNs> {
    std::optional<TimeNs> last;
    for (TimeNs b : boundaries)
      if (b < t) last = b;
    return last;
  };
  Playback p;
  p.set_timeline_lookup(lookup, {}, 300);
  p.step_forward();
  EXPECT_EQ(p.now_ns(), 100);
  p.step_forward();
  EXPECT_EQ(p.now_ns(), 250);
  p.step_forward();
  EXPECT_EQ(p.now_ns(), 300);  // 400 lies past the end
  p.step_back();
  EXPECT_EQ(p.now_ns(), 250);
  p.seek(0);
  p.step_back();
  EXPECT_EQ(p.now_ns(), 0);  // nothing before the start
}

TEST(Playback, JumpsBetweenPhases) {
  Playback p = three_ops();
  p.next_phase();
  EXPECT_EQ(p.now_ns(), 100);
  EXPECT_EQ(p.current_phase()->name, "forward");
  p.next_phase();
  EXPECT_EQ(p.now_ns(), 400);
  p.next_phase();
  EXPECT_EQ(p.now_ns(), 1000);
  p.previous_phase();
  EXPECT_EQ(p.now_ns(), 400);
  p.previous_phase();
  p.previous_phase();
  EXPECT_EQ(p.now_ns(), 0);
  EXPECT_EQ(p.current_phase(), nullptr);
}

TEST(Playback, PlaysAtItsSpeedAndStopsAtTheEnd) {
  Playback p = three_ops();
  p.set_run_seconds(5);  // 1000 ns in 5 s: 200 ns per wall second
  p.toggle_play();
  p.advance(0.5);
  EXPECT_EQ(p.now_ns(), 100);
  p.advance(0.25);
  p.advance(0.25);
  EXPECT_EQ(p.now_ns(), 200);
  p.advance(100);
  EXPECT_EQ(p.now_ns(), 1000);
  EXPECT_FALSE(p.playing());
  p.toggle_play();  // playing again from the end restarts
  EXPECT_EQ(p.now_ns(), 0);
}

TEST(Playback, FindsPhasesByNameOrStep) {
  Playback p;
  p.set_timeline({}, {{"forward", 1, 10}, {"forward", 2, 50}}, 100);
  EXPECT_EQ(p.find_phase("forward")->t_ns, 10);
  EXPECT_EQ(p.find_phase("step 2 forward")->t_ns, 50);
  EXPECT_EQ(p.find_phase("backward"), nullptr);
  EXPECT_EQ(p.find_phase("step x"), nullptr);
}

TEST(Playback, ParsesTimes) {
  EXPECT_EQ(parse_time_text("12.5ms"), 12'500'000);
  EXPECT_EQ(parse_time_text("300us"), 300'000);
  EXPECT_EQ(parse_time_text("2s"), 2'000'000'000);
  EXPECT_EQ(parse_time_text("1500"), 1500);
  EXPECT_EQ(parse_time_text("1500ns"), 1500);
  EXPECT_EQ(parse_time_text("fast"), -1);
  EXPECT_EQ(parse_time_text("3 parsecs"), -1);
  EXPECT_EQ(parse_time_text("-4ms"), -1);
}

}  // namespace
}  // namespace shardscope::gui
