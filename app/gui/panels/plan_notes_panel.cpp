// What the plan says about itself (the model's and the strategy's notes: approximations, what a figure follows), in
// the window as in the CLI's reports; folded until opened.
#include <imgui.h>

#include <memory>
#include <string>

#include "gui/panels/panel.h"
#include "gui/logic/drawable_text.h"
#include "gui/panels/window_facts.h"

namespace shardscope::gui {

namespace {

class PlanNotesPanel final : public Panel {
 public:
  void draw(const PanelFrame& frame) override {
    const auto header = frame.store.header();
    if (!header.plan || header.plan->notes.empty()) return;
    if (!ImGui::CollapsingHeader(("Notes (" + std::to_string(header.plan->notes.size()) + ")").c_str())) return;
    ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(0.25f, 0.25f, 0.25f, 1));
    for (const auto& note : header.plan->notes) {
      ImGui::Bullet();
      ImGui::TextWrapped("%s", drawable_text(note).c_str());
    }
    ImGui::PopStyleColor();
  }
};

}  // namespace

std::unique_ptr<Panel> make_plan_notes_panel(PanelContext&) { return std::make_unique<PlanNotesPanel>(); }

}  // namespace shardscope::gui
