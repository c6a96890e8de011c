// The category and op colours every panel and export uses (Okabe–Ito, safe for colour-blind viewers; see UI.md).
// No ImGui types here so exports can share it: colours are 0xRRGGBB.
#pragma once
#include <cstdint>

#include "core/category.h"
#include "plan/op.h"

namespace shardscope::gui {

std::uint32_t category_rgb(Category category);
constexpr std::uint32_t kOutsideAllocatorRgb = 0x999999;  // context, library internals

// Timeline boxes: forward / backward two shades of one neutral hue, each collective kind its own colour.
std::uint32_t op_rgb(const Op& op);

// ImGui's packed ABGR from 0xRRGGBB and an alpha in [0, 255].
constexpr std::uint32_t to_imgui_color(std::uint32_t rgb, std::uint32_t alpha = 255) {
  return (alpha << 24) | ((rgb & 0xFF) << 16) | (rgb & 0xFF00) | ((rgb >> 16) & 0xFF);
}

}  // namespace shardscope::gui
