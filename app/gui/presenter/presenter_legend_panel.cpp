// Presenter mode's footer: the memory colours, for a student who has not learnt them yet (the keys are in the title
// line). The ring demo has its own legend, so none shows on its steps; the room is kept either way.
#include <imgui.h>

#include <memory>
#include <string>

#include "gui/logic/palette.h"
#include "gui/presenter/presenter_layout.h"

namespace shardscope::gui {

namespace {

class PresenterLegendPanel final : public Panel {
 public:
  explicit PresenterLegendPanel(const LessonDeck& deck) : deck_(deck) {}

  ContentHeight content_height(const PanelFrame&, float) override { return {1.1f, 0}; }

  void draw(const PanelFrame&) override {
    if (showing_ring_demo(deck_)) return;
    const float square = ImGui::GetFontSize() * 0.8f;
    for (Category c : kStackingOrder) {
      ImGui::ColorButton(std::string(category_label(c)).c_str(), ImGui::ColorConvertU32ToFloat4(to_imgui_color(category_rgb(c))),
                         ImGuiColorEditFlags_NoTooltip, ImVec2(square, square));
      ImGui::SameLine();
      ImGui::TextUnformatted(std::string(category_label(c)).c_str());
      ImGui::SameLine(0, square);
    }
    ImGui::NewLine();
  }

 private:
  const LessonDeck& deck_;
};

}  // namespace

std::unique_ptr<Panel> make_presenter_legend_panel(PresenterContext& context) {
  return std::make_unique<PresenterLegendPanel>(context.deck);
}

}  // namespace shardscope::gui
