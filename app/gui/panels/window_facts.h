// What the window knows beyond the trace on screen, for the panels that show it, and what panels ask of it. The window
// fills WindowFacts from its sessions before each frame and carries out WindowRequests after it, so panels read plain
// data and never reach the sessions, the pipeline or the executors.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gui/logic/run_alignment.h"
#include "gui/logic/run_mode.h"
#include "memory/accounting.h"
#include "run/gpu_inventory.h"
#include "run/simulation_result.h"
#include "scenario/scenario.h"

namespace shardscope::gui {

class ScenarioForm;

struct WindowFacts {
  // Where the picture comes from: the scenario form's run, a trace file (--trace), or a followed trace.
  enum class Source { Scenario, TraceFile, Followed };
  Source source = Source::Scenario;
  std::string trace_file;      // Source::TraceFile: the file opened
  std::string followed;        // Source::Followed: its path or HOST:PORT
  bool following = false;      // a followed trace not finished yet
  std::string follow_status;   // "waiting for FILE…", "following FILE: 1234 events", …
  std::string finished_text;   // "the run finished: N events" once a whole trace is on screen
  bool busy = false;           // a run in flight
  std::uint64_t progress_events = 0;
  std::string error, warning;  // the run's or the trace's (an out-of-memory report, a cut-short file)
  std::string startup_error;   // --scenario or File → Open that could not be loaded
  const std::optional<SimulationResult>* result = nullptr;
  const std::vector<Bytes>* predicted_peaks = nullptr;            // executed runs: per rank, the accounting's peak
  const std::vector<std::vector<LiveTensor>>* peak_tensors = nullptr;  // per rank, the largest tensors at its peak
  std::string compare_name;    // "" when nothing is compared
  std::string status;          // the last message for the user (saved a file, cannot compare, …)
};

struct WindowRequests {
  bool rerun = false;                // the scenario or the run mode changed: run it again
  bool clear_startup_error = false;  // the form was used: the old load error is no longer news
};

// Choices of the View menu that panels follow.
struct ViewOptions {
  bool one_memory_scale = true;  // every memory chart on one scale (devices compare at a glance), or each its own
  bool memory_scale_to_capacity = false;  // charts reach up to the device's capacity however little the run uses
  // How a compared run is laid over this one: by phase (step 2's forward over step 2's forward: memory lessons) or by
  // time (durations as they ran: lessons about speed). --align, a lesson step's "align".
  Align align = Align::Phase;
};

// What a panel may be given when made: the facts (read each frame), the requests it may make, the view options, and
// the scenario form with the scenario and run mode it edits (the run source panel's).
struct PanelContext {
  const WindowFacts& facts;
  WindowRequests& requests;
  ViewOptions& view;
  ScenarioForm& form;
  Scenario& edited;
  RunMode& mode;
  const exec::GpuInventory& gpus;
};

}  // namespace shardscope::gui
