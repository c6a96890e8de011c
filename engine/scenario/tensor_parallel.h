// Tensor and sequence parallelism of a scenario (strategy.tp, strategy.sequence_parallel): which models split over
// tp ranks and how, and the per-layer activation figure of Korthikanti et al. 2022, Table 2, for the scenario.
#pragma once
#include <cstdint>
#include <optional>

#include "model/model.h"
#include "scenario/scenario.h"

namespace shardscope {

// The ranks the strategy itself lays out (world / tp): a tensor-parallel group of tp ranks stands where the
// strategy alone puts one.
int strategy_world(const Scenario& settings);

// Throws ScenarioError naming the field for a model that does not split over strategy.tp ranks: sp without tp > 1,
// a model with neither MLP pairs nor Megatron-style transformer blocks, heads / KV heads / hidden / MLP width /
// vocabulary not divisible by tp, an odd number of MLP Linear layers (they split in column → row pairs), and with
// sp a sequence length (an MLP: a batch per micro-batch) not divisible by tp.
void check_tensor_parallel(const Scenario& settings, const Model& model);

// model.activation_bytes_per_layer: what one transformer block keeps for backward on one rank for its micro-batch
// (the per-rank batch, divided by the micro-batches of a pipeline), under the scenario's tp, sp and recomputation:
// Korthikanti et al.'s sbh(10 + 24/t + 5as/(ht)) and its other rows at 16-bit (model/tensor_parallel_costs.h).
// Unset for models without transformer blocks and for --implementation hf, whose blocks are counted op by op.
std::optional<std::int64_t> activation_bytes_per_layer(const ResolvedScenario& scenario);

}  // namespace shardscope
