// The batch search: each candidate is resolved, lowered and accounted like `shardscope-cli memory` does.
#include "strategy/batch_fit.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "memory/accounting.h"
#include "strategy/lower.h"

namespace shardscope {

namespace {

// The batches a scenario accepts are multiples of this: its micro-batch count, times tp for an MLP under sequence
// parallelism, whose micro-batches split their rows over the tensor-parallel ranks (scenario/tensor_parallel.h).
int batch_multiple(const Scenario& scenario) {
  const int micro_batches = std::max(1, scenario.strategy.micro_batches);
  // "mlp:LAYERSxWIDTH" (model/model.cpp) is the one model without transformer blocks that sp accepts.
  const bool rows_split = scenario.strategy.sequence_parallel && scenario.strategy.tp > 1 &&
                          scenario.model.spec.rfind("mlp:", 0) == 0;
  return micro_batches * (rows_split ? scenario.strategy.tp : 1);
}

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

// Why searching `scenario` would cost more than kMaxBatchSearchWork ops lowered in all, or "" when it would not.
std::string over_budget(const Scenario& scenario, int limit) {
  std::int64_t ops = 0;
  try {
    ops = estimate_plan_ops(resolve_scenario(scenario));
  } catch (const ScenarioError&) {
    return "";  // the search's own tries report what is wrong
  }
  const int multiple = batch_multiple(scenario);
  // Doubling from the multiple up to the limit, then bisecting as many times: twice log2 of the range, plus one.
  const double tries = 2 * std::ceil(std::log2(std::max(2.0, static_cast<double>(limit) / multiple))) + 1;
  const double work = static_cast<double>(ops) * tries;
  if (work <= static_cast<double>(kMaxBatchSearchWork)) return "";
  char text[200];
  std::snprintf(text, sizeof text,
                "not searched: the plan has about %.1f M ops and the search would lower it about %.0f times, more "
                "than the limit of %.0f M ops of work; try a batch with --batch instead",
                static_cast<double>(ops) / 1e6, tries, static_cast<double>(kMaxBatchSearchWork) / 1e6);
  return text;
}

// The search proper, every try lowering and accounting `scenario` as it is.
BatchFit search(const Scenario& scenario, int limit, const std::function<void(int, bool)>& on_try) {
  const auto first_rank_out_of_memory = [&](const Scenario& s, int batch) {
    const int rank = rank_out_of_memory(s, batch);
    if (on_try) on_try(batch, rank < 0);
    return rank;
  };
  BatchFit fit;
  fit.multiple_of = batch_multiple(scenario);
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

}  // namespace

BatchFit max_batch_that_fits(const Scenario& scenario, int limit, const std::function<void(int, bool)>& on_try) {
  // Some 40 tries each lower the whole plan, so a 1,000-step plan took 30 s. Every step from the third on repeats
  // the third (optimizer state appears at step 1, DDP rebuilds its buckets at step 2), and the first k steps of a
  // plan are the plan of k steps, so a batch that fits the whole run fits its first kSearchSteps: the search runs on
  // those, and its answer is then checked against the whole run (one lowering). Only if the whole run needs more
  // (an allocator that keeps growing) does the search run again on it.
  constexpr int kSearchSteps = 3;
  Scenario first_steps = scenario;
  first_steps.training.steps = std::min(scenario.training.steps, kSearchSteps);
  if (const std::string why = over_budget(first_steps, limit); !why.empty()) {
    BatchFit fit;
    fit.multiple_of = batch_multiple(scenario);
    fit.not_searched = why;
    return fit;
  }
  if (scenario.training.steps <= kSearchSteps) return search(scenario, limit, on_try);
  BatchFit fit = search(first_steps, limit, on_try);
  if (!fit.batch) return fit;  // the smallest batch already fails its first steps, so the whole run
  const int whole_run_rank = rank_out_of_memory(scenario, *fit.batch);
  if (on_try) on_try(*fit.batch, whole_run_rank < 0);
  if (whole_run_rank >= 0) return search(scenario, std::min(limit, *fit.batch), on_try);
  return fit;
}

}  // namespace shardscope
