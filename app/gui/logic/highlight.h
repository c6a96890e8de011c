// What a lesson step points at (presenter mode): a device, one memory category, a span of time. The memory and
// timeline panels draw it: the device's chart and row framed, the other categories faded, the span shaded.
#pragma once
#include <cstdint>
#include <optional>

#include "core/category.h"
#include "core/units.h"

namespace shardscope::gui {

struct Highlight {
  int rank = -1;                      // -1: no device
  std::optional<Category> category;   // the band to keep vivid
  TimeNs from = -1, to = -1;          // a span (both >= 0) or none

  bool has_span() const { return from >= 0 && to > from; }
};

// Palette of the highlight (palette.h holds the rest): a thick near-black frame (every category colour is taken), and
// a span shaded light grey behind the data with darker edges (a tint of any category colour would read as that
// category, and pale yellow as activations).
inline constexpr std::uint32_t kHighlightFrameRgb = 0x1A1A1A;
inline constexpr std::uint32_t kHighlightSpanRgb = 0xDCDCDC;
inline constexpr std::uint32_t kHighlightSpanEdgeRgb = 0x6E6E6E;

}  // namespace shardscope::gui
