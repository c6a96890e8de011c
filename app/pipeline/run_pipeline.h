// The one run pipeline of the front ends (the CLI's simulate and run commands, the GUI's session): resolve the
// scenario, lower and validate its plan, then simulate it, or predict its memory with the accounting the backend
// measures by and execute it. App glue: links the simulator and the executors; the GUI's panels must not use it.
#pragma once
#include "exec/backends/backend_factory.h"
#include "memory/accounting.h"
#include "plan/plan.h"
#include "run/simulation_result.h"
#include "scenario/scenario.h"
#include "sim/simulator.h"
#include "trace/events/trace_sink.h"

namespace shardscope::pipeline {

struct SimulatedRun {
  ResolvedScenario scenario;
  Plan plan;  // lowered without kernel operands (LoweringOptions): simulation reads none
  SimulationResult result;
};

// Throws ScenarioError for bad settings, std::logic_error if the lowered plan fails validation (a bug).
SimulatedRun simulate_scenario(const Scenario& scenario, TraceSink& sink, const SimulationOptions& options = {});

struct ExecutedRun {
  ResolvedScenario scenario;
  Plan plan;
  exec::ExecutionResult result;
  MemoryReport predicted;  // what the backend's allocator should measure, by exec::accounting_mode_of(backend)
  AccountingMode predicted_mode = AccountingMode::Exact;
};

// Runs on options.backend. Throws ScenarioError for bad settings, and what exec::execute throws
// (exec/backends/backend_factory.h: BackendUnavailableError, UnsupportedPlanError, std::logic_error), all before
// any trace event. A run that fails while executing returns with result.ok == false.
// load_params: a safetensors file of initial parameter values (exec/data/parameter_files.h); a file that cannot be
// read or does not fit the model throws ScenarioError naming --load-params, before any trace event.
ExecutedRun execute_scenario(const Scenario& scenario, TraceSink& sink, const exec::ExecutionOptions& options,
                             const std::string& load_params = {});

}  // namespace shardscope::pipeline
