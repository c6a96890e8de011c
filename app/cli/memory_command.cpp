// The memory command's pipeline: resolve, lower, validate, account.
#include "cli/memory_command.h"


#include "strategy/lower.h"

namespace shardscope::cli {

MemoryRun run_memory(const Scenario& scenario) {
  MemoryRun run{resolve_scenario(scenario), {}, {}, {}};
  run.plan = lower_validated_plan(run.scenario);
  run.report = account_memory(run.plan, run.scenario.settings.accounting.mode, run.scenario.device.capacity, /*keep_series=*/false);
  run.fit = max_batch_that_fits(scenario);
  return run;
}

}  // namespace shardscope::cli
