// Dispatch from strategy name to its lowering; fills the plan's groups and notes.
#include "strategy/lower.h"

#include <memory>
#include <numeric>

#include "strategy/data_parallel.h"
#include "strategy/ddp.h"
#include "strategy/zero1.h"

namespace shardscope {

Plan lower_plan(const ResolvedScenario& scenario) {
  const auto& settings = scenario.settings;
  LoweringContext context{scenario, framework_behaviour(settings.accounting.mode, scenario.gpu_arch)};
  Plan plan;
  plan.strategy = strategy_name(settings.strategy.kind);
  plan.behaviour = context.behaviour.name;
  std::vector<int> everyone(static_cast<std::size_t>(settings.cluster.world));
  std::iota(everyone.begin(), everyone.end(), 0);
  plan.groups.push_back(everyone);
  context.world_group = 0;

  for (const auto& note : scenario.model.notes) plan.notes.push_back(note);
  if (scenario.model.has_unknown_workspaces())
    plan.notes.push_back("estimate: cuDNN convolution workspaces depend on the algorithm cuDNN picks at run time and are not counted");
  if (settings.accounting.mode != AccountingMode::PyTorch18)
    plan.notes.push_back("cuBLAS workspaces follow PyTorch 2.0-2.x (one per thread and stream, from the caching allocator); "
                         "cuBLASLt per-call workspaces are not modelled");

  switch (settings.strategy.kind) {
    case StrategyKind::DataParallel:
    case StrategyKind::BalancedDataParallel:
      lower_data_parallel(context, plan);
      return plan;
    case StrategyKind::Single:
    case StrategyKind::Ddp:
    case StrategyKind::Zero1:
      break;
    case StrategyKind::Zero2:
    case StrategyKind::Zero3:
    case StrategyKind::ModelParallel:
    case StrategyKind::PipelineGPipe:
    case StrategyKind::Pipeline1F1B:
      throw ScenarioError("strategy.name", "'" + plan.strategy + "' is not implemented yet");
  }
  for (int rank = 0; rank < settings.cluster.world; ++rank) {
    ProgramBuilder builder(rank);
    std::unique_ptr<LocalTraining> training;
    if (settings.strategy.kind == StrategyKind::Single) training = std::make_unique<LocalTraining>(context, builder);
    else if (settings.strategy.kind == StrategyKind::Ddp) training = std::make_unique<DdpTraining>(context, builder);
    else training = std::make_unique<Zero1Training>(context, builder);
    training->lower();
    plan.programs.push_back(builder.finish());
  }
  return plan;
}

}  // namespace shardscope
