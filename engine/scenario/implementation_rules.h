// What --implementation, --attention and --precision accept together, checked once the model is built: which
// models they apply to, which strategies lower the op-by-op pass they need (training/eager/), and the combinations
// PyTorch itself refuses (flash attention on fp32 inputs). Depends on the scenario only.
#pragma once
#include "scenario/scenario.h"

namespace shardscope {

// Whether a strategy lowers each rank as one process training its own replica through a gradient sink, which the
// op-by-op pass (transformers' modules, torch.autocast) plugs into: single, ddp, zero1, zero2.
bool strategy_lowers_eager_pass(StrategyKind kind);

// Whether a resolved scenario trains through the op-by-op pass: the hf implementation, or torch.autocast.
bool uses_eager_pass(const ResolvedScenario& resolved);

// Throws ScenarioError naming the field for a combination that is not modelled or that PyTorch refuses.
void check_model_implementation(const ResolvedScenario& resolved);

}  // namespace shardscope
