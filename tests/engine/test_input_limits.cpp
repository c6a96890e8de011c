// Issue 18: sizes that would overflow or exhaust the machine are refused before any work, with what the limit is:
// the plan's op count (estimated before lowering), byte counts past 64 bits, products of counts (global batch,
// stages × dp) computed wide.
#include <gtest/gtest.h>

#include <filesystem>

#include "hf_config_files.h"
#include "scenario/scenario.h"
#include "strategy/batch_fit.h"
#include "strategy/lower.h"
#include "strategy/zero_options.h"

namespace shardscope {
namespace {

std::string error_of(const Scenario& s, bool lower = false) {
  try {
    const ResolvedScenario resolved = resolve_scenario(s);
    if (lower) check_plan_size(resolved);
  } catch (const ScenarioError& error) {
    return error.what();
  }
  return "";
}

// `memory --world 65536` lowered 30 M ops (48 s, 12 GB) before the report: now the estimate refuses it at once.
TEST(PlanSize, AHugeWorldIsRefusedBeforeLowering) {
  Scenario s;
  s.cluster.world = 65536;
  const ResolvedScenario resolved = resolve_scenario(s);
  const std::int64_t estimate = estimate_plan_ops(resolved);
  EXPECT_GT(estimate, kMaxPlanOps);
  try {
    lower_plan(resolved);
    FAIL() << "a 65,536-rank plan was lowered";
  } catch (const ScenarioError& error) {
    const std::string message = error.what();
    EXPECT_EQ(error.field(), "cluster.world");
    EXPECT_NE(message.find("more than the limit of 8.0 M ops"), std::string::npos) << message;  // kMaxPlanOps
    EXPECT_NE(message.find("65536 ranks"), std::string::npos) << message;
    EXPECT_NE(message.find("about " + std::to_string(estimate / 100000 / 10) + "."), std::string::npos) << message;
  }
  // Steps and micro-batches count too, on one rank.
  Scenario steps;
  steps.strategy.kind = StrategyKind::Single;
  steps.model.spec = "mlp:100000x8";
  steps.training.steps = 1000;
  EXPECT_NE(error_of(steps, true).find("training.steps: the plan would have about"), std::string::npos);
}

// Issue 41: `--allgather-bucket-mb 1e-6` under ZeRO-2 lowered one all-gather per element (47 s, 4 GiB). The
// chunk count is DeepSpeed's partition × N / allgather_bucket_size (at least one element each): for mlp:20x2000
// (80,040,000 parameters, fp32) on 2 ranks and a 1e-6 MiB bucket (under one element, so one element), 40,020,000
// chunks a step, three ops each: refused before lowering, naming the bucket option.
TEST(PlanSize, ZeroTwoAllGatherChunksCountBeforeLowering) {
  Scenario s;
  s.strategy.kind = StrategyKind::Zero2;
  s.model.spec = "mlp:20x2000";
  s.cluster.world = 2;
  s.strategy.allgather_bucket_mb = 1e-6;
  const std::string message = error_of(s, true);
  EXPECT_EQ(message.rfind("strategy.allgather_bucket_mb: the plan would have about", 0), 0u) << message;
  EXPECT_NE(message.find(std::to_string(3 * 40'020'000) + " ops a step"), std::string::npos) << message;
  EXPECT_NE(message.find("use a larger bucket"), std::string::npos) << message;
  // 1 MiB: 262,144 fp32 elements a chunk, 80,040,000 / 262,144 = 305 chunks: lowered as before.
  s.strategy.allgather_bucket_mb = 1;
  EXPECT_EQ(error_of(s, true), "");
}

// `pp-gpipe --stages 65536` (one layer a stage) took 61 s: each rank's lowering keeps tables of the whole model, so
// the work grows with ranks × layers even though each rank has two dozen ops. The estimate counts that term.
TEST(PlanSize, DeepPipelinesCountTheirWholeModelTables) {
  Scenario s;
  s.strategy.kind = StrategyKind::PipelineGPipe;
  s.model.spec = "mlp:65536x8";
  s.cluster.world = 65536;
  s.strategy.stages = 65536;
  s.strategy.micro_batches = 1;
  const ResolvedScenario resolved = resolve_scenario(s);
  EXPECT_GE(estimate_plan_ops(resolved), std::int64_t{65536} * 65536 / 8);  // ranks × layers / 8 at least
  EXPECT_EQ(error_of(s, true).rfind("cluster.world: the plan would have about", 0), 0u);
}

// The batch search lowers a plan about 2·log2(2^20) + 1 = 41 times: a plan whose search would cost more than
// kMaxBatchSearchWork is not searched, and says so, at once.
TEST(BatchSearch, TooCostlyASearchIsNotRun) {
  Scenario s;
  s.model.spec = "mlp:1000x1024";
  s.cluster.world = 64;
  s.training.batch = 8;
  s.training.steps = 2;
  const auto ops = static_cast<double>(estimate_plan_ops(resolve_scenario(s)));
  ASSERT_GT(ops * 41, static_cast<double>(kMaxBatchSearchWork));
  int tries = 0;
  const BatchFit fit = max_batch_that_fits(s, 1 << 20, [&](int, bool) { ++tries; });
  EXPECT_EQ(tries, 0);
  EXPECT_FALSE(fit.batch);
  EXPECT_NE(fit.not_searched.find("not searched"), std::string::npos) << fit.not_searched;
  EXPECT_NE(fit.not_searched.find("41 times"), std::string::npos) << fit.not_searched;
}

// A step from the third on repeats the third (optimizer state appears at step 1, DDP rebuilds its buckets at 2), so
// the largest batch for 40 steps is the largest for 3 — now found by searching 3 steps and checking the answer once
// against all 40 (the extra try the callback hears).
TEST(BatchSearch, ManyStepsAreSearchedOnTheirFirstThree) {
  for (const StrategyKind kind : {StrategyKind::Ddp, StrategyKind::Zero2, StrategyKind::PipelineGPipe}) {
    Scenario s;
    s.strategy.kind = kind;
    s.model.spec = "mlp:4x1024";
    s.cluster.world = 2;
    s.cluster.device = "custom";
    s.cluster.capacity_gib = 2;  // the search ends well before its limit
    if (kind == StrategyKind::Zero2) s.strategy.reduce_bucket_mb = 16;  // DeepSpeed's default bucket is 2 GB in fp32
    s.training.steps = 3;
    int tries_three = 0, tries_many = 0;
    const BatchFit three = max_batch_that_fits(s, 1 << 20, [&](int, bool) { ++tries_three; });
    s.training.steps = 40;
    const BatchFit many = max_batch_that_fits(s, 1 << 20, [&](int, bool) { ++tries_many; });
    ASSERT_TRUE(three.batch) << strategy_name(kind) << " " << three.not_searched << " rank " << three.limiting_rank;
    EXPECT_EQ(many.batch, three.batch) << strategy_name(kind);
    EXPECT_EQ(tries_many, tries_three + 1) << strategy_name(kind);
  }
}

// The estimate is close to the real count (within the factor lower.h states) and keeps every shipped example and
// the benchmarked plans (bench_lowering: 64-rank DDP of mlp:1000x1024; 1,024-rank PP × DP × ZeRO-1) under the limit.
TEST(PlanSize, EstimatesKeepTheShippedAndBenchmarkedPlans) {
  const std::filesystem::path scenarios = std::filesystem::path(SHARDSCOPE_SOURCE_DIR) / "assets" / "scenarios";
  int checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(scenarios)) {
    const ResolvedScenario resolved = resolve_scenario(load_scenario_file(entry.path().string()));
    const auto real = static_cast<double>(lower_plan(resolved).op_count());
    const auto estimate = static_cast<double>(estimate_plan_ops(resolved));
    EXPECT_GE(estimate, 0.75 * real) << entry.path();
    EXPECT_LE(estimate, 2.5 * real) << entry.path();
    ++checked;
  }
  EXPECT_GE(checked, 16);

  Scenario ddp;
  ddp.model.spec = "mlp:1000x1024";
  ddp.cluster.world = 64;
  ddp.training.batch = 8;
  ddp.training.steps = 2;
  EXPECT_LE(estimate_plan_ops(resolve_scenario(ddp)), kMaxPlanOps);
  testing::TempConfigDir dir;
  const std::string gpt3 = dir.write("gpt3.json", R"({"model_type": "gpt2", "n_embd": 12288, "n_layer": 96, "n_head": 96, "vocab_size": 50257, "n_positions": 2048})");
  for (const std::string& model : {std::string("mlp:96x4096"), "hf:" + gpt3}) {
    Scenario pp;
    pp.model.spec = model;
    pp.strategy.kind = StrategyKind::Pipeline1F1B;
    pp.cluster.world = 1024;
    pp.strategy.stages = 8;
    pp.strategy.micro_batches = 8;
    pp.strategy.dp_zero_stage = 1;
    pp.training.dtype = Dtype::Bf16;
    pp.training.batch = 8;
    EXPECT_LE(estimate_plan_ops(resolve_scenario(pp)), kMaxPlanOps) << model;
    pp.cluster.world = 4096;  // issue 22's second simulate row
    EXPECT_LE(estimate_plan_ops(resolve_scenario(pp)), kMaxPlanOps) << model << " on 4,096 ranks";
  }
}

// balanced-dp's global batch is batch × world, in 64 bits ("the global batch -294967296" came from 2·10^9 × 2 as an
// int). The largest the bounds allow, 2^24 per device × 64 devices, is checked exactly.
TEST(InputLimits, GlobalBatchIsComputedWide) {
  Scenario s;
  s.strategy.kind = StrategyKind::BalancedDataParallel;
  s.model.spec = "mlp:2x8";
  s.training.batch = 1 << 24;
  s.cluster.world = 64;
  const std::int64_t global = std::int64_t{1 << 24} * 64;
  s.strategy.gpu0_batch = static_cast<int>(global);
  EXPECT_EQ(error_of(s), "");
  s.strategy.gpu0_batch = static_cast<int>(global + 1);
  EXPECT_EQ(error_of(s), "strategy.gpu0_batch: must be between 0 and the global batch " + std::to_string(global));
  // A per-rank batch past its bound never gets as far as the product.
  s.training.batch = 2'000'000'000;
  EXPECT_EQ(error_of(s), "training.batch: must be at most 16777216 (got 2000000000)");
}

TEST(InputLimits, StagesTimesDpIsComputedWide) {
  Scenario s;
  s.strategy.kind = StrategyKind::Pipeline1F1B;
  s.strategy.stages = 65536;
  s.strategy.dp = 65536;  // 2^32 ranks: wrapped to 0 as an int
  EXPECT_EQ(error_of(s), "cluster.world: stages × dp = 65536 × 65536 = 4294967296 ranks; the world must be at most 65536");
}

// Byte counts are int64: a batch or model whose bytes could overflow one is refused where its size is known.
TEST(InputLimits, ByteCountsPast64BitsAreRefused) {
  testing::TempConfigDir dir;
  // h = 2^20, seq 2^22: one sample's hidden states are 2^42 elements; 2^24 samples would be 2^66 × 2 bytes.
  const std::string wide = dir.write("wide.json", testing::gpt2_config_json(1 << 20, 16, 1, 8, 1 << 22));
  Scenario s;
  s.model.spec = "hf:" + wide;
  s.training.batch = 1 << 24;
  s.training.dtype = Dtype::Bf16;
  const std::string batch = error_of(s);
  EXPECT_EQ(batch.rfind("training.batch: a batch of 16777216 would need about ", 0), 0u) << batch;
  EXPECT_NE(batch.find("more than ShardScope counts (2^56 B = 64 PiB"), std::string::npos) << batch;
  Scenario params;
  params.model.spec = "params:1e15:128";
  EXPECT_EQ(error_of(params), "");  // 3.2·10^16 B: counted
  params.model.spec = "mlp:100000x1048576";  // 1.1·10^17 parameters
  EXPECT_EQ(error_of(params).rfind("model.spec: the model's ", 0), 0u) << error_of(params);
}

}  // namespace
}  // namespace shardscope
