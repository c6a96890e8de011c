// Decoding ImGui 1.86's draw data. Text is drawn as one quad a glyph (ImFont::RenderText: indices a, a+1, a+2, a,
// a+2, a+3 over four vertices whose texture coordinates are the glyph's rectangle in the font atlas); a filled
// rectangle is the same quad over the atlas's white pixel. Anything else (lines, rounded shapes, polygons) is skipped.
#include "gui/audit/frame_reader.h"

#include <imgui_internal.h>

#include <algorithm>
#include <cmath>

namespace shardscope::gui::audit {

Box intersection(const Box& a, const Box& b) {
  return {std::max(a.x0, b.x0), std::max(a.y0, b.y0), std::min(a.x1, b.x1), std::min(a.y1, b.y1)};
}

namespace {

void append_utf8(std::string& out, unsigned codepoint) {
  if (codepoint < 0x80) {
    out += static_cast<char>(codepoint);
  } else if (codepoint < 0x800) {
    out += static_cast<char>(0xC0 | (codepoint >> 6));
    out += static_cast<char>(0x80 | (codepoint & 0x3F));
  } else {
    out += static_cast<char>(0xE0 | (codepoint >> 12));
    out += static_cast<char>(0x80 | ((codepoint >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (codepoint & 0x3F));
  }
}

// The glyph whose atlas rectangle holds these texture coordinates (a glyph clipped on the CPU keeps a part of it).
const ImFontGlyph* glyph_at(const ImFont& font, ImVec2 uv0, ImVec2 uv1, bool& partial) {
  constexpr float kEps = 1e-6f;
  for (const ImFontGlyph& g : font.Glyphs) {
    if (!g.Visible) continue;
    if (uv0.x >= g.U0 - kEps && uv1.x <= g.U1 + kEps && uv0.y >= g.V0 - kEps && uv1.y <= g.V1 + kEps) {
      partial = std::abs(uv0.x - g.U0) > kEps || std::abs(uv1.x - g.U1) > kEps || std::abs(uv0.y - g.V0) > kEps ||
                std::abs(uv1.y - g.V1) > kEps;
      return &g;
    }
  }
  return nullptr;
}

const ImGuiWindow* window_of(const ImDrawList& list) {
  const ImGuiContext* context = ImGui::GetCurrentContext();
  if (!context) return nullptr;
  for (const ImGuiWindow* window : context->Windows)
    if (window->DrawList == &list) return window;
  return nullptr;
}

Box box_of(const ImDrawVert& a, const ImDrawVert& c) {
  return {std::min(a.pos.x, c.pos.x), std::min(a.pos.y, c.pos.y), std::max(a.pos.x, c.pos.x), std::max(a.pos.y, c.pos.y)};
}

bool inside(const Box& inner, const Box& outer) {
  constexpr float kTolerance = 0.5f;
  return inner.x0 >= outer.x0 - kTolerance && inner.y0 >= outer.y0 - kTolerance && inner.x1 <= outer.x1 + kTolerance &&
         inner.y1 <= outer.y1 + kTolerance;
}

struct RunBuilder {
  const ImFont& font;
  FrameContents& out;
  DrawnText current;
  const ImDrawCmd* command = nullptr;
  float line_top = 0;
  float space = 0;

  void close() {
    if (!current.glyphs.empty()) out.texts.push_back(std::move(current));
    current = DrawnText{};
    command = nullptr;
  }

  void add(const ImFontGlyph& glyph, const Box& quad, const ImDrawCmd& cmd, const std::string& window, std::uint32_t colour,
           bool cut_by_window, bool elided) {
    const float top = quad.y0 - glyph.Y0;  // the glyph's line top (Y0: its offset below the line's top)
    const bool same_line = command == &cmd && std::abs(top - line_top) < 1.0f;
    const float gap = current.glyphs.empty() ? 0 : quad.x0 - current.glyphs.back().x1;
    // A new run: another command, another line, a step backwards (text drawn over text) or a gap of two spaces.
    if (!same_line || gap < -2.0f || gap > 1.6f * space) close();
    if (current.glyphs.empty()) {
      current.window = window;
      current.colour = colour;
      current.box = quad;
      command = &cmd;
      line_top = top;
    } else if (gap > 0.5f * space) {
      current.text += ' ';
    }
    append_utf8(current.text, glyph.Codepoint);
    current.glyphs.push_back(quad);
    current.box = {std::min(current.box.x0, quad.x0), std::min(current.box.y0, quad.y0), std::max(current.box.x1, quad.x1),
                   std::max(current.box.y1, quad.y1)};
    current.cut_by_window |= cut_by_window;
    current.elided |= elided;
  }
};

}  // namespace

FrameContents read_frame(const ImDrawData& data, const ImFont& font) {
  FrameContents out;
  const ImVec2 white = font.ContainerAtlas ? font.ContainerAtlas->TexUvWhitePixel : ImVec2(-1, -1);
  const ImFontGlyph* space_glyph = font.FindGlyphNoFallback(' ');
  RunBuilder runs{font, out, {}, nullptr, 0, space_glyph ? space_glyph->AdvanceX : font.FontSize * 0.3f};
  const Box display{data.DisplayPos.x, data.DisplayPos.y, data.DisplayPos.x + data.DisplaySize.x, data.DisplayPos.y + data.DisplaySize.y};
  for (int l = 0; l < data.CmdListsCount; ++l) {
    const ImDrawList& list = *data.CmdLists[l];
    const std::string window = list._OwnerName ? list._OwnerName : "";
    // The window's own visible rectangle: the inner clip rectangle ImGui gave the window that owns this draw list
    // (its border and background are drawn under wider ones; nested PushClipRects are inside it).
    Box window_box = display;
    if (const ImGuiWindow* owner = window_of(list))
      window_box = {owner->InnerClipRect.Min.x, owner->InnerClipRect.Min.y, owner->InnerClipRect.Max.x, owner->InnerClipRect.Max.y};
    window_box = intersection(window_box, display);
    for (const ImDrawCmd& cmd : list.CmdBuffer) {
      if (cmd.UserCallback) continue;
      const Box clip{cmd.ClipRect.x, cmd.ClipRect.y, cmd.ClipRect.z, cmd.ClipRect.w};
      const bool clip_is_window = std::abs(clip.x0 - window_box.x0) < 0.5f && std::abs(clip.y0 - window_box.y0) < 0.5f &&
                                  std::abs(clip.x1 - window_box.x1) < 0.5f && std::abs(clip.y1 - window_box.y1) < 0.5f;
      const ImDrawIdx* idx = list.IdxBuffer.Data + cmd.IdxOffset;
      const ImDrawVert* vtx = list.VtxBuffer.Data + cmd.VtxOffset;
      unsigned k = 0;
      while (k + 6 <= cmd.ElemCount) {
        const unsigned a = idx[k];
        const bool quad = idx[k + 1] == a + 1 && idx[k + 2] == a + 2 && idx[k + 3] == a && idx[k + 4] == a + 2 && idx[k + 5] == a + 3;
        if (!quad) {
          runs.close();
          k += 3;
          continue;
        }
        const ImDrawVert& v0 = vtx[a];
        const ImDrawVert& v2 = vtx[a + 2];
        const Box box = box_of(v0, v2);
        if (v0.uv.x == white.x && v0.uv.y == white.y && v2.uv.x == white.x && v2.uv.y == white.y) {
          runs.close();
          if (!box.empty()) out.fills.push_back({intersection(box, clip), v0.col, window});
        } else {
          bool partial = false;
          const ImVec2 uv0(std::min(v0.uv.x, v2.uv.x), std::min(v0.uv.y, v2.uv.y));
          const ImVec2 uv1(std::max(v0.uv.x, v2.uv.x), std::max(v0.uv.y, v2.uv.y));
          if (const ImFontGlyph* glyph = glyph_at(font, uv0, uv1, partial)) {
            // ImGui drops the glyphs wholly past a clip edge and keeps the one across it: a line cut at a window's edge
            // shows as that glyph (when the edge falls in the gap between two glyphs, the cut goes unseen).
            const bool clipped = !inside(box, clip);
            runs.add(*glyph, box, cmd, window, v0.col, clipped && clip_is_window, partial || (clipped && !clip_is_window));
          } else {
            runs.close();
          }
        }
        k += 6;
      }
      runs.close();
    }
  }
  return out;
}

}  // namespace shardscope::gui::audit
