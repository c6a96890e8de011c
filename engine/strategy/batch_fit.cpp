// The batch search: each candidate is resolved, lowered and accounted like `shardscope-cli memory` does.
#include "strategy/batch_fit.h"

#include <algorithm>

#include "memory/accounting.h"
#include "strategy/lower.h"

namespace shardscope {

namespace {

// -1: fits; otherwise the lowest rank out of memory (or 0 when the batch is refused outright).
int rank_out_of_memory(const Scenario& scenario, int batch) {
  Scenario s = scenario;
  s.training.batch = batch;
  try {
    const ResolvedScenario resolved = resolve_scenario(s);
    const MemoryReport report = account_memory(lower_plan(resolved, {.kernel_operands = false}), resolved.settings.accounting.mode,
                                               resolved.device.capacity, /*keep_series=*/false);
    for (const RankMemory& rank : report.ranks)
      if (rank.oom) return rank.rank;
    return -1;
  } catch (const ScenarioError&) {
    return 0;
  }
}

}  // namespace

BatchFit max_batch_that_fits(const Scenario& scenario, int limit, const std::function<void(int, bool)>& on_try) {
  const auto first_rank_out_of_memory = [&](const Scenario& s, int batch) {
    const int rank = rank_out_of_memory(s, batch);
    if (on_try) on_try(batch, rank < 0);
    return rank;
  };
  BatchFit fit;
  fit.multiple_of = std::max(1, scenario.strategy.micro_batches);
  const int step = fit.multiple_of;
  fit.searched_up_to = step;
  if (const int rank = first_rank_out_of_memory(scenario, step); rank >= 0) {
    fit.limiting_rank = rank;
    return fit;
  }
  // Doubling until a batch does not fit (or the limit), then bisecting between the last that fit and it.
  int good = 1, bad = 0;  // in units of `step`
  while (bad == 0) {
    const int next = good * 2;
    if (static_cast<long long>(next) * step > limit) break;
    fit.searched_up_to = std::max(fit.searched_up_to, next * step);
    if (const int rank = first_rank_out_of_memory(scenario, next * step); rank >= 0) {
      bad = next;
      fit.limiting_rank = rank;
    } else {
      good = next;
    }
  }
  while (bad != 0 && bad - good > 1) {
    const int middle = good + (bad - good) / 2;
    if (const int rank = first_rank_out_of_memory(scenario, middle * step); rank >= 0) {
      bad = middle;
      fit.limiting_rank = rank;
    } else {
      good = middle;
    }
  }
  fit.batch = good * step;
  return fit;
}

}  // namespace shardscope
