// Layout and glue of the window; the drawing itself lives in the panels.
#include "gui/shardscope_ui.h"

#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <utility>

#include "exec/backends/backend_factory.h"
#include "gui/caption.h"
#include "gui/classroom_scenario.h"
#include "gui/palette.h"
#include "gui/run_alignment.h"
#include "scenario/parallel_layout.h"
#include "trace/chrome_trace_export.h"
#include "trace/memory_csv_export.h"
#include "net/endpoint.h"
#include "trace/trace_file_reader.h"

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
      scenario_panel_(std::string(SHARDSCOPE_ASSETS_DIR) + "/scenarios"),
      font_scale_(options.font_scale),
      gpus_(exec::detect_gpus()) {
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
  if (!options.scenario_file.empty()) startup_error_ = scenario_panel_.open_file(options.scenario_file, edited_);
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
  if (looks_like_trace_file(path)) {
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

// Per rank, each run's peak and its breakdown by category at that peak, and the difference (this run − the other).
void ShardScopeUi::draw_comparison_table() {
  if (compare_name_.empty()) return;
  if (!ImGui::CollapsingHeader(("Compared with " + compare_name_).c_str(), ImGuiTreeNodeFlags_DefaultOpen)) return;
  ImGui::TextDisabled("a = this run (stacked), b = %s (outline)", compare_name_.c_str());
  read_with_compare(*session_.store(), compared_store(), [&](const TraceData& first, const TraceData* second) {
    for (const RankComparison& row : compare_ranks(first, *second)) {
      if (row.rank >= 8) {
        ImGui::TextDisabled("… %zu ranks in all (shardscope-cli compare lists every one)", std::max(first.ranks.size(), second->ranks.size()));
        break;
      }
      ImGui::Text("rank %d%s", row.rank, !row.first ? " — only in b" : !row.second ? " — only in a" : "");
      if (!ImGui::BeginTable(("cmp" + std::to_string(row.rank)).c_str(), 4,
                             ImGuiTableFlags_SizingStretchProp | ImGuiTableFlags_BordersInnerH))
        continue;
      for (const char* header : {"", "a", "b", "a − b"}) ImGui::TableSetupColumn(header);
      ImGui::TableHeadersRow();
      auto cell = [](const std::string& text) {
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(text.c_str());
      };
      auto bytes = [](const TraceMemoryPeak* p, Bytes b) { return p ? format_bytes(b) : std::string("—"); };
      auto line = [&](const std::string& label, Bytes a, Bytes b) {
        ImGui::TableNextRow();
        cell(label);
        cell(bytes(row.first, a));
        cell(bytes(row.second, b));
        cell(row.first && row.second ? (a == b ? "0" : (a > b ? "+" : "−") + format_bytes(a > b ? a - b : b - a)) : "—");
      };
      for (Category c : kStackingOrder) {
        const Bytes a = row.first ? row.first->by_category[c] : 0, b = row.second ? row.second->by_category[c] : 0;
        if (a != 0 || b != 0) line(std::string(category_label(c)), a, b);
      }
      line("peak", row.first ? row.first->allocated : 0, row.second ? row.second->allocated : 0);
      ImGui::EndTable();
    }
  });
}

std::string ShardScopeUi::take_screenshot_request() { return std::exchange(screenshot_request_, ""); }

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
  store->read([&](const TraceData& data) {
    groups_ = group_identical_ranks(data);
    run_title_ = trace_scenario_name(data.header);  // "ddp · 2 × H100-80 · gpt2-tiny · adam · batch 4 · bf16"
    end = full_end = data.t_max;
    if (const auto stopped = run_stopped_at(data)) end = std::min(end, *stopped);  // playback ends where the run did
    if (const RankTimeline* first = data.rank(0))
      for (const auto& p : first->phases) phases.push_back({p.name, p.step, p.t_ns});
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
  if (new_run) playback_.seek(options_.screenshot.empty() && !session_.follows() ? 0 : end);
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
  float memory_width = 0, timeline_width = ImGui::GetFontSize() * 12;  // the timeline's own idle swatch
  for (const auto& item : legend_items())
    (item.memory ? memory_width : timeline_width) += ImGui::GetFontSize() * 3 + ImGui::CalcTextSize(item.label.c_str()).x;
  // Two groups (memory, timeline), each starting on its own line; on a small screen at a projector's font scale the
  // timeline's colours fold into one line with a tooltip, so the charts keep their room.
  const float avail = std::max(1.0f, ImGui::GetContentRegionAvail().x);
  const float memory_lines = std::ceil(memory_width / avail), timeline_lines = std::ceil(timeline_width / avail);
  compact_legend_ = memory_lines + timeline_lines > 3;
  const float legend_lines = memory_lines + (compact_legend_ ? 1 : timeline_lines);
  const float bottom = ImGui::GetFrameHeightWithSpacing() * (1.2f + legend_lines);
  const float height = ImGui::GetContentRegionAvail().y - bottom;
  const float total_width = ImGui::GetContentRegionAvail().x;
  const float left_width = std::clamp(total_width * 0.24f, ImGui::GetFontSize() * 16, ImGui::GetFontSize() * 26);
  draw_left_column(left_width, height);
  ImGui::SameLine();
  draw_right_column(ImGui::GetContentRegionAvail().x, height);
  draw_transport_bar();
  draw_legend();
  ImGui::End();
}

void ShardScopeUi::draw_menu() {
  if (!ImGui::BeginMenuBar()) return;
  if (ImGui::BeginMenu("File")) {
    ImGui::InputTextWithHint("##path", "path/to/file (.json scenario or .sstrace)", &open_menu_path_);
    if (ImGui::MenuItem("Open scenario", nullptr, false, !open_menu_path_.empty())) {
      startup_error_ = scenario_panel_.open_file(open_menu_path_, edited_);
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
    ImGui::MenuItem("One memory scale for all devices", nullptr, &memory_panel_.one_scale);
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
  ImGui::TextDisabled("  %s%s%s", title.c_str(), source.empty() || title.empty() ? "" : " — ", source.c_str());
  ImGui::EndMenuBar();
}

void ShardScopeUi::draw_left_column(float width, float height) {
  ImGui::BeginChild("left", ImVec2(width, height), true);
  if (session_.follows()) {
    draw_follow_status();
  } else if (options_.trace_file.empty()) {
    bool rerun = draw_run_mode(mode_, gpus_);
    if (scenario_panel_.draw(edited_)) {
      startup_error_.clear();
      rerun = true;
    }
    if (rerun) session_.run(edited_, mode_);
    if (session_.busy())
      ImGui::TextDisabled("%s… %llu events", mode_ == RunMode::Simulate ? "simulating" : "executing",
                          static_cast<unsigned long long>(session_.progress_events()));
    if (!session_.error().empty()) {  // wrapped: an out-of-memory message names the tensor and what was live
      ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(0.8f, 0.1f, 0.1f, 1));
      ImGui::TextWrapped("%s", session_.error().c_str());
      ImGui::PopStyleColor();
    }
  } else {
    ImGui::TextWrapped("Trace: %s", options_.trace_file.c_str());
    if (const std::string finished = session_.finished_text(); !finished.empty()) ImGui::TextDisabled("%s", finished.c_str());
    // Wrapped: a cut-short trace's warning says where and why, a sentence wider than the column.
    for (const auto& [text, colour] : {std::pair{session_.error(), ImVec4(0.8f, 0.1f, 0.1f, 1)},
                                       std::pair{session_.warning(), ImVec4(0.7f, 0.4f, 0.0f, 1)}}) {
      if (text.empty()) continue;
      ImGui::PushStyleColor(ImGuiCol_Text, colour);
      ImGui::TextWrapped("%s", text.c_str());
      ImGui::PopStyleColor();
    }
  }
  if (const auto& result = session_.result()) {
    ImGui::Separator();
    ImGui::Text("step %s", format_duration(result->step_time_ns).c_str());
    ImGui::Text("exposed comm %s of %s", format_duration(result->exposed_comm_ns).c_str(), format_duration(result->total_comm_ns).c_str());
    // "Bubble" is the pipeline word; elsewhere the compute stream simply waits (for communication, for device 0).
    const std::optional<StrategyKind> strategy = parse_strategy(session_.store()->header().plan ? session_.store()->header().plan->strategy : "");
    ImGui::Text("compute idle %.1f %%%s", result->bubble_fraction * 100, strategy && is_pipeline(*strategy) ? " (bubble)" : "");
    if (strategy && is_pipeline(*strategy)) {
      ImGui::Text("schedule bubble %.1f %%", result->schedule_bubble_fraction * 100);
      if (ImGui::IsItemHovered())
        ImGui::SetTooltip("Idle compute between the step's first forward and its last backward, the region GPipe's\n"
                          "(p-1)/(m+p-1) describes; compute idle above also counts the loss and optimizer step");
    }
  }
  draw_plan_notes();
  draw_comparison_table();
  ImGui::Separator();
  devices_panel_.draw(*session_.store(), groups_, playback_, session_.predicted_peaks(), session_.peak_tensors());
  ImGui::EndChild();
}

// A followed run: what it is waiting for or how far it got. Once it has finished cleanly the column reads as for the
// same file opened with --trace, so a finished follow and a replay look the same.
void ShardScopeUi::draw_follow_status() {
  const bool finished = !session_.following() && session_.error().empty() && session_.warning().empty();
  if (finished) {  // the same two lines as a trace opened with --trace
    ImGui::TextWrapped("Trace: %s", session_.followed().c_str());
    ImGui::TextDisabled("%s", session_.finished_text().c_str());
    return;
  }
  ImGui::TextWrapped("Following: %s", session_.followed().c_str());
  const std::string status = session_.follow_status();
  // Wrapped: a refusal or a stalled file's explanation is a sentence.
  const ImVec4 colour = !session_.error().empty()     ? ImVec4(0.8f, 0.1f, 0.1f, 1)
                        : !session_.warning().empty() ? ImVec4(0.7f, 0.4f, 0.0f, 1)
                                                      : ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled);
  ImGui::PushStyleColor(ImGuiCol_Text, colour);
  ImGui::TextWrapped("%s", status.c_str());
  ImGui::PopStyleColor();
}

// What the plan says about itself (the model's and the strategy's notes: approximations, what a figure follows), in
// the window as in the CLI's reports.
void ShardScopeUi::draw_plan_notes() {
  const auto header = session_.store()->header();
  if (!header.plan || header.plan->notes.empty()) return;
  if (!ImGui::CollapsingHeader(("Notes (" + std::to_string(header.plan->notes.size()) + ")").c_str())) return;
  ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(0.25f, 0.25f, 0.25f, 1));
  for (const auto& note : header.plan->notes) {
    ImGui::Bullet();
    ImGui::TextWrapped("%s", note.c_str());
  }
  ImGui::PopStyleColor();
}

void ShardScopeUi::draw_right_column(float width, float height) {
  ImGui::BeginChild("right", ImVec2(width, height), false);
  // Two lines: a long caption (an out-of-memory report, a projector's font scale) wraps instead of running off.
  const float caption_height = ImGui::GetTextLineHeightWithSpacing() * 2 + ImGui::GetStyle().ItemSpacing.y * 2;
  const float memory_height = (height - caption_height) * 0.55f;
  ImGui::BeginChild("memory", ImVec2(0, memory_height), true);
  memory_panel_.draw(*session_.store(), groups_, view_, playback_, compared_store());
  ImGui::EndChild();
  ImGui::BeginChild("timeline", ImVec2(0, height - caption_height - memory_height - ImGui::GetStyle().ItemSpacing.y * 2), true);
  timeline_panel_.draw(*session_.store(), groups_, view_, playback_, compared_store());
  ImGui::EndChild();
  std::string caption, out_of_memory;
  std::optional<std::string> rank_phase;  // the described rank's own phase (pipeline stages differ)
  session_.store()->read([&](const TraceData& data) {
    if (data.ranks.empty()) return;
    const int described = most_telling_rank(data, playback_.now_ns());
    caption = describe_rank_at(data, described, playback_.now_ns());
    if (const RankTimeline* rank = data.rank(described)) rank_phase = phase_under_way_at(*rank, playback_.now_ns());
    // Past a rank's failed allocation, that is the news: which rank, op, request and what was allocated.
    for (const auto& rank : data.ranks)
      if (const TraceRunError* oom = first_out_of_memory(data, rank.rank); oom && oom->t_ns <= playback_.now_ns()) {
        out_of_memory = "rank " + std::to_string(rank.rank) + ": " + oom->message;
        break;
      }
  });
  if (!out_of_memory.empty()) caption = out_of_memory;
  const std::string phase = rank_phase ? *rank_phase : phase_under_way(playback_.upcoming_phase(), playback_.current_phase());
  const ImVec4 colour = out_of_memory.empty() ? ImGui::GetStyleColorVec4(ImGuiCol_Text) : ImVec4(0.8f, 0.0f, 0.0f, 1);
  ImGui::PushTextWrapPos(0.0f);
  ImGui::TextColored(colour, "%s  ·  %s%s", format_duration(playback_.now_ns()).c_str(), phase.empty() ? "" : (phase + " · ").c_str(),
                     caption.c_str());
  ImGui::PopTextWrapPos();
  ImGui::EndChild();
}

void ShardScopeUi::draw_transport_bar() {
  if (ImGui::Button("|<")) playback_.seek(0);
  ImGui::SameLine();
  if (ImGui::Button("<<")) playback_.previous_phase();
  ImGui::SameLine();
  if (ImGui::Button("<")) playback_.step_back();
  ImGui::SameLine();
  if (ImGui::Button(playback_.playing() ? "Pause" : "Play")) playback_.toggle_play();
  ImGui::SameLine();
  if (ImGui::Button(">")) playback_.step_forward();
  ImGui::SameLine();
  if (ImGui::Button(">>")) playback_.next_phase();
  ImGui::SameLine();
  if (ImGui::Button(">|")) playback_.seek(playback_.end_ns());
  ImGui::SameLine();
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 7);
  float seconds = static_cast<float>(playback_.run_seconds());
  if (ImGui::SliderFloat("##speed", &seconds, 0.5f, 120.0f, "run in %.1f s", ImGuiSliderFlags_Logarithmic))
    playback_.set_run_seconds(seconds);
  ImGui::SameLine();
  ImGui::SetNextItemWidth(-1);
  float fraction = playback_.end_ns() > 0 ? static_cast<float>(static_cast<double>(playback_.now_ns()) / static_cast<double>(playback_.end_ns())) : 0;
  if (ImGui::SliderFloat("##scrub", &fraction, 0.0f, 1.0f, format_duration(playback_.now_ns()).c_str())) {
    playback_.pause();
    playback_.seek(static_cast<TimeNs>(fraction * static_cast<double>(playback_.end_ns())));
  }
}

std::vector<ShardScopeUi::LegendItem> ShardScopeUi::legend_items() {
  std::vector<LegendItem> items;
  for (Category c : kStackingOrder) items.push_back({std::string(category_label(c)), category_rgb(c), true});
  for (TimelineKind k : kAllTimelineKinds)
    if (k != TimelineKind::Other) items.push_back({timeline_label(k), timeline_rgb(k), false});
  return items;
}

// The memory categories, then the timeline's op colours and its hatching, each group on its own line(s).
void ShardScopeUi::draw_legend() {
  const float right_edge = ImGui::GetWindowContentRegionMax().x;
  const float square = ImGui::GetFontSize();
  bool first = true, memory = true;
  auto place = [&](float item) {
    // Wrap instead of running off the window (large font scales on small screens).
    if (!first && ImGui::GetCursorPosX() + item > right_edge) ImGui::NewLine();
    first = false;
  };
  ImGui::TextDisabled("memory");
  ImGui::SameLine();
  for (const LegendItem& item : legend_items()) {
    if (memory && !item.memory) {
      const std::string rules = session_.store()->header().accounting_rules;
      const std::string rules_text = rules + (status_.empty() ? "" : " · ") + status_;
      place(ImGui::CalcTextSize(rules_text.c_str()).x);
      ImGui::TextDisabled("%s", rules_text.c_str());
      memory = false;
      first = true;
      if (compact_legend_) {
        ImGui::TextDisabled("timeline colours: hover here");
        if (ImGui::IsItemHovered()) {
          ImGui::BeginTooltip();
          for (const LegendItem& entry : legend_items())
            if (!entry.memory) {
              ImGui::ColorButton(entry.label.c_str(), ImGui::ColorConvertU32ToFloat4(to_imgui_color(entry.rgb)),
                                 ImGuiColorEditFlags_NoTooltip, ImVec2(square, square));
              ImGui::SameLine();
              ImGui::TextUnformatted(entry.label.c_str());
            }
          ImGui::TextUnformatted("hatched: idle (pipelines: bubble)");
          ImGui::EndTooltip();
        }
        return;
      }
      ImGui::TextDisabled("timeline");
      ImGui::SameLine();
    }
    place(square * 2 + ImGui::CalcTextSize(item.label.c_str()).x);
    ImGui::ColorButton(item.label.c_str(), ImGui::ColorConvertU32ToFloat4(to_imgui_color(item.rgb)), ImGuiColorEditFlags_NoTooltip,
                       ImVec2(square, square));
    ImGui::SameLine();
    ImGui::TextUnformatted(item.label.c_str());
    ImGui::SameLine(0, square);
  }
  // Idle compute is hatched in the timeline: the same hatching as a swatch.
  const char* idle = "idle (pipelines: bubble)";
  place(square * 2 + ImGui::CalcTextSize(idle).x);
  const ImVec2 p = ImGui::GetCursorScreenPos();
  ImDrawList* draw = ImGui::GetWindowDrawList();
  draw->PushClipRect(p, ImVec2(p.x + square, p.y + square), true);
  draw->AddRectFilled(p, ImVec2(p.x + square, p.y + square), to_imgui_color(kLaneBackgroundRgb));
  for (float x = p.x - square; x < p.x + square; x += square * 0.6f)
    draw->AddLine(ImVec2(x, p.y + square), ImVec2(x + square, p.y), to_imgui_color(kIdleHatchRgb));
  draw->PopClipRect();
  ImGui::Dummy(ImVec2(square, square));
  ImGui::SameLine();
  ImGui::TextUnformatted(idle);
}

}  // namespace shardscope::gui
