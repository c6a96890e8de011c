// "What would fit?": the largest training.batch whose plan fits every device of the scenario, found by lowering and
// accounting the plan at candidate batches (doubling, then bisecting). Pipelines keep their micro-batch count, so
// the batches tried are its multiples.
// Usage:
//   const BatchFit fit = max_batch_that_fits(scenario);   // fit.batch: nullopt when not even the smallest fits
#pragma once
#include <functional>
#include <cstdint>
#include <optional>
#include <string>

#include "scenario/scenario.h"

namespace shardscope {

struct BatchFit {
  std::optional<int> batch;  // the largest batch that fits (per rank, as training.batch counts it); nullopt: none
  int multiple_of = 1;       // the batches tried: multiples of this (the micro-batch count; × tp for an MLP's sequence parallelism)
  int limiting_rank = -1;    // the lowest rank out of memory at the next batch tried (-1: the search limit was hit)
  int searched_up_to = 0;    // the largest batch tried
  std::string not_searched;  // non-empty: the search was not run, and why (it would cost more than kMaxBatchSearchWork)
};

// The search lowers and accounts a plan about 40 times; plans whose search would lower more ops than this in all
// (at about a microsecond an op, some 20 to 30 s) are not searched: the report says so rather than make the user
// wait minutes.
constexpr std::int64_t kMaxBatchSearchWork = 25'000'000;

// Fits: no rank runs out of memory under the scenario's accounting mode and device capacity. A batch the scenario
// cannot take (another setting refuses it) counts as not fitting. `limit` bounds the search; a search that would
// cost more than kMaxBatchSearchWork returns at once with not_searched saying why.
// `on_try`, when given, hears each batch tried and whether it fitted (progress for plans large enough to make the
// search slow: each try lowers and accounts the whole plan).
BatchFit max_batch_that_fits(const Scenario& scenario, int limit = 1 << 20,
                             const std::function<void(int batch, bool fits)>& on_try = {});

}  // namespace shardscope
