// Presenter mode's title line: the lesson's number and title, and on the right the step counter with the keys.
#include <imgui.h>

#include <memory>
#include <string>

#include "gui/presenter/presenter_layout.h"
#include "gui/presenter/presenter_style.h"

namespace shardscope::gui {

namespace {

class LessonTitlePanel final : public Panel {
 public:
  explicit LessonTitlePanel(const LessonDeck& deck) : deck_(deck) {}

  void draw(const PanelFrame&) override {
    const lessons::Lesson& lesson = *deck_.lesson();
    ImGui::PushStyleColor(ImGuiCol_Text, kTitleColour);
    ImGui::Text("%d. %s", lesson.order, lesson.title.c_str());
    ImGui::PopStyleColor();
    const std::string counter = "step " + std::to_string(deck_.step_index() + 1) + " / " + std::to_string(deck_.step_count()) +
                                "   ·   PgDn / PgUp step · P reveal · B blank · Esc leave";
    ImGui::SameLine(ImGui::GetWindowContentRegionMax().x - ImGui::CalcTextSize(counter.c_str()).x);
    ImGui::TextDisabled("%s", counter.c_str());
  }

 private:
  const LessonDeck& deck_;
};

}  // namespace

std::unique_ptr<Panel> make_lesson_title_panel(PresenterContext& context) {
  return std::make_unique<LessonTitlePanel>(context.deck);
}

}  // namespace shardscope::gui
