// The whole window drawn without a display, for every example scenario (every strategy): runs to the end of the
// simulation, draws frames, and drives the playhead with the keys a user presses. Also: opening trace files
// (good, truncated, not a trace) and a bad scenario edit, which must leave the previous picture on screen.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "gui/window/shardscope_ui.h"
#include "headless_imgui.h"
#include "sim/simulator.h"
#include "strategy/lower.h"
#include "trace/file/trace_file_reader.h"
#include "trace/file/trace_file_writer.h"

namespace shardscope::gui {
namespace {

const std::string kScenarios = std::string(SHARDSCOPE_ASSETS_DIR) + "/scenarios";
constexpr int kSpace = 32, kRight = 262, kLeft = 263, kPageDown = 267, kHome = 268, kEnd = 269;

// Frames until the background run is collected (at most about a minute).
void run_until_idle(testing::HeadlessImGui& imgui, ShardScopeUi& ui) {
  for (int i = 0; i < 6000; ++i) {
    imgui.frame([&] { ui.frame(); });
    if (ui.idle()) {
      imgui.frame([&] { ui.frame(); });  // picks up the finished store
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  FAIL() << "the simulation did not finish";
}

// Characters the window prints (the "…" of "simulating… 120 events", "ranks 0, 1, …", Ψ in the ZeRO notes, ≥ in
// error messages, × in scenario names, ✓ / ✗ beside a lesson's claims) are in the loaded font, not drawn as "?".
TEST(GuiFrames, TheFontHasEveryCharacterTheWindowPrints) {
  testing::HeadlessImGui imgui;
  ImFont* font = ImGui::GetIO().Fonts->Fonts.empty() ? nullptr : ImGui::GetIO().Fonts->Fonts[0];
  ASSERT_NE(font, nullptr);
  if (font->ConfigData && std::string(font->ConfigData->Name).find("ProggyClean") != std::string::npos)
    GTEST_SKIP() << "DejaVu Sans is not installed (fonts-dejavu-core): the built-in bitmap font has Latin only";
  for (ImWchar c : {0x2026, 0x2013, 0x2014, 0x00D7, 0x00B5, 0x00B7, 0x03A8, 0x2265, 0x2264, 0x2192, 0x2212, 0x2713, 0x2717})
    EXPECT_NE(font->FindGlyphNoFallback(c), nullptr) << "U+" << std::hex << static_cast<int>(c);
}

TEST(GuiFrames, EveryExampleScenarioDrawsAndPlays) {
  int scenarios = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kScenarios)) {
    if (entry.path().extension() != ".json") continue;
    SCOPED_TRACE(entry.path().filename().string());
    testing::HeadlessImGui imgui;
    GuiOptions options;
    options.scenario_file = entry.path().string();
    ShardScopeUi ui(options);
    run_until_idle(imgui, ui);
    ASSERT_TRUE(ui.error().empty()) << ui.error();
    const int ranks = ui.session().store()->rank_count();
    const Scenario scenario = load_scenario_file(entry.path().string());
    EXPECT_EQ(ranks, static_cast<int>(lower_plan(resolve_scenario(scenario)).programs.size()));

    // Something is drawn: a chart and a lane per rank group are thousands of vertices, an empty window a few hundred.
    EXPECT_GT(imgui.frame([&] { ui.frame(); }), 3000);

    const TimeNs end = ui.playback().end_ns();
    ASSERT_GT(end, 0);
    imgui.frame([&] { ui.frame(); }, kHome);
    EXPECT_EQ(ui.playback().now_ns(), 0);
    imgui.frame([&] { ui.frame(); }, kRight);
    const TimeNs first_boundary = ui.playback().now_ns();
    EXPECT_GT(first_boundary, 0);
    EXPECT_LE(first_boundary, end);
    imgui.frame([&] { ui.frame(); }, kLeft);
    EXPECT_EQ(ui.playback().now_ns(), 0);
    imgui.frame([&] { ui.frame(); }, kPageDown);
    ASSERT_NE(ui.playback().current_phase(), nullptr);
    EXPECT_EQ(ui.playback().now_ns(), ui.playback().current_phase()->t_ns);
    imgui.frame([&] { ui.frame(); }, kEnd);
    EXPECT_EQ(ui.playback().now_ns(), end);
    imgui.frame([&] { ui.frame(); }, kSpace);  // play again from the start
    EXPECT_TRUE(ui.playback().playing());
    for (int i = 0; i < 10; ++i) imgui.frame([&] { ui.frame(); });
    EXPECT_GT(ui.playback().now_ns(), 0);
    ++scenarios;
  }
  EXPECT_GE(scenarios, 11);  // one per strategy at least
}

std::string write_trace(const std::string& name) {
  const auto path = (std::filesystem::temp_directory_path() / name).string();
  const ResolvedScenario scenario = resolve_scenario(load_scenario_file(kScenarios + "/zero1.json"));
  const Plan plan = lower_plan(scenario);
  TraceFileWriter writer(path);
  simulate(scenario, plan, writer);
  return path;
}

// --compare lays 1F1B over GPipe: an outline per chart and a compute lane per timeline row add to what is drawn, and
// the compared run is the other scenario, simulated, with as many ranks.
TEST(GuiFrames, ComparesASecondRunOverTheFirst) {
  auto vertices = [](const std::string& compare) {
    testing::HeadlessImGui imgui;
    GuiOptions options;
    options.scenario_file = kScenarios + "/pp-gpipe.json";
    options.compare_file = compare;
    ShardScopeUi ui(options);
    run_until_idle(imgui, ui);
    EXPECT_TRUE(ui.error().empty()) << ui.error();
    return imgui.frame([&] { ui.frame(); });
  };
  const int alone = vertices("");
  const int compared = vertices(kScenarios + "/pp-1f1b.json");
  EXPECT_GT(compared, alone + 1000) << "alone " << alone << ", compared " << compared;
}

TEST(GuiFrames, OpensATraceFile) {
  const std::string path = write_trace("shardscope-gui-test.sstrace");
  testing::HeadlessImGui imgui;
  GuiOptions options;
  options.trace_file = path;
  ShardScopeUi ui(options);
  imgui.frame([&] { ui.frame(); });
  EXPECT_TRUE(ui.error().empty()) << ui.error();
  EXPECT_EQ(ui.session().store()->rank_count(), 4);  // zero1.json: 4 × A100
  EXPECT_GT(imgui.frame([&] { ui.frame(); }), 3000);
}

// File → Save trace: each run is recorded as it is drawn; the recording holds the same events as the window's store,
// and a newer run's recording replaces (and removes) the older one.
TEST(GuiFrames, EveryRunIsRecordedForSaveTrace) {
  Session session;
  auto finish = [&] {
    for (int i = 0; i < 2000 && (session.busy() || session.store()->generation() == 0); ++i) {
      session.poll();
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    session.poll();
  };
  Scenario s;
  s.model.spec = "mlp:4x64";
  session.simulate(s);
  finish();
  const std::string first = session.trace_file();
  ASSERT_FALSE(first.empty());
  ASSERT_TRUE(std::filesystem::exists(first));
  const TraceReadResult recorded = read_trace_file(first);
  EXPECT_FALSE(recorded.truncated) << recorded.problem;
  EXPECT_EQ(recorded.events.size(), session.store()->read([](const TraceData& d) { return d.event_count; }));
  s.training.batch = 8;
  session.simulate(s);
  finish();
  EXPECT_NE(session.trace_file(), first);
  EXPECT_FALSE(std::filesystem::exists(first));
}

TEST(GuiFrames, ShowsATruncatedTraceAndSaysSo) {
  const std::string path = write_trace("shardscope-gui-test-cut.sstrace");
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 100);  // into the last events
  testing::HeadlessImGui imgui;
  GuiOptions options;
  options.trace_file = path;
  ShardScopeUi ui(options);
  imgui.frame([&] { ui.frame(); });
  EXPECT_TRUE(ui.error().empty()) << ui.error();
  EXPECT_NE(ui.session().warning().find("ends early"), std::string::npos) << ui.session().warning();
  EXPECT_EQ(ui.session().store()->rank_count(), 4);
}

// --follow FILE (issue 19): a file not there yet is waited for; as the writer appends, the store grows and the
// playhead stays on the newest time; once the user moves it away it stays put; the End record finishes the follow.
TEST(GuiFrames, FollowsATraceFileAsItIsWritten) {
  const TraceReadResult whole = read_trace_file(write_trace("shardscope-gui-follow-source.sstrace"));
  ASSERT_GT(whole.events.size(), 40u);
  const std::size_t n = whole.events.size();
  const auto path = (std::filesystem::temp_directory_path() / "shardscope-gui-followed.sstrace").string();
  std::filesystem::remove(path);
  testing::HeadlessImGui imgui;
  GuiOptions options;
  options.follow_file = path;
  ShardScopeUi ui(options);
  imgui.frame([&] { ui.frame(); });
  EXPECT_TRUE(ui.session().following());
  EXPECT_EQ(ui.session().follow_status(), "waiting for " + path + "…");

  TraceFileWriterOptions unbuffered;
  unbuffered.buffer_bytes = 0;  // every record reaches the file at once, as a slow run's would
  TraceFileWriter writer(path, unbuffered);
  writer.begin(whole.header);
  auto write_up_to = [&](std::size_t count, std::size_t& written) {
    for (; written < count; ++written) writer.emit(whole.events[written]);
  };
  // The window redraws the playhead's timeline a few times a second (ImGui time) while a run grows: 30 frames.
  auto frames = [&](int key = -1) {
    imgui.frame([&] { ui.frame(); }, key);
    for (int i = 0; i < 30; ++i) imgui.frame([&] { ui.frame(); });
  };
  auto events_shown = [&] { return ui.session().store()->read([](const TraceData& d) { return d.event_count; }); };
  TimeNs latest = 0;
  auto latest_time = [&](std::size_t count) {
    for (std::size_t i = 0; i < count; ++i) latest = std::max(latest, whole.events[i].t_ns);
    return latest;
  };
  std::size_t written = 0;
  write_up_to(n / 4, written);
  frames();
  EXPECT_EQ(events_shown(), n / 4);
  EXPECT_EQ(ui.playback().now_ns(), latest_time(n / 4));  // on the newest time
  write_up_to(n / 2, written);
  frames();
  EXPECT_EQ(events_shown(), n / 2);
  EXPECT_EQ(ui.playback().now_ns(), latest_time(n / 2));  // kept up
  EXPECT_TRUE(ui.session().following());
  EXPECT_EQ(ui.session().follow_status(), "following " + path + ": " + std::to_string(n / 2) + " events");

  frames(kHome);  // the user scrubs back to the start
  EXPECT_EQ(ui.playback().now_ns(), 0);
  write_up_to(n, written);
  writer.end();
  frames();
  EXPECT_EQ(events_shown(), n);
  EXPECT_EQ(ui.playback().now_ns(), 0);  // left where the user put it
  EXPECT_FALSE(ui.session().following());
  EXPECT_EQ(ui.session().follow_status(), "the run finished: " + std::to_string(n) + " events");
  EXPECT_TRUE(ui.error().empty()) << ui.error();
  std::filesystem::remove(path);
}

TEST(GuiFrames, NamesAFileThatIsNotATrace) {
  const auto path = (std::filesystem::temp_directory_path() / "shardscope-not-a-trace.sstrace").string();
  std::ofstream(path) << "hello";
  testing::HeadlessImGui imgui;
  GuiOptions options;
  options.trace_file = path;
  ShardScopeUi ui(options);
  imgui.frame([&] { ui.frame(); });
  EXPECT_NE(ui.error().find(path), std::string::npos) << ui.error();
}

TEST(GuiFrames, ExecuteModeRunsOnCpuThreadsWithPredictedBesideMeasured) {
  Scenario s = builtin_default_scenario();
  s.model.spec = "mlp:3x64:relu";
  s.training.batch = 16;
  s.training.steps = 2;
  Session session;
  session.run(s, RunMode::ExecuteCpu);
  while (session.busy()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    session.poll();
  }
  ASSERT_TRUE(session.error().empty()) << session.error();
  ASSERT_EQ(session.store()->rank_count(), 2);
  ASSERT_EQ(session.predicted_peaks().size(), 2u);
  for (int r = 0; r < 2; ++r) EXPECT_EQ(session.store()->peak(r).allocated, session.predicted_peaks()[static_cast<std::size_t>(r)]);
  EXPECT_EQ(session.store()->header().source.rfind("executor", 0), 0u) << session.store()->header().source;

  // A plan the CPU backend cannot run is refused with its reason; the picture stays.
  const auto shown = session.store();
  s.model.spec = "vgg16";  // Conv2d has no CPU kernel
  session.run(s, RunMode::ExecuteCpu);
  while (session.busy()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    session.poll();
  }
  EXPECT_NE(session.error().find("Conv2d"), std::string::npos) << session.error();
  EXPECT_EQ(session.store(), shown);
}

TEST(GuiFrames, ABadEditKeepsThePreviousPicture) {
  Session session;
  session.simulate(builtin_default_scenario());
  while (session.busy()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    session.poll();
  }
  const auto shown = session.store();
  ASSERT_GT(shown->rank_count(), 0);
  Scenario bad = builtin_default_scenario();
  bad.training.batch = 0;
  session.simulate(bad);
  while (session.busy()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    session.poll();
  }
  EXPECT_NE(session.error().find("training.batch"), std::string::npos) << session.error();
  EXPECT_EQ(session.store(), shown);
}


// Presenter mode on a lesson: the step's scenario runs, the playhead goes to the step's anchor, PageDown / PageUp
// step, P reveals, B blanks, Esc leaves with the font scale restored.
constexpr int kEscape = 256, kEnter = 257, kDown = 264, kPageUp = 266, kKeyB = 66, kKeyP = 80;

void run_until_lesson_ready(testing::HeadlessImGui& imgui, ShardScopeUi& ui) {
  for (int i = 0; i < 6000 && (!ui.idle() || ui.deck().evaluating()); ++i) {
    imgui.frame([&] { ui.frame(); });
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  for (int i = 0; i < 3; ++i) imgui.frame([&] { ui.frame(); });  // the run collected, the anchor placed
}

TimeNs phase_time(const ShardScopeUi& ui, const std::string& name, int step) {
  TimeNs t = -1;
  ui.session().store()->read([&](const TraceData& data) {
    for (const auto& phase : data.ranks.at(0).phases)
      if (phase.name == name && phase.step == step && t < 0) t = phase.t_ns;
  });
  return t;
}

TEST(GuiFrames, PresenterModeStepsThroughALesson) {
  testing::HeadlessImGui imgui;
  GuiOptions options;
  options.presenter = true;
  options.lesson = "ddp-doubles-memory";
  ShardScopeUi ui(options);
  run_until_lesson_ready(imgui, ui);
  ASSERT_TRUE(ui.presenting());
  ASSERT_NE(ui.deck().evaluated(), nullptr);
  EXPECT_TRUE(ui.deck().evaluated()->ok());
  EXPECT_FLOAT_EQ(ui.font_scale(), 2.0f);  // large type unless --font-scale says otherwise
  EXPECT_EQ(ui.session().scenario().model.spec, "mlp:4x4096");  // the lesson's scenario, not the window's default
  EXPECT_EQ(ui.playback().now_ns(), phase_time(ui, "model_created", 0));

  imgui.frame([&] { ui.frame(); }, kPageDown);
  run_until_lesson_ready(imgui, ui);
  EXPECT_EQ(ui.deck().step_index(), 1);
  EXPECT_EQ(ui.playback().now_ns(), phase_time(ui, "wrapped", 0));
  imgui.frame([&] { ui.frame(); }, kPageDown);
  run_until_lesson_ready(imgui, ui);
  EXPECT_EQ(ui.playback().now_ns(), phase_time(ui, "before_step", 1));
  imgui.frame([&] { ui.frame(); }, kPageUp);
  EXPECT_EQ(ui.deck().step_index(), 1);

  imgui.frame([&] { ui.frame(); }, kPageUp);
  imgui.frame([&] { ui.frame(); }, kKeyP);  // step 1 asks for a prediction
  EXPECT_TRUE(ui.deck().revealed);
  imgui.frame([&] { ui.frame(); }, kPageDown);
  EXPECT_FALSE(ui.deck().revealed);  // a new step starts hidden
  imgui.frame([&] { ui.frame(); }, kKeyB);
  EXPECT_TRUE(ui.deck().blank);
  imgui.frame([&] { ui.frame(); });  // the key let go: the next B is a new press
  imgui.frame([&] { ui.frame(); }, kKeyB);
  EXPECT_FALSE(ui.deck().blank);

  imgui.frame([&] { ui.frame(); }, kEscape);
  EXPECT_FALSE(ui.presenting());
  EXPECT_FLOAT_EQ(ui.font_scale(), 1.0f);
  imgui.frame([&] { ui.frame(); });  // the ordinary window draws again
}

TEST(GuiFrames, PresenterModeWithoutALessonOpensThePicker) {
  testing::HeadlessImGui imgui;
  GuiOptions options;
  options.presenter = true;
  ShardScopeUi ui(options);
  imgui.frame([&] { ui.frame(); });
  ASSERT_TRUE(ui.presenting());
  EXPECT_EQ(ui.deck().lesson(), nullptr);
  ASSERT_GE(ui.deck().lessons().size(), 2u);
  imgui.frame([&] { ui.frame(); }, kDown);
  imgui.frame([&] { ui.frame(); }, kEnter);
  ASSERT_NE(ui.deck().lesson(), nullptr);
  EXPECT_EQ(ui.deck().lesson()->id, ui.deck().lessons()[1].id);
  run_until_lesson_ready(imgui, ui);
  EXPECT_NE(ui.deck().evaluated(), nullptr);
}

}  // namespace
}  // namespace shardscope::gui
