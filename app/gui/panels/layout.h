// Which panel goes where: a layout is a tree of cells, written as a table (main_layout.cpp, the presenter's
// layouts). A split cell lays its cells out as rows (top to bottom) or columns (left to right); a leaf draws its panels
// one after another. Each cell is sized along its parent's split by one rule:
//   rest       what is left: the parent's extent minus the reserved cells and the cells sized before it (in rows with
//              gaps, also the spacing between the cells);
//   fraction   a share of the parent's extent minus the reserved cells, clamped to [min_em, max_em] font sizes;
//   content    its panels' content_height, reserved before the other cells are sized; drawn inline;
//   natural    drawn inline first, taking what it draws (a title line); the cells after it share what is left.
// A cell with an id is an ImGui child window of its size (bordered if asked); without, it is drawn inline. A cell
// may be shown only while a condition holds (presenter mode: the ring demo or the charts). Adding a panel is its
// file and one row in a layout table.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gui/panels/panel.h"

namespace shardscope::gui {

enum class Split { None, Rows, Columns };
enum class Sizing { Rest, Fraction, Content, Natural };

struct PanelEntry {
  std::unique_ptr<Panel> panel;
  bool separator_before = false;
};

struct LayoutCell {
  std::string id;  // the child window's ImGui id; "" draws the cell inline
  Sizing sizing = Sizing::Rest;
  float fraction = 0, min_em = 0, max_em = 0;  // Sizing::Fraction; max_em 0: no upper clamp
  bool border = false;
  std::function<bool()> shown;  // empty: always shown
  Split split = Split::None;
  bool gaps = false;  // rows: the rest also leaves the item spacing between the cells
  std::vector<LayoutCell> cells;
  std::vector<PanelEntry> panels;  // a leaf's panels, drawn top to bottom
};

// Builders for the tables: leaf(panel(...), ...) holds panels, rows(...) / columns(...) split; the sizing and child
// window wrappers take a cell and return it, so a table reads as nested calls.
PanelEntry panel(std::unique_ptr<Panel> p, bool separator_before = false);
template <class... Entries>
LayoutCell leaf(Entries&&... entries) {
  LayoutCell cell;
  (cell.panels.push_back(std::forward<Entries>(entries)), ...);
  return cell;
}
template <class... Cells>
LayoutCell rows(bool gaps, Cells&&... cells) {
  LayoutCell cell;
  cell.split = Split::Rows;
  cell.gaps = gaps;
  (cell.cells.push_back(std::forward<Cells>(cells)), ...);
  return cell;
}
template <class... Cells>
LayoutCell columns(Cells&&... cells) {
  LayoutCell cell;
  cell.split = Split::Columns;
  (cell.cells.push_back(std::forward<Cells>(cells)), ...);
  return cell;
}
LayoutCell fraction(float share, LayoutCell cell, float min_em = 0, float max_em = 0);
LayoutCell content(LayoutCell cell);
LayoutCell natural(LayoutCell cell);
LayoutCell child(std::string id, bool border, LayoutCell cell);
LayoutCell shown_if(std::function<bool()> condition, LayoutCell cell);

// Draws `root` into the current ImGui window, over the window's whole remaining content region.
void draw_layout(LayoutCell& root, const PanelFrame& frame);

}  // namespace shardscope::gui
