// Presenter mode's narration: the step's title and text with the run's numbers, its prediction (P reveals the
// answer), and on the last step how many of the lesson's claims hold against these runs.
#include <imgui.h>

#include <algorithm>
#include <memory>

#include "gui/presenter/presenter_layout.h"
#include "gui/presenter/presenter_style.h"
#include "gui/logic/drawable_text.h"

namespace shardscope::gui {

namespace {

class NarrationPanel final : public Panel {
 public:
  NarrationPanel(const LessonDeck& deck, const bool& reveal_all) : deck_(deck), reveal_all_(reveal_all) {}

  void draw(const PanelFrame&) override {
    const lessons::LessonStep& step = *deck_.step();
    ImGui::PushTextWrapPos(0.0f);
    ImGui::PushStyleColor(ImGuiCol_Text, kTitleColour);
    ImGui::TextUnformatted(drawable_text(step.title).c_str());
    ImGui::PopStyleColor();
    ImGui::Spacing();
    text_wrapped_at_spaces(deck_.narration(), ImGui::GetContentRegionAvail().x);
    if (step.predict) {
      ImGui::Spacing();
      ImGui::Separator();
      ImGui::Spacing();
      ImGui::TextColored(ImVec4(0.55f, 0.25f, 0.0f, 1), "Predict: %s", step.predict->question.c_str());
      if (deck_.revealed || reveal_all_) ImGui::Text("Answer: %s", deck_.answer().empty() ? "…" : deck_.answer().c_str());
      else ImGui::TextDisabled("(P reveals the answer)");
    }
    if (deck_.step_index() + 1 == deck_.step_count() && deck_.evaluated()) draw_claims_summary();
    ImGui::PopTextWrapPos();
  }

 private:
  // A summary, not the whole list (a lesson checks 10 to 30 claims): the ones that fail are named.
  void draw_claims_summary() {
    const auto& claims = deck_.evaluated()->claims();
    const auto holding = std::count_if(claims.begin(), claims.end(), [](const lessons::ClaimResult& c) { return c.ok; });
    ImGui::Spacing();
    ImGui::Separator();
    const bool all = holding == static_cast<long>(claims.size());
    ImGui::TextColored(all ? ImVec4(0.0f, 0.45f, 0.25f, 1) : ImVec4(0.8f, 0.1f, 0.1f, 1), "%s %ld of %zu claims hold against these runs",
                       all ? "✓" : "✗", static_cast<long>(holding), claims.size());
    for (const lessons::ClaimResult& claim : claims)
      if (!claim.ok) ImGui::TextColored(ImVec4(0.8f, 0.1f, 0.1f, 1), "✗ %s", claim.says.c_str());
    ImGui::TextDisabled("shardscope-cli lessons check %s lists each with its values", deck_.lesson()->id.c_str());
  }

  const LessonDeck& deck_;
  const bool& reveal_all_;
};

}  // namespace

std::unique_ptr<Panel> make_narration_panel(PresenterContext& context) {
  return std::make_unique<NarrationPanel>(context.deck, context.reveal_all);
}

}  // namespace shardscope::gui
