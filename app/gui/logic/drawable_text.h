// Text the window draws from files (lesson strings, a trace's op labels): cut so that one ImGui text item stays
// within what ImGui 1.86's draw list can index. No ImGui here, so tests check the cut without a window.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace shardscope::gui {

// ImFont::RenderText (imgui_draw.cpp, 1.86) reserves 4 vertices per byte of a wrapped item before it draws, and with
// Debian's 16-bit ImDrawIdx one draw command indexes at most 65,536 vertices: an item of more than 16,383 bytes (a
// 17,000-character narration word) fails IM_ASSERT. 8,192 bytes (32,768 vertices) leaves room for what the same
// command already holds.
inline constexpr std::size_t kMaxDrawnTextBytes = 8192;

// `text` as printable() shows untrusted text (control characters escaped, invalid UTF-8 as \xNN), cut at a character
// boundary to at most kMaxDrawnTextBytes plus "… (N more bytes)".
std::string drawable_text(std::string_view text);

// A name or caption from a file that the window puts on one line (a device, a tensor, a phase, a run's title, the
// accounting rules): printable() cut at kMaxLabelBytes, so that a hostile 20,000-byte name reads as a name rather
// than as a page wrapped over the chart it labels. Real names are far shorter (GPT-2's longest parameter name is
// 37 bytes; a run title about 80).
inline constexpr std::size_t kMaxLabelBytes = 160;
std::string drawable_label(std::string_view text);

}  // namespace shardscope::gui
