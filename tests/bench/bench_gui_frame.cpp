// CPU time to build one frame of the whole window (ImGui NewFrame … Render, no GPU) over a trace of about a million
// events opened from a file, zoomed out to the whole run and zoomed in to a thousandth of it; and the same over
// traces ten and more times larger, simulated straight into the store the window draws (writing and reading back
// such files is bench_trace_file's business). Run: build/tests/bench/bench_gui_frame
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "../gui/headless_imgui.h"
#include "growing_trace.h"
#include "gui/window/shardscope_ui.h"
#include "sim/simulator.h"
#include "strategy/lower.h"
#include "trace/file/trace_file_writer.h"

namespace shardscope::gui {
namespace {

// DDP over 8 ranks, 4,000 × Linear(64), two steps: about a million events, thousands of ops per pixel zoomed out.
struct Fixture {
  testing::HeadlessImGui imgui;
  std::unique_ptr<ShardScopeUi> ui;
  std::size_t events = 0;

  Fixture() {
    const auto path = (std::filesystem::temp_directory_path() / "shardscope-bench-gui.sstrace").string();
    Scenario s;
    s.model.spec = "mlp:4000x64";
    s.cluster.world = 8;
    s.training.steps = 2;
    const ResolvedScenario resolved = resolve_scenario(s);
    {
      TraceFileWriter writer(path);
      events = simulate(resolved, lower_plan(resolved), writer).event_count;
    }
    GuiOptions options;
    options.trace_file = path;
    ui = std::make_unique<ShardScopeUi>(options);
    imgui.frame([&] { ui->frame(); });
  }
};

Fixture& fixture() {
  static Fixture f;
  return f;
}

void BM_Frame_WholeRun(benchmark::State& state) {
  auto& f = fixture();
  f.ui->time_view().reset();
  for (auto _ : state) benchmark::DoNotOptimize(f.imgui.frame([&] { f.ui->frame(); }));
  state.counters["trace_events"] = static_cast<double>(f.events);
}

void BM_Frame_ZoomedIn(benchmark::State& state) {
  auto& f = fixture();
  f.ui->time_view().reset();
  const TimeNs middle = (f.ui->time_view().t0() + f.ui->time_view().t1()) / 2;
  f.ui->time_view().zoom(0.001, middle);
  for (auto _ : state) benchmark::DoNotOptimize(f.imgui.frame([&] { f.ui->frame(); }));
  state.counters["trace_events"] = static_cast<double>(f.events);
}

BENCHMARK(BM_Frame_WholeRun)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Frame_ZoomedIn)->Unit(benchmark::kMillisecond);

// Bytes the store holds for a trace (its arrays' sizes: a SegmentedArray's unfilled tail is never touched): what a
// trace of N events costs in memory.
std::size_t store_bytes(const TraceData& d) {
  std::size_t bytes = d.boundaries.size() * sizeof(TimeNs);
  for (const RankTimeline& r : d.ranks) {
    for (const StreamSpans& s : r.streams)
      bytes += s.spans.size() * sizeof(TraceSpan) + s.reach.size() * sizeof(TimeNs) + s.message_begins.size() * sizeof(TimeNs);
    bytes += r.memory.size() * 40;  // TraceMemorySeries: 40 B a sample, allocations included (trace_memory_series.h)
    bytes += r.memory.size() * 2 * sizeof(std::size_t) / 3;  // RangeArgMax over the samples (blocks of 4)
  }
  return bytes;
}

// The same DDP run grown to `millions` of events (growing_trace.h), straight into the window's store.
struct LargeFixture {
  testing::HeadlessImGui imgui;
  std::unique_ptr<ShardScopeUi> ui;
  int millions = 0;
  std::uint64_t events = 0, open_spans = 0, unmatched = 0;
  std::size_t bytes = 0;

  explicit LargeFixture(int million_events) : millions(million_events) {
    auto store = std::make_shared<TraceStore>();
    const Scenario scenario = bench::dense_ddp_scenario();
    bench::GrowingTrace trace(*store, scenario.training.steps);
    trace.simulate_and_grow(scenario, static_cast<std::uint64_t>(millions) * 1'000'000);
    store->end();
    store->read([&](const TraceData& d) {
      events = d.event_count;
      bytes = store_bytes(d);
      unmatched = d.unmatched_op_ends;
      for (const RankTimeline& r : d.ranks) open_spans += r.open_spans;
    });
    // Started on a file that never comes, the window runs no scenario of its own that would replace the store.
    GuiOptions options;
    options.follow_file = (std::filesystem::temp_directory_path() / "shardscope-bench-no-such.sstrace").string();
    ui = std::make_unique<ShardScopeUi>(options);
    ui->session().show_store(std::move(store));
    imgui.frame([&] { ui->frame(); });
    if (ui->session().store()->read([](const TraceData& d) { return d.event_count; }) != events)
      throw std::logic_error("the window does not show the benchmark's trace");
  }
};

// One large trace at a time: each takes gigabytes.
LargeFixture& large_fixture(int millions) {
  static std::unique_ptr<LargeFixture> f;
  if (!f || f->millions != millions) {
    f.reset();
    f = std::make_unique<LargeFixture>(millions);
  }
  return *f;
}

void report(benchmark::State& state, const LargeFixture& f) {
  state.counters["trace_events"] = static_cast<double>(f.events);
  state.counters["store_bytes_per_event"] = static_cast<double>(f.bytes) / static_cast<double>(f.events);
  state.counters["open_spans"] = static_cast<double>(f.open_spans);
  state.counters["unmatched_ends"] = static_cast<double>(f.unmatched);
}

void large_frame_whole_run(benchmark::State& state, int millions) {
  auto& f = large_fixture(millions);
  f.ui->time_view().reset();
  for (auto _ : state) benchmark::DoNotOptimize(f.imgui.frame([&] { f.ui->frame(); }));
  report(state, f);
}

void large_frame_zoomed_in(benchmark::State& state, int millions) {
  auto& f = large_fixture(millions);
  f.ui->time_view().reset();
  const TimeNs middle = (f.ui->time_view().t0() + f.ui->time_view().t1()) / 2;
  f.ui->time_view().zoom(0.001, middle);
  for (auto _ : state) benchmark::DoNotOptimize(f.imgui.frame([&] { f.ui->frame(); }));
  report(state, f);
}

// 10 M events; SHARDSCOPE_BENCH_MEVENTS=100 adds a trace of 100 M where the machine's memory allows
// (store_bytes_per_event says how much each takes). Both frames of one size run together: each trace is built once.
const bool large_registered = [] {
  std::vector<int> sizes{10};
  if (const char* more = std::getenv("SHARDSCOPE_BENCH_MEVENTS")) sizes.push_back(std::atoi(more));
  for (const int millions : sizes) {
    const std::string suffix = "/Mevents:" + std::to_string(millions);
    benchmark::RegisterBenchmark(("BM_LargeFrame_WholeRun" + suffix).c_str(), large_frame_whole_run, millions)->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("BM_LargeFrame_ZoomedIn" + suffix).c_str(), large_frame_zoomed_in, millions)->Unit(benchmark::kMillisecond);
  }
  return true;
}();
}  // namespace
}  // namespace shardscope::gui
