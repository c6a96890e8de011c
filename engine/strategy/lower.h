// Lowering: a resolved scenario becomes a Plan, one program per rank (strategy files do the work).
// Usage:
//   Plan plan = lower_plan(resolve_scenario(scenario));
#pragma once
#include "plan/plan.h"
#include "scenario/scenario.h"

namespace shardscope {

Plan lower_plan(const ResolvedScenario& scenario);

// lower_plan, then validate_plan; a plan that fails validation is a lowering bug: throws std::logic_error listing
// the problems. What the front ends call.
Plan lower_validated_plan(const ResolvedScenario& scenario);

}  // namespace shardscope
