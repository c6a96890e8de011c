// CPU time to build one frame of the whole window (ImGui NewFrame … Render, no GPU) over a trace of about a million
// events, zoomed out to the whole run and zoomed in to a thousandth of it.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <memory>

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

}  // namespace
}  // namespace shardscope::gui
