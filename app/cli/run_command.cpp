// The run command: its flags' checks, then the pipeline (resolve, lower, validate, accounting, execute).
#include "cli/run_command.h"

#include <cmath>
#include <sstream>

#include "exec/data/model_parameters.h"
#include "exec/data/parameter_files.h"

namespace shardscope::cli {

RunRun run_execute(const Scenario& scenario, const std::string& backend, std::optional<double> lr, TraceSink& sink,
                   const exec::MultiNodeOptions& multinode, const ParameterFiles& files) {
  const std::optional<exec::BackendKind> kind = exec::backend_kind_from_name(backend);
  if (!kind) throw ScenarioError("--backend", "unknown backend '" + backend + "' (expected cpu or cuda)");
  if (lr && !(std::isfinite(*lr) && *lr > 0)) {  // inf (or 1e400) would train to NaN and exit 0
    std::ostringstream got;
    got << *lr;
    throw ScenarioError("--lr", "must be a positive finite number (got " + got.str() + ")");
  }
  exec::ExecutionOptions options;
  options.lr = lr;
  options.backend = *kind;
  options.multinode = multinode;
  options.keep_parameters = !files.save.empty();
  return RunRun{pipeline::execute_scenario(scenario, sink, options, files.load), backend};
}

void save_run_parameters(const RunRun& run, const std::string& path) {
  const exec::ModelParameters model = exec::assemble_model_parameters(run.result.ranks);
  if (!model.gap.empty()) throw ScenarioError("--save-params", "the ranks do not hold the whole model: " + model.gap);
  try {
    exec::save_parameter_file(path, run.scenario.model, model.values);
  } catch (const exec::SafetensorsError& error) {
    throw ScenarioError("--save-params", error.what());
  }
}

}  // namespace shardscope::cli
