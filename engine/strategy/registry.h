// The strategies, one row each: the descriptive rules of scenario/strategy_rules.h (name, counterpart, options, rank
// layout, refusals) joined with the lowering function and the notes it adds to a plan. Lowering, validation, the
// CLI's help and `strategies` command, the GUI's strategy list and form, and the reports read this table; nothing
// else switches on the strategy. A new strategy is its StrategyKind, a rules row, one lowering file and a row here.
// Usage:
//   const StrategyInfo& info = strategy_info(StrategyKind::Zero3);
//   info.lower(context, plan);
//   if (!strategy_accepts(kind, "strategy.prefetch")) ...
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "plan/plan.h"
#include "scenario/scenario.h"
#include "scenario/strategy_rules.h"

namespace shardscope {

struct LoweringContext;

struct StrategyInfo : StrategyRules {
  void (*lower)(const LoweringContext& context, Plan& plan) = nullptr;
  std::vector<std::string> (*notes)(const ResolvedScenario& scenario) = nullptr;  // added to the plan's notes
  // Ops a step adds on each rank beyond estimate_plan_ops' per-layer and per-tensor counts (chunked collectives
  // whose number an option sets, per-parameter copies), so that check_plan_size refuses them before lowering.
  std::int64_t (*extra_ops_per_step)(const ResolvedScenario& scenario) = nullptr;
  // The scenario key that sets them ("strategy.allgather_bucket_mb"), named when they make a plan too large; nullptr
  // where no option does.
  const char* extra_ops_option = nullptr;
};

std::span<const StrategyInfo> strategies();  // in the order of the CLI help and the GUI list
const StrategyInfo& strategy_info(StrategyKind kind);
const StrategyInfo* find_strategy(std::string_view name);

}  // namespace shardscope
