// Resolution and checks of world × stages × dp, micro-batches, and the options that belong to one strategy.
#include "scenario/parallel_layout.h"

namespace shardscope {

namespace {

std::string str(int value) { return std::to_string(value); }

void resolve_pipeline(Scenario& s, const Model& model) {
  auto& world = s.cluster.world;
  auto& stages = s.strategy.stages;
  auto& dp = s.strategy.dp;
  if (s.strategy.kind == StrategyKind::ModelParallel) {
    if (dp > 1) throw ScenarioError("strategy.dp", "naive model parallelism has no data-parallel replicas; use pp-gpipe or pp-1f1b with dp");
    dp = 1;
    if (stages == 0) stages = world == 0 ? 2 : world;
    if (world == 0) world = stages;
    if (world != stages)
      throw ScenarioError("strategy.stages", "mp puts one stage on each device: stages (" + str(stages) + ") must equal world (" + str(world) + ")");
  } else if (world == 0) {
    if (stages == 0) stages = 2;
    if (dp == 0) dp = 1;
    world = stages * dp;
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
  } else if (stages * dp != world) {
    throw ScenarioError("cluster.world", "world (" + str(world) + ") must equal stages × dp (" + str(stages) + " × " + str(dp) + ")");
  }
  if (stages > static_cast<int>(model.layers.size()))
    throw ScenarioError("strategy.stages", "more stages (" + str(stages) + ") than layers in the model (" +
                                               str(static_cast<int>(model.layers.size())) + ")");
  const int micro = s.strategy.micro_batches;
  if (s.strategy.kind == StrategyKind::ModelParallel && micro != 1)
    throw ScenarioError("strategy.micro_batches", "naive model parallelism runs the batch whole; use pp-gpipe or pp-1f1b for micro-batches");
  if (micro > s.training.batch)
    throw ScenarioError("strategy.micro_batches", "more micro-batches (" + str(micro) + ") than samples in the batch (" + str(s.training.batch) + ")");
  if (s.training.batch % micro != 0)
    throw ScenarioError("strategy.micro_batches", "must divide the batch (" + str(s.training.batch) + " into " + str(micro) + ")");
  if (s.strategy.dp_zero_stage == 1 && dp < 2)
    throw ScenarioError("strategy.dp_zero_stage", "ZeRO-1 inside the data-parallel groups needs dp ≥ 2 (got " + str(dp) + ")");
}

}  // namespace

bool is_pipeline(StrategyKind kind) {
  return kind == StrategyKind::ModelParallel || kind == StrategyKind::PipelineGPipe || kind == StrategyKind::Pipeline1F1B;
}

void resolve_parallel_layout(Scenario& s, const Model& model) {
  const auto kind = s.strategy.kind;
  if (s.strategy.dp_zero_stage != 0 && s.strategy.dp_zero_stage != 1)
    throw ScenarioError("strategy.dp_zero_stage", "must be 0 or 1 (got " + str(s.strategy.dp_zero_stage) + ")");
  if (s.strategy.prefetch < 0 || s.strategy.prefetch > 8)
    throw ScenarioError("strategy.prefetch", "must be between 0 and 8 (got " + str(s.strategy.prefetch) + ")");
  if (s.strategy.reduce_bucket_mb && *s.strategy.reduce_bucket_mb <= 0) throw ScenarioError("strategy.reduce_bucket_mb", "must be positive");
  if (s.strategy.allgather_bucket_mb && *s.strategy.allgather_bucket_mb <= 0) throw ScenarioError("strategy.allgather_bucket_mb", "must be positive");
  const bool zero23 = kind == StrategyKind::Zero2 || kind == StrategyKind::Zero3;
  if (!zero23 && (s.strategy.reduce_bucket_mb || s.strategy.allgather_bucket_mb))
    throw ScenarioError(s.strategy.reduce_bucket_mb ? "strategy.reduce_bucket_mb" : "strategy.allgather_bucket_mb",
                        "only applies to zero2 and zero3");
  if (kind != StrategyKind::Zero3 && s.strategy.prefetch != 1) throw ScenarioError("strategy.prefetch", "only applies to zero3");
  if (is_pipeline(kind)) {
    if (s.training.no_grad && s.strategy.dp_zero_stage == 1)
      throw ScenarioError("training.no_grad", "inference has no optimizer, so ZeRO-1 has nothing to shard");
    resolve_pipeline(s, model);
    return;
  }
  if (s.strategy.stages > 1) throw ScenarioError("strategy.stages", "only applies to mp, pp-gpipe and pp-1f1b");
  if (s.strategy.dp > 1) throw ScenarioError("strategy.dp", "only applies to pp-gpipe and pp-1f1b (the other strategies are data-parallel over world)");
  if (s.strategy.micro_batches != 1) throw ScenarioError("strategy.micro_batches", "only applies to pp-gpipe and pp-1f1b");
  if (s.strategy.dp_zero_stage != 0) throw ScenarioError("strategy.dp_zero_stage", "only applies to pp-gpipe and pp-1f1b");
  if (s.cluster.world == 0) s.cluster.world = kind == StrategyKind::Single ? 1 : 2;
  s.strategy.stages = 1;
  s.strategy.dp = 1;
}

}  // namespace shardscope
