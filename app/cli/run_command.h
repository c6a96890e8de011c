// `shardscope-cli run`: lower a scenario, execute the plan for real on a backend (cpu, or cuda where built and a GPU
// is usable), and hold the measured figures against the accounting of the same plan (exact bytes on the CPU,
// PyTorch 2.x caching-allocator blocks on CUDA); text or JSON reports.
#pragma once
#include <iosfwd>
#include <optional>
#include <string>

#include "pipeline/run_pipeline.h"

namespace shardscope::cli {

// The pipeline's executed run (pipeline/run_pipeline.h), and the backend as the user named it.
struct RunRun : pipeline::ExecutedRun {
  std::string backend;
};

// Throws ScenarioError naming --backend for an unknown backend, and for bad settings;
// exec::BackendUnavailableError when the backend cannot run here (cuda: not built, or "no usable CUDA GPU: ...");
// exec::UnsupportedPlanError for a plan the backend cannot run; std::logic_error for an invalid plan.
// A run that fails while executing returns with result.ok == false.
RunRun run_execute(const Scenario& scenario, const std::string& backend, std::optional<double> lr, TraceSink& sink,
                   const exec::MultiNodeOptions& multinode = {});

void print_run_text(const RunRun& run, std::ostream& out);
std::string run_json(const RunRun& run);

}  // namespace shardscope::cli
