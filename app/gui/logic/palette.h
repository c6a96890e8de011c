// The category and op colours every panel and export uses (Okabe–Ito, safe for colour-blind viewers; see UI.md).
// No ImGui types here so exports can share it: colours are 0xRRGGBB.
#pragma once
#include <cstdint>
#include <string>

#include "core/category.h"
#include "plan/op.h"
#include "trace/store/span_kind.h"

namespace shardscope::gui {

std::uint32_t category_rgb(Category category);
// Bottom to top in every stacked chart and bar (and left to right in the legend): what stays constant through a
// step first (parameters, optimizer state, DDP buckets), what comes and goes above it, so a constant band never
// appears to rise.
inline constexpr Category kStackingOrder[] = {Category::Parameters,  Category::OptimizerState, Category::DdpBuckets,
                                              Category::GatheredParameters, Category::Gradients, Category::Activations,
                                              Category::Temporaries, Category::CommunicationBuffers};
constexpr std::uint32_t kOutsideAllocatorRgb = 0x999999;  // context, library internals

// What a timeline box is, for its colour and the timeline legend. Colours from UI.md's second set (Paul Tol's
// "muted"): forward / backward two greys, the optimizer step and each collective kind a colour of its own, none of
// them a memory category's colour (a student reads orange as "gradients" everywhere).
enum class TimelineKind { Forward, Backward, Optimizer, AllReduce, ReduceScatter, AllGather, RootedCollective, SendRecv, Copy, Other };
inline constexpr TimelineKind kAllTimelineKinds[] = {
    TimelineKind::Forward,   TimelineKind::Backward,         TimelineKind::Optimizer, TimelineKind::AllReduce,
    TimelineKind::ReduceScatter, TimelineKind::AllGather, TimelineKind::RootedCollective, TimelineKind::SendRecv,
    TimelineKind::Copy,      TimelineKind::Other};

TimelineKind timeline_kind(const SpanKind& kind);
inline TimelineKind timeline_kind(const Op& op) { return timeline_kind(span_kind_of(op)); }
std::uint32_t timeline_rgb(TimelineKind kind);
const char* timeline_label(TimelineKind kind);  // "all-reduce", "broadcast / scatter / gather / reduce", ...
inline std::uint32_t op_rgb(const Op& op) { return timeline_rgb(timeline_kind(op)); }
// Text drawn on a box of this colour: white on dark colours, near-black on light ones.
bool needs_light_text(std::uint32_t rgb);
// A box's label: the op's, with "F3 " / "B3 " in front for a micro-batch's forward / backward (pipelines).
std::string timeline_box_label(const Op& op);

// Faint marks and what they sit on. Each mark keeps at least WCAG's 3:1 non-text contrast against its background
// (a projector washes out anything fainter): 0x828282 hatching on the 0xEBEBEB idle lane is 3.2:1, the 0x787878
// folded sub-pixel ops 3.7:1 there, the 0x8C8C8C chart border and 0x949494 grid lines about 3.3:1 and 3.0:1 on white.
constexpr std::uint32_t kLaneBackgroundRgb = 0xEBEBEB;
constexpr std::uint32_t kIdleHatchRgb = 0x828282;
constexpr std::uint32_t kFoldedOpsRgb = 0x787878;
constexpr std::uint32_t kChartBackgroundRgb = 0xFFFFFF;
constexpr std::uint32_t kChartBorderRgb = 0x8C8C8C;
constexpr std::uint32_t kGridLineRgb = 0x949494;

// ImGui's packed ABGR from 0xRRGGBB and an alpha in [0, 255].
constexpr std::uint32_t to_imgui_color(std::uint32_t rgb, std::uint32_t alpha = 255) {
  return (alpha << 24) | ((rgb & 0xFF) << 16) | (rgb & 0xFF00) | ((rgb >> 16) & 0xFF);
}

}  // namespace shardscope::gui
