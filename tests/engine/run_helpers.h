// Test helpers: lower and account a scenario, and look up phase figures.
#pragma once
#include <stdexcept>
#include <string>

#include "memory/accounting.h"
#include "plan/validate.h"
#include "scenario/scenario.h"
#include "strategy/lower.h"

namespace shardscope::testing {

struct Run {
  ResolvedScenario scenario;
  Plan plan;
  MemoryReport report;

  const PhaseMemory& phase(int rank, const std::string& name, int step) const {
    for (const auto& p : report.ranks.at(static_cast<std::size_t>(rank)).phases)
      if (p.name == name && p.step == step) return p;
    throw std::runtime_error("no phase " + name + " at step " + std::to_string(step));
  }
};

inline Run run(const Scenario& scenario) {
  Run r{resolve_scenario(scenario), {}, {}};
  r.plan = lower_plan(r.scenario);
  r.report = account_memory(r.plan, scenario.accounting.mode, r.scenario.device.capacity);
  return r;
}

inline Scenario make(const std::string& model, StrategyKind strategy, int world, int batch, AccountingMode mode) {
  Scenario s;
  s.model.spec = model;
  s.strategy.kind = strategy;
  s.cluster.world = world;
  s.training.batch = batch;
  s.accounting.mode = mode;
  return s;
}

}  // namespace shardscope::testing
