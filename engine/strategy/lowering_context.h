// What every strategy lowering receives: the resolved scenario, the framework behaviour it follows,
// and the plan's process groups.
#pragma once
#include <vector>

#include "plan/plan.h"
#include "scenario/scenario.h"
#include "training/framework_behaviour.h"

namespace shardscope {

struct LoweringContext {
  const ResolvedScenario& scenario;
  FrameworkBehaviour behaviour;
  int world_group = 0;  // index into Plan::groups of the group of all ranks
  bool kernel_operands = true;  // LoweringOptions::kernel_operands
  int world() const { return scenario.settings.cluster.world; }
  // The element type of parameters, gradients and activations: the training dtype (16-bit under mixed precision),
  // or fsdp's MixedPrecisionPolicy param_dtype (the sharded parameters stay fp32; strategy/fsdp.cpp says so per tensor).
  ElementType compute_element() const {
    const auto& strategy = scenario.settings.strategy;
    if (strategy.kind == StrategyKind::Fsdp && strategy.fsdp_param_dtype) return element_type_of(*strategy.fsdp_param_dtype);
    return element_type_of(scenario.settings.training.dtype);
  }
};

// Phase names, in time order (the public JSON values).
namespace phase {
inline constexpr const char* kModelCreated = "model_created";
inline constexpr const char* kWrapped = "wrapped";
inline constexpr const char* kForward = "forward";
inline constexpr const char* kBeforeStep = "before_step";
inline constexpr const char* kAfterStep = "after_step";
}  // namespace phase

}  // namespace shardscope
