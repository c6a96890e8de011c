// The strategies, one row each: the descriptive rules of scenario/strategy_rules.h (name, counterpart, options, rank
// layout, refusals) joined with the lowering function and the notes it adds to a plan. Lowering, validation, the
// CLI's help and `strategies` command, the GUI's strategy list and form, and the reports read this table; nothing
// else switches on the strategy. A new strategy is its StrategyKind, a rules row, one lowering file and a row here.
// Usage:
//   const StrategyInfo& info = strategy_info(StrategyKind::Zero3);
//   info.lower(context, plan);
//   if (!strategy_accepts(kind, "strategy.prefetch")) ...
#pragma once
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
};

std::span<const StrategyInfo> strategies();  // in the order of the CLI help and the GUI list
const StrategyInfo& strategy_info(StrategyKind kind);
const StrategyInfo* find_strategy(std::string_view name);

}  // namespace shardscope
