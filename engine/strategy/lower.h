// Lowering: a resolved scenario becomes a Plan, one program per rank (strategy files do the work).
// Usage:
//   Plan plan = lower_plan(resolve_scenario(scenario));
#pragma once
#include <cstdint>

#include "plan/plan.h"
#include "scenario/scenario.h"

namespace shardscope {

// Plans beyond this many ops (all ranks together) are refused before lowering: lowering, accounting and simulating
// cost about a microsecond and a few hundred bytes per op, and `memory` lowers a plan some 40 times more to find the
// largest batch that fits. 8 M ops is about 3 s and 1.6 GB for one lowering and simulation; the largest plans shipped
// or benchmarked are under 6 M (bench_lowering: 64-rank DDP of mlp:1000x1024, 2.6 M; PP × DP × ZeRO-1 of GPT-3's
// shape, 1.4 M at 1,024 ranks and 5.7 M at 4,096).
constexpr std::int64_t kMaxPlanOps = 8'000'000;

// About how many ops the plan will have, from the scenario alone (no lowering): per rank 64 and an eighth of the
// model's layers (the lowering's whole-model tables, in ops' worth of work), plus per step 13 ops
// for each layer on the rank and micro-batch (forward, backward, their allocations and frees) and 8 for each
// parameter tensor on it (gradient, optimizer state and step, buckets, collectives) and any the strategy's bucket
// options add (StrategyInfo::extra_ops_per_step); times the ranks. Fitted to the
// plans lowered today (every strategy, MLPs, VGG16, GPT-2, Llama): between 0.8 and 2.2 times the real count.
// Saturates instead of overflowing for absurd scenarios.
std::int64_t estimate_plan_ops(const ResolvedScenario& scenario);

// Throws ScenarioError when estimate_plan_ops exceeds kMaxPlanOps, naming the estimate, the limit and what drives
// the size. lower_plan calls it first.
void check_plan_size(const ResolvedScenario& scenario);

// What a plan is lowered for. Executors read each op's operands (Op::args); simulation and memory accounting read
// none, and a plan without them is about a sixth smaller (a 1,024-rank plan holds two million).
struct LoweringOptions {
  bool kernel_operands = true;  // false: ops keep their Kernel but no args (validation then has no operands to check)
};

Plan lower_plan(const ResolvedScenario& scenario, const LoweringOptions& options = {});

// lower_plan, then validate_plan; a plan that fails validation is a lowering bug: throws std::logic_error listing
// the problems. What the front ends call.
Plan lower_validated_plan(const ResolvedScenario& scenario, const LoweringOptions& options = {});

}  // namespace shardscope
