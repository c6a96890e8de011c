// Presenter mode of the window (ShardScopeUi's presenter members): a lesson picker, then per step the narration
// with the run's numbers, the prediction (P reveals it), the step's scenario on the charts with the playhead and
// highlights where the lesson says; large type, no menus or form, keyboard only (a clicker sends PageDown/PageUp).
#include <imgui.h>

#include <algorithm>

#include "gui/caption.h"
#include "gui/palette.h"
#include "gui/ring_view.h"
#include "gui/shardscope_ui.h"

namespace shardscope::gui {

namespace {

constexpr ImGuiWindowFlags kPresenterWindow = ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove |
                                              ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoBringToFrontOnFocus;
// GLFW key codes (ImGui 1.86's io.KeysDown is indexed by them).
constexpr int kKeyB = 66, kKeyP = 80;

bool pressed(ImGuiKey_ key) { return ImGui::IsKeyPressed(ImGui::GetKeyIndex(key)); }

const ImVec4 kTitleColour(0.0f, 0.30f, 0.55f, 1.0f);

// Wraps at spaces only: ImGui 1.86 also breaks after '.' and ',', which split "9.28 GiB" and "4,004,352 B" across
// lines on the projector.
void text_wrapped_at_spaces(const std::string& text, float width) {
  std::string line;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(start, end - start);
    const std::string longer = line.empty() ? word : line + " " + word;
    if (!line.empty() && ImGui::CalcTextSize(longer.c_str()).x > width) {
      ImGui::TextUnformatted(line.c_str());
      line = word;
    } else {
      line = longer;
    }
    start = end + 1;
  }
  if (!line.empty()) ImGui::TextUnformatted(line.c_str());
}

}  // namespace

void ShardScopeUi::enter_presenter(const std::string& lesson_id) {
  if (deck_.lessons().empty() && deck_.error().empty())
    deck_.load(options_.lessons_dir.empty() ? lessons::default_lessons_dir() : options_.lessons_dir);
  if (!presenter_) {
    font_scale_before_presenter_ = font_scale_;
    if (!options_.font_scale_set) font_scale_ = 2.0f;
  }
  presenter_ = true;
  if (!lesson_id.empty() && !deck_.open(lesson_id))
    status_ = "no lesson '" + lesson_id + "'; pick one";
  if (deck_.lesson()) apply_lesson_step();
}

void ShardScopeUi::leave_presenter() {
  presenter_ = false;
  deck_.close();
  font_scale_ = font_scale_before_presenter_;
  memory_panel_.highlight = {};
  timeline_panel_.highlight = {};
  compare_name_.clear();
  anchor_pending_ = false;
}

void ShardScopeUi::apply_lesson_step() {
  const lessons::LessonStep* step = deck_.step();
  if (!step) return;
  const lessons::Lesson& lesson = *deck_.lesson();
  memory_panel_.highlight = {};
  timeline_panel_.highlight = {};
  const lessons::LessonScenario* shown = lesson.find_scenario(step->scenario);
  if (shown->is_demo()) {  // the ring view replaces the charts
    compare_name_.clear();
    anchor_pending_ = false;
    return;
  }
  if (const std::string key = scenario_to_json(*shown->scenario); key != shown_lesson_scenario_) {
    edited_ = *shown->scenario;
    session_.simulate(edited_);
    shown_lesson_scenario_ = key;
  }
  compare_name_.clear();
  if (const lessons::LessonScenario* other = step->compare.empty() ? nullptr : lesson.find_scenario(step->compare)) {
    if (const std::string key = scenario_to_json(*other->scenario); key != compared_lesson_scenario_) {
      compare_session_.simulate(*other->scenario);
      compared_lesson_scenario_ = key;
    }
    compare_name_ = other->scenario->name;
  }
  anchor_pending_ = true;
}

void ShardScopeUi::place_lesson_anchor() {
  if (!anchor_pending_ || session_.busy() || compare_session_.busy()) return;
  refresh_after_new_run();
  const lessons::LessonStep& step = *deck_.step();
  TimeNs t = playback_.end_ns();
  if (!step.at.op.empty()) {
    // The op's middle, so the caption names it.
    session_.store()->read([&](const TraceData& data) {
      const RankTimeline* rank = data.rank(step.at.rank);
      if (!rank || !data.header.plan || static_cast<std::size_t>(step.at.rank) >= data.header.plan->programs.size()) return;
      const auto& ops = data.header.plan->programs[static_cast<std::size_t>(step.at.rank)].ops;
      TimeNs best = -1;
      for (const StreamSpans& stream : rank->streams)
        for (const TraceSpan& span : stream.spans)
          if (span.op >= 0 && static_cast<std::size_t>(span.op) < ops.size() && ops[static_cast<std::size_t>(span.op)].label == step.at.op &&
              (step.at.step < 0 || span.step == step.at.step) && !span.open() && (best < 0 || span.begin_ns < best)) {
            best = span.begin_ns;
            t = span.begin_ns + (span.end_ns - span.begin_ns) / 2;
          }
      if (best >= 0) return;
      // An allocation has no span: the moment its tensor appears in the rank's memory.
      for (const Op& op : ops) {
        if (op.kind != OpKind::Alloc || op.label != step.at.op || (step.at.step >= 0 && op.step != step.at.step)) continue;
        for (const TraceAllocation a : rank->allocations())
          if (a.tensor == op.tensor && a.bytes > 0) {
            t = a.t_ns;
            return;
          }
      }
    });
  } else if (step.at.phase == "start") {
    t = 0;
  } else if (const PhaseMark* phase = step.at.phase == "end" ? nullptr : playback_.find_phase(step.at.phase)) {
    t = phase->t_ns;
  }
  playback_.pause();
  view_.reset();
  playback_.seek(std::min(t, playback_.end_ns()));
  Highlight highlight;
  highlight.rank = step.highlight.rank;
  highlight.category = step.highlight.category;
  if (!step.highlight.from.empty()) {
    const PhaseMark* from = playback_.find_phase(step.highlight.from);
    const PhaseMark* to = playback_.find_phase(step.highlight.to);
    if (from && to) {
      highlight.from = from->t_ns;
      highlight.to = to->t_ns;
    }
  }
  memory_panel_.highlight = timeline_panel_.highlight = highlight;
  anchor_pending_ = false;
}

void ShardScopeUi::handle_presenter_keys() {
  if (pressed(ImGuiKey_Escape)) {
    leave_presenter();
    return;
  }
  if (ImGui::IsKeyPressed(kKeyB)) deck_.blank = !deck_.blank;
  if (!deck_.lesson()) {  // the picker
    const int count = static_cast<int>(deck_.lessons().size());
    if (pressed(ImGuiKey_DownArrow) || pressed(ImGuiKey_PageDown)) picked_lesson_ = std::min(picked_lesson_ + 1, count - 1);
    if (pressed(ImGuiKey_UpArrow) || pressed(ImGuiKey_PageUp)) picked_lesson_ = std::max(picked_lesson_ - 1, 0);
    if ((pressed(ImGuiKey_Enter) || pressed(ImGuiKey_KeyPadEnter)) && count > 0)
      enter_presenter(deck_.lessons()[static_cast<std::size_t>(picked_lesson_)].id);
    return;
  }
  bool moved = false;
  if (pressed(ImGuiKey_PageDown) || pressed(ImGuiKey_RightArrow) || pressed(ImGuiKey_DownArrow)) moved = deck_.next();
  if (pressed(ImGuiKey_PageUp) || pressed(ImGuiKey_LeftArrow) || pressed(ImGuiKey_UpArrow)) moved = deck_.previous();
  if (pressed(ImGuiKey_Home)) moved = deck_.go_to(0);
  if (pressed(ImGuiKey_End)) moved = deck_.go_to(deck_.step_count() - 1);
  if (ImGui::IsKeyPressed(kKeyP)) deck_.revealed = !deck_.revealed;
  if (pressed(ImGuiKey_Space)) playback_.toggle_play();  // replay the step's run from the anchor
  if (moved) apply_lesson_step();
}

void ShardScopeUi::presenter_frame() {
  deck_.poll();
  place_lesson_anchor();
  if (!ImGui::GetIO().WantTextInput) handle_presenter_keys();
  if (!presenter_) return;  // Esc: the ordinary window from the next frame
  playback_.advance(ImGui::GetIO().DeltaTime);
  if (!options_.screenshot.empty() && !anchor_pending_ && !session_.busy() && !compare_session_.busy() &&
      (!deck_.lesson() || deck_.evaluated()))
    placed_for_screenshot_ = true;

  const ImGuiViewport* viewport = ImGui::GetMainViewport();
  ImGui::SetNextWindowPos(viewport->Pos);
  ImGui::SetNextWindowSize(viewport->Size);
  if (deck_.blank) ImGui::PushStyleColor(ImGuiCol_WindowBg, ImVec4(0, 0, 0, 1));
  ImGui::Begin("ShardScope presenter", nullptr, kPresenterWindow);
  if (deck_.blank) {
    ImGui::PopStyleColor();
    ImGui::End();
    return;
  }
  if (deck_.lesson()) draw_lesson();
  else draw_lesson_picker();
  ImGui::End();
}

void ShardScopeUi::draw_lesson_picker() {
  ImGui::PushStyleColor(ImGuiCol_Text, kTitleColour);
  ImGui::TextUnformatted("ShardScope lessons");
  ImGui::PopStyleColor();
  ImGui::TextDisabled("↑/↓ choose · Enter open · Esc leave presenter mode");
  ImGui::Separator();
  if (!deck_.error().empty()) ImGui::TextColored(ImVec4(0.8f, 0.1f, 0.1f, 1), "%s", deck_.error().c_str());
  if (!status_.empty()) ImGui::TextColored(ImVec4(0.7f, 0.4f, 0.0f, 1), "%s", status_.c_str());
  const auto& lessons = deck_.lessons();
  for (std::size_t i = 0; i < lessons.size(); ++i) {
    const bool picked = static_cast<int>(i) == picked_lesson_;
    const std::string title = std::to_string(lessons[i].order) + ". " + lessons[i].title;
    const float indent = ImGui::GetFontSize();
    const float wrap = ImGui::GetContentRegionAvail().x - indent;
    const float height = ImGui::GetTextLineHeightWithSpacing() + ImGui::CalcTextSize(lessons[i].question.c_str(), nullptr, false, wrap).y;
    const ImVec2 top = ImGui::GetCursorPos();
    ImGui::PushID(static_cast<int>(i));
    if (ImGui::Selectable("##lesson", picked, 0, ImVec2(0, height))) {
      picked_lesson_ = static_cast<int>(i);
      enter_presenter(lessons[i].id);
    }
    ImGui::SetCursorPos(ImVec2(top.x + indent, top.y));
    ImGui::TextUnformatted(title.c_str());
    ImGui::SetCursorPosX(top.x + indent);
    ImGui::PushTextWrapPos(top.x + indent + wrap);
    ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(0.35f, 0.35f, 0.35f, 1));
    ImGui::TextUnformatted(lessons[i].question.c_str());
    ImGui::PopStyleColor();
    ImGui::PopTextWrapPos();
    ImGui::PopID();
    ImGui::Spacing();
  }
  if (lessons.empty() && deck_.error().empty()) ImGui::TextUnformatted("No lessons found.");
}

void ShardScopeUi::draw_lesson() {
  const lessons::Lesson& lesson = *deck_.lesson();
  const lessons::LessonStep& step = *deck_.step();
  ImGui::PushStyleColor(ImGuiCol_Text, kTitleColour);
  ImGui::Text("%d. %s", lesson.order, lesson.title.c_str());
  ImGui::PopStyleColor();
  const std::string counter = "step " + std::to_string(deck_.step_index() + 1) + " / " + std::to_string(deck_.step_count()) +
                              "   ·   PgDn / PgUp step · P reveal · B blank · Esc leave";
  ImGui::SameLine(ImGui::GetWindowContentRegionMax().x - ImGui::CalcTextSize(counter.c_str()).x);
  ImGui::TextDisabled("%s", counter.c_str());
  const float footer = ImGui::GetFrameHeightWithSpacing() * 1.1f;
  const float height = ImGui::GetContentRegionAvail().y - footer;
  const float narration_width = ImGui::GetContentRegionAvail().x * 0.36f;
  draw_narration(narration_width, height);
  ImGui::SameLine();
  const float right_width = ImGui::GetContentRegionAvail().x;
  const lessons::LessonScenario* shown = lesson.find_scenario(step.scenario);
  if (shown->is_demo()) {
    ImGui::BeginChild("ring", ImVec2(right_width, height), true);
    const lessons::ScenarioFacts* facts = deck_.evaluated() ? deck_.evaluated()->facts(step.scenario) : nullptr;
    if (facts && facts->demo) draw_ring_demo(*facts->demo, step.ring_step, height);
    else ImGui::TextDisabled(deck_.evaluated() ? "the all-reduce demo could not run" : "running the all-reduce on the CPU ring…");
    ImGui::EndChild();
  } else {
    draw_right_column(right_width, height);
  }
  if (!shown->is_demo()) draw_presenter_footer();  // the ring has its own legend
}

void ShardScopeUi::draw_narration(float width, float height) {
  const lessons::LessonStep& step = *deck_.step();
  ImGui::BeginChild("narration", ImVec2(width, height), true);
  ImGui::PushTextWrapPos(0.0f);
  ImGui::PushStyleColor(ImGuiCol_Text, kTitleColour);
  ImGui::TextUnformatted(step.title.c_str());
  ImGui::PopStyleColor();
  ImGui::Spacing();
  text_wrapped_at_spaces(deck_.narration(), ImGui::GetContentRegionAvail().x);
  if (step.predict) {
    ImGui::Spacing();
    ImGui::Separator();
    ImGui::Spacing();
    ImGui::TextColored(ImVec4(0.55f, 0.25f, 0.0f, 1), "Predict: %s", step.predict->question.c_str());
    if (deck_.revealed || options_.reveal) ImGui::Text("Answer: %s", deck_.answer().empty() ? "…" : deck_.answer().c_str());
    else ImGui::TextDisabled("(P reveals the answer)");
  }
  if (deck_.step_index() + 1 == deck_.step_count() && deck_.evaluated()) {
    // A summary, not the whole list (a lesson checks 10 to 30 claims): the ones that fail are named.
    const auto& claims = deck_.evaluated()->claims();
    const auto holding = std::count_if(claims.begin(), claims.end(), [](const lessons::ClaimResult& c) { return c.ok; });
    ImGui::Spacing();
    ImGui::Separator();
    const bool all = holding == static_cast<long>(claims.size());
    ImGui::TextColored(all ? ImVec4(0.0f, 0.45f, 0.25f, 1) : ImVec4(0.8f, 0.1f, 0.1f, 1), "%s %ld of %zu claims hold against these runs", all ? "✓" : "✗",
                       static_cast<long>(holding), claims.size());
    for (const lessons::ClaimResult& claim : claims)
      if (!claim.ok) ImGui::TextColored(ImVec4(0.8f, 0.1f, 0.1f, 1), "✗ %s", claim.says.c_str());
    ImGui::TextDisabled("shardscope-cli lessons check %s lists each with its values", deck_.lesson()->id.c_str());
  }
  ImGui::PopTextWrapPos();
  ImGui::EndChild();
}

void ShardScopeUi::draw_presenter_footer() {
  // The memory colours, for a student who has not learnt them yet (the keys are in the title line).
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

}  // namespace shardscope::gui
