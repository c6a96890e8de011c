// What a live run's growth costs the window: a trace of about 9 M events is followed as its file grows (the path of
// `shardscope --follow FILE` beside `shardscope-cli run --out FILE`); each benchmark iteration appends N more events
// to the file and draws one frame, which reads them, stores them and refreshes what depends on them (the playhead's
// boundaries and rank groups, a few times a second). worst_frame_ms is the longest such frame: a stall the user sees
// when it passes 16 ms. Run: build/tests/bench/bench_live_refresh
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <vector>

#include "../gui/headless_imgui.h"
#include "gui/shardscope_ui.h"
#include "sim/simulator.h"
#include "strategy/lower.h"
#include "trace/trace_file_writer.h"

namespace shardscope::gui {
namespace {

// Passes a run's trace on without its end (the run goes on), keeping the last step's events to replay later.
class GrowingTrace : public TraceSink {
 public:
  GrowingTrace(TraceSink& out, int last_step) : out_(out), last_step_(last_step) {}
  void begin(const TraceHeader& header) override { out_.begin(header); }
  void emit(const TraceEvent& e) override {
    out_.emit(e);
    ++written;
    t_max = std::max(t_max, e.t_ns);
    if (e.step == last_step_) last_step_events.push_back(e);
  }
  void end() override {}

  std::uint64_t written = 0;
  TimeNs t_max = 0;
  std::vector<TraceEvent> last_step_events;

 private:
  TraceSink& out_;
  int last_step_;
};

struct Fixture {
  static constexpr int kSteps = 18;  // about half a million events a step
  testing::HeadlessImGui imgui;
  std::string path = (std::filesystem::temp_directory_path() / "shardscope-bench-live-refresh.sstrace").string();
  std::unique_ptr<TraceFileWriter> writer;
  std::unique_ptr<GrowingTrace> trace;
  std::unique_ptr<ShardScopeUi> ui;
  TimeNs step_ns = 1;
  std::uint64_t replayed = 0;  // events appended after the first kSteps steps

  Fixture() {
    Scenario s;
    s.model.spec = "mlp:4000x64";
    s.cluster.world = 8;
    s.training.steps = kSteps;
    const ResolvedScenario resolved = resolve_scenario(s);
    writer = std::make_unique<TraceFileWriter>(path);
    trace = std::make_unique<GrowingTrace>(*writer, kSteps - 1);
    simulate(resolved, lower_plan(resolved), *trace);
    writer->flush();
    TimeNs first = trace->t_max;
    for (const TraceEvent& e : trace->last_step_events) first = std::min(first, e.t_ns);
    step_ns = std::max<TimeNs>(1, trace->t_max - first);
    ui = std::make_unique<ShardScopeUi>(GuiOptions{});
    ui->session().follow_file(path);
    // Frames until the window holds what was written.
    for (int frame = 0; stored() < trace->written; ++frame) {
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

  // The last step's events again, a step later each time round, as a run that goes on would add them.
  void append(std::size_t count) {
    const auto& events = trace->last_step_events;
    for (std::size_t i = 0; i < count; ++i, ++replayed) {
      const std::uint64_t round = replayed / events.size() + 1;
      TraceEvent e = events[replayed % events.size()];
      e.t_ns += static_cast<TimeNs>(round) * step_ns;
      e.step += static_cast<int>(round);
      writer->emit(e);
    }
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
}

// 60 frames: a second of a live run at 60 Hz, which holds four refreshes of the playhead's boundaries.
BENCHMARK(BM_LiveRefresh)->Arg(1000)->Arg(10000)->Arg(100000)->Iterations(60)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace shardscope::gui
