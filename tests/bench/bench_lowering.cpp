// Lowering + validation + PyTorch-rules accounting of the largest plans supported: how long `memory` takes.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <fstream>

#include "memory/accounting.h"
#include "plan/validate.h"
#include "strategy/lower.h"

namespace {

using namespace shardscope;

Scenario scenario(const std::string& model, StrategyKind strategy, int world) {
  Scenario s;
  s.model.spec = model;
  s.strategy.kind = strategy;
  s.cluster.world = world;
  s.training.batch = 8;
  s.training.steps = 2;
  if (model == "vgg16") s.training.loss = LossKind::CrossEntropy;
  return s;
}

void run(benchmark::State& state, const Scenario& s) {
  const auto resolved = resolve_scenario(s);
  std::size_t ops = 0;
  for (auto _ : state) {
    const Plan plan = lower_plan(resolved);
    benchmark::DoNotOptimize(validate_plan(plan));
    const auto report = account_memory(plan, AccountingMode::PyTorch2, resolved.device.capacity, /*keep_series=*/true);
    benchmark::DoNotOptimize(report.ranks.size());
    ops = plan.op_count();
  }
  state.counters["ops"] = static_cast<double>(ops);
  state.counters["ops/s"] = benchmark::Counter(static_cast<double>(ops) * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

void BM_Ddp_Mlp1000x1024_64Ranks(benchmark::State& state) { run(state, scenario("mlp:1000x1024", StrategyKind::Ddp, 64)); }
void BM_Zero1_Vgg16_64Ranks(benchmark::State& state) { run(state, scenario("vgg16", StrategyKind::Zero1, 64)); }
void BM_DataParallel_Vgg16_8Devices(benchmark::State& state) { run(state, scenario("vgg16", StrategyKind::DataParallel, 8)); }
void BM_Ddp_DefaultScenario(benchmark::State& state) { run(state, scenario("mlp:20x2000", StrategyKind::Ddp, 2)); }

// The scale goal: 1,024 ranks = 8 pipeline stages × 128 data-parallel replicas, 1F1B over 8 micro-batches, ZeRO-1
// inside each stage's DP group, bf16, one step; lowering + PyTorch-rules accounting (no validation), one core.
void run_pipeline_dp_zero1_1024_ranks(benchmark::State& state, const std::string& model) {
  Scenario s = scenario(model, StrategyKind::Pipeline1F1B, 1024);
  s.strategy.stages = 8;
  s.strategy.micro_batches = 8;
  s.strategy.dp_zero_stage = 1;
  s.training.dtype = Dtype::Bf16;
  s.training.steps = 1;
  const auto resolved = resolve_scenario(s);
  std::size_t ops = 0;
  for (auto _ : state) {
    const Plan plan = lower_plan(resolved);
    const auto report = account_memory(plan, AccountingMode::PyTorch2, resolved.device.capacity, /*keep_series=*/false);
    benchmark::DoNotOptimize(report.ranks.size());
    ops = plan.op_count();
  }
  state.counters["ops"] = static_cast<double>(ops);
}

// A 96-layer MLP: 12 layers per stage.
void BM_PipelineDpZero1_Mlp96_1024Ranks(benchmark::State& state) { run_pipeline_dp_zero1_1024_ranks(state, "mlp:96x4096"); }

// A 96-block transformer of GPT-3 175B's shape (Brown et al. 2020, Table 2.1: h 12288, 96 heads, context 2048),
// as a GPT-2 style Hugging Face config; resolve groups each block's parameters.
void BM_PipelineDpZero1_Gpt3Shape96_1024Ranks(benchmark::State& state) {
  const auto path = std::filesystem::temp_directory_path() / "shardscope-bench-gpt3-config.json";
  std::ofstream(path) << R"({"model_type": "gpt2", "n_embd": 12288, "n_layer": 96, "n_head": 96, "vocab_size": 50257, "n_positions": 2048})";
  run_pipeline_dp_zero1_1024_ranks(state, "hf:" + path.string());
}

BENCHMARK(BM_PipelineDpZero1_Mlp96_1024Ranks)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PipelineDpZero1_Gpt3Shape96_1024Ranks)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Ddp_Mlp1000x1024_64Ranks)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Zero1_Vgg16_64Ranks)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DataParallel_Vgg16_8Devices)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Ddp_DefaultScenario)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
