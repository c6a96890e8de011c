// Lowering: the notes every plan carries, then the strategy's row (strategy/registry.h) does the rest.
#include "strategy/lower.h"

#include <numeric>
#include <stdexcept>

#include "plan/validate.h"
#include "strategy/lowering_context.h"
#include "strategy/registry.h"

namespace shardscope {

Plan lower_plan(const ResolvedScenario& scenario) {
  const auto& settings = scenario.settings;
  LoweringContext context{scenario, framework_behaviour(settings.accounting, scenario.gpu_arch)};
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
  const StrategyInfo& strategy = strategy_info(settings.strategy.kind);
  if (strategy.notes)
    for (auto& note : strategy.notes(scenario)) plan.notes.push_back(std::move(note));
  strategy.lower(context, plan);
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
