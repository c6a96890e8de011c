// Dispatch from strategy name to its lowering; fills the plan's groups and notes.
#include "strategy/lower.h"

#include <memory>
#include <numeric>
#include <stdexcept>

#include "plan/validate.h"

#include "strategy/data_parallel.h"
#include "strategy/ddp.h"
#include "strategy/pipeline_strategies.h"
#include "strategy/zero1.h"
#include "strategy/zero2.h"
#include "strategy/zero3.h"

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

  if (scenario.model.spec.rfind("params:", 0) == 0)
    plan.notes.push_back("model '" + scenario.model.spec + "' is a parameter count only: parameters, gradients, optimizer "
                         "state and the strategy's buffers are modelled, activations and FLOPs are not");
  if (is_mixed_precision(settings.training.dtype))
    plan.notes.push_back(dtype_name(settings.training.dtype) + " mixed precision as in the ZeRO paper: 16-bit parameters and gradients "
                         "(2 + 2 B per parameter), fp32 master weights and Adam state (4 + 4 + 4 B, K = 12); the master "
                         "weights are counted as optimizer_state, as the paper counts them in K");
  if (settings.strategy.kind == StrategyKind::Zero2)
    for (auto& note : zero2_notes(scenario)) plan.notes.push_back(note);
  if (settings.strategy.kind == StrategyKind::Zero3)
    for (auto& note : zero3_notes(scenario)) plan.notes.push_back(note);

  switch (settings.strategy.kind) {
    case StrategyKind::DataParallel:
    case StrategyKind::BalancedDataParallel:
      lower_data_parallel(context, plan);
      return plan;
    case StrategyKind::Single:
    case StrategyKind::Ddp:
    case StrategyKind::Zero1:
    case StrategyKind::Zero2:
    case StrategyKind::Zero3:
      break;
    case StrategyKind::ModelParallel:
      lower_model_parallel(context, plan);
      return plan;
    case StrategyKind::PipelineGPipe:
      lower_pp_gpipe(context, plan);
      return plan;
    case StrategyKind::Pipeline1F1B:
      lower_pp_1f1b(context, plan);
      return plan;
  }
  for (int rank = 0; rank < settings.cluster.world; ++rank) {
    ProgramBuilder builder(rank);
    std::unique_ptr<LocalTraining> training;
    if (settings.strategy.kind == StrategyKind::Single) training = std::make_unique<LocalTraining>(context, builder);
    else if (settings.strategy.kind == StrategyKind::Ddp) training = std::make_unique<DdpTraining>(context, builder);
    else if (settings.strategy.kind == StrategyKind::Zero1) training = std::make_unique<Zero1Training>(context, builder);
    else if (settings.strategy.kind == StrategyKind::Zero2) training = std::make_unique<Zero2Training>(context, builder);
    else training = std::make_unique<Zero3Training>(context, builder);
    training->lower();
    plan.programs.push_back(builder.finish());
  }
  return plan;
}

Plan lower_validated_plan(const ResolvedScenario& scenario) {
  Plan plan = lower_plan(scenario);
  const auto validation = validate_plan(plan);
  if (!validation.ok()) {
    std::string message = "internal error: the lowered plan is invalid:";
    for (const auto& error : validation.errors) message += "\n  " + error;
    throw std::logic_error(message);
  }
  return plan;
}

}  // namespace shardscope
