// The strategy table's lowering half: what each strategy of scenario/strategy_rules.cpp lowers to, and the notes
// it adds to a plan. The lowering files it names do the work.
#include "strategy/registry.h"

#include <stdexcept>
#include <string>

#include "strategy/data_parallel.h"
#include "strategy/ddp.h"
#include "strategy/fsdp.h"
#include "strategy/pipeline_strategies.h"
#include "strategy/replica_lowering.h"
#include "strategy/zero1.h"
#include "strategy/zero2.h"
#include "strategy/zero3.h"

namespace shardscope {

namespace {

struct Lowering {
  StrategyKind kind;
  void (*lower)(const LoweringContext& context, Plan& plan);
  std::vector<std::string> (*notes)(const ResolvedScenario& scenario) = nullptr;
  std::int64_t (*extra_ops_per_step)(const ResolvedScenario& scenario) = nullptr;
  const char* extra_ops_option = nullptr;
};

const std::vector<StrategyInfo>& table() {
  static const std::vector<StrategyInfo> rows = [] {
    const Lowering lowerings[] = {
        {StrategyKind::Single, lower_replicas<LocalTraining>},
        {StrategyKind::DataParallel, lower_data_parallel},
        {StrategyKind::BalancedDataParallel, lower_balanced_data_parallel},
        {StrategyKind::Ddp, lower_replicas<DdpTraining>},
        {StrategyKind::Zero1, lower_replicas<Zero1Training>},
        {StrategyKind::Zero2, lower_replicas<Zero2Training>, zero2_notes, zero2_extra_ops_per_step,
         "strategy.allgather_bucket_mb"},
        {StrategyKind::Zero3, lower_replicas<Zero3Training>, zero3_notes},
        {StrategyKind::Fsdp, lower_fsdp, fsdp_notes, fsdp_extra_ops_per_step},
        {StrategyKind::ModelParallel, lower_model_parallel},
        {StrategyKind::PipelineGPipe, lower_pp_gpipe},
        {StrategyKind::Pipeline1F1B, lower_pp_1f1b},
    };
    std::vector<StrategyInfo> joined;
    for (const StrategyRules& rules : strategy_rules_table()) {
      const Lowering* found = nullptr;
      for (const Lowering& l : lowerings)
        if (l.kind == rules.kind) found = &l;
      if (!found) throw std::logic_error("strategy '" + std::string(rules.name) + "' has no lowering in strategy/registry.cpp");
      joined.push_back(StrategyInfo{rules, found->lower, found->notes, found->extra_ops_per_step, found->extra_ops_option});
    }
    return joined;
  }();
  return rows;
}

}  // namespace

std::span<const StrategyInfo> strategies() { return table(); }

const StrategyInfo& strategy_info(StrategyKind kind) {
  for (const auto& row : table())
    if (row.kind == kind) return row;
  throw std::logic_error("strategy " + std::to_string(static_cast<int>(kind)) + " has no row in strategy/registry.cpp");
}

const StrategyInfo* find_strategy(std::string_view name) {
  for (const auto& row : table())
    if (row.name == name) return &row;
  return nullptr;
}

}  // namespace shardscope
