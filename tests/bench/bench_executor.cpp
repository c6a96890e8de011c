// CPU executor: wall time of training steps of the built-in scenario (DDP, 2 rank threads, 20 × Linear(2000, 2000),
// batch 20, Adam) and of one rank alone, with the model FLOP rate achieved — to hold against the machine's BLAS
// peak from bench_cpu_kernels (BM_SquareGemm). Each iteration is a whole run: set-up (allocation, parameter
// initialisation, DDP's broadcast) plus `steps` steps. BM_MlpAdamStep times one steady training step alone (the
// job tests/bench/pytorch_mlp_step.py times in PyTorch).
// Run: OPENBLAS_NUM_THREADS=1 build/tests/bench/bench_executor
#include <benchmark/benchmark.h>

#include <ctime>

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

double process_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// Wall and process CPU time from the first event of step 2 to the last event of the last step, sampled as the rank
// thread emits them: the steady steps alone, without set-up and the first step (Adam's state is created there).
class SteadyStepClock : public TraceSink {
 public:
  explicit SteadyStepClock(int last_step) : last_step_(last_step) {}
  void begin(const TraceHeader&) override {}
  void emit(const TraceEvent& event) override {
    if (event.step < 2 || event.step > last_step_) return;
    if (!started_) {
      started_ = true;
      start_ns_ = event.t_ns;
      start_cpu_ = process_cpu_seconds();
    }
    end_ns_ = event.t_ns;
    end_cpu_ = process_cpu_seconds();
  }
  double wall_seconds() const { return static_cast<double>(end_ns_ - start_ns_) * 1e-9; }
  double cpu_seconds() const { return end_cpu_ - start_cpu_; }

 private:
  int last_step_;
  bool started_ = false;
  TimeNs start_ns_ = 0, end_ns_ = 0;
  double start_cpu_ = 0, end_cpu_ = 0;
};

// Runs the scenario once per iteration; the iteration's (manual) time is the wall time of a steady step (every step
// but the first), and the counter cpu_s_per_step its process CPU time.
void time_steady_steps(benchmark::State& state, const ResolvedScenario& resolved) {
  const int steps = resolved.settings.training.steps;
  const Plan plan = lower_validated_plan(resolved);
  double cpu_seconds = 0;
  for (auto _ : state) {
    SteadyStepClock clock(steps);
    const exec::ExecutionResult result = exec::execute(resolved, plan, clock);
    if (!result.ok) state.SkipWithError(result.error.c_str());
    state.SetIterationTime(clock.wall_seconds() / (steps - 1));
    cpu_seconds += clock.cpu_seconds() / (steps - 1);
  }
  state.counters["cpu_s_per_step"] = benchmark::Counter(cpu_seconds, benchmark::Counter::kAvgIterations);
}

// Issue 22's job: one rank, 20 × Linear(2000, 2000), batch 20, MSE, Adam, one BLAS thread. Time per steady step
// (manual time: wall); the counter cpu_s_per_step is the process CPU time per step, the figure to trust on a loaded
// machine. Arg: the steady steps timed per run (the run has one more, the first).
void BM_MlpAdamStep(benchmark::State& state) {
  Scenario s = builtin_default_scenario();
  s.cluster.world = 1;
  s.strategy.kind = StrategyKind::Single;
  const int steady_steps = static_cast<int>(state.range(0));
  s.training.steps = 1 + steady_steps;
  time_steady_steps(state, resolve_scenario(s));
}

BENCHMARK(BM_MlpAdamStep)->Arg(3)->Unit(benchmark::kMillisecond)->UseManualTime()->Iterations(3);

// Issue 21's job: a GPT-2 training step on one rank, dropout off (as tests/bench/pytorch_gpt2_step.py runs it),
// AdamW, one BLAS thread. Arg 0: gpt2-tiny (2 blocks, width 128, vocab 512), seq 64, batch 8; arg 1: GPT-2 small's
// shape (12 blocks, width 768, vocab 50257), seq 256, batch 4. Counter model_GFLOP/s: Megatron's count
// (3 × forward: 24·s·h² + 4·s²·h a block, 2·s·h·V for the LM head, per sample) over the steady step's wall time, to
// hold against BM_SquareGemm's sgemm rate.
void BM_Gpt2Step(benchmark::State& state) {
  const bool small = state.range(0) == 1;
  Scenario s = builtin_default_scenario();
  s.model.spec = small ? "gpt2" : "gpt2-tiny";
  s.cluster.world = 1;
  s.strategy.kind = StrategyKind::Single;
  s.training.loss = LossKind::CrossEntropy;
  s.training.optimizer = OptimizerKind::AdamW;
  s.training.seq = small ? 256 : 64;
  s.training.batch = small ? 4 : 8;
  s.training.steps = 3;
  ResolvedScenario resolved = resolve_scenario(s);
  TransformerConfig& c = *resolved.model.transformer;
  c.attn_pdrop = c.resid_pdrop = c.embd_pdrop = 0;
  time_steady_steps(state, resolved);
  const double sq = static_cast<double>(s.training.seq), h = static_cast<double>(c.hidden);
  const double forward = s.training.batch * (c.layers * (24 * sq * h * h + 4 * sq * sq * h) + 2 * sq * h * static_cast<double>(c.vocab));
  state.counters["model_GFLOP/s"] = benchmark::Counter(3 * forward * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

BENCHMARK(BM_Gpt2Step)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseManualTime()->Iterations(2);

}  // namespace

BENCHMARK_MAIN();
