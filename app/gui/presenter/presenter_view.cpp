// Presenter mode of the window (ShardScopeUi's presenter members): a lesson picker, then per step the presenter layout
// (presenter_layout.h: narration, the step's scenario on the charts, the colours) with the playhead and selection
// where the lesson says; large type, no menus or form, keyboard only (a clicker sends PageDown/PageUp).
#include <imgui.h>

#include <algorithm>

#include "gui/presenter/presenter_style.h"
#include "lessons/expression.h"
#include "gui/window/shardscope_ui.h"
#include "gui/logic/drawable_text.h"
#include "core/untrusted_text.h"

namespace shardscope::gui {

namespace {

constexpr ImGuiWindowFlags kPresenterWindow = ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove |
                                              ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoBringToFrontOnFocus;
// GLFW key codes (ImGui 1.86's io.KeysDown is indexed by them).
constexpr int kKeyB = 66, kKeyP = 80;

bool pressed(ImGuiKey_ key) { return ImGui::IsKeyPressed(ImGui::GetKeyIndex(key)); }

}  // namespace

void ShardScopeUi::enter_presenter(const std::string& lesson_id) {
  if (deck_.lessons().empty() && deck_.error().empty())
    deck_.load(options_.lessons_dir.empty() ? lessons::default_lessons_dir() : options_.lessons_dir);
  if (!presenter_) {
    font_scale_before_presenter_ = font_scale_;
    if (!options_.font_scale_set) font_scale_ = 2.0f;
  }
  presenter_ = true;
  deck_.short_path = options_.short_path;
  if (!lesson_id.empty() && !deck_.open(lesson_id))
    status_ = "no lesson '" + lesson_id + "'; pick one";
  if (deck_.lesson()) apply_lesson_step();
}

void ShardScopeUi::leave_presenter() {
  presenter_ = false;
  deck_.close();
  font_scale_ = font_scale_before_presenter_;
  selection_ = {};
  compare_name_.clear();
  anchor_pending_ = false;
}

void ShardScopeUi::apply_lesson_step() {
  const lessons::LessonStep* step = deck_.step();
  if (!step) return;
  const lessons::Lesson& lesson = *deck_.lesson();
  selection_ = {};
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
  view_options_.align = step->align_by_time ? Align::Time : Align::Phase;
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
  focus_time_view(step, playback_.now_ns());
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
  selection_ = highlight;
  anchor_pending_ = false;
}

void ShardScopeUi::show_lesson_step(int index, bool revealed) {
  if (deck_.go_to(index) || index == deck_.step_index()) apply_lesson_step();
  deck_.revealed = revealed;
}

std::string ShardScopeUi::presenter_problem() const {
  if (options_.lesson.empty()) return "";
  if (!deck_.error().empty()) return deck_.error();
  if (!deck_.lesson()) return "--lesson: no lesson '" + printable(options_.lesson) + "' (shardscope-cli lessons lists them)";
  if (deck_.evaluated() && !deck_.evaluated()->problems().empty())
    return "lesson '" + deck_.lesson()->id + "': " + deck_.evaluated()->problems().front() +
           (deck_.evaluated()->problems().size() > 1 ? " (and " + std::to_string(deck_.evaluated()->problems().size() - 1) + " more: shardscope-cli lessons check)" : "");
  return "";
}

bool ShardScopeUi::lesson_step_ready() const {
  return presenter_ && deck_.lesson() && deck_.evaluated() && !anchor_pending_ && idle();
}

// A step's span is at least a fifth of the timeline's width (a short backward in a long run would be a sliver): the
// view narrows to about two and a half times the span around it, taking in the playhead where the step put it.
void ShardScopeUi::focus_time_view(const lessons::LessonStep& step, TimeNs playhead) {
  if (step.highlight.from.empty()) return;
  const PhaseMark* from = playback_.find_phase(step.highlight.from);
  const PhaseMark* to = playback_.find_phase(step.highlight.to);
  if (!from || !to || to->t_ns <= from->t_ns) return;
  const TimeNs span = to->t_ns - from->t_ns;
  if (span * 5 >= playback_.end_ns()) return;  // already a fifth of the whole run
  TimeNs begin = from->t_ns - span * 3 / 4, end = to->t_ns + span * 3 / 4;
  begin = std::min(begin, playhead - span / 4);
  end = std::max(end, playhead + span / 4);
  view_.show(std::max<TimeNs>(begin, 0), end);
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
  if (deck_.lesson()) {
    fill_facts();
    hidden_answers_.clear();
    const lessons::LessonStep* step = deck_.step();
    if (step && step->predict && !deck_.revealed && !options_.reveal && deck_.evaluated()) {
      try {
        hidden_answers_ = deck_.evaluated()->answer_giveaways(*step->predict);
      } catch (const lessons::ExpressionError&) {  // the narration says the answer cannot be computed
      }
    }
    draw_layout(presenter_layout_, panel_frame());
  } else {
    draw_lesson_picker();
  }
  ImGui::End();
  carry_out_requests();
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
    const std::string title = drawable_text(std::to_string(lessons[i].order) + ". " + lessons[i].title);
    const std::string question = drawable_text(lessons[i].question);
    const float indent = ImGui::GetFontSize();
    const float wrap = ImGui::GetContentRegionAvail().x - indent;
    const float height = ImGui::GetTextLineHeightWithSpacing() + ImGui::CalcTextSize(question.c_str(), nullptr, false, wrap).y;
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
    ImGui::TextUnformatted(question.c_str());
    ImGui::PopStyleColor();
    ImGui::PopTextWrapPos();
    ImGui::PopID();
    ImGui::Spacing();
  }
  if (lessons.empty() && deck_.error().empty()) ImGui::TextUnformatted("No lessons found.");
}

}  // namespace shardscope::gui
