// The whole window: it owns the sessions (the run on screen and one compared with it), the playhead, the shared time
// view and the selection, fills the facts panels read (panels/window_facts.h), draws the menu and then a layout
// (panels/main_layout.h, or presenter mode's presenter/presenter_layout.h), and carries out what panels asked for.
#pragma once
#include <string>
#include <vector>

#include "gui/gui_options.h"
#include "gui/logic/highlight.h"
#include "gui/logic/playback.h"
#include "gui/logic/rank_group.h"
#include "gui/logic/time_view.h"
#include "gui/panels/layout.h"
#include "gui/panels/window_facts.h"
#include "gui/presenter/lesson_deck.h"
#include "gui/presenter/presenter_layout.h"
#include "gui/widgets/scenario_form.h"
#include "gui/window/session.h"

namespace shardscope::gui {

class ShardScopeUi {
 public:
  explicit ShardScopeUi(const GuiOptions& options);
  void frame();  // between ImGui::NewFrame() and ImGui::Render()

  float font_scale() const { return font_scale_; }
  // A path when the user asked for a screenshot this frame ("" otherwise); the frame loop saves it.
  std::string take_screenshot_request();
  void notify(const std::string& message) { status_ = message; }
  // What went wrong with the scenario file, the trace file or the last run ("" when nothing did).
  const std::string& error() const { return startup_error_.empty() ? session_.error() : startup_error_; }
  // True once the scenario's run (or the trace) is fully loaded and the playhead placed for --screenshot. A followed
  // run (--follow, --connect) is loaded once it has finished (or cannot go on, or --screenshot-timeout passed).
  bool ready_for_screenshot() const { return placed_for_screenshot_; }
  // --screenshot of a followed run taken at --screenshot-timeout, before the run finished.
  bool screenshot_before_finish() const { return screenshot_before_finish_; }
  // For tests and benchmarks: no run in flight; the playhead; the shared time view.
  bool idle() const { return !session_.busy() && !compare_session_.busy(); }
  const Playback& playback() const { return playback_; }
  TimeView& time_view() { return view_; }
  const Session& session() const { return session_; }
  Session& session() { return session_; }
  // Presenter mode (presenter_view.cpp): large type, no menus or form, a lesson's narration beside the charts.
  bool presenting() const { return presenter_; }
  const LessonDeck& deck() const { return deck_; }
  void enter_presenter(const std::string& lesson_id);  // "" opens the lesson picker
  void leave_presenter();
  // The handout export (--export): show step `index` of the open lesson, revealed or not; ready once its run is in
  // and the playhead and highlights are placed.
  void show_lesson_step(int index, bool revealed);
  bool lesson_step_ready() const;
  // Why presenter mode cannot show the lesson --lesson names ("" when it can): its lessons directory does not read,
  // no lesson has that id, or the lesson's narration or claims cannot be evaluated. --screenshot exits 2 with it on
  // stderr, as it does for a scenario or trace it cannot use; the picture alone would hide it.
  std::string presenter_problem() const;

 private:
  // The frame: facts for the panels, the layout, then what the panels asked for.
  PanelFrame panel_frame();
  void fill_facts();
  void carry_out_requests();
  void refresh_after_new_run();
  void handle_keys();
  void draw_menu();
  void place_playhead_for_screenshot();
  void start_following_from_options();
  // A second run laid over the first (File → Compare with, --compare): a scenario simulated or a trace opened.
  void load_comparison(const std::string& path);
  const TraceStore* compared_store() const { return compare_name_.empty() ? nullptr : compare_session_.store().get(); }

  // Presenter mode (presenter_view.cpp).
  void presenter_frame();
  void handle_presenter_keys();
  void apply_lesson_step();     // the step's scenario (and compared one) on screen
  void place_lesson_anchor();   // once its run is in: playhead and highlights where the step says
  void focus_time_view(const lessons::LessonStep& step, TimeNs playhead);
  void draw_lesson_picker();
  LessonDeck deck_;
  bool presenter_ = false;
  bool anchor_pending_ = false;
  float font_scale_before_presenter_ = 1.0f;
  int picked_lesson_ = 0;
  std::string shown_lesson_scenario_, compared_lesson_scenario_;  // scenario JSON on screen / compared, to skip re-runs

  GuiOptions options_;
  Session session_;
  Session compare_session_;
  std::string compare_name_;  // "" when nothing is compared
  Scenario edited_;
  RunMode mode_ = RunMode::Simulate;
  exec::GpuInventory gpus_;  // detected once, at start
  ScenarioForm form_;
  Playback playback_;
  TimeView view_;
  Highlight selection_;  // presenter mode: what the lesson step points at
  std::vector<std::string> hidden_answers_;  // presenter mode: every form of the step's answer, until P reveals it
  std::vector<RankGroup> groups_;
  std::uint64_t seen_run_ = ~0ull, seen_generation_ = ~0ull;
  double last_refresh_s_ = 0;
  std::string run_title_;  // the shown run's scenario name, from its trace header
  bool follow_playhead_ = true;

  // What the panels read and ask (window_facts.h), and the layouts that hold them.
  WindowFacts facts_;
  WindowRequests requests_;
  ViewOptions view_options_;
  PanelContext panel_context_;
  PresenterContext presenter_context_;
  LayoutCell main_layout_;
  LayoutCell presenter_layout_;

  float font_scale_ = 1.0f;
  std::string screenshot_request_;
  std::string status_;
  std::string startup_error_;  // --scenario that could not be loaded (the built-in scenario is shown instead)
  std::string export_path_ = "shardscope";
  std::string open_menu_path_;  // File → Open scenario / trace
  bool placed_for_screenshot_ = false;
  bool screenshot_before_finish_ = false;
};

}  // namespace shardscope::gui
