// `shardscope-cli run`: lower a scenario, execute the plan for real on a backend (cpu now), and hold the measured
// figures against the exact accounting of the same plan; text or JSON reports.
#pragma once
#include <iosfwd>
#include <optional>
#include <string>

#include "exec/executor.h"
#include "memory/accounting.h"
#include "plan/plan.h"
#include "scenario/scenario.h"
#include "trace/trace_sink.h"

namespace shardscope::cli {

struct RunRun {
  ResolvedScenario scenario;
  Plan plan;
  std::string backend;
  exec::ExecutionResult result;
  MemoryReport predicted;  // AccountingMode::Exact: what the executor's allocator should measure, byte for byte
};

// Throws ScenarioError naming --backend for a backend that is not "cpu" ("cuda": not built in this build), and for
// bad settings; exec::UnsupportedPlanError for a plan the backend cannot run; std::logic_error for an invalid plan.
// A run that fails while executing returns with result.ok == false.
RunRun run_execute(const Scenario& scenario, const std::string& backend, std::optional<double> lr, TraceSink& sink);

void print_run_text(const RunRun& run, std::ostream& out);
std::string run_json(const RunRun& run);

}  // namespace shardscope::cli
