// The left column's head: where the picture comes from. For a scenario, the run modes and the scenario picker (a
// change asks the window to run it again; the fields come below the figures, scenario_fields_panel.cpp), then
// progress or the run's error; for a trace file, its name, whether it is
// complete, and its warnings; for a followed trace, what it waits for or how far it got.
#include <imgui.h>

#include <memory>
#include <utility>

#include "gui/panels/panel.h"
#include "gui/logic/drawable_text.h"
#include "gui/panels/window_facts.h"
#include "gui/widgets/run_mode_choice.h"
#include "gui/widgets/scenario_form.h"

namespace shardscope::gui {

namespace {

const ImVec4 kErrorColour(0.8f, 0.1f, 0.1f, 1);
const ImVec4 kWarningColour(0.7f, 0.4f, 0.0f, 1);

class RunSourcePanel final : public Panel {
 public:
  explicit RunSourcePanel(PanelContext& context) : context_(context) {}

  void draw(const PanelFrame&) override {
    const WindowFacts& facts = context_.facts;
    switch (facts.source) {
      case WindowFacts::Source::Followed: draw_follow_status(facts); break;
      case WindowFacts::Source::Scenario: draw_scenario(facts); break;
      case WindowFacts::Source::TraceFile: draw_trace_file(facts); break;
    }
  }

 private:
  void draw_scenario(const WindowFacts& facts) {
    bool rerun = draw_run_mode(context_.mode, context_.gpus);
    if (context_.form.draw_picker(context_.edited)) {
      context_.requests.clear_startup_error = true;
      rerun = true;
    }
    if (rerun) context_.requests.rerun = true;
    if (facts.busy)
      ImGui::TextDisabled("%s… %llu events", context_.mode == RunMode::Simulate ? "simulating" : "executing",
                          static_cast<unsigned long long>(facts.progress_events));
    if (!facts.error.empty()) {  // wrapped: an out-of-memory message names the tensor and what was live
      ImGui::PushStyleColor(ImGuiCol_Text, kErrorColour);
      ImGui::TextWrapped("%s", drawable_text(facts.error).c_str());
      ImGui::PopStyleColor();
    }
  }

  static void draw_trace_file(const WindowFacts& facts) {
    ImGui::TextWrapped("Trace: %s", facts.trace_file.c_str());
    if (!facts.finished_text.empty()) ImGui::TextDisabled("%s", facts.finished_text.c_str());
    // Wrapped: a cut-short trace's warning says where and why, a sentence wider than the column.
    for (const auto& [text, colour] : {std::pair{facts.error, kErrorColour}, std::pair{facts.warning, kWarningColour}}) {
      if (text.empty()) continue;
      ImGui::PushStyleColor(ImGuiCol_Text, colour);
      ImGui::TextWrapped("%s", drawable_text(text).c_str());
      ImGui::PopStyleColor();
    }
  }

  // Once a followed run has finished cleanly the column reads as for the same file opened with --trace, so a
  // finished follow and a replay look the same.
  static void draw_follow_status(const WindowFacts& facts) {
    const bool finished = !facts.following && facts.error.empty() && facts.warning.empty();
    if (finished) {
      ImGui::TextWrapped("Trace: %s", facts.followed.c_str());
      ImGui::TextDisabled("%s", facts.finished_text.c_str());
      return;
    }
    ImGui::TextWrapped("Following: %s", facts.followed.c_str());
    // Wrapped: a refusal or a stalled file's explanation is a sentence.
    const ImVec4 colour = !facts.error.empty()     ? kErrorColour
                          : !facts.warning.empty() ? kWarningColour
                                                   : ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled);
    ImGui::PushStyleColor(ImGuiCol_Text, colour);
    ImGui::TextWrapped("%s", drawable_text(facts.follow_status).c_str());
    ImGui::PopStyleColor();
  }

  PanelContext& context_;
};

}  // namespace

std::unique_ptr<Panel> make_run_source_panel(PanelContext& context) { return std::make_unique<RunSourcePanel>(context); }

}  // namespace shardscope::gui
