// `shardscope-cli simulate`: lower a scenario, validate the plan, simulate it, print text or JSON.
#pragma once
#include <iosfwd>
#include <string>

#include "plan/plan.h"
#include "scenario/scenario.h"
#include "sim/cost_model.h"
#include "sim/simulation_result.h"
#include "trace/trace_sink.h"

namespace shardscope::cli {

struct SimulateRun {
  ResolvedScenario scenario;
  Plan plan;
  SimulationResult result;
};

// Throws ScenarioError for bad settings, std::logic_error if the lowered plan fails validation (a bug).
SimulateRun run_simulate(const Scenario& scenario, TraceSink& sink);

void print_simulate_text(const SimulateRun& run, std::ostream& out);
std::string simulate_json(const SimulateRun& run);


}  // namespace shardscope::cli
