// The memory charts' y-axis scale (logic/memory_scale.h) and the window's first view of a run (logic/initial_view.h),
// against figures worked out by hand. The recorded case is tests/data/h200-torch-2.11/recorded/gpt2-2l-recorded.sstrace
// (a 2-layer GPT-2 on an H200, PyTorch 2.11): its highest allocated 280,927,232 B (267.91 MiB) and reserved
// 308,281,344 B (294 MiB), device use up to 4,830,068,736 B (cudaMemGetInfo), capacity 150,109,880,320 B, first
// phase marker at 8,588,040,101 ns and last event at 9,383,028,341 ns.
#include <gtest/gtest.h>

#include "gui/logic/initial_view.h"
#include "gui/logic/memory_scale.h"
#include "gui/logic/time_view.h"

namespace shardscope::gui {
namespace {

constexpr Bytes kAllocated = 280'927'232, kReserved = 308'281'344, kDeviceUse = 4'830'068'736,
                kCapacity = 150'109'880'320;

// Reserved (294 MiB) is the higher and under half the capacity: the top is 15 % above it, 308,281,344 × 23 / 20 =
// 354,523,545.6, floored. The capacity (139.80 GiB) and the device use (4.50 GiB) lie above: not drawn, named.
TEST(MemoryScale, ARecordedRunFillsItsChart) {
  const MemoryScaleInput input{kAllocated, kReserved, kDeviceUse, kCapacity};
  const MemoryScale scale = memory_scale(input);
  EXPECT_EQ(scale.top, 354'523'545);
  EXPECT_FALSE(scale.capacity_on_chart);
  EXPECT_FALSE(scale.device_use_on_chart);
  EXPECT_EQ(above_scale_note(input, scale),
            "capacity 139.80 GiB and device use 4.50 GiB above the scale (View > Memory scale up to the capacity)");
}

// The View menu's "up to the capacity": 5 % above the highest of the three, 150,109,880,320 × 21 / 20 =
// 157,615,374,336; both lines on the chart, nothing named above it.
TEST(MemoryScale, UpToTheCapacityOnRequest) {
  MemoryScaleInput input{kAllocated, kReserved, kDeviceUse, kCapacity};
  input.to_capacity = true;
  const MemoryScale scale = memory_scale(input);
  EXPECT_EQ(scale.top, 157'615'374'336);
  EXPECT_TRUE(scale.capacity_on_chart);
  EXPECT_TRUE(scale.device_use_on_chart);
  EXPECT_EQ(above_scale_note(input, scale), "");
}

// Past half the capacity the capacity joins the scale: 70 GiB reserved of 80 GiB gives 80 × 21 / 20 = 84 GiB; a run
// over it (90 GiB) 94.5 GiB, the capacity line inside.
TEST(MemoryScale, NearOrOverTheCapacityShowsIt) {
  const MemoryScale near = memory_scale({60 * kGiB, 70 * kGiB, 0, 80 * kGiB});
  EXPECT_EQ(near.top, 84 * kGiB);
  EXPECT_TRUE(near.capacity_on_chart);
  const MemoryScale over = memory_scale({90 * kGiB, 0, 0, 80 * kGiB});
  EXPECT_EQ(over.top, 94 * kGiB + 512 * kMiB);
  EXPECT_TRUE(over.capacity_on_chart);
}

// Device use inside the scale is drawn but does not set it: 3 GiB allocated, 3.2 GiB in use, top 3 × 23 / 20 =
// 3.45 GiB (3,704,409,292.8 B, floored).
TEST(MemoryScale, DeviceUseInsideIsDrawnButDoesNotSetTheScale) {
  const Bytes use = 3 * kGiB + 200 * kMiB;
  const MemoryScale scale = memory_scale({3 * kGiB, 0, use, 80 * kGiB});
  EXPECT_EQ(scale.top, 3'704'409'292);
  EXPECT_TRUE(scale.device_use_on_chart);
  EXPECT_FALSE(scale.capacity_on_chart);
  // 4 GiB of device use lies above it: named, not drawn.
  const MemoryScale above = memory_scale({3 * kGiB, 0, 4 * kGiB, 0});
  EXPECT_FALSE(above.device_use_on_chart);
  EXPECT_EQ(above_scale_note({3 * kGiB, 0, 4 * kGiB, 0}, above),
            "device use 4.00 GiB above the scale (View > Memory scale up to the capacity)");
}

// An imported snapshot knows no capacity: nothing is named above; an empty run still has a top of 1 B.
// A prediction far below its capacity (27 GiB of 80 GiB) names nothing above its scale: no reserved or device use.
TEST(MemoryScale, APredictionNamesNothingAbove) {
  const MemoryScaleInput input{27 * kGiB, 0, 0, 80 * kGiB};
  const MemoryScale scale = memory_scale(input);
  EXPECT_FALSE(scale.capacity_on_chart);
  EXPECT_EQ(above_scale_note(input, scale), "");
}

TEST(MemoryScale, UnknownCapacityAndEmptyRun) {
  const MemoryScaleInput input{1000, 0, 0, 0};
  const MemoryScale scale = memory_scale(input);
  EXPECT_EQ(scale.top, 1150);
  EXPECT_FALSE(scale.capacity_on_chart);
  EXPECT_EQ(above_scale_note(input, scale), "");
  EXPECT_EQ(memory_scale({}).top, 1);
}

TEST(MemoryScale, RecordedRunsAreTheOnesFromPyTorch) {
  EXPECT_TRUE(recorded_from_pytorch("pytorch 2.11.0+cu130 cuda"));
  EXPECT_TRUE(recorded_from_pytorch("pytorch memory snapshot ()"));
  EXPECT_TRUE(recorded_from_pytorch("pytorch profiler trace ()"));
  EXPECT_FALSE(recorded_from_pytorch("simulator"));
  EXPECT_FALSE(recorded_from_pytorch("executor cuda"));
}

// The recorded run: the rest after the first marker is 9,383,028,341 − 8,588,040,101 = 794,988,240 ns; a fortieth
// of it, 19,874,706 ns, before the marker: the view starts at 8,568,165,395 ns and ends with the run.
TEST(InitialView, StartsJustBeforeTheFirstPhase) {
  const TimeRange range = initial_view(0, 9'383'028'341, 8'588'040'101);
  EXPECT_EQ(range.t0, 8'568'165'395);
  EXPECT_EQ(range.t1, 9'383'028'341);
}

// A run without phase markers (an imported snapshot), or whose first marker is at its start (a simulated run), is
// shown whole; a marker 146,178 ns into a 173,101,805 ns run (an executed one) would take the lead of 4,323,890 ns
// before the start, so the view starts at the run's start.
TEST(InitialView, WholeRunWhereNothingPrecedesTheFirstPhase) {
  EXPECT_EQ(initial_view(0, 491'548'000, std::nullopt).t0, 0);
  EXPECT_EQ(initial_view(0, 107'582, 0).t0, 0);
  const TimeRange executed = initial_view(0, 173'101'805, 146'178);
  EXPECT_EQ(executed.t0, 0);
  EXPECT_EQ(executed.t1, 173'101'805);
}

// The window's TimeView takes that range and keeps the preamble reachable: "Zoom to the whole run" (reset) goes back
// to [0, end], and a zoom out by 2 around the view's middle reaches before the marker by half the view's width.
TEST(InitialView, ThePreambleStaysReachable) {
  TimeView view;
  view.set_run_range(0, 9'383'028'341);
  const TimeRange range = initial_view(0, 9'383'028'341, 8'588'040'101);
  view.show(range.t0, range.t1);
  EXPECT_EQ(view.t0(), 8'568'165'395);
  EXPECT_EQ(view.t1(), 9'383'028'341);
  // width 814,862,946 ns; around the middle 8,975,596,868 a zoom by 2 spans 1,629,725,892 ns from 8,160,733,922.
  view.zoom(2.0, 8'975'596'868);
  EXPECT_EQ(view.t0(), 8'160'733'922);
  view.reset();
  EXPECT_EQ(view.t0(), 0);
  EXPECT_EQ(view.t1(), 9'383'028'341);
}

}  // namespace
}  // namespace shardscope::gui
