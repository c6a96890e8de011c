// Lowering: a resolved scenario becomes a Plan, one program per rank (strategy files do the work).
// Usage:
//   Plan plan = lower_plan(resolve_scenario(scenario));
#pragma once
#include "plan/plan.h"
#include "scenario/scenario.h"

namespace shardscope {

Plan lower_plan(const ResolvedScenario& scenario);

}  // namespace shardscope
