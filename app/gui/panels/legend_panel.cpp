// The legend at the bottom of the window: the memory categories with the accounting rules and the last status
// message, then the timeline's op colours and its idle hatching, each group on its own line(s). On a small screen at
// a projector's font scale the timeline's colours fold into one line with a tooltip, so the charts keep their room.
// Presenter mode's legend (make_lesson_legend_panel) names both groups too, but only the memory categories and op
// kinds the runs on screen have (so that eight ranks keep their rows at a projector's font scale), never folded (a
// class cannot hover), and without the rules line.
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "gui/logic/palette.h"
#include "gui/logic/drawable_text.h"
#include "gui/panels/panel.h"
#include "gui/panels/window_facts.h"

namespace shardscope::gui {

namespace {

struct LegendItem {
  std::string label;
  std::uint32_t rgb = 0;
  bool memory = true;  // a memory category (else a timeline op kind)
};

// The op kinds a plan's programs hold (for the lesson legend, which names only what is on screen).
std::vector<bool> kinds_in(const Plan& plan) {
  std::vector<bool> present(std::size(kAllTimelineKinds), false);
  for (const Program& program : plan.programs)
    for (const Op& op : program.ops) present[static_cast<std::size_t>(timeline_kind(op))] = true;
  return present;
}

// The memory categories a plan's tensors occupy (a zero-byte tensor, e.g. a sharded handle, takes no colour).
std::vector<bool> categories_in(const Plan& plan) {
  std::vector<bool> present(kCategoryCount, false);
  for (const Program& program : plan.programs)
    for (const TensorInfo& tensor : program.tensors)
      if (tensor.bytes > 0) present[static_cast<std::size_t>(tensor.category)] = true;
  return present;
}

struct LegendStyle {
  bool rules = true;         // the accounting rules and the status message after the memory colours
  bool foldable = true;      // the timeline colours may fold into a tooltip when room is short
  bool only_present = false;  // only the memory categories and op kinds the runs on screen have
  std::function<bool()> hidden;  // nothing drawn while it holds (its room stays kept)
};

class LegendPanel final : public Panel {
 public:
  LegendPanel(const WindowFacts& facts, LegendStyle style) : facts_(facts), style_(std::move(style)) {}

  // Two groups (memory, timeline), each starting on its own line; the timeline's fold into one line when the two
  // would take more than three.
  ContentHeight content_height(const PanelFrame& frame, float width) override {
    float memory_width = 0, timeline_width = ImGui::GetFontSize() * 12;  // the timeline's own idle swatch
    for (const auto& item : legend_items(frame))
      (item.memory ? memory_width : timeline_width) += ImGui::GetFontSize() * 3 + ImGui::CalcTextSize(item.label.c_str()).x;
    const float avail = std::max(1.0f, width);
    const float memory_lines = std::ceil(memory_width / avail), timeline_lines = std::ceil(timeline_width / avail);
    compact_ = style_.foldable && memory_lines + timeline_lines > 3;
    return {memory_lines + (compact_ ? 1 : timeline_lines), 0};
  }

  void draw(const PanelFrame& frame) override {
    if (style_.hidden && style_.hidden()) return;
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
    for (const LegendItem& item : legend_items(frame)) {
      if (memory && !item.memory) {
        if (style_.rules) {
          const std::string rules = drawable_label(frame.store.header().accounting_rules);  // the trace's text
          const std::string rules_text = rules + (facts_.status.empty() ? "" : " · ") + facts_.status;
          place(ImGui::CalcTextSize(rules_text.c_str()).x);
          ImGui::TextDisabled("%s", rules_text.c_str());
        } else {
          ImGui::NewLine();
        }
        memory = false;
        first = true;
        if (compact_) {
          draw_folded_timeline_colours(frame, square);
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
  void draw_folded_timeline_colours(const PanelFrame& frame, float square) {
    ImGui::TextDisabled("timeline colours: hover here");
    if (!ImGui::IsItemHovered()) return;
    ImGui::BeginTooltip();
    for (const LegendItem& entry : legend_items(frame))
      if (!entry.memory) {
        ImGui::ColorButton(entry.label.c_str(), ImGui::ColorConvertU32ToFloat4(to_imgui_color(entry.rgb)),
                           ImGuiColorEditFlags_NoTooltip, ImVec2(square, square));
        ImGui::SameLine();
        ImGui::TextUnformatted(entry.label.c_str());
      }
    ImGui::TextUnformatted("hatched: idle (pipelines: bubble)");
    ImGui::EndTooltip();
  }

  std::vector<LegendItem> legend_items(const PanelFrame& frame) {
    std::vector<LegendItem> items;
    std::vector<bool> categories(kCategoryCount, true), kinds(std::size(kAllTimelineKinds), true);
    if (style_.only_present) {
      const Plan* plan = frame.store.header().plan.get();
      const Plan* compared = frame.compared ? frame.compared->header().plan.get() : nullptr;
      if (plan != plan_ || compared != compared_plan_) {  // scanned once a plan: a plan holds up to millions of ops
        plan_ = plan;
        compared_plan_ = compared;
        present_categories_.assign(kCategoryCount, plan == nullptr);  // a plan-less trace: all of them
        present_kinds_.assign(std::size(kAllTimelineKinds), false);
        for (const Plan* p : {plan, compared}) {
          if (!p) continue;
          const auto c = categories_in(*p);
          const auto k = kinds_in(*p);
          for (std::size_t i = 0; i < c.size(); ++i) present_categories_[i] = present_categories_[i] || c[i];
          for (std::size_t i = 0; i < k.size(); ++i) present_kinds_[i] = present_kinds_[i] || k[i];
        }
      }
      categories = present_categories_;
      kinds = present_kinds_;
    }
    for (Category c : kStackingOrder)
      if (categories[static_cast<std::size_t>(c)]) items.push_back({std::string(category_label(c)), category_rgb(c), true});
    for (TimelineKind k : kAllTimelineKinds)
      if (k != TimelineKind::Other && kinds[static_cast<std::size_t>(k)]) items.push_back({timeline_label(k), timeline_rgb(k), false});
    return items;
  }

  const WindowFacts& facts_;
  LegendStyle style_;
  bool compact_ = false;  // the timeline's colours folded into a tooltip (little room)
  const Plan* plan_ = nullptr;
  const Plan* compared_plan_ = nullptr;
  std::vector<bool> present_categories_, present_kinds_;
};

}  // namespace

std::unique_ptr<Panel> make_legend_panel(PanelContext& context) { return std::make_unique<LegendPanel>(context.facts, LegendStyle{}); }

std::unique_ptr<Panel> make_lesson_legend_panel(PanelContext& context, std::function<bool()> hidden) {
  return std::make_unique<LegendPanel>(context.facts, LegendStyle{false, false, true, std::move(hidden)});
}

}  // namespace shardscope::gui
