// Reads back what a rendered ImGui frame shows, from its draw data alone: every run of text (decoded from the font
// atlas's glyph quads: the string, where it is, which window drew it, whether a window edge or a nested clip cut it)
// and every filled rectangle with its colour. What the checks of frame_audit.h read, so a lesson is audited as it is
// drawn, without the panels reporting anything themselves.
#pragma once
#include <imgui.h>

#include <cstdint>
#include <string>
#include <vector>

namespace shardscope::gui::audit {

struct Box {
  float x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  float width() const { return x1 - x0; }
  float height() const { return y1 - y0; }
  bool empty() const { return x1 <= x0 || y1 <= y0; }
};
Box intersection(const Box& a, const Box& b);

struct DrawnText {
  std::string text;          // UTF-8; a gap wider than half a space between glyphs reads as one space
  Box box;                   // the union of its glyphs
  std::vector<Box> glyphs;   // each visible glyph's quad
  std::string window;        // the ImGui window (or child window) whose draw list holds it
  std::uint32_t colour = 0;  // ImGui's packed ABGR of its first glyph
  bool cut_by_window = false;  // a glyph runs past its window's visible rectangle (cut at a panel's edge)
  bool elided = false;         // a glyph runs past a clip rectangle inside its window (a label cut at its box on purpose)
};

struct DrawnFill {
  Box box;
  std::uint32_t colour = 0;  // packed ABGR
  std::string window;
};

struct FrameContents {
  std::vector<DrawnText> texts;
  std::vector<DrawnFill> fills;  // axis-aligned filled rectangles (ImDrawList::AddRectFilled and friends)
};

// `font` is the font the frame was drawn with (its glyphs' texture coordinates identify each quad). A window's edge is
// its inner clip rectangle, which the current ImGui context knows for each of its draw lists; read_frame asks it.
FrameContents read_frame(const ImDrawData& data, const ImFont& font);

}  // namespace shardscope::gui::audit
