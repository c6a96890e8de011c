// The whole window: menu, scenario form and device cards on the left, memory charts, timeline and caption on
// the right, transport bar and legend at the bottom. Owns the session, playhead and shared time view; each
// panel is a small struct with a draw().
#pragma once
#include <string>
#include <vector>

#include "gui/gui_options.h"
#include "gui/lesson_deck.h"
#include "gui/panels/devices_panel.h"
#include "gui/panels/memory_panel.h"
#include "gui/panels/run_mode_panel.h"
#include "gui/panels/scenario_panel.h"
#include "gui/panels/timeline_panel.h"
#include "gui/playback.h"
#include "gui/session.h"
#include "gui/time_view.h"

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

 private:
  void refresh_after_new_run();
  void handle_keys();
  void draw_menu();
  void draw_left_column(float width, float height);
  void draw_right_column(float width, float height);
  void draw_transport_bar();
  struct LegendItem {
    std::string label;
    std::uint32_t rgb = 0;
    bool memory = true;  // a memory category (else a timeline op kind)
  };
  static std::vector<LegendItem> legend_items();
  void draw_legend();
  bool compact_legend_ = false;  // the timeline's colours folded into a tooltip (little room)
  void draw_plan_notes();
  void place_playhead_for_screenshot();
  // A second run laid over the first (File → Compare with, --compare): a scenario simulated or a trace opened.
  void load_comparison(const std::string& path);
  void draw_comparison_table();
  const TraceStore* compared_store() const { return compare_name_.empty() ? nullptr : compare_session_.store().get(); }

  // Presenter mode (presenter_view.cpp).
  void presenter_frame();
  void handle_presenter_keys();
  void apply_lesson_step();     // the step's scenario (and compared one) on screen
  void place_lesson_anchor();   // once its run is in: playhead and highlights where the step says
  void draw_lesson_picker();
  void draw_lesson();
  void draw_narration(float width, float height);
  void draw_presenter_footer();
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
  ScenarioPanel scenario_panel_;
  DevicesPanel devices_panel_;
  MemoryPanel memory_panel_;
  TimelinePanel timeline_panel_;
  Playback playback_;
  TimeView view_;
  std::vector<RankGroup> groups_;
  std::uint64_t seen_run_ = ~0ull, seen_generation_ = ~0ull;
  float font_scale_ = 1.0f;
  std::string screenshot_request_;
  std::string status_;
  std::string startup_error_;  // --scenario that could not be loaded (the built-in scenario is shown instead)
  std::string export_path_ = "shardscope";
  std::string open_menu_path_;  // File → Open scenario / trace
  bool placed_for_screenshot_ = false;
  bool screenshot_before_finish_ = false;
  double started_s_ = 0;  // ImGui time of the first frame, for --screenshot-timeout
  bool first_frame_ = true;
  void draw_follow_status();
  void start_following_from_options();
  double last_refresh_s_ = 0;
  std::string run_title_;  // the shown run's scenario name, from its trace header
  bool follow_playhead_ = true;
  RunMode mode_ = RunMode::Simulate;
  exec::GpuInventory gpus_;  // detected once, at start
};

}  // namespace shardscope::gui
