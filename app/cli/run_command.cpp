// The run command: its flags' checks, then the pipeline (resolve, lower, validate, accounting, execute).
#include "cli/run_command.h"

#include <cmath>
#include <sstream>

#include "exec/data/model_parameters.h"
#include "exec/data/parameter_files.h"

namespace shardscope::cli {

namespace {

// inf (or 1e400) would train to NaN and exit 0.
void require_positive_finite(std::optional<double> value, const char* flag) {
  if (!value || (std::isfinite(*value) && *value > 0)) return;
  std::ostringstream got;
  got << *value;
  throw ScenarioError(flag, "must be a positive finite number (got " + got.str() + ")");
}

}  // namespace

RunRun run_execute(const Scenario& scenario, const std::string& backend, const TrainingKnobs& knobs, TraceSink& sink,
                   const exec::MultiNodeOptions& multinode, const ParameterFiles& files, bool simulate_beside) {
  const std::optional<exec::BackendKind> kind = exec::backend_kind_from_name(backend);
  if (!kind) throw ScenarioError("--backend", "unknown backend '" + backend + "' (expected cpu or cuda)");
  require_positive_finite(knobs.lr, "--lr");
  require_positive_finite(knobs.initial_loss_scale, "--initial-loss-scale");
  if (knobs.initial_loss_scale && scenario.training.dtype != Dtype::Fp16)
    throw ScenarioError("--initial-loss-scale", "loss scaling is fp16's; this run trains in " + dtype_name(scenario.training.dtype));
  exec::ExecutionOptions options;
  options.lr = knobs.lr;
  if (knobs.initial_loss_scale) options.loss_scale.initial_scale = *knobs.initial_loss_scale;
  options.backend = *kind;
  options.multinode = multinode;
  options.keep_parameters = !files.save.empty();
  OpIntervalSink intervals;
  TeeTraceSink both({&sink, &intervals});
  RunRun run{pipeline::execute_scenario(scenario, both, options, files.load), backend, {}, {}};
  run.steps = step_timings(run.plan, intervals.intervals());
  if (simulate_beside && run.result.ok && !run.steps.empty()) run.beside = cli::simulate_beside(scenario, run.steps);
  return run;
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
