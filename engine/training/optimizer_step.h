// optimizer.step() for SGD, momentum, Adam and AdamW: lazy state creation and the temporaries of each
// implementation (2.x foreach, 1.8 per-parameter loop), as allocations on one rank.
#pragma once
#include <vector>

#include "plan/program_builder.h"
#include "scenario/scenario.h"
#include "training/framework_behaviour.h"
#include "training/param_slot.h"

namespace shardscope {

struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::Adam;
  double weight_decay = 0;
  Bytes step_tensor_bytes = 0;  // set from FrameworkBehaviour by lower_optimizer_step
};

// Runs one step over `params` (the rank's own parameters; each must have a .grad). `fp32_grads`, when given (mixed
// precision), are the gradients the step reads instead of each .grad, in the same order.
void lower_optimizer_step(ProgramBuilder& builder, const FrameworkBehaviour& behaviour, const OptimizerConfig& config,
                          const std::vector<ParamSlot*>& params, const std::vector<TensorId>& fp32_grads = {});

// Bytes of optimizer state per parameter byte once created (Adam: exp_avg + exp_avg_sq = 2).
int optimizer_state_multiplier(OptimizerKind kind);

}  // namespace shardscope
