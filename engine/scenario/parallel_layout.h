// World, pipeline stages and data-parallel replicas of a scenario: derives the unset ones and rejects layouts
// that cannot run (stages not dividing world, more stages than layers, micro-batches larger than the batch).
#pragma once
#include "model/model.h"
#include "scenario/scenario.h"

namespace shardscope {

bool is_pipeline(StrategyKind kind);  // mp, pp-gpipe, pp-1f1b: layers split over stages

// Fills settings.cluster.world, strategy.stages and strategy.dp (each ≥ 1 afterwards) or throws ScenarioError.
// Rules: mp: stages = world (default 2), dp = 1. pp-*: world = stages × dp; of the three, unset ones are derived
// (world unset: stages default 2, dp default 1; stages unset: world / dp; dp unset: world / stages).
// Other strategies: stages = dp = 1, world default 2 (single: 1). With strategy.tp > 1 these rules lay out
// world / tp ranks and world is tp times that (tensor-parallel groups of tp consecutive ranks).
void resolve_parallel_layout(Scenario& settings, const Model& model);

}  // namespace shardscope
