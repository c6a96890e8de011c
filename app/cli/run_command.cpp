// The run command: its flags' checks, then the pipeline (resolve, lower, validate, accounting, execute).
#include "cli/run_command.h"

#include <cmath>
#include <sstream>

namespace shardscope::cli {

RunRun run_execute(const Scenario& scenario, const std::string& backend, std::optional<double> lr, TraceSink& sink,
                   const exec::MultiNodeOptions& multinode) {
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
  return RunRun{pipeline::execute_scenario(scenario, sink, options), backend};
}

}  // namespace shardscope::cli
