// The window's frame: facts for the panels, the menu, the layout, then what the panels asked for; and the glue
// around it (runs, comparisons, the playhead's boundaries, keys). The drawing itself lives in the panels.
#include "gui/window/shardscope_ui.h"
#include "gui/logic/drawable_text.h"

#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <utility>

#include "exec/backends/backend_factory.h"
#include "gui/logic/caption.h"
#include "gui/logic/classroom_scenario.h"
#include "gui/logic/initial_view.h"
#include "gui/panels/main_layout.h"
#include "net/endpoint.h"
#include "scenario/parallel_layout.h"
#include "trace/export/chrome_trace_export.h"
#include "trace/export/memory_csv_export.h"
#include "trace/file/trace_file_reader.h"
#include "trace/import/open_run.h"

#ifndef SHARDSCOPE_ASSETS_DIR
#define SHARDSCOPE_ASSETS_DIR "assets"
#endif

namespace shardscope::gui {

namespace {
constexpr ImGuiWindowFlags kFixedWindow = ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove |
                                          ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_MenuBar |
                                          ImGuiWindowFlags_NoBringToFrontOnFocus;
}

ShardScopeUi::ShardScopeUi(const GuiOptions& options)
    : options_(options),
      gpus_(exec::detect_gpus()),
      form_(std::string(SHARDSCOPE_ASSETS_DIR) + "/scenarios"),
      panel_context_{facts_, requests_, view_options_, form_, edited_, mode_, gpus_},
      presenter_context_{panel_context_, deck_, options_.reveal},
      main_layout_(main_layout(panel_context_)),
      presenter_layout_(presenter_layout(presenter_context_)),
      font_scale_(options.font_scale) {
  view_options_.align = options.align_by_time ? Align::Time : Align::Phase;
  if (!options.compare_file.empty()) load_comparison(options.compare_file);
  if (!options.follow_file.empty() || !options.connect.empty()) {
    start_following_from_options();
    return;
  }
  if (!options.trace_file.empty()) {
    session_.open_trace(options.trace_file);
    // The window shows it too, but a screenshot run or a script has only stderr to say the file is cut short.
    if (!session_.cut_notice().empty()) std::cerr << "shardscope: " << session_.cut_notice() << "\n";
    return;
  }
  edited_ = classroom_scenario();
  if (options.presenter) {  // the lesson's scenarios, not the window's default, are run
    enter_presenter(options.lesson);
    if (deck_.lesson() && deck_.go_to(options.lesson_step - 1)) apply_lesson_step();
    if (deck_.lesson()) return;
  }
  if (!options.scenario_file.empty()) startup_error_ = form_.open_file(options.scenario_file, edited_);
  if (options.execute) mode_ = RunMode::ExecuteCpu;
  if (options.execute_gpu) mode_ = RunMode::ExecuteGpu;  // refused with the reason when no GPU is usable
  session_.run(edited_, mode_);
}

void ShardScopeUi::start_following_from_options() {
  if (!options_.follow_file.empty()) {
    session_.follow_file(options_.follow_file);
    return;
  }
  try {
    session_.connect(net::parse_endpoint(options_.connect), options_.token);
  } catch (const std::invalid_argument& error) {
    startup_error_ = std::string("--connect: ") + error.what();
  }
}

void ShardScopeUi::load_comparison(const std::string& path) {
  compare_name_.clear();
  if (looks_like_run(path)) {  // a trace, rank files, a profiler trace or a memory snapshot
    if (!compare_session_.open_trace(path)) {
      status_ = "cannot compare: " + compare_session_.error();
      return;
    }
    if (!compare_session_.cut_notice().empty()) std::cerr << "shardscope: " << compare_session_.cut_notice() << "\n";
  } else {
    try {
      const Scenario scenario = load_scenario_file(path);
      compare_session_.simulate(scenario);
    } catch (const ScenarioError& error) {
      status_ = std::string("cannot compare: ") + error.what();
      return;
    }
  }
  compare_name_ = std::filesystem::path(path).filename().string();
  status_ = "comparing with " + path + " (outline)";
}

std::string ShardScopeUi::take_screenshot_request() { return std::exchange(screenshot_request_, ""); }

// What the panels read this frame, from the sessions and the window's own state.
void ShardScopeUi::fill_facts() {
  WindowFacts& f = facts_;
  f.source = session_.follows()              ? WindowFacts::Source::Followed
             : !options_.trace_file.empty() ? WindowFacts::Source::TraceFile
                                             : WindowFacts::Source::Scenario;
  f.trace_file = options_.trace_file;
  f.followed = session_.followed();
  f.following = session_.following();
  f.follow_status = f.source == WindowFacts::Source::Followed ? session_.follow_status() : std::string();
  f.finished_text = session_.finished_text();
  f.busy = session_.busy();
  f.progress_events = session_.progress_events();
  f.error = session_.error();
  f.warning = session_.warning();
  f.startup_error = startup_error_;
  f.result = &session_.result();
  f.predicted_peaks = &session_.predicted_peaks();
  f.peak_tensors = &session_.peak_tensors();
  f.compare_name = compare_name_;
  f.status = status_;
}

PanelFrame ShardScopeUi::panel_frame() {
  PanelFrame frame{*session_.store(), compared_store(), groups_, playback_, view_, selection_};
  if (presenter_ && !hidden_answers_.empty()) frame.hidden = &hidden_answers_;
  return frame;
}

void ShardScopeUi::carry_out_requests() {
  const WindowRequests requests = std::exchange(requests_, {});
  if (requests.clear_startup_error) startup_error_.clear();
  if (requests.rerun) session_.run(edited_, mode_);
}

void ShardScopeUi::refresh_after_new_run() {
  const auto store = session_.store();
  if (session_.run_id() == seen_run_ && store->generation() == seen_generation_) return;
  const bool new_run = session_.run_id() != seen_run_;
  // While a run grows, rebuild the playhead's boundaries a few times a second, not every frame.
  const double now = ImGui::GetTime();
  if (!new_run && (session_.busy() || session_.following()) && now - last_refresh_s_ < 0.25) return;
  last_refresh_s_ = now;
  seen_run_ = session_.run_id();
  seen_generation_ = store->generation();
  // The store keeps the boundaries sorted and the ranks' series signatures as events arrive: nothing is sorted here.
  // A followed run keeps the playhead on its newest time while it grows, unless the user moved it away.
  const bool keep_at_end = session_.follows() && !playback_.playing() && playback_.now_ns() >= playback_.end_ns();
  std::vector<PhaseMark> phases;
  TimeNs end = 0, full_end = 0;
  std::optional<TimeNs> first_phase;  // the earliest phase marker of any rank
  store->read([&](const TraceData& data) {
    groups_ = group_identical_ranks(data);
    run_title_ = drawable_label(trace_scenario_name(data.header));  // the header's text  // "ddp · 2 × H100-80 · gpt2-tiny · adam · batch 4 · bf16"
    // A plan for GPUs executed on CPU threads says so: its devices are the plan's, not where it ran.
    if (data.header.source == "executor cpu" && !run_title_.empty()) run_title_ += " · executed on CPU threads";
    end = full_end = data.t_max;
    if (const auto stopped = run_stopped_at(data)) end = std::min(end, *stopped);  // playback ends where the run did
    if (const RankTimeline* first = data.rank(0))
      for (const auto& p : first->phases) phases.push_back({p.name, p.step, p.t_ns});
    for (const RankTimeline& rank : data.ranks)
      if (!rank.phases.empty() && (!first_phase || rank.phases.front().t_ns < *first_phase)) first_phase = rank.phases.front().t_ns;
  });
  // The playhead steps through the store's boundaries in place (a refresh of millions copies none); past the end
  // it stops at the end, as seek clamps.
  Playback::BoundaryLookup lookup;
  lookup.next_after = [store](TimeNs t) {
    return store->read([&](const TraceData& data) -> std::optional<TimeNs> {
      const auto it = std::upper_bound(data.boundaries.begin(), data.boundaries.end(), t);
      return it == data.boundaries.end() ? std::nullopt : std::optional<TimeNs>(*it);
    });
  };
  lookup.last_before = [store](TimeNs t) {
    return store->read([&](const TraceData& data) -> std::optional<TimeNs> {
      const auto it = std::lower_bound(data.boundaries.begin(), data.boundaries.end(), t);
      return it == data.boundaries.begin() ? std::nullopt : std::optional<TimeNs>(*std::prev(it));
    });
  };
  playback_.set_timeline_lookup(std::move(lookup), std::move(phases), end);
  // A run that stopped gets a little room past its end, so the red line and its label are not on the edge.
  const TimeNs view_end = std::max<TimeNs>(end == full_end ? end : end + end / 12, 1);
  view_.set_run_range(0, view_end);
  // The view starts at the first phase marker (logic/initial_view.h): a recorded run's seconds of imports and setup
  // before the model exists stay one zoom out or "Zoom to the whole run" away; a new run's playhead starts there too.
  const TimeRange first_view = initial_view(0, view_end, first_phase);
  view_.show(first_view.t0, first_view.t1);
  if (new_run) playback_.seek(options_.screenshot.empty() && !session_.follows() ? first_view.t0 : end);
  else if (keep_at_end) playback_.seek(end);
}

void ShardScopeUi::place_playhead_for_screenshot() {
  if (options_.screenshot.empty() || placed_for_screenshot_ || session_.busy() || compare_session_.busy()) return;
  if (session_.following()) {  // a followed run is pictured once finished, or at --screenshot-timeout
    if (ImGui::GetTime() < options_.screenshot_timeout_s) return;
    screenshot_before_finish_ = true;
  }
  refresh_after_new_run();
  playback_.seek(playback_.end_ns());
  if (!options_.at.empty()) {
    if (const PhaseMark* phase = playback_.find_phase(options_.at)) playback_.seek(phase->t_ns);
    else if (const TimeNs t = parse_time_text(options_.at); t >= 0) playback_.seek(t);
    else status_ = "--at: no phase or time '" + options_.at + "'; showing the end of the run";
  }
  placed_for_screenshot_ = true;
}

void ShardScopeUi::handle_keys() {
  if (ImGui::GetIO().WantTextInput) return;
  if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Space))) playback_.toggle_play();
  if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_RightArrow))) playback_.step_forward();
  if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_LeftArrow))) playback_.step_back();
  if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_PageDown))) playback_.next_phase();
  if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_PageUp))) playback_.previous_phase();
  if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Home))) playback_.seek(0);
  if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_End))) playback_.seek(playback_.end_ns());
  if (ImGui::IsKeyPressed(301 /* GLFW_KEY_F12 */)) screenshot_request_ = export_path_ + ".png";
  if (ImGui::IsKeyPressed(294 /* GLFW_KEY_F5 */)) enter_presenter("");
}

void ShardScopeUi::frame() {
  session_.poll();
  compare_session_.poll();
  refresh_after_new_run();
  if (presenter_) {
    presenter_frame();
    if (presenter_) return;
  }
  place_playhead_for_screenshot();
  handle_keys();
  playback_.advance(ImGui::GetIO().DeltaTime);
  if (playback_.playing() && follow_playhead_) view_.follow(playback_.now_ns());

  const ImGuiViewport* viewport = ImGui::GetMainViewport();
  ImGui::SetNextWindowPos(viewport->Pos);
  ImGui::SetNextWindowSize(viewport->Size);
  ImGui::Begin("ShardScope", nullptr, kFixedWindow);
  draw_menu();
  fill_facts();
  draw_layout(main_layout_, panel_frame());
  ImGui::End();
  carry_out_requests();
}

void ShardScopeUi::draw_menu() {
  if (!ImGui::BeginMenuBar()) return;
  if (ImGui::BeginMenu("File")) {
    ImGui::InputTextWithHint("##path", "path/to/file (.json scenario, .sstrace, profiler trace, snapshot)", &open_menu_path_);
    if (ImGui::MenuItem("Open scenario", nullptr, false, !open_menu_path_.empty())) {
      startup_error_ = form_.open_file(open_menu_path_, edited_);
      if (startup_error_.empty()) session_.run(edited_, mode_);
      status_ = startup_error_.empty() ? "opened " + open_menu_path_ : startup_error_;
    }
    if (ImGui::MenuItem("Open trace", nullptr, false, !open_menu_path_.empty()))
      status_ = session_.open_trace(open_menu_path_) ? "opened " + open_menu_path_ : session_.error();
    // A trace still being written (shardscope-cli run --out FILE): drawn as it grows; a missing file is waited for.
    if (ImGui::MenuItem("Follow trace file (live)", nullptr, false, !open_menu_path_.empty())) {
      session_.follow_file(open_menu_path_);
      status_.clear();
    }
    if (ImGui::MenuItem("Compare with (scenario or trace)", nullptr, false, !open_menu_path_.empty()))
      load_comparison(open_menu_path_);
    // Before and after a changed option: keep the run on screen, then edit; the new runs are drawn against it.
    if (ImGui::MenuItem("Keep this run to compare with", nullptr, false, !session_.busy() && !session_.trace_file().empty())) {
      const std::filesystem::path kept = std::filesystem::temp_directory_path() / "shardscope-kept-run.sstrace";
      std::error_code error;
      std::filesystem::copy_file(session_.trace_file(), kept, std::filesystem::copy_options::overwrite_existing, error);
      if (error) {
        status_ = "cannot keep the run: " + error.message();
      } else {
        load_comparison(kept.string());
        if (!compare_name_.empty()) compare_name_ = "the kept run (" + session_.scenario().name + ")";
      }
    }
    if (ImGui::MenuItem("Stop comparing", nullptr, false, !compare_name_.empty())) compare_name_.clear();
    ImGui::Separator();
    ImGui::InputText("base name", &export_path_);
    if (ImGui::MenuItem("Save trace (.sstrace)", nullptr, false, !session_.busy() && !session_.trace_file().empty())) {
      std::error_code error;
      std::filesystem::copy_file(session_.trace_file(), export_path_ + ".sstrace", std::filesystem::copy_options::overwrite_existing, error);
      status_ = error ? "cannot save " + export_path_ + ".sstrace: " + error.message() : "saved " + export_path_ + ".sstrace";
    }
    if (ImGui::MenuItem("Export PNG", "F12")) screenshot_request_ = export_path_ + ".png";
    if (ImGui::MenuItem("Export Chrome trace (Perfetto)")) {
      std::ofstream out(export_path_ + ".json");
      write_chrome_trace(*session_.store(), out);
      status_ = out ? "saved " + export_path_ + ".json" : "cannot write " + export_path_ + ".json";
    }
    if (ImGui::MenuItem("Export memory CSV")) {
      std::ofstream out(export_path_ + ".csv");
      write_memory_csv(*session_.store(), out);
      status_ = out ? "saved " + export_path_ + ".csv" : "cannot write " + export_path_ + ".csv";
    }
    ImGui::EndMenu();
  }
  if (ImGui::BeginMenu("View")) {
    for (float scale : {1.0f, 1.25f, 1.5f, 2.0f, 2.5f})
      if (ImGui::MenuItem(("Font scale " + std::to_string(scale).substr(0, 4)).c_str(), nullptr, font_scale_ == scale)) font_scale_ = scale;
    ImGui::MenuItem("Follow the playhead", nullptr, &follow_playhead_);
    ImGui::MenuItem("One memory scale for all devices", nullptr, &view_options_.one_memory_scale);
    ImGui::MenuItem("Memory scale up to the capacity", nullptr, &view_options_.memory_scale_to_capacity);
    if (ImGui::MenuItem("Zoom to the whole run")) view_.reset();
    if (ImGui::MenuItem("Presenter mode: lessons", "F5")) enter_presenter("");
    ImGui::EndMenu();
  }
  if (ImGui::BeginMenu("Help")) {
    ImGui::TextUnformatted("Space play/pause · ←/→ step one op · PgUp/PgDn jump phase · Home/End\n"
                           "Wheel or W/S zoom · drag or A/D pan · click sets the playhead · F12 screenshot\n"
                           "F5 presenter mode (lessons): PgDn/PgUp step · P reveal · B blank · Esc leave");
    ImGui::EndMenu();
  }
  // What is on screen, dtype and all (an instructor comparing bf16 with fp32 reads it here), and where it came from.
  const std::string& source = session_.follows() ? session_.followed() : options_.trace_file;
  const std::string& title = run_title_.empty() ? edited_.name : run_title_;
  ImGui::TextDisabled("  %s%s%s", title.c_str(), source.empty() || title.empty() ? "" : " — ", drawable_text(source).c_str());
  ImGui::EndMenuBar();
}

}  // namespace shardscope::gui
