// The memory command's pipeline: resolve, lower, validate, account.
#include "cli/memory_command.h"

#include <cstdio>
#include <functional>

#include "strategy/lower.h"

namespace shardscope::cli {

MemoryRun run_memory(const Scenario& scenario, BatchSearch batch_search) {
  MemoryRun run{resolve_scenario(scenario), {}, {}, {}};
  run.plan = lower_validated_plan(run.scenario, {.kernel_operands = false});  // accounted, never executed
  run.report = account_memory(run.plan, run.scenario.settings.accounting.mode, run.scenario.device.capacity, /*keep_series=*/false);
  if (batch_search == BatchSearch::Skip) return run;
  // A plan of this size takes seconds to lower and account, and the search does it some 40 times: say so, and
  // show each batch tried, rather than sit silent for minutes.
  constexpr std::int64_t kProgressFromOps = 250'000;
  const std::int64_t ops = estimate_plan_ops(run.scenario);
  std::function<void(int, bool)> on_try;
  if (ops >= kProgressFromOps) {
    on_try = [ops, first = true](int batch, bool fits) mutable {
      if (first)  // at the first try: a search refused for its cost prints nothing here
        std::fprintf(stderr, "memory: about %.1f M ops per plan; finding the largest batch that fits lowers and accounts "
                             "it (up to its third step) once per batch tried, about 40 times:\n", static_cast<double>(ops) / 1e6);
      first = false;
      std::fprintf(stderr, "  batch %d: %s\n", batch, fits ? "fits" : "does not fit");
    };
  }
  run.fit = max_batch_that_fits(scenario, 1 << 20, on_try);
  return run;
}

}  // namespace shardscope::cli
