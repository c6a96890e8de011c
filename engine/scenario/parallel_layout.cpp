// Resolution and checks of world × stages × dp, micro-batches, and the options that belong to one strategy.
#include "scenario/parallel_layout.h"

#include "scenario/strategy_rules.h"

namespace shardscope {

namespace {

std::string str(int value) { return std::to_string(value); }

constexpr int kMaxWorld = 65536;  // cluster.world's max (scenario_fields.cpp)

void resolve_pipeline(Scenario& s, const Model& model) {
  auto& world = s.cluster.world;
  auto& stages = s.strategy.stages;
  auto& dp = s.strategy.dp;
  if (strategy_rules(s.strategy.kind).layout == RankLayout::Stages) {  // one replica: no dp, no micro-batches
    dp = 1;
    if (stages == 0) stages = world == 0 ? 2 : world;
    if (world == 0) world = stages;
    if (world != stages)
      throw ScenarioError("strategy.stages", "mp puts one stage on each device: stages (" + str(stages) + ") must equal world (" + str(world) + ")");
  } else if (world == 0) {
    if (stages == 0) stages = 2;
    if (dp == 0) dp = 1;
    // In 64 bits: stages and dp are each at most 65536, their product need not fit an int.
    const std::int64_t product = static_cast<std::int64_t>(stages) * dp;
    if (product > kMaxWorld)
      throw ScenarioError("cluster.world", "stages × dp = " + str(stages) + " × " + str(dp) + " = " + std::to_string(product) +
                                               " ranks; the world must be at most " + str(kMaxWorld));
    world = static_cast<int>(product);
  } else if (stages == 0 && dp == 0) {
    stages = world;
    dp = 1;
  } else if (stages == 0) {
    if (world % dp != 0) throw ScenarioError("strategy.dp", "dp (" + str(dp) + ") must divide world (" + str(world) + ")");
    stages = world / dp;
  } else if (dp == 0) {
    if (world % stages != 0)
      throw ScenarioError("strategy.stages", "stages (" + str(stages) + ") must divide world (" + str(world) + ")");
    dp = world / stages;
  } else if (static_cast<std::int64_t>(stages) * dp != world) {
    throw ScenarioError("cluster.world", "world (" + str(world) + ") must equal stages × dp (" + str(stages) + " × " + str(dp) + ")");
  }
  if (stages > static_cast<int>(model.layers.size()))
    throw ScenarioError("strategy.stages", "more stages (" + str(stages) + ") than layers in the model (" +
                                               str(static_cast<int>(model.layers.size())) + ")");
  const int micro = s.strategy.micro_batches;
  if (micro > s.training.batch)
    throw ScenarioError("strategy.micro_batches", "more micro-batches (" + str(micro) + ") than samples in the batch (" + str(s.training.batch) + ")");
  if (s.training.batch % micro != 0)
    throw ScenarioError("strategy.micro_batches", "must divide the batch (" + str(s.training.batch) + " into " + str(micro) + ")");
  if (s.strategy.dp_zero_stage == 1 && dp < 2)
    throw ScenarioError("strategy.dp_zero_stage", "ZeRO-1 inside the data-parallel groups needs dp ≥ 2 (got " + str(dp) + ")");
}

}  // namespace

bool is_pipeline(StrategyKind kind) {
  const RankLayout layout = strategy_rules(kind).layout;
  return layout == RankLayout::Stages || layout == RankLayout::StagesAndReplicas;
}

namespace {

void resolve_strategy_layout(Scenario& s, const Model& model) {
  if (is_pipeline(s.strategy.kind)) {
    if (s.training.no_grad && s.strategy.dp_zero_stage == 1)
      throw ScenarioError("training.no_grad", "inference has no optimizer, so ZeRO-1 has nothing to shard");
    resolve_pipeline(s, model);
    return;
  }
  if (s.cluster.world == 0) s.cluster.world = strategy_rules(s.strategy.kind).layout == RankLayout::OneDevice ? 1 : 2;
  s.strategy.stages = 1;
  s.strategy.dp = 1;
}

}  // namespace

void resolve_parallel_layout(Scenario& s, const Model& model) {
  check_strategy_options(s);
  const int tp = s.strategy.tp;
  if (tp == 1) {
    resolve_strategy_layout(s, model);
    return;
  }
  // world = tp × the strategy's ranks (Megatron-LM: world = tp × pp × dp): the strategy's layout is resolved on
  // world / tp ranks, as if each tensor-parallel group were one device.
  const int world = s.cluster.world;
  const auto& strategy = s.strategy;
  if (world != 0 && is_pipeline(strategy.kind) && strategy.stages > 0 && strategy.dp > 0 &&
      static_cast<std::int64_t>(tp) * strategy.stages * strategy.dp != world)
    throw ScenarioError("cluster.world", "world (" + str(world) + ") must equal tp × stages × dp (" + str(tp) + " × " +
                                             str(strategy.stages) + " × " + str(strategy.dp) + ")");
  if (world != 0 && world % tp != 0)
    throw ScenarioError("cluster.world", "world (" + str(world) + ") must be tp × the strategy's ranks, a multiple of tp (" +
                                             str(tp) + ")");
  s.cluster.world = world / tp;
  try {
    resolve_strategy_layout(s, model);
  } catch (const ScenarioError& error) {
    if (world == 0) throw;
    throw ScenarioError(error.field(), std::string(error.what()).substr(error.field().size() + 2) + "; with tp " +
                                           str(tp) + " the strategy lays out world / tp = " + str(world / tp) + " ranks");
  }
  const std::int64_t product = static_cast<std::int64_t>(s.cluster.world) * tp;
  if (product > kMaxWorld)
    throw ScenarioError("cluster.world", "tp × the strategy's ranks = " + str(tp) + " × " + str(s.cluster.world) + " = " +
                                             std::to_string(product) + " ranks; the world must be at most " + str(kMaxWorld));
  s.cluster.world = static_cast<int>(product);
}

}  // namespace shardscope
