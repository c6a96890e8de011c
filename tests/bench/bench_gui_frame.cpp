// CPU time to build one frame of the whole window (ImGui NewFrame … Render, no GPU) over a trace of about a million
// events opened from a file, zoomed out to the whole run and zoomed in to a thousandth of it; and the same over
// traces ten and more times larger, simulated straight into the store the window draws (writing and reading back
// such files is bench_trace_file's business). Run: build/tests/bench/bench_gui_frame
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "../gui/headless_imgui.h"
#include "gui/shardscope_ui.h"
#include "sim/simulator.h"
#include "strategy/lower.h"
#include "trace/trace_file_writer.h"

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

// Bytes the store holds for a trace (its vectors' capacities): what a trace of N events costs in memory.
std::size_t store_bytes(const TraceData& d) {
  std::size_t bytes = d.boundaries.capacity() * sizeof(TimeNs);
  for (const RankTimeline& r : d.ranks) {
    for (const StreamSpans& s : r.streams)
      bytes += s.spans.capacity() * sizeof(TraceSpan) + s.reach.capacity() * sizeof(TimeNs) + s.message_begins.capacity() * sizeof(TimeNs);
    bytes += r.memory.capacity() * sizeof(TraceMemorySample) + r.allocations.capacity() * sizeof(TraceAllocation);
    bytes += r.memory.capacity() * sizeof(std::size_t) / 3;  // RangeArgMax over the samples (blocks of 4)
  }
  return bytes;
}

// The same DDP model over `steps` steps (about half a million events a step), simulated into the window's store.
struct LargeFixture {
  testing::HeadlessImGui imgui;
  std::unique_ptr<ShardScopeUi> ui;
  int steps = 0;
  std::uint64_t events = 0;
  std::size_t bytes = 0;

  explicit LargeFixture(int step_count) : steps(step_count) {
    Scenario s;
    s.model.spec = "mlp:4000x64";
    s.cluster.world = 8;
    s.training.steps = steps;
    const ResolvedScenario resolved = resolve_scenario(s);
    auto store = std::make_shared<TraceStore>();
    simulate(resolved, lower_plan(resolved), *store);
    store->read([&](const TraceData& d) {
      events = d.event_count;
      bytes = store_bytes(d);
    });
    ui = std::make_unique<ShardScopeUi>(GuiOptions{});
    ui->session().show_store(std::move(store));
    imgui.frame([&] { ui->frame(); });
  }
};

// One large trace at a time: each takes gigabytes.
LargeFixture& large_fixture(int steps) {
  static std::unique_ptr<LargeFixture> f;
  if (!f || f->steps != steps) {
    f.reset();
    f = std::make_unique<LargeFixture>(steps);
  }
  return *f;
}

void report(benchmark::State& state, const LargeFixture& f) {
  state.counters["trace_events"] = static_cast<double>(f.events);
  state.counters["store_bytes_per_event"] = static_cast<double>(f.bytes) / static_cast<double>(f.events);
}

void large_frame_whole_run(benchmark::State& state, int steps) {
  auto& f = large_fixture(steps);
  f.ui->time_view().reset();
  for (auto _ : state) benchmark::DoNotOptimize(f.imgui.frame([&] { f.ui->frame(); }));
  report(state, f);
}

void large_frame_zoomed_in(benchmark::State& state, int steps) {
  auto& f = large_fixture(steps);
  f.ui->time_view().reset();
  const TimeNs middle = (f.ui->time_view().t0() + f.ui->time_view().t1()) / 2;
  f.ui->time_view().zoom(0.001, middle);
  for (auto _ : state) benchmark::DoNotOptimize(f.imgui.frame([&] { f.ui->frame(); }));
  report(state, f);
}

// Steps: 20 is about 10 M events; SHARDSCOPE_BENCH_STEPS (e.g. 200 for about 100 M) adds a larger trace where the
// machine's memory allows (store_bytes_per_event says how much it takes). Both frames of one size run together, so
// each trace is built once.
const bool large_registered = [] {
  std::vector<int> sizes{20};
  if (const char* more = std::getenv("SHARDSCOPE_BENCH_STEPS")) sizes.push_back(std::atoi(more));
  for (const int steps : sizes) {
    const std::string suffix = "/steps:" + std::to_string(steps);
    benchmark::RegisterBenchmark(("BM_LargeFrame_WholeRun" + suffix).c_str(), large_frame_whole_run, steps)->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("BM_LargeFrame_ZoomedIn" + suffix).c_str(), large_frame_zoomed_in, steps)->Unit(benchmark::kMillisecond);
  }
  return true;
}();
}  // namespace
}  // namespace shardscope::gui
