// Command-line options of the `shardscope` window (parsed in main.cpp with CLI11).
#pragma once
#include <optional>
#include <string>

namespace shardscope::gui {

struct GuiOptions {
  std::string scenario_file;   // --scenario: a scenario JSON (default: the built-in DDP scenario)
  std::string trace_file;      // --trace: open a recorded or simulated trace instead of simulating
  std::string follow_file;     // --follow: a trace file still being written (shardscope-cli run --out FILE), followed live
  std::string connect;         // --connect HOST:PORT: a run served live (shardscope-cli run --serve)
  std::string token;           // --token / SHARDSCOPE_TOKEN: the served run's token, for --connect
  // --screenshot with --follow / --connect waits for the run to finish (its End record) at most this long, then saves
  // what it shows and exits 2 (--screenshot-timeout SECONDS).
  double screenshot_timeout_s = 120;
  std::string compare_file;    // --compare: a second run (scenario or trace) laid over the first, with a table
  bool align_by_time = false;  // --align time: the compared run as it ran (durations kept), not matched by phase
  std::string screenshot;      // --screenshot: render once, save this PNG, exit
  std::string at;              // --at: playhead for --screenshot: a phase name ("forward", "step 2 before_step") or a time ("12.5ms")
  float font_scale = 1.0f;     // --font-scale
  bool font_scale_set = false; // --font-scale given (presenter mode otherwise uses 2)
  bool presenter = false;      // --presenter: open in presenter mode (a lesson picker unless --lesson)
  std::string lesson;          // --lesson ID: the lesson presenter mode opens
  int lesson_step = 1;         // --lesson-step N: open the lesson at step N (1-based; for screenshots and rehearsals)
  bool reveal = false;         // --reveal: show the step's prediction answered (screenshots)
  std::string lessons_dir;     // --lessons-dir: where lesson files are (default assets/lessons)
  bool short_path = false;     // --path short: PageDown / PageUp walk the lesson's short path (a 50-minute class)
  std::string export_dir;      // --export DIR: write each step of --lesson as a PNG and an HTML page, then exit
  bool execute = false;        // --execute: start in "Execute on CPU" mode instead of simulating
  bool execute_gpu = false;    // --execute-gpu: start in "Execute on GPU" mode
  int width = 1600;
  int height = 900;
};

}  // namespace shardscope::gui
