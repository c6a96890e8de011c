// The run command's pipeline: backend check, resolve, lower, validate, exact accounting, execute.
#include "cli/run_command.h"

#include "strategy/lower.h"

namespace shardscope::cli {

RunRun run_execute(const Scenario& scenario, const std::string& backend, std::optional<double> lr, TraceSink& sink) {
  if (backend == "cuda")
    throw ScenarioError("--backend", "'cuda' is not built in this build: the CUDA backend comes with Executor II");
  if (backend != "cpu") throw ScenarioError("--backend", "unknown backend '" + backend + "' (expected cpu or cuda)");
  if (lr && !(*lr > 0)) throw ScenarioError("--lr", "must be positive");
  RunRun run{resolve_scenario(scenario), {}, backend, {}, {}};
  run.plan = lower_validated_plan(run.scenario);
  run.predicted = account_memory(run.plan, AccountingMode::Exact, run.scenario.device.capacity, /*keep_series=*/false);
  exec::ExecutionOptions options;
  options.lr = lr;
  run.result = exec::execute(run.scenario, run.plan, sink, options);
  return run;
}

}  // namespace shardscope::cli
