// The memory command's pipeline: resolve, lower, validate, account.
#include "cli/memory_command.h"

#include <stdexcept>

#include "plan/validate.h"
#include "strategy/lower.h"

namespace shardscope::cli {

MemoryRun run_memory(const Scenario& scenario) {
  MemoryRun run{resolve_scenario(scenario), {}, {}};
  run.plan = lower_plan(run.scenario);
  const auto validation = validate_plan(run.plan);
  if (!validation.ok()) {
    std::string message = "internal error: the lowered plan is invalid:";
    for (const auto& error : validation.errors) message += "\n  " + error;
    throw std::logic_error(message);
  }
  run.report = account_memory(run.plan, run.scenario.settings.accounting.mode, run.scenario.device.capacity, /*keep_series=*/false);
  return run;
}

}  // namespace shardscope::cli
