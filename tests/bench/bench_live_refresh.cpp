// What a live run's growth costs the window: a trace of about 9 M events is followed as its file grows (the path of
// `shardscope --follow FILE` beside `shardscope-cli run --out FILE`); each benchmark iteration appends N more events
// to the file and draws one frame, which reads them, stores them and refreshes what depends on them (the playhead's
// boundaries and rank groups, a few times a second). worst_frame_ms is the longest such frame: a stall the user sees
// when it passes 16 ms. events_behind: what the window has yet to take in when a run writes faster than it reads. Run: build/tests/bench/bench_live_refresh
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <vector>

#include "../gui/headless_imgui.h"
#include "growing_trace.h"
#include "gui/window/shardscope_ui.h"
#include "trace/file/trace_file_writer.h"

namespace shardscope::gui {
namespace {

struct Fixture {
  static constexpr std::uint64_t kEvents = 9'000'000;
  testing::HeadlessImGui imgui;
  std::string path = (std::filesystem::temp_directory_path() / "shardscope-bench-live-refresh.sstrace").string();
  std::unique_ptr<TraceFileWriter> writer;
  std::unique_ptr<bench::GrowingTrace> trace;
  std::unique_ptr<ShardScopeUi> ui;

  Fixture() {
    const Scenario scenario = bench::dense_ddp_scenario();
    writer = std::make_unique<TraceFileWriter>(path);
    trace = std::make_unique<bench::GrowingTrace>(*writer, scenario.training.steps);
    trace->simulate_and_grow(scenario, kEvents);
    writer->flush();
    GuiOptions options;
    options.follow_file = path;  // `shardscope --follow FILE`
    ui = std::make_unique<ShardScopeUi>(options);
    // Frames until the window holds what was written.
    for (int frame = 0; stored() < trace->emitted(); ++frame) {
      if (frame > 100000) throw std::runtime_error("the followed trace did not load");
      imgui.frame([&] { ui->frame(); });
    }
  }
  ~Fixture() {
    ui.reset();
    writer.reset();
    std::filesystem::remove(path);
  }

  std::uint64_t stored() const {
    return ui->session().store()->read([](const TraceData& d) { return d.event_count; });
  }

  void append(std::size_t count) {
    trace->append(count);
    writer->flush();
  }
};

Fixture& fixture() {
  static Fixture f;
  return f;
}

void BM_LiveRefresh(benchmark::State& state) {
  auto& f = fixture();
  const auto count = static_cast<std::size_t>(state.range(0));
  double worst_ms = 0;
  for (auto _ : state) {
    state.PauseTiming();
    f.append(count);
    state.ResumeTiming();
    const auto start = std::chrono::steady_clock::now();
    f.imgui.frame([&] { f.ui->frame(); });
    worst_ms = std::max(worst_ms, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  state.counters["worst_frame_ms"] = worst_ms;
  state.counters["trace_events"] = static_cast<double>(f.stored());
  // A run faster than the window is taken a frame's budget at a time (Session::poll): how far the store is behind.
  state.counters["events_behind"] = static_cast<double>(f.trace->emitted() - f.stored());
}

// 60 frames: a second of a live run at 60 Hz, which holds four refreshes of the playhead's boundaries.
BENCHMARK(BM_LiveRefresh)->Arg(1000)->Arg(10000)->Arg(100000)->Iterations(60)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace shardscope::gui
