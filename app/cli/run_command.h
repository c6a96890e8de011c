// `shardscope-cli run`: lower a scenario, execute the plan for real on a backend (cpu, or cuda where built and a GPU
// is usable), and hold the measured figures against the accounting of the same plan (exact bytes on the CPU,
// PyTorch 2.x caching-allocator blocks on CUDA); text or JSON reports.
#pragma once
#include <iosfwd>
#include <optional>
#include <string>

#include "cli/step_beside.h"
#include "pipeline/run_pipeline.h"
#include "run/step_timing.h"

namespace shardscope::cli {

// The pipeline's executed run (pipeline/run_pipeline.h), and the backend as the user named it.
struct RunRun : pipeline::ExecutedRun {
  std::string backend;
  std::vector<StepTiming> steps;      // every training step's time (run/step_timing.h)
  std::optional<StepBeside> beside;   // --simulate-beside
};

// Throws ScenarioError naming --backend for an unknown backend, and for bad settings;
// exec::BackendUnavailableError when the backend cannot run here (cuda: not built, or "no usable CUDA GPU: ...");
// exec::UnsupportedPlanError for a plan the backend cannot run; std::logic_error for an invalid plan.
// A run that fails while executing returns with result.ok == false.
// Parameter files of a run: initial values read from `load`, the trained values written to `save` (safetensors,
// state_dict names; exec/data/parameter_files.h). Empty: none.
struct ParameterFiles {
  std::string load, save;
};

// Training settings only a run has: --lr (unset: torch's default) and --initial-loss-scale (fp16; unset:
// GradScaler's 2^16).
struct TrainingKnobs {
  std::optional<double> lr;
  std::optional<double> initial_loss_scale;
};

// The step times come from the run's own trace events; with `simulate_beside` the scenario is simulated after the
// run and its last step set beside the executed median step.
RunRun run_execute(const Scenario& scenario, const std::string& backend, const TrainingKnobs& knobs, TraceSink& sink,
                   const exec::MultiNodeOptions& multinode = {}, const ParameterFiles& files = {},
                   bool simulate_beside = false);

// Writes the run's trained parameters to files.save (after a run that ended ok). Throws ScenarioError naming
// --save-params when the file cannot be written; the run's trace and report are already out by then.
void save_run_parameters(const RunRun& run, const std::string& path);

void print_run_text(const RunRun& run, std::ostream& out);
std::string run_json(const RunRun& run);

}  // namespace shardscope::cli
