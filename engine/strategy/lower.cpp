// Lowering: the notes every plan carries, then the strategy's row (strategy/registry.h) does the rest.
#include "strategy/lower.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <stdexcept>

#include "model/tensor_parallel_shard.h"
#include "plan/validate.h"
#include "scenario/parallel_layout.h"
#include "strategy/lowering_context.h"
#include "strategy/registry.h"
#include "strategy/tensor_parallel.h"
#include "scenario/tensor_parallel.h"

namespace shardscope {

namespace {

std::string millions(double ops) {
  char text[32];
  std::snprintf(text, sizeof text, ops >= 1e8 ? "%.3g" : "%.1f", ops / 1e6);
  return std::string(text) + " M";
}

}  // namespace

std::int64_t estimate_plan_ops(const ResolvedScenario& scenario) {
  const auto& s = scenario.settings;
  const double stages = std::max(1, s.strategy.stages);
  const double micro = is_pipeline(s.strategy.kind) ? std::max(1, s.strategy.micro_batches) : 1;
  const double layers = std::ceil(static_cast<double>(scenario.model.layers.size()) / stages);
  const double tensors = std::ceil(static_cast<double>(scenario.model.parameter_tensor_count()) / stages);
  // 13 a layer: its forward, backward and their allocations, frees and waits, a reduction's scratch included.
  // 8 a parameter tensor; what a strategy adds on top is its registry row's (StrategyInfo::extra_ops_per_step).
  const auto extra = strategy_info(s.strategy.kind).extra_ops_per_step;
  const double per_step_extra = extra ? static_cast<double>(extra(scenario)) : 0;
  // Each rank's lowering also keeps per-layer tables of the whole model (its slots, autograd's saved tensors per
  // pass): an eighth of an op's work per layer, which only matters for deep pipelines on many ranks, where it made
  // 4,096 one-layer stages take 1.3 s per lowering instead of 0.25.
  const double whole_model = static_cast<double>(scenario.model.layers.size()) / 8;
  // Tensor parallelism (strategy/tensor_parallel.h) adds its collectives: a block's 2 forward and 2 backward
  // all-reduces, or under sequence parallelism 4 forward and 6 backward all-gathers and reduce-scatters.
  const double tp_ops = s.strategy.tp > 1 ? (s.strategy.sequence_parallel ? 10 : 4) : 0;
  const double per_rank = 64 + whole_model + static_cast<double>(s.training.steps) *
                                                 ((13 + tp_ops) * micro * layers + 8 * tensors + per_step_extra);
  const double total = per_rank * std::max(1, s.cluster.world);
  return total >= 9e18 ? std::numeric_limits<std::int64_t>::max() : static_cast<std::int64_t>(total);
}

void check_plan_size(const ResolvedScenario& scenario) {
  const std::int64_t estimate = estimate_plan_ops(scenario);
  if (estimate <= kMaxPlanOps) return;
  const auto& s = scenario.settings;
  const StrategyInfo& strategy = strategy_info(s.strategy.kind);
  const double per_rank = static_cast<double>(estimate) / std::max(1, s.cluster.world);
  const double extra = strategy.extra_ops_per_step ? static_cast<double>(strategy.extra_ops_per_step(scenario)) : 0;
  std::string drivers = std::to_string(s.cluster.world) + " ranks × about " + std::to_string(static_cast<std::int64_t>(per_rank)) +
                        " ops each (" + std::to_string(scenario.model.layers.size()) + " layers, " +
                        std::to_string(s.training.steps) + (s.training.steps == 1 ? " step" : " steps");
  if (is_pipeline(s.strategy.kind))
    drivers += ", " + std::to_string(s.strategy.micro_batches) + (s.strategy.micro_batches == 1 ? " micro-batch" : " micro-batches");
  // Bucketed collectives that dominate a step name their option: a bucket far too small is the thing to change.
  const bool buckets_drive = strategy.extra_ops_option && extra * static_cast<double>(s.training.steps) > per_rank / 2;
  if (extra > 0 && strategy.extra_ops_option)
    drivers += ", " + std::to_string(static_cast<std::int64_t>(extra)) + " ops a step in chunks of " + strategy.extra_ops_option;
  drivers += ")";
  const std::string field = buckets_drive ? strategy.extra_ops_option : s.cluster.world > 1 ? "cluster.world" : "training.steps";
  throw ScenarioError(field, "the plan would have about " + millions(static_cast<double>(estimate)) + " ops (" + drivers +
                                 "), more than the limit of " + millions(static_cast<double>(kMaxPlanOps)) +
                                 " ops a plan may have; use " +
                                 (buckets_drive ? std::string("a larger bucket") : "fewer ranks, steps, layers or micro-batches"));
}

namespace {

Plan lower_strategy(const ResolvedScenario& scenario, const LoweringOptions& options) {
  const auto& settings = scenario.settings;
  LoweringContext context{scenario, framework_behaviour(settings.accounting, scenario.gpu_arch, scenario.device)};
  context.kernel_operands = options.kernel_operands;
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
    plan.notes.push_back("cuBLAS and cuBLASLt workspaces, mse_loss's result and reductions' scratch follow PyTorch 2.x as "
                         "measured on 2.11 (one workspace per thread and stream, from the caching allocator)");

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

}  // namespace

Plan lower_plan(const ResolvedScenario& scenario, const LoweringOptions& options) {
  check_plan_size(scenario);  // before any op is built: a 65,536-rank plan is refused in microseconds
  const auto& strategy = scenario.settings.strategy;
  if (strategy.tp == 1) return lower_strategy(scenario, options);
  // The strategy lowered for one tensor-parallel rank of each group, then spread over the group (tensor_parallel.h).
  ResolvedScenario base = scenario;
  base.settings.cluster.world = strategy_world(scenario.settings);
  base.model = tensor_parallel_shard(scenario.model, strategy.tp, strategy.sequence_parallel);
  // An MLP under sequence parallelism: each rank's samples outside the tensor-parallel regions are b/tp of the
  // batch (its rows; scenario/tensor_parallel.h checks tp divides it), the size the strategy lowers for.
  if (base.model.sequence_parallel_ranks > 1) base.settings.training.batch /= strategy.tp;
  return expand_tensor_parallel(lower_strategy(base, options), scenario, base.model);
}

Plan lower_validated_plan(const ResolvedScenario& scenario, const LoweringOptions& options) {
  Plan plan = lower_plan(scenario, options);
  const auto validation = validate_plan(plan);
  if (!validation.ok()) {
    std::string message = "internal error: the lowered plan is invalid:";
    for (const auto& error : validation.errors) message += "\n  " + error;
    throw std::logic_error(message);
  }
  return plan;
}

}  // namespace shardscope
