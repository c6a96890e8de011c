// The legend at the bottom of the window: the memory categories with the accounting rules and the last status
// message, then the timeline's op colours and its idle hatching, each group on its own line(s). On a small screen at
// a projector's font scale the timeline's colours fold into one line with a tooltip, so the charts keep their room.
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "gui/logic/palette.h"
#include "gui/panels/panel.h"
#include "gui/panels/window_facts.h"

namespace shardscope::gui {

namespace {

struct LegendItem {
  std::string label;
  std::uint32_t rgb = 0;
  bool memory = true;  // a memory category (else a timeline op kind)
};

std::vector<LegendItem> legend_items() {
  std::vector<LegendItem> items;
  for (Category c : kStackingOrder) items.push_back({std::string(category_label(c)), category_rgb(c), true});
  for (TimelineKind k : kAllTimelineKinds)
    if (k != TimelineKind::Other) items.push_back({timeline_label(k), timeline_rgb(k), false});
  return items;
}

class LegendPanel final : public Panel {
 public:
  explicit LegendPanel(const WindowFacts& facts) : facts_(facts) {}

  // Two groups (memory, timeline), each starting on its own line; the timeline's fold into one line when the two
  // would take more than three.
  ContentHeight content_height(const PanelFrame&, float width) override {
    float memory_width = 0, timeline_width = ImGui::GetFontSize() * 12;  // the timeline's own idle swatch
    for (const auto& item : legend_items())
      (item.memory ? memory_width : timeline_width) += ImGui::GetFontSize() * 3 + ImGui::CalcTextSize(item.label.c_str()).x;
    const float avail = std::max(1.0f, width);
    const float memory_lines = std::ceil(memory_width / avail), timeline_lines = std::ceil(timeline_width / avail);
    compact_ = memory_lines + timeline_lines > 3;
    return {memory_lines + (compact_ ? 1 : timeline_lines), 0};
  }

  void draw(const PanelFrame& frame) override {
    const float right_edge = ImGui::GetWindowContentRegionMax().x;
    const float square = ImGui::GetFontSize();
    bool first = true, memory = true;
    auto place = [&](float item) {
      // Wrap instead of running off the window (large font scales on small screens).
      if (!first && ImGui::GetCursorPosX() + item > right_edge) ImGui::NewLine();
      first = false;
    };
    ImGui::TextDisabled("memory");
    ImGui::SameLine();
    for (const LegendItem& item : legend_items()) {
      if (memory && !item.memory) {
        const std::string rules = frame.store.header().accounting_rules;
        const std::string rules_text = rules + (facts_.status.empty() ? "" : " · ") + facts_.status;
        place(ImGui::CalcTextSize(rules_text.c_str()).x);
        ImGui::TextDisabled("%s", rules_text.c_str());
        memory = false;
        first = true;
        if (compact_) {
          draw_folded_timeline_colours(square);
          return;
        }
        ImGui::TextDisabled("timeline");
        ImGui::SameLine();
      }
      place(square * 2 + ImGui::CalcTextSize(item.label.c_str()).x);
      ImGui::ColorButton(item.label.c_str(), ImGui::ColorConvertU32ToFloat4(to_imgui_color(item.rgb)), ImGuiColorEditFlags_NoTooltip,
                         ImVec2(square, square));
      ImGui::SameLine();
      ImGui::TextUnformatted(item.label.c_str());
      ImGui::SameLine(0, square);
    }
    // Idle compute is hatched in the timeline: the same hatching as a swatch.
    const char* idle = "idle (pipelines: bubble)";
    place(square * 2 + ImGui::CalcTextSize(idle).x);
    const ImVec2 p = ImGui::GetCursorScreenPos();
    ImDrawList* draw = ImGui::GetWindowDrawList();
    draw->PushClipRect(p, ImVec2(p.x + square, p.y + square), true);
    draw->AddRectFilled(p, ImVec2(p.x + square, p.y + square), to_imgui_color(kLaneBackgroundRgb));
    for (float x = p.x - square; x < p.x + square; x += square * 0.6f)
      draw->AddLine(ImVec2(x, p.y + square), ImVec2(x + square, p.y), to_imgui_color(kIdleHatchRgb));
    draw->PopClipRect();
    ImGui::Dummy(ImVec2(square, square));
    ImGui::SameLine();
    ImGui::TextUnformatted(idle);
  }

 private:
  static void draw_folded_timeline_colours(float square) {
    ImGui::TextDisabled("timeline colours: hover here");
    if (!ImGui::IsItemHovered()) return;
    ImGui::BeginTooltip();
    for (const LegendItem& entry : legend_items())
      if (!entry.memory) {
        ImGui::ColorButton(entry.label.c_str(), ImGui::ColorConvertU32ToFloat4(to_imgui_color(entry.rgb)),
                           ImGuiColorEditFlags_NoTooltip, ImVec2(square, square));
        ImGui::SameLine();
        ImGui::TextUnformatted(entry.label.c_str());
      }
    ImGui::TextUnformatted("hatched: idle (pipelines: bubble)");
    ImGui::EndTooltip();
  }

  const WindowFacts& facts_;
  bool compact_ = false;  // the timeline's colours folded into a tooltip (little room)
};

}  // namespace

std::unique_ptr<Panel> make_legend_panel(PanelContext& context) { return std::make_unique<LegendPanel>(context.facts); }

}  // namespace shardscope::gui
