// The strategies' descriptive rows: name, what it is, its PyTorch / DeepSpeed / Megatron counterpart, the options it
// accepts, how it lays ranks out and what it refuses. The scenario resolves and checks settings by them (so it needs
// nothing above it); strategy/registry.h adds each row's lowering. A new strategy is its StrategyKind, a row here,
// one lowering file and a row in the registry.
// Usage:
//   const StrategyRules& rules = strategy_rules(StrategyKind::Zero3);
//   if (!strategy_accepts(kind, "strategy.prefetch")) ...
#pragma once
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "scenario/scenario.h"

namespace shardscope {

// How a strategy places ranks, which decides how world / stages / dp are derived and what training.batch means.
enum class RankLayout {
  OneDevice,         // one rank (single)
  Replicas,          // every rank a data-parallel replica of the whole model; batch per rank (DDP, ZeRO)
  DrivenByDevice0,   // one process, device 0 scatters to the others; batch per device (DataParallel)
  Stages,            // consecutive layers per device, one replica; batch per pipeline (mp)
  StagesAndReplicas, // stages × dp replicas; batch per replica (pipelines)
};

struct StrategyRules {
  StrategyKind kind;
  std::string_view name;         // "ddp": the scenario's strategy.name and --strategy
  std::string_view description;  // one line, for help texts and the GUI
  std::string_view counterpart;  // what it models, as the framework calls it
  RankLayout layout;
  std::vector<std::string_view> options;  // the strategy.* field keys it uses (scenario_fields.h)
  // What it refuses, and why; empty: supported.
  std::string_view no_inference;        // training.no_grad
  std::string_view no_tensor_parallel;  // strategy.tp / strategy.sequence_parallel, when not among `options`
  int max_world = 65536;
  std::string_view max_world_reason;
  // Checks of settings only this strategy has (balanced-dp's device-0 batch, fsdp's units against the model); may
  // be null.
  void (*check)(const Scenario& settings, const Model& model) = nullptr;
};

std::span<const StrategyRules> strategy_rules_table();  // in the order of the CLI help and the GUI list
const StrategyRules& strategy_rules(StrategyKind kind);
const StrategyRules* find_strategy_rules(std::string_view name);
bool strategy_accepts(StrategyKind kind, std::string_view field_key);
std::vector<std::string> strategies_accepting(std::string_view field_key);  // names, in table order
// "per rank", "per device", "per pipeline", "per replica": what training.batch counts under this layout.
std::string_view batch_unit(RankLayout layout);

// Throws ScenarioError(key, "only applies to zero2 and zero3") for a strategy option that is set (differs from
// its default) under a strategy that does not use it; for strategy.tp / strategy.sequence_parallel, with the
// strategy's no_tensor_parallel reason when it has one.
void check_strategy_options(const Scenario& settings);

}  // namespace shardscope
