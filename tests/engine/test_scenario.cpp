// Scenario JSON: fields read, defaults, and errors that name the field.
#include <gtest/gtest.h>

#include "scenario/scenario.h"

namespace shardscope {
namespace {

std::string error_of(const std::string& json) {
  try {
    resolve_scenario(parse_scenario_json(json, "test.json"));
  } catch (const ScenarioError& error) {
    return error.what();
  }
  return "";
}

TEST(ScenarioJson, ReadsEverySection) {
  const Scenario s = parse_scenario_json(R"({
    "name": "dp demo",
    "model": {"spec": "mlp:4x1024:relu", "inplace_relu": true},
    "training": {"batch": 32, "loss": "cross-entropy", "optimizer": "adamw", "weight_decay": 0.1, "steps": 3, "no_grad": false},
    "cluster": {"world": 4, "device": "A100-40", "capacity_gib": 38.5},
    "strategy": {"name": "balanced-dp", "gpu0_batch": 8},
    "accounting": {"mode": "pytorch-1.8", "gpu_arch": "sm80"}
  })", "x");
  EXPECT_EQ(s.name, "dp demo");
  EXPECT_EQ(s.model.spec, "mlp:4x1024:relu");
  EXPECT_TRUE(*s.model.inplace_relu);
  EXPECT_EQ(s.training.batch, 32);
  EXPECT_EQ(s.training.loss, LossKind::CrossEntropy);
  EXPECT_EQ(s.training.optimizer, OptimizerKind::AdamW);
  EXPECT_DOUBLE_EQ(*s.training.weight_decay, 0.1);
  EXPECT_EQ(s.training.steps, 3);
  EXPECT_EQ(s.cluster.world, 4);
  EXPECT_EQ(s.strategy.kind, StrategyKind::BalancedDataParallel);
  EXPECT_EQ(*s.strategy.gpu0_batch, 8);
  EXPECT_EQ(s.accounting.mode, AccountingMode::PyTorch18);
  const auto r = resolve_scenario(s);
  EXPECT_EQ(r.device.capacity, static_cast<Bytes>(38.5 * static_cast<double>(kGiB)));
  EXPECT_EQ(r.model.layers.size(), 7u);
}

TEST(ScenarioJson, RoundTrips) {
  Scenario s = builtin_default_scenario();
  s.strategy.kind = StrategyKind::Zero1;
  s.training.steps = 2;
  s.training.dtype = Dtype::Bf16;
  s.strategy.prefetch = 2;
  s.strategy.dp_zero_stage = 1;
  s.strategy.reduce_bucket_mb = 64;
  s.strategy.allgather_bucket_mb = 32;
  const Scenario back = parse_scenario_json(scenario_to_json(s), "x");
  EXPECT_EQ(back.training.dtype, Dtype::Bf16);
  EXPECT_EQ(back.strategy.prefetch, 2);
  EXPECT_EQ(back.strategy.dp_zero_stage, 1);
  EXPECT_DOUBLE_EQ(*back.strategy.reduce_bucket_mb, 64);
  EXPECT_DOUBLE_EQ(*back.strategy.allgather_bucket_mb, 32);
  EXPECT_EQ(back.strategy.kind, StrategyKind::Zero1);
  EXPECT_EQ(back.training.steps, 2);
  EXPECT_EQ(back.model.spec, s.model.spec);
}

// The ZeRO options by their public names: strategy.zero2_reduce and strategy.zero3_init, with DeepSpeed's defaults.
TEST(ScenarioJson, ZeroOptionsReadByName) {
  const Scenario defaults = parse_scenario_json("{}", "x");
  EXPECT_EQ(defaults.strategy.zero2_reduce, Zero2Reduce::ReduceScatter);
  EXPECT_EQ(defaults.strategy.zero3_init, Zero3Init::Partitioned);
  const Scenario zero2 = parse_scenario_json(R"({"strategy": {"name": "zero2", "zero2_reduce": "all-reduce"}})", "x");
  EXPECT_EQ(zero2.strategy.zero2_reduce, Zero2Reduce::AllReduce);
  const Scenario zero3 = parse_scenario_json(R"({"strategy": {"name": "zero3", "zero3_init": "materialize"}})", "x");
  EXPECT_EQ(zero3.strategy.zero3_init, Zero3Init::Materialize);
  EXPECT_EQ(parse_scenario_json(scenario_to_json(zero3), "x").strategy.zero3_init, Zero3Init::Materialize);
  EXPECT_NE(error_of(R"({"strategy": {"name": "zero2", "zero2_reduce": "reduce"}})").find("strategy.zero2_reduce"),
            std::string::npos);
}

TEST(ScenarioJson, DefaultsAreTheBuiltInScenario) {
  const auto r = resolve_scenario(parse_scenario_json("{}", "x"));
  EXPECT_EQ(r.settings.cluster.world, 2);
  EXPECT_EQ(r.settings.strategy.kind, StrategyKind::Ddp);
  EXPECT_EQ(r.device.name, "H100-80");
  EXPECT_EQ(r.gpu_arch, "sm90");
  EXPECT_EQ(resolve_scenario(parse_scenario_json(R"({"strategy": {"name": "single"}})", "x")).settings.cluster.world, 1);
}

TEST(ScenarioJson, ErrorsNameTheField) {
  EXPECT_EQ(error_of(R"({"training": {"batch": 0}})"), "training.batch: must be at least 1 (got 0) (in test.json)");
  EXPECT_EQ(error_of(R"({"training": {"batch": "8"}})"), "training.batch: must be an integer (got \"8\") (in test.json)");
  EXPECT_NE(error_of(R"({"training": {"bacth": 8}})").find("training.bacth: unknown key"), std::string::npos);
  // A key holding a NUL (found by fuzz_scenario_json): a ScenarioError, not std::out_of_range from cutting its message.
  EXPECT_EQ(error_of(R"({"a\u0000ccounting": {}})").rfind("a", 0), 0u);
  EXPECT_NE(error_of(R"({"strategy": {"name": "fsdp1"}})").find("strategy.name: unknown value 'fsdp1'"), std::string::npos);
  EXPECT_NE(error_of(R"({"cluster": {"device": "TPU"}})").find("cluster.device: unknown device 'TPU'"), std::string::npos);
  EXPECT_NE(error_of(R"({"model": {"spec": "mlp:3"}})").find("model.spec:"), std::string::npos);
  EXPECT_NE(error_of(R"({"model": 3})").find("model: must be an object"), std::string::npos);
  EXPECT_NE(error_of(R"({"strategy": {"name": "balanced-dp"}})").find("strategy.gpu0_batch"), std::string::npos);
  EXPECT_NE(error_of(R"({"strategy": {"name": "single"}, "cluster": {"world": 2}})").find("cluster.world"), std::string::npos);
  EXPECT_NE(error_of(R"({"training": {"dtype": "fp8"}})").find("training.dtype"), std::string::npos);
  EXPECT_NE(error_of(R"({"strategy": {"name": "pp-gpipe", "stages": 3}, "cluster": {"world": 4}})").find("strategy.stages: stages (3) must divide world (4)"), std::string::npos);
  EXPECT_NE(error_of(R"({"strategy": {"name": "pp-1f1b", "stages": 5}, "model": {"spec": "mlp:4x8"}})").find("more stages (5) than layers"), std::string::npos);
  EXPECT_NE(error_of(R"({"strategy": {"name": "pp-gpipe", "micro_batches": 40}})").find("strategy.micro_batches: more micro-batches (40) than samples"), std::string::npos);
  EXPECT_NE(error_of(R"({"strategy": {"name": "ddp", "stages": 2}})").find("strategy.stages"), std::string::npos);
  EXPECT_NE(error_of(R"({"strategy": {"name": "pp-gpipe", "stages": 2, "dp": 2}, "cluster": {"world": 6}})").find("cluster.world: world (6) must equal stages × dp (2 × 2)"), std::string::npos);
  EXPECT_NE(error_of(R"({"model": {"spec": "params:lots"}})").find("model.spec"), std::string::npos);
  EXPECT_NE(error_of("{\"training\": ").find("test.json: is not valid JSON"), std::string::npos);
  EXPECT_NE(error_of(R"({"accounting": {"gpu_arch": "sm75"}})").find("accounting.gpu_arch"), std::string::npos);
}

// World = stages × dp, whichever two are given (parallel_layout.h).
TEST(ScenarioLayout, DerivesWorldStagesAndDp) {
  auto layout = [](const std::string& json) {
    const auto r = resolve_scenario(parse_scenario_json(json, "x"));
    return std::to_string(r.settings.cluster.world) + "=" + std::to_string(r.settings.strategy.stages) + "x" +
           std::to_string(r.settings.strategy.dp);
  };
  EXPECT_EQ(layout(R"({"strategy": {"name": "pp-gpipe"}})"), "2=2x1");
  EXPECT_EQ(layout(R"({"strategy": {"name": "pp-gpipe", "stages": 4, "dp": 2}})"), "8=4x2");
  EXPECT_EQ(layout(R"({"strategy": {"name": "pp-1f1b", "dp": 2}, "cluster": {"world": 8}})"), "8=4x2");
  EXPECT_EQ(layout(R"({"strategy": {"name": "pp-1f1b", "stages": 2}, "cluster": {"world": 8}})"), "8=2x4");
  EXPECT_EQ(layout(R"({"strategy": {"name": "mp"}, "cluster": {"world": 3}})"), "3=3x1");
  EXPECT_EQ(layout(R"({"strategy": {"name": "zero3"}, "cluster": {"world": 8}})"), "8=1x1");
}

TEST(ModelSpec, ParameterCounts) {
  EXPECT_EQ(parse_model_spec("params:7.5e9").parameter_count(), 7'500'000'000);
  EXPECT_EQ(parse_model_spec("params:125M").parameter_count(), 125'000'000);
  EXPECT_EQ(parse_model_spec("params:1.3B:24").layers.size(), 24u);
  EXPECT_EQ(parse_model_spec("params:1001:10").parameter_count(), 1001);  // the first block takes the remainder
  EXPECT_THROW(parse_model_spec("params:0"), ModelSpecError);
  EXPECT_THROW(parse_model_spec("params:10:20"), ModelSpecError);
}

}  // namespace
}  // namespace shardscope
