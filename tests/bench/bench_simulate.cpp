// Simulator throughput: trace events per second, and the time to simulate the largest plans (one DDP step of
// 20 × Linear(2000) on 1,024 ranks). Lowering happens once, outside the timed loop; simulate() includes building
// the graph and the PyTorch-rules memory accounting that feeds Alloc / Free events. The GPT-3 cases time the whole
// `shardscope-cli simulate` pipeline instead (resolve, lower, validate, simulate), as issue 22's rows measure it.
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <ctime>
#include <filesystem>
#include <fstream>

#include "../sim/sim_test_helpers.h"
#include "pipeline/run_pipeline.h"
#include "memory/accounting.h"
#include "plan/validate.h"
#include "sim/cost_model.h"
#include "sim/event_emitter.h"
#include "sim/event_loop.h"
#include "sim/sim_graph.h"
#include "sim/sim_metrics.h"
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

// The scale goal of issue 22, end to end as `shardscope-cli simulate` runs it (tests/bench/simulate_scale.sh runs
// the CLI itself under /usr/bin/time): a 96-block transformer of GPT-3 175B's shape (Brown et al. 2020, Table 2.1:
// h 12288, 96 heads, context 2048) as a GPT-2 style Hugging Face config, 1F1B over 8 stages × `ranks` / 8
// data-parallel replicas, 8 micro-batches, ZeRO-1 in each stage's DP group, bf16, batch 8, one step. peak_rss_mib is
// the process's peak so far (getrusage), so run one case per process: --benchmark_filter=Gpt3Shape.*/1024/8.
// tp > 1: issue 39's 3-D row (tensor parallelism tp × 8 stages × ranks / (8 tp) replicas), the vocabulary padded as
// Megatron-LM pads it (a multiple of 128 × tp), as tests/bench/simulate_scale.sh runs it with TP=tp.
Scenario gpt3_shape_scenario(int ranks, int tp) {
  const std::int64_t vocab = tp > 1 ? (50257 + 128 * tp - 1) / (128 * tp) * (128 * tp) : 50257;
  const auto config = std::filesystem::temp_directory_path() /
                      ("shardscope-bench-simulate-gpt3-config-" + std::to_string(vocab) + ".json");
  std::ofstream(config) << R"({"model_type": "gpt2", "n_embd": 12288, "n_layer": 96, "n_head": 96, "vocab_size": )"
                        << vocab << R"(, "n_positions": 2048})";
  Scenario s;
  s.model.spec = "hf:" + config.string();
  s.strategy.kind = StrategyKind::Pipeline1F1B;
  s.strategy.stages = 8;
  s.strategy.micro_batches = 8;
  s.strategy.dp_zero_stage = 1;
  s.strategy.tp = tp;
  s.cluster.world = ranks;
  s.training.batch = 8;
  s.training.dtype = Dtype::Bf16;
  s.training.steps = 1;
  return s;
}

double peak_rss_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

// Args: ranks, tensor-parallel size.
void BM_SimulateEndToEnd_Gpt3Shape_Pp8DpZero1(benchmark::State& state) {
  const Scenario s = gpt3_shape_scenario(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
  std::size_t ops = 0, events = 0;
  for (auto _ : state) {
    DiscardTraceSink sink;  // as the CLI without --out: the simulator counts the events and builds none
    try {
      const auto run = pipeline::simulate_scenario(s, sink);
      benchmark::DoNotOptimize(run.result.step_time_ns);
      ops = run.plan.op_count();
      events = run.result.event_count;
    } catch (const std::exception& error) {  // a plan over kMaxPlanOps
      state.SkipWithError(error.what());
      break;
    }
  }
  state.counters["ops"] = static_cast<double>(ops);
  state.counters["events"] = static_cast<double>(events);
  state.counters["peak_rss_mib"] = peak_rss_mib();
}

// The same pipeline phase by phase, as simulate() runs it for a sink that drops its events (the CLI without --out):
// CPU milliseconds of each phase (`*_ms`: the process's user + system time, which a loaded shared machine changes far
// less than the wall time) and the process's peak RSS once it is done (`*_rss_mib`), to say where the end to end
// figure goes. One case per process, as above. Args: ranks, tensor-parallel size.
double process_cpu_ms() {
  timespec now{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) * 1e3 + static_cast<double>(now.tv_nsec) / 1e6;
}

void BM_SimulatePhases_Gpt3Shape_Pp8DpZero1(benchmark::State& state) {
  const ResolvedScenario scenario =
      resolve_scenario(gpt3_shape_scenario(static_cast<int>(state.range(0)), static_cast<int>(state.range(1))));
  for (auto _ : state) {
    double start = process_cpu_ms();
    const auto phase_done = [&](const char* name) {
      const double now = process_cpu_ms();
      state.counters[std::string(name) + "_ms"] = now - start;
      state.counters[std::string(name) + "_rss_mib"] = peak_rss_mib();
      start = now;
    };
    const Plan plan = lower_plan(scenario, {.kernel_operands = false});
    phase_done("1_lower");
    benchmark::DoNotOptimize(validate_plan(plan).ok());
    phase_done("2_validate");
    SimGraph graph = build_sim_graph(plan, CostModel::from_scenario(scenario));
    phase_done("3_graph");
    const MemoryReport memory = account_memory(plan, scenario.settings.accounting.mode, scenario.device.capacity, false);
    phase_done("4_account");
    DiscardTraceSink sink;
    EventEmitter emitter(plan, graph, nullptr, sink);
    const OpTimes times = run_event_loop(plan, graph, emitter);
    phase_done("5_event_loop");
    benchmark::DoNotOptimize(measure_simulation(plan, graph, times, memory).step_time_ns);
    phase_done("6_measure");
  }
}

// Arg: 1 = the header holds a copy of the plan (as the CLI runs it), 0 = not.
BENCHMARK(BM_SimulateEndToEnd_Gpt3Shape_Pp8DpZero1)->Args({1024, 1})->Args({4096, 1})->Args({1024, 8})->Unit(benchmark::kMillisecond)->Iterations(1)->Repetitions(3);
BENCHMARK(BM_SimulatePhases_Gpt3Shape_Pp8DpZero1)->Args({1024, 1})->Args({1024, 8})->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_Ddp_Mlp20x2000_1024Ranks_OneStep)->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Ddp_Mlp20x2000_1024Ranks_TwoSteps)->Arg(0)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Ddp_DefaultScenario)->Arg(0)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Pipeline1F1B_64Stages_256MicroBatches)->Arg(0)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
