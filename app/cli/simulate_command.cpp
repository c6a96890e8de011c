// The simulate command's pipeline: resolve, lower, validate, simulate.
#include "cli/simulate_command.h"

#include "sim/simulator.h"
#include "strategy/lower.h"

namespace shardscope::cli {

SimulateRun run_simulate(const Scenario& scenario, TraceSink& sink) {
  SimulateRun run{resolve_scenario(scenario), {}, {}};
  run.plan = lower_validated_plan(run.scenario);
  run.result = simulate(run.scenario, run.plan, sink);
  return run;
}

}  // namespace shardscope::cli
