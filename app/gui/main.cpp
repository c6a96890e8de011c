// shardscope: the desktop window. Only sets up GLFW, OpenGL and Dear ImGui and runs the frame loop;
// everything drawn lives in ShardScopeUi and its panels.
// Usage:
//   shardscope                                  # the built-in scenario: 2 × H100, DDP, 20 × Linear(2000), Adam
//   shardscope --scenario assets/scenarios/zero1.json --font-scale 1.5
//   shardscope --trace run.sstrace --screenshot out.png --at forward
//   shardscope --presenter --lesson ddp-doubles-memory     # a guided lesson, large type, PageDown / PageUp
//   shardscope --follow run.sstrace                        # a run being recorded (shardscope-cli run --out run.sstrace)
//   shardscope --connect 127.0.0.1:7000 --token TOKEN      # a run being served (shardscope-cli run --serve 7000)
// --screenshot with --follow or --connect waits until the run has finished (its End record), so the picture is the
// finished run's, at the same playhead as --trace FILE --screenshot gives; --screenshot-timeout bounds the wait.
// Exit codes: 0 ok, 2 bad arguments or input (also: --connect refused, wrong token; --screenshot of a followed run
// that did not finish within --screenshot-timeout, a file cut short say: the picture is saved anyway), 4 no display.
#include <GLFW/glfw3.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>
#include <imgui.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/version.h"
#include "gui/fonts.h"
#include "gui/gui_options.h"
#include "gui/presenter/handout.h"
#include "gui/screenshot.h"
#include "gui/window/shardscope_ui.h"

namespace {

void report_glfw_error(int code, const char* description) { std::fprintf(stderr, "GLFW error %d: %s\n", code, description); }

// One frame of the window drawn into the back buffer (not shown): what the handout export saves.
void render_frame(GLFWwindow* window, shardscope::gui::ShardScopeUi& ui, int& width, int& height) {
  ImGui_ImplOpenGL3_NewFrame();
  ImGui_ImplGlfw_NewFrame();
  ImGui::NewFrame();
  ui.frame();
  ImGui::Render();
  glfwGetFramebufferSize(window, &width, &height);
  glViewport(0, 0, width, height);
  glClearColor(0.94f, 0.94f, 0.94f, 1.0f);
  glClear(GL_COLOR_BUFFER_BIT);
  ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
}

// --export DIR: every step on the lesson's path, answers revealed, as DIR/step-N.png, and DIR/index.html around them.
int export_handout(GLFWwindow* window, shardscope::gui::ShardScopeUi& ui, const std::string& dir) {
  using namespace shardscope::gui;
  if (!ui.deck().lesson()) {
    std::cerr << "shardscope: --export: no lesson is open (" << (ui.deck().error().empty() ? "unknown --lesson" : ui.deck().error()) << ")\n";
    return 2;
  }
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) {
    std::cerr << "shardscope: --export: cannot create " << dir << ": " << error.message() << "\n";
    return 2;
  }
  std::vector<HandoutStep> pages;
  int width = 0, height = 0;
  for (const int index : ui.deck().path()) {
    ui.show_lesson_step(index, true);
    for (int i = 0; i < 60000 && !ui.lesson_step_ready(); ++i) {
      render_frame(window, ui, width, height);
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    for (int i = 0; i < 3; ++i) render_frame(window, ui, width, height);  // layouts sized from the previous frame settle
    const std::string image = "step-" + std::to_string(pages.size() + 1) + ".png";
    try {
      save_back_buffer_png(dir + "/" + image, width, height);
    } catch (const std::exception& e) {
      std::cerr << "shardscope: --export: " << e.what() << "\n";
      return 2;
    }
    const auto& step = *ui.deck().step();
    pages.push_back({image, step.title, ui.deck().narration(), step.predict ? step.predict->question : "", ui.deck().answer()});
  }
  std::ofstream html(dir + "/index.html");
  html << handout_html(*ui.deck().lesson(), pages);
  if (!html) {
    std::cerr << "shardscope: --export: cannot write " << dir << "/index.html\n";
    return 2;
  }
  std::cout << "wrote " << dir << "/index.html and " << pages.size() << " pictures\n";
  return 0;
}

int parse_options(int argc, char** argv, shardscope::gui::GuiOptions& options) {
  CLI::App app{"ShardScope: watch where GPU memory and time go, step by step, device by device"};
  app.add_option("--scenario", options.scenario_file, "Scenario JSON to simulate (default: the built-in DDP scenario)");
  auto* trace = app.add_option("--trace", options.trace_file,
                               "Open a run: a trace (.sstrace; a recorded run's run.rank0.sstrace opens with its other ranks, "
                               "as does a directory of them), a torch.profiler trace (.json, .json.gz) or a CUDA memory "
                               "snapshot (.pickle)");
  auto* follow = app.add_option("--follow", options.follow_file,
                                "Follow a trace file while it is written (shardscope-cli run --out FILE): the view grows "
                                "with it; a file not there yet is waited for");
  auto* connect = app.add_option("--connect", options.connect,
                                 "Follow a run served live (shardscope-cli run --serve): HOST:PORT; reconnects by itself");
  app.add_option("--token", options.token, "The served run's token for --connect (printed by --serve)")
      ->envname("SHARDSCOPE_TOKEN");
  app.add_option("--screenshot-timeout", options.screenshot_timeout_s,
                 "--screenshot with --follow / --connect waits for the run to finish at most this many seconds (default 120)")
      ->check(CLI::Range(0.0, 86400.0));
  follow->excludes(connect);
  trace->excludes(follow);
  trace->excludes(connect);
  app.add_option("--compare", options.compare_file,
                 "A second run to compare with: a scenario (.json, simulated) or a trace (.sstrace), drawn as an outline "
                 "over the charts with a table of peaks per rank and category");
  std::string align = "phase";
  app.add_option("--align", align,
                 "How --compare lays the second run over the first: phase (its step 2 forward over this run's: memory) or "
                 "time (as it ran, durations kept: speed)")
      ->check(CLI::IsMember({"phase", "time"}));
  app.add_option("--screenshot", options.screenshot, "Render once, save this PNG and exit");
  app.add_option("--at", options.at, "Playhead for --screenshot: a phase (forward, before_step, after_step, ...) or a time (12.5ms)");
  app.add_flag("--execute", options.execute, "Run the scenario for real on CPU threads instead of simulating it");
  app.add_flag("--execute-gpu", options.execute_gpu, "Run the scenario for real on this machine's CUDA GPUs");
  auto* font_scale = app.add_option("--font-scale", options.font_scale, "Font scale for projectors (default 1.0; 2.0 in presenter mode)")
                         ->check(CLI::Range(0.5, 4.0));
  app.add_flag("--presenter", options.presenter,
               "Presenter mode: large type, no menus, a lesson's narration beside the charts, keyboard only (F5 in the window)");
  app.add_option("--lesson", options.lesson, "The lesson presenter mode opens (shardscope-cli lessons lists them); implies --presenter");
  // A bound a person can read in the error (CLI::PositiveNumber prints the largest double, 309 digits).
  app.add_option("--lesson-step", options.lesson_step, "Open the lesson at this step (1 = the first)")->check(CLI::Range(1, 1000));
  std::string path = "full";
  app.add_option("--path", path, "Which steps PageDown walks: full (every step) or short (the lesson's short path, for a 50-minute class)")
      ->check(CLI::IsMember({"full", "short"}));
  app.add_option("--export", options.export_dir,
                 "With --lesson: write each step (answers revealed) as DIR/step-N.png and DIR/index.html, a handout to read "
                 "without ShardScope, then exit");
  app.add_flag("--reveal", options.reveal, "Show the step's prediction answered (for screenshots)");
  app.add_option("--lessons-dir", options.lessons_dir, "Where the lesson files are (default: assets/lessons)");
  app.add_option("--width", options.width, "Window width in pixels")->check(CLI::Range(640, 7680));
  app.add_option("--height", options.height, "Window height in pixels")->check(CLI::Range(400, 4320));
  app.set_version_flag("--version", "shardscope " + std::string(shardscope::shardscope_version));
  try {
    app.parse(argc, argv);
    options.font_scale_set = font_scale->count() > 0;
    options.short_path = path == "short";
    options.align_by_time = align == "time";
    if (!options.lesson.empty()) options.presenter = true;
    if (!options.export_dir.empty() && options.lesson.empty()) throw CLI::ValidationError("--export", "needs --lesson ID (the lesson to export)");
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? -1 : 2;  // -1: help or version printed, exit 0
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace shardscope::gui;
  GuiOptions options;
  if (const int code = parse_options(argc, argv, options); code != 0) return code < 0 ? 0 : code;

  glfwSetErrorCallback(report_glfw_error);
  if (!glfwInit()) {
    std::cerr << "shardscope: cannot open a window (no display?). Set DISPLAY, run under `xvfb-run -a`, "
                 "or use the command line: shardscope-cli memory / shardscope-cli simulate.\n";
    return 4;
  }
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 0);
  if (!options.screenshot.empty() || !options.export_dir.empty()) glfwWindowHint(GLFW_VISIBLE, GLFW_FALSE);
  GLFWwindow* window = glfwCreateWindow(options.width, options.height, "ShardScope", nullptr, nullptr);
  if (!window) {
    std::cerr << "shardscope: cannot create an OpenGL 3 window; use shardscope-cli instead.\n";
    glfwTerminate();
    return 4;
  }
  glfwMakeContextCurrent(window);
  glfwSwapInterval(1);

  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGui::GetIO().IniFilename = nullptr;  // the layout follows the window size; nothing to remember
  ImGui::StyleColorsLight();
  ImGui_ImplGlfw_InitForOpenGL(window, true);
  ImGui_ImplOpenGL3_Init(nullptr);

  int exit_code = 0;
  {
    ShardScopeUi ui(options);
    float font_scale = ui.font_scale();
    load_ui_font(font_scale);
    if (!options.export_dir.empty()) {
      exit_code = export_handout(window, ui, options.export_dir);
      glfwSetWindowShouldClose(window, GLFW_TRUE);
    }
    // A screenshot waits a few frames so that layouts which size themselves from the previous frame settle.
    int frames_until_screenshot = options.screenshot.empty() ? -1 : 3;
    while (!glfwWindowShouldClose(window)) {
      if (frames_until_screenshot < 0) glfwPollEvents();
      if (ui.font_scale() != font_scale) {
        font_scale = ui.font_scale();
        ImGui_ImplOpenGL3_DestroyFontsTexture();
        load_ui_font(font_scale);
      }
      ImGui_ImplOpenGL3_NewFrame();
      ImGui_ImplGlfw_NewFrame();
      ImGui::NewFrame();
      ui.frame();
      ImGui::Render();
      int width = 0, height = 0;
      glfwGetFramebufferSize(window, &width, &height);
      glViewport(0, 0, width, height);
      glClearColor(0.94f, 0.94f, 0.94f, 1.0f);
      glClear(GL_COLOR_BUFFER_BIT);
      ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());

      std::string shot = ui.take_screenshot_request();
      if (frames_until_screenshot == 0) shot = options.screenshot;
      if (!shot.empty()) {
        try {
          save_back_buffer_png(shot, width, height);
          ui.notify("saved " + shot);
        } catch (const std::exception& error) {
          std::cerr << "shardscope: " << error.what() << "\n";
          ui.notify(error.what());
          exit_code = 2;
        }
      }
      if (frames_until_screenshot == 0) break;
      // Count down only once the run is loaded and the playhead placed (the simulation runs in the background).
      if (frames_until_screenshot > 0 && ui.ready_for_screenshot()) --frames_until_screenshot;
      glfwSwapBuffers(window);
    }
    if (!ui.error().empty()) {
      std::cerr << "shardscope: " << ui.error() << "\n";
      if (!options.screenshot.empty()) exit_code = 2;
    } else if (const std::string problem = ui.presenter_problem(); !problem.empty()) {
      std::cerr << "shardscope: " << problem << "\n";
      if (!options.screenshot.empty()) exit_code = 2;
    } else if (ui.screenshot_before_finish()) {
      std::cerr << "shardscope: the followed run did not finish within " << options.screenshot_timeout_s
                << " s (--screenshot-timeout); the screenshot shows it unfinished\n";
      exit_code = 2;
    }
  }

  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  glfwDestroyWindow(window);
  glfwTerminate();
  return exit_code;
}
