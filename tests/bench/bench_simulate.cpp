// Simulator throughput: trace events per second, and the time to simulate the largest plans (one DDP step of
// 20 × Linear(2000) on 1,024 ranks). Lowering happens once, outside the timed loop; simulate() includes building
// the graph and the PyTorch-rules memory accounting that feeds Alloc / Free events.
#include <benchmark/benchmark.h>

#include "../sim/sim_test_helpers.h"
#include "sim/simulator.h"
#include "strategy/lower.h"

namespace {

using namespace shardscope;

// Counts events and drops them: what a file writer costs is the trace module's business.
class CountingSink : public TraceSink {
 public:
  void begin(const TraceHeader&) override {}
  void emit(const TraceEvent&) override { ++events; }
  std::size_t events = 0;
};

void run(benchmark::State& state, const ResolvedScenario& scenario, const Plan& plan) {
  SimulationOptions options;
  options.plan_in_header = state.range(0) != 0;
  std::size_t events = 0;
  for (auto _ : state) {
    CountingSink sink;
    const auto result = simulate(scenario, plan, sink, options);
    benchmark::DoNotOptimize(result.step_time_ns);
    events = sink.events;
  }
  state.counters["ranks"] = static_cast<double>(plan.programs.size());
  state.counters["ops"] = static_cast<double>(plan.op_count());
  state.counters["events"] = static_cast<double>(events);
  state.counters["events/s"] = benchmark::Counter(static_cast<double>(events) * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

void ddp(benchmark::State& state, const std::string& model, int world, int steps) {
  Scenario s;
  s.model.spec = model;
  s.cluster.world = world;
  s.training.steps = steps;
  const auto resolved = resolve_scenario(s);
  const Plan plan = lower_plan(resolved);
  run(state, resolved, plan);
}

void BM_Ddp_Mlp20x2000_1024Ranks_OneStep(benchmark::State& state) { ddp(state, "mlp:20x2000", 1024, 1); }
void BM_Ddp_Mlp20x2000_1024Ranks_TwoSteps(benchmark::State& state) { ddp(state, "mlp:20x2000", 1024, 2); }
void BM_Ddp_DefaultScenario(benchmark::State& state) { ddp(state, "mlp:20x2000", 2, 1); }

// Send / recv heavy: a hand-built 1F1B pipeline of 64 stages × 256 micro-batches.
void BM_Pipeline1F1B_64Stages_256MicroBatches(benchmark::State& state) {
  const auto resolved = testing::round_number_scenario(100, 1, 64);
  const Plan plan = testing::pipeline_plan(testing::PipelineSchedule::OneForwardOneBackward, 64, 256, 1000, 2000);
  run(state, resolved, plan);
}

// Arg: 1 = the header holds a copy of the plan (as the CLI runs it), 0 = not.
BENCHMARK(BM_Ddp_Mlp20x2000_1024Ranks_OneStep)->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Ddp_Mlp20x2000_1024Ranks_TwoSteps)->Arg(0)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Ddp_DefaultScenario)->Arg(0)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Pipeline1F1B_64Stages_256MicroBatches)->Arg(0)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
