// The colours every panel shares: the timeline's are UI.md's second set, none of them a memory category's (nor
// close to one), and pipeline boxes carry their micro-batch.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "gui/logic/axis_ticks.h"
#include "gui/logic/palette.h"

namespace shardscope::gui {
namespace {

double distance(std::uint32_t a, std::uint32_t b) {
  const auto channel = [](std::uint32_t rgb, int shift) { return static_cast<double>((rgb >> shift) & 0xFF); };
  double sum = 0;
  for (int shift : {16, 8, 0}) sum += std::pow(channel(a, shift) - channel(b, shift), 2);
  return std::sqrt(sum);
}

// WCAG 2.x contrast ratio: relative luminance from linearised sRGB channels, (lighter + 0.05) / (darker + 0.05).
double luminance(std::uint32_t rgb) {
  auto linear = [&](int shift) {
    const double c = static_cast<double>((rgb >> shift) & 0xFF) / 255.0;
    return c <= 0.04045 ? c / 12.92 : std::pow((c + 0.055) / 1.055, 2.4);
  };
  return 0.2126 * linear(16) + 0.7152 * linear(8) + 0.0722 * linear(0);
}
double contrast(std::uint32_t a, std::uint32_t b) {
  const double la = luminance(a), lb = luminance(b);
  return (std::max(la, lb) + 0.05) / (std::min(la, lb) + 0.05);
}

// Projectors wash out faint marks: hatching, folded ops, chart borders and grid lines keep WCAG's 3:1 non-text
// contrast against what they are drawn on.
TEST(Palette, FaintMarksKeepThreeToOneContrast) {
  EXPECT_NEAR(contrast(0x000000, 0xFFFFFF), 21.0, 1e-9);  // the formula's own end points
  EXPECT_GE(contrast(kIdleHatchRgb, kLaneBackgroundRgb), 3.0);
  EXPECT_GE(contrast(kFoldedOpsRgb, kLaneBackgroundRgb), 3.0);
  EXPECT_GE(contrast(kChartBorderRgb, kChartBackgroundRgb), 3.0);
  EXPECT_GE(contrast(kGridLineRgb, kChartBackgroundRgb), 3.0);
}

TEST(Palette, TimelineColoursAreUiMdsSecondSet) {
  EXPECT_EQ(timeline_rgb(TimelineKind::Forward), 0x4D4D4Du);
  EXPECT_EQ(timeline_rgb(TimelineKind::Backward), 0x8C8C8Cu);
  EXPECT_EQ(timeline_rgb(TimelineKind::Optimizer), 0x332288u);
  EXPECT_EQ(timeline_rgb(TimelineKind::AllReduce), 0x882255u);
  EXPECT_EQ(timeline_rgb(TimelineKind::ReduceScatter), 0xAA4499u);
  EXPECT_EQ(timeline_rgb(TimelineKind::AllGather), 0x117733u);
  EXPECT_EQ(timeline_rgb(TimelineKind::RootedCollective), 0x999933u);
  EXPECT_EQ(timeline_rgb(TimelineKind::SendRecv), 0x44AA99u);
}

// A student reads orange as "gradients" everywhere: no timeline colour may be, or nearly be, a memory colour.
// 20 of 441 in RGB distance keeps even the two greys of UI.md (backward #8C8C8C, outside the allocator #999999) apart.
TEST(Palette, NoTimelineColourIsAMemoryColour) {
  std::vector<std::uint32_t> memory = {kOutsideAllocatorRgb};
  for (Category c : kAllCategories) memory.push_back(category_rgb(c));
  for (TimelineKind k : kAllTimelineKinds)
    for (std::uint32_t m : memory) {
      EXPECT_NE(timeline_rgb(k), m) << timeline_label(k);
      EXPECT_GT(distance(timeline_rgb(k), m), 20) << timeline_label(k) << " vs " << std::hex << m;
    }
  // And the timeline's kinds are told apart from each other.
  for (TimelineKind a : kAllTimelineKinds)
    for (TimelineKind b : kAllTimelineKinds)
      if (a != b) {
        EXPECT_NE(timeline_rgb(a), timeline_rgb(b)) << timeline_label(a) << " / " << timeline_label(b);
      }
}

TEST(Palette, OpsMapToTheirKindAndMicroBatchesAreNumbered) {
  Op forward;
  forward.kind = OpKind::Compute;
  forward.compute_kind = ComputeKind::Forward;
  forward.label = "fc3 forward";
  forward.micro_batch = 3;
  EXPECT_EQ(timeline_kind(forward), TimelineKind::Forward);
  EXPECT_EQ(timeline_box_label(forward), "F3 fc3 forward");
  Op backward = forward;
  backward.compute_kind = ComputeKind::Backward;
  backward.label = "fc3 backward";
  EXPECT_EQ(timeline_box_label(backward), "B3 fc3 backward");
  backward.micro_batch = -1;  // not a pipeline: the label alone
  EXPECT_EQ(timeline_box_label(backward), "fc3 backward");
  Op gather;
  gather.kind = OpKind::Collective;
  gather.collective_kind = CollectiveKind::Gather;
  EXPECT_EQ(timeline_kind(gather), TimelineKind::RootedCollective);
  Op recv;
  recv.kind = OpKind::Recv;
  EXPECT_EQ(op_rgb(recv), 0x44AA99u);
  EXPECT_TRUE(needs_light_text(timeline_rgb(TimelineKind::Forward)));
  EXPECT_FALSE(needs_light_text(timeline_rgb(TimelineKind::Backward)));
}

// Constant categories at the bottom of every stack, moving ones above; every category exactly once.
TEST(Palette, StacksConstantCategoriesFirst) {
  const std::vector<Category> order(std::begin(kStackingOrder), std::end(kStackingOrder));
  ASSERT_EQ(order.size(), kAllCategories.size());
  for (Category c : kAllCategories) EXPECT_EQ(std::count(order.begin(), order.end(), c), 1);
  EXPECT_EQ(std::vector<Category>(order.begin(), order.begin() + 3),
            (std::vector<Category>{Category::Parameters, Category::OptimizerState, Category::DdpBuckets}));
}

TEST(AxisTicks, BinaryStepsThatFitThreeTimes) {
  // 556 MiB: 256 MiB fits only twice, 128 MiB four times.
  EXPECT_EQ(binary_ticks(556 * kMiB), (std::vector<Bytes>{128 * kMiB, 256 * kMiB, 384 * kMiB, 512 * kMiB}));
  // 2.24 GiB: 512 MiB steps up to 2 GiB.
  EXPECT_EQ(binary_ticks(2294 * kMiB), (std::vector<Bytes>{512 * kMiB, kGiB, 1536 * kMiB, 2 * kGiB}));
  EXPECT_EQ(binary_ticks(3 * kKiB), (std::vector<Bytes>{kKiB, 2 * kKiB, 3 * kKiB}));
  EXPECT_TRUE(binary_ticks(500).empty());
  EXPECT_EQ(tick_label(384 * kMiB), "384 MiB");
  EXPECT_EQ(tick_label(1536 * kMiB), "1.5 GiB");
  EXPECT_EQ(tick_label(2 * kKiB), "2 KiB");
}

}  // namespace
}  // namespace shardscope::gui
