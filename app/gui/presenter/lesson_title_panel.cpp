// Presenter mode's title line: the lesson's number and title, and on the right the step counter with the keys.
#include <imgui.h>

#include <algorithm>
#include <memory>
#include <string>

#include "gui/presenter/presenter_layout.h"
#include "gui/presenter/presenter_style.h"
#include "gui/logic/drawable_text.h"

namespace shardscope::gui {

namespace {

class LessonTitlePanel final : public Panel {
 public:
  explicit LessonTitlePanel(const LessonDeck& deck) : deck_(deck) {}

  void draw(const PanelFrame&) override {
    const lessons::Lesson& lesson = *deck_.lesson();
    // On the short path the counter counts its steps, so a class sees how far it is through today's lesson.
    const std::string position = "step " + std::to_string(deck_.path_position() + 1) + " / " + std::to_string(deck_.path().size()) +
                                 (deck_.short_path ? " (short path)" : "");
    const std::string keys = "   ·   PgDn / PgUp step · P reveal · B blank · Esc leave";
    const std::string title = drawable_text(std::to_string(lesson.order) + ". " + lesson.title);
    const float right = ImGui::GetWindowContentRegionMax().x;
    const float left = ImGui::GetCursorPosX();
    const float gap = ImGui::GetFontSize();
    // The keys give way first, then the title wraps: the counter and the title never share pixels.
    std::string counter = position + keys;
    if (ImGui::CalcTextSize(title.c_str()).x + gap + ImGui::CalcTextSize(counter.c_str()).x > right - left) counter = position;
    const float counter_x = right - ImGui::CalcTextSize(counter.c_str()).x;
    const ImVec2 top = ImGui::GetCursorPos();
    ImGui::PushStyleColor(ImGuiCol_Text, kTitleColour);
    ImGui::PushTextWrapPos(counter_x - gap);
    ImGui::TextUnformatted(title.c_str());
    ImGui::PopTextWrapPos();
    ImGui::PopStyleColor();
    const ImVec2 below = ImGui::GetCursorPos();
    ImGui::SetCursorPos(ImVec2(counter_x, top.y));
    ImGui::TextDisabled("%s", counter.c_str());
    ImGui::SetCursorPos(ImVec2(below.x, std::max(below.y, ImGui::GetCursorPos().y)));
  }

 private:
  const LessonDeck& deck_;
};

}  // namespace

std::unique_ptr<Panel> make_lesson_title_panel(PresenterContext& context) {
  return std::make_unique<LessonTitlePanel>(context.deck);
}

}  // namespace shardscope::gui
