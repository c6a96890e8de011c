// Issue 18: sizes that would overflow or exhaust the machine are refused before any work, with what the limit is:
// the plan's op count (estimated before lowering), byte counts past 64 bits, products of counts (global batch,
// stages × dp) computed wide.
#include <gtest/gtest.h>

#include <filesystem>

#include "hf_config_files.h"
#include "scenario/scenario.h"
#include "strategy/lower.h"

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
