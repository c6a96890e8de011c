// Does drawing the window slow a live run down? The same CPU execution, timed op by op, run headless (the path of
// `shardscope-cli run`) and run from the window with frames drawn at 60 Hz while it executes; prints the compute
// ops' median and mean durations of each. Run: build/tests/bench/bench_live_drawing [repeats]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "../gui/headless_imgui.h"
#include "gui/window/shardscope_ui.h"
#include "pipeline/run_pipeline.h"
#include "trace/store/trace_store.h"

namespace shardscope::gui {
namespace {

// Ops of about 0.05-0.5 ms on this machine's OpenBLAS, thousands of them, so the window draws a growing timeline for
// a few dozen frames.
Scenario live_scenario() {
  Scenario s;
  s.name = "bench: live drawing";
  s.model.spec = "mlp:32x256:relu";
  s.strategy.kind = StrategyKind::Ddp;
  s.cluster.world = 2;
  s.training.batch = 64;
  s.training.steps = 30;
  return s;
}

struct OpTimes {
  std::size_t ops = 0;
  double median_us = 0, mean_us = 0;
  double run_ms = 0;  // first to last event: includes any time ranks waited to hand their events on
};

OpTimes compute_op_times(const TraceStore& store) {
  std::vector<double> us;
  double run_ms = 0;
  store.read([&](const TraceData& d) {
    run_ms = static_cast<double>(d.t_max - d.t_min) / 1e6;
    for (const auto& rank : d.ranks)
      for (const auto& span : rank.stream(Stream::Compute).spans)
        if (!span.open()) us.push_back(static_cast<double>(span.end_ns - span.begin_ns) / 1e3);
  });
  OpTimes t;
  t.ops = us.size();
  t.run_ms = run_ms;
  if (us.empty()) return t;
  std::sort(us.begin(), us.end());
  t.median_us = us[us.size() / 2];
  t.mean_us = std::accumulate(us.begin(), us.end(), 0.0) / static_cast<double>(us.size());
  return t;
}

OpTimes headless() {
  TraceStore store;
  exec::ExecutionOptions options;
  options.backend = exec::BackendKind::Cpu;
  pipeline::execute_scenario(live_scenario(), store, options);
  return compute_op_times(store);
}

// The window's own path: Execute on CPU from a scenario file, frames drawn at 60 Hz until the run ends.
OpTimes with_window(const std::string& scenario_file, int& frames) {
  testing::HeadlessImGui imgui;
  GuiOptions options;
  options.scenario_file = scenario_file;
  options.execute = true;
  ShardScopeUi ui(options);
  frames = 0;
  auto next = std::chrono::steady_clock::now();
  do {
    imgui.frame([&] { ui.frame(); });
    ++frames;
    next += std::chrono::microseconds(16667);
    std::this_thread::sleep_until(next);
  } while (!ui.idle());
  imgui.frame([&] { ui.frame(); });  // the last events
  return compute_op_times(*ui.session().store());
}

void print(const char* what, const OpTimes& t) {
  std::printf("  %-34s %6zu ops  median %7.1f µs  mean %7.1f µs  run %7.1f ms\n", what, t.ops, t.median_us, t.mean_us,
              t.run_ms);
}

}  // namespace
}  // namespace shardscope::gui

int main(int argc, char** argv) {
  using namespace shardscope::gui;
  const int repeats = argc > 1 ? std::max(1, std::atoi(argv[1])) : 3;
  const auto file = (std::filesystem::temp_directory_path() / "shardscope-bench-live.json").string();
  std::ofstream(file) << shardscope::scenario_to_json(live_scenario());
  std::printf("%s: compute-op durations of a CPU execution, %d repeats (alternating)\n", live_scenario().name.c_str(), repeats);
  for (int i = 0; i < repeats; ++i) {
    print("headless (shardscope-cli run)", headless());
    int frames = 0;
    const OpTimes live = with_window(file, frames);
    print(("window drawing (" + std::to_string(frames) + " frames at 60 Hz)").c_str(), live);
  }
  std::filesystem::remove(file);
  return 0;
}
