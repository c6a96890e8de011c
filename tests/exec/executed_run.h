// Helpers for tests that execute real lowerings on the CPU backend: run a scenario, compare the model the ranks
// hold together with a reference run's, and hold measured memory against the exact accounting.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "engine/run_helpers.h"
#include "exec/backends/backend_factory.h"
#include "exec/data/model_parameters.h"

namespace shardscope::exec::test {

struct Executed {
  ExecutionResult result;
  MemoryReport predicted;  // the exact accounting of the same plan
};

inline Executed execute_scenario(Scenario s, ExecutionOptions options = {}) {
  s.accounting.mode = s.accounting.mode == AccountingMode::PyTorch18 ? AccountingMode::PyTorch18 : AccountingMode::Exact;
  const ResolvedScenario resolved = resolve_scenario(s);
  const Plan plan = lower_validated_plan(resolved);
  VectorTraceSink sink;
  options.keep_parameters = true;
  Executed out{execute(resolved, plan, sink, options), account_memory(plan, AccountingMode::Exact, resolved.device.capacity)};
  EXPECT_TRUE(out.result.ok) << out.result.error;
  return out;
}

// `model` under `strategy` on `world` ranks, `batch` samples each, trained for 3 steps under exact accounting.
inline Scenario executable_scenario(const std::string& model, StrategyKind strategy, int world, int batch) {
  Scenario s = shardscope::testing::make(model, strategy, world, batch, AccountingMode::Exact);
  s.training.steps = 3;
  return s;
}

// An MLP of 3 × Linear(16) + ReLU trained for 3 steps.
inline Scenario executable_mlp(StrategyKind strategy, int world, int batch) {
  return executable_scenario("mlp:3x16:relu", strategy, world, batch);
}

// A training setting a test runs every case under (optimizer, loss, accounting...), named for the failure message.
struct Variant {
  const char* what;
  void (*apply)(Scenario&);
};

// The model all ranks hold together equals the reference run's, element by element. fp32 sums of 8 and 16 rows
// in different orders agree to a few ulps of the parameters' size: 1e-5 relative. Replicas (the same range on
// several ranks) must agree bit for bit, and every element of every parameter must be held by some rank.
inline void expect_same_model(const ExecutionResult& run, const ExecutionResult& reference) {
  const ModelParameters model = assemble_model_parameters(run.ranks);
  const ModelParameters expected = assemble_model_parameters(reference.ranks);
  EXPECT_EQ(model.disagreement, "");
  EXPECT_EQ(model.gap, "");
  ASSERT_EQ(model.values.size(), expected.values.size());
  ASSERT_FALSE(expected.values.empty());
  for (const auto& [name, values] : expected.values) {
    const auto it = model.values.find(name);
    ASSERT_NE(it, model.values.end()) << name << " is missing";
    ASSERT_EQ(it->second.size(), values.size()) << name;
    for (std::size_t i = 0; i < values.size(); ++i)
      ASSERT_NEAR(it->second[i], values[i], 1e-5 * std::max(1.0f, std::fabs(values[i]))) << name << "[" << i << "]";
  }
}

// The largest |run − reference| over every parameter element, for the record (the assertion is expect_same_model's).
inline double largest_difference(const ExecutionResult& run, const ExecutionResult& reference) {
  const ModelParameters model = assemble_model_parameters(run.ranks);
  const ModelParameters expected = assemble_model_parameters(reference.ranks);
  double largest = 0;
  for (const auto& [name, values] : expected.values) {
    const auto it = model.values.find(name);
    if (it == model.values.end() || it->second.size() != values.size()) continue;
    for (std::size_t i = 0; i < values.size(); ++i)
      largest = std::max(largest, static_cast<double>(std::fabs(it->second[i] - values[i])));
  }
  return largest;
}

// Every rank's measured peak and per-phase bytes by category equal the exact accounting of the plan.
inline void expect_measured_equals_predicted(const Executed& executed) {
  ASSERT_EQ(executed.result.ranks.size(), executed.predicted.ranks.size());
  for (std::size_t r = 0; r < executed.result.ranks.size(); ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    const RankExecution& measured = executed.result.ranks[r];
    const RankMemory& predicted = executed.predicted.ranks[r];
    EXPECT_EQ(measured.measured_peak_bytes, predicted.peak_allocated);
    ASSERT_EQ(measured.phases.size(), predicted.phases.size());
    for (std::size_t p = 0; p < predicted.phases.size(); ++p) {
      EXPECT_EQ(measured.phases[p].allocated, predicted.phases[p].allocated) << predicted.phases[p].name;
      for (Category c : kAllCategories)
        EXPECT_EQ(measured.phases[p].by_category[c], predicted.phases[p].by_category[c])
            << predicted.phases[p].name << " " << category_key(c);
    }
  }
}

// The run trains as the reference (expect_same_model) with measured memory equal to the prediction, and prints the
// largest parameter difference it saw under `what`.
inline void expect_trains_as(const Executed& executed, const Executed& reference, const std::string& what) {
  expect_same_model(executed.result, reference.result);
  expect_measured_equals_predicted(executed);
  std::printf("[ trains as ] %s: largest parameter difference %.3g\n", what.c_str(),
              largest_difference(executed.result, reference.result));
}

}  // namespace shardscope::exec::test
