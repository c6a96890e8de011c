// simulate_scenario and execute_scenario: resolve, lower, validate, then simulate, or account and execute.
#include "pipeline/run_pipeline.h"

#include <memory>
#include <utility>

#include "exec/data/parameter_files.h"
#include "strategy/lower.h"

namespace shardscope::pipeline {

SimulatedRun simulate_scenario(const Scenario& scenario, TraceSink& sink, const SimulationOptions& options) {
  SimulatedRun run{resolve_scenario(scenario), {}, {}};
  // The trace header shares the plan rather than copying it; a sink that kept the header (a TraceStore) still holds
  // it afterwards, so the run gets a copy then, and otherwise the plan itself.
  auto plan = std::make_shared<Plan>(lower_validated_plan(run.scenario, {.kernel_operands = false}));  // never executed
  run.result = simulate(run.scenario, std::shared_ptr<const Plan>(plan), sink, options);
  if (plan.use_count() == 1) {
    run.plan = std::move(*plan);
  } else {
    run.plan = *plan;
  }
  return run;
}

ExecutedRun execute_scenario(const Scenario& scenario, TraceSink& sink, const exec::ExecutionOptions& options,
                             const std::string& load_params) {
  ExecutedRun run{resolve_scenario(scenario), {}, {}, {}};
  exec::ExecutionOptions with_values = options;
  if (!load_params.empty()) {
    try {
      with_values.initial_parameters = std::make_shared<const exec::ParameterValues>(
          exec::load_parameter_file(load_params, run.scenario.model));
    } catch (const exec::SafetensorsError& error) {
      throw ScenarioError("--load-params", error.what());
    }
  }
  run.plan = lower_validated_plan(run.scenario);
  run.predicted_mode = exec::accounting_mode_of(options.backend);
  run.predicted = account_memory(run.plan, run.predicted_mode, run.scenario.device.capacity, /*keep_series=*/false);
  run.result = exec::execute(run.scenario, run.plan, sink, with_values);
  return run;
}

}  // namespace shardscope::pipeline
