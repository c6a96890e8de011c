// CPU executor: wall time of training steps of the built-in scenario (DDP, 2 rank threads, 20 × Linear(2000, 2000),
// batch 20, Adam) and of one rank alone, with the model FLOP rate achieved — to hold against the machine's BLAS
// peak from bench_cpu_kernels (BM_SquareGemm). Each iteration is a whole run: set-up (allocation, parameter
// initialisation, DDP's broadcast) plus `steps` steps. Run: build/tests/bench/bench_executor
#include <benchmark/benchmark.h>

#include "exec/backends/backend_factory.h"
#include "strategy/lower.h"

namespace {

using namespace shardscope;

// Args: world (1 or 2), steps.
void BM_ExecuteMlp20x2000(benchmark::State& state) {
  Scenario s = builtin_default_scenario();
  s.cluster.world = static_cast<int>(state.range(0));
  s.strategy.kind = s.cluster.world == 1 ? StrategyKind::Single : StrategyKind::Ddp;
  s.training.steps = static_cast<int>(state.range(1));
  const ResolvedScenario resolved = resolve_scenario(s);
  const Plan plan = lower_validated_plan(resolved);
  DiscardTraceSink sink;
  for (auto _ : state) {
    const exec::ExecutionResult result = exec::execute(resolved, plan, sink);
    if (!result.ok) state.SkipWithError(result.error.c_str());
  }
  // Forward 2·b·w² per layer, backward twice that (the first layer skips its input gradient: counted anyway).
  const double flops_per_step = 3.0 * 2.0 * 20 * 2000.0 * 2000.0 * 20 * s.cluster.world;
  state.counters["model_FLOP/s"] = benchmark::Counter(flops_per_step * s.training.steps, benchmark::Counter::kIsIterationInvariantRate,
                                                      benchmark::Counter::OneK::kIs1000);
}

BENCHMARK(BM_ExecuteMlp20x2000)->Args({1, 1})->Args({1, 3})->Args({2, 1})->Args({2, 3})->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
