// simulate_scenario and execute_scenario: resolve, lower, validate, then simulate, or account and execute.
#include "pipeline/run_pipeline.h"

#include "strategy/lower.h"

namespace shardscope::pipeline {

SimulatedRun simulate_scenario(const Scenario& scenario, TraceSink& sink, const SimulationOptions& options) {
  SimulatedRun run{resolve_scenario(scenario), {}, {}};
  run.plan = lower_validated_plan(run.scenario);
  run.result = simulate(run.scenario, run.plan, sink, options);
  return run;
}

ExecutedRun execute_scenario(const Scenario& scenario, TraceSink& sink, const exec::ExecutionOptions& options) {
  ExecutedRun run{resolve_scenario(scenario), {}, {}, {}};
  run.plan = lower_validated_plan(run.scenario);
  run.predicted_mode = exec::accounting_mode_of(options.backend);
  run.predicted = account_memory(run.plan, run.predicted_mode, run.scenario.device.capacity, /*keep_series=*/false);
  run.result = exec::execute(run.scenario, run.plan, sink, options);
  return run;
}

}  // namespace shardscope::pipeline
