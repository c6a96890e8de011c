// The strategy table: one row per strategy, options that exist, misplaced options named, and the data shard each
// lowering gives its programs (what the executors load), checked against DistributedSampler's split by hand.
#include <gtest/gtest.h>

#include <set>

#include "scenario/scenario_fields.h"
#include "strategy/lower.h"
#include "strategy/registry.h"

namespace shardscope {
namespace {

std::string error_of(const Scenario& s) {
  try {
    resolve_scenario(s);
  } catch (const ScenarioError& error) {
    return error.what();
  }
  return "";
}

TEST(StrategyRegistry, OneRowPerStrategyInTheOrderUsersSee) {
  const std::vector<std::string> expected = {"single", "dp", "balanced-dp", "ddp", "zero1", "zero2", "zero3",
                                             "fsdp", "mp", "pp-gpipe", "pp-1f1b"};
  std::vector<std::string> names;
  std::set<StrategyKind> kinds;
  for (const auto& row : strategies()) {
    names.emplace_back(row.name);
    EXPECT_TRUE(kinds.insert(row.kind).second) << row.name;
    EXPECT_EQ(parse_strategy(std::string(row.name)), row.kind);
    EXPECT_EQ(strategy_name(row.kind), row.name);
    EXPECT_FALSE(row.description.empty()) << row.name;
    EXPECT_FALSE(row.counterpart.empty()) << row.name;
    EXPECT_NE(row.lower, nullptr) << row.name;
  }
  EXPECT_EQ(names, expected);
  EXPECT_EQ(kinds.size(), static_cast<std::size_t>(StrategyKind::Pipeline1F1B) + 1);  // every enumerator has a row
}

TEST(StrategyRegistry, OptionsAreStrategyFieldsOfTheScenarioFile) {
  const std::set<std::string_view> strategy_options = {
      "strategy.bucket_cap_mb", "strategy.gradient_as_bucket_view", "strategy.gpu0_batch", "strategy.stages",
      "strategy.micro_batches", "strategy.dp", "strategy.dp_zero_stage", "strategy.prefetch",
      "strategy.reduce_bucket_mb", "strategy.allgather_bucket_mb", "strategy.zero2_reduce", "strategy.zero3_init",
      "strategy.fsdp_units", "strategy.reshard_after_forward", "strategy.fsdp_param_dtype", "strategy.fsdp_reduce_dtype",
      "strategy.process_group", "strategy.tp", "strategy.sequence_parallel"};
  for (const auto& row : strategies())
    for (const auto key : row.options) {
      EXPECT_TRUE(strategy_options.count(key)) << row.name << ": " << key;
      EXPECT_NE(find_scenario_field(key), nullptr) << key;
    }
  EXPECT_EQ(strategies_accepting("strategy.prefetch"), (std::vector<std::string>{"zero3", "fsdp"}));
  EXPECT_EQ(strategies_accepting("strategy.reshard_after_forward"), std::vector<std::string>{"fsdp"});
  EXPECT_EQ(strategies_accepting("strategy.zero2_reduce"), std::vector<std::string>{"zero2"});
  EXPECT_EQ(strategies_accepting("strategy.zero3_init"), std::vector<std::string>{"zero3"});
  EXPECT_EQ(strategies_accepting("strategy.micro_batches"), (std::vector<std::string>{"pp-gpipe", "pp-1f1b"}));
}

TEST(StrategyRegistry, AMisplacedOptionNamesItAndItsStrategies) {
  Scenario s;
  s.strategy.kind = StrategyKind::Zero2;
  s.strategy.prefetch = 2;
  EXPECT_EQ(error_of(s), "strategy.prefetch: only applies to zero3 and fsdp");
  s = Scenario{};
  s.strategy.micro_batches = 4;
  EXPECT_EQ(error_of(s), "strategy.micro_batches: only applies to pp-gpipe and pp-1f1b");
  s = Scenario{};
  s.strategy.kind = StrategyKind::ModelParallel;
  s.strategy.dp = 2;
  EXPECT_EQ(error_of(s), "strategy.dp: only applies to pp-gpipe and pp-1f1b");
  // A resolved scenario (stages 1, dp 1 filled in) reads back and resolves again.
  const ResolvedScenario resolved = resolve_scenario(Scenario{});
  EXPECT_EQ(error_of(parse_scenario_json(scenario_to_json(resolved.settings), "x")), "");
}

std::vector<std::pair<int, int>> shards(StrategyKind kind, int world, int stages = 0) {
  Scenario s;
  s.model.spec = "mlp:4x8";
  s.training.batch = 8;
  s.strategy.kind = kind;
  s.cluster.world = world;
  s.strategy.stages = stages;
  if (kind == StrategyKind::BalancedDataParallel) s.strategy.gpu0_batch = 2;
  std::vector<std::pair<int, int>> out;
  for (const auto& program : lower_plan(resolve_scenario(s)).programs) out.emplace_back(program.data.index, program.data.count);
  return out;
}

TEST(StrategyRegistry, ProgramsCarryTheirDataShard) {
  using V = std::vector<std::pair<int, int>>;
  EXPECT_EQ(shards(StrategyKind::Ddp, 4), (V{{0, 4}, {1, 4}, {2, 4}, {3, 4}}));
  EXPECT_EQ(shards(StrategyKind::Zero3, 2), (V{{0, 2}, {1, 2}}));
  EXPECT_EQ(shards(StrategyKind::Single, 1), (V{{0, 1}}));
  // DataParallel: device 0 loads the whole batch and scatters it; the others load nothing of their own.
  EXPECT_EQ(shards(StrategyKind::DataParallel, 3), (V{{0, 1}, {0, 1}, {0, 1}}));
  EXPECT_EQ(shards(StrategyKind::ModelParallel, 2), (V{{0, 1}, {0, 1}}));
  // Pipelines: rank = stage · dp + replica; every stage of replica d loads replica d's samples.
  EXPECT_EQ(shards(StrategyKind::Pipeline1F1B, 4, 2), (V{{0, 2}, {1, 2}, {0, 2}, {1, 2}}));
  EXPECT_EQ(shards(StrategyKind::PipelineGPipe, 4, 4), (V{{0, 1}, {0, 1}, {0, 1}, {0, 1}}));
}

}  // namespace
}  // namespace shardscope
