// Sizing and drawing a layout's cells. The arithmetic is the window's: rows reserve their content cells first, then
// share out the rest; columns give a fraction (clamped in font sizes) and leave the rest to ImGui's remaining width.
#include "gui/panels/layout.h"

#include <algorithm>
#include <limits>

namespace shardscope::gui {

PanelEntry panel(std::unique_ptr<Panel> p, bool separator_before) { return {std::move(p), separator_before}; }

LayoutCell fraction(float share, LayoutCell cell, float min_em, float max_em) {
  cell.sizing = Sizing::Fraction;
  cell.fraction = share;
  cell.min_em = min_em;
  cell.max_em = max_em;
  return cell;
}
LayoutCell content(LayoutCell cell) {
  cell.sizing = Sizing::Content;
  return cell;
}
LayoutCell natural(LayoutCell cell) {
  cell.sizing = Sizing::Natural;
  return cell;
}
LayoutCell child(std::string id, bool border, LayoutCell cell) {
  cell.id = std::move(id);
  cell.border = border;
  return cell;
}
LayoutCell shown_if(std::function<bool()> condition, LayoutCell cell) {
  cell.shown = std::move(condition);
  return cell;
}

namespace {

bool is_shown(const LayoutCell& cell) { return !cell.shown || cell.shown(); }

void draw_cell(LayoutCell& cell, const PanelFrame& frame, ImVec2 size);

// A fraction cell's extent: its share of what the reserved cells leave, clamped to its font-size bounds.
float fraction_extent(const LayoutCell& cell, float shared) {
  const float em = ImGui::GetFontSize();
  const float low = cell.min_em * em;
  const float high = cell.max_em > 0 ? cell.max_em * em : std::numeric_limits<float>::max();
  return std::clamp(shared * cell.fraction, low, high);
}

// Content cells' room, summed in frame lines first and then in pixels (the window's reservations are written so).
ContentHeight reserved(LayoutCell& cell, const PanelFrame& frame, float width) {
  ContentHeight total;
  if (!is_shown(cell)) return total;
  for (auto& entry : cell.panels) {
    const ContentHeight h = entry.panel->content_height(frame, width);
    total.lines += h.lines;
    total.pixels += h.pixels;
  }
  for (auto& inner : cell.cells) {
    const ContentHeight h = reserved(inner, frame, width);
    total.lines += h.lines;
    total.pixels += h.pixels;
  }
  return total;
}

void draw_rows(LayoutCell& cell, const PanelFrame& frame, ImVec2 size, bool top_level) {
  ContentHeight content_total;
  int shown_cells = 0;
  for (auto& inner : cell.cells) {
    if (!is_shown(inner)) continue;
    ++shown_cells;
    if (inner.sizing != Sizing::Content) continue;
    const ContentHeight h = reserved(inner, frame, size.x);
    content_total.lines += h.lines;
    content_total.pixels += h.pixels;
  }
  const float kept = ImGui::GetFrameHeightWithSpacing() * content_total.lines + content_total.pixels;
  float available = size.y;
  float sized = 0;  // fraction cells drawn so far
  for (auto& inner : cell.cells) {
    if (!is_shown(inner)) continue;
    switch (inner.sizing) {
      case Sizing::Natural:
        draw_cell(inner, frame, ImVec2(size.x, 0));
        // What the natural cell took is measured where it ended (only a window's top-level rows have them).
        if (top_level) available = ImGui::GetContentRegionAvail().y;
        break;
      case Sizing::Content:
        draw_cell(inner, frame, ImVec2(size.x, 0));
        break;
      case Sizing::Fraction: {
        const float h = fraction_extent(inner, available - kept);
        draw_cell(inner, frame, ImVec2(0, h));
        sized += h;
        break;
      }
      case Sizing::Rest: {
        float h = available - kept - sized;
        if (cell.gaps) h -= ImGui::GetStyle().ItemSpacing.y * static_cast<float>(shown_cells - 1);
        draw_cell(inner, frame, ImVec2(inner.id.empty() ? size.x : 0, h));
        break;
      }
    }
  }
}

void draw_columns(LayoutCell& cell, const PanelFrame& frame, ImVec2 size) {
  bool first = true;
  for (auto& inner : cell.cells) {
    if (!is_shown(inner)) continue;
    if (!first) ImGui::SameLine();
    first = false;
    const float width = inner.sizing == Sizing::Fraction ? fraction_extent(inner, size.x) : ImGui::GetContentRegionAvail().x;
    draw_cell(inner, frame, ImVec2(width, size.y));
  }
}

void draw_cell(LayoutCell& cell, const PanelFrame& frame, ImVec2 size) {
  if (!is_shown(cell)) return;
  const bool window = !cell.id.empty();
  if (window) ImGui::BeginChild(cell.id.c_str(), size, cell.border);
  // A cell's panels and splits are given the cell's own extent (a child window's padding is theirs to keep).
  switch (cell.split) {
    case Split::Rows: draw_rows(cell, frame, size, false); break;
    case Split::Columns: draw_columns(cell, frame, size); break;
    case Split::None:
      for (auto& entry : cell.panels) {
        if (entry.separator_before) ImGui::Separator();
        PanelFrame own = frame;
        own.size = size;
        entry.panel->draw(own);
      }
      break;
  }
  if (window) ImGui::EndChild();
}

}  // namespace

void draw_layout(LayoutCell& root, const PanelFrame& frame) {
  const ImVec2 size = ImGui::GetContentRegionAvail();
  if (root.split == Split::Rows) draw_rows(root, frame, size, true);
  else draw_cell(root, frame, size);
}

}  // namespace shardscope::gui
