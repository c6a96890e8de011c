// The executor on one rank, with hand-built plans: an SGD step against plain-loop arithmetic, a read after free
// reported as a lowering bug, measured memory against the exact accounting of the same plan, refusals, and the
// runtime versions a backend reports reaching the trace header (null for the cpu backend).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "exec/backends/backend_factory.h"
#include "exec/data/model_parameters.h"
#include "executor_test_plans.h"
#include "memory/accounting.h"
#include "trace/events/trace_sink.h"

namespace shardscope::exec::test {
namespace {

Plan single_rank_plan(int rows, bool free_output_before_loss = false) {
  ProgramBuilder b(0);
  const LinearStepTensors t = build_forward_backward(b, rows, free_output_before_loss);
  build_sgd_step(b, t);
  Plan plan;
  plan.strategy = "hand-built";
  plan.programs.push_back(b.finish());
  return plan;
}

TEST(Executor, OneSgdStepMatchesAHandComputation) {
  const ResolvedScenario scenario = tiny_scenario(StrategyKind::Single, 1, 3);
  const Plan plan = single_rank_plan(3);
  VectorTraceSink sink;
  ExecutionOptions options;
  options.keep_parameters = true;
  const ExecutionResult result = execute(scenario, plan, sink, options);
  ASSERT_TRUE(result.ok) << result.error;

  // Step 0 of world 1, batch 3: samples 0, 1, 2. SGD with torch's default lr 0.01: p1 = p0 - 0.01 · grad.
  const LinearMseStep step = reference_step({0, 1, 2});
  const RankExecution& rank = result.ranks.at(0);
  ASSERT_TRUE(rank.loss.has_value());
  EXPECT_NEAR(*rank.loss, step.loss, 1e-6 * step.loss);
  const auto held = whole_parameters(rank);
  const auto& weight = held.at("fc0.weight");
  const auto& bias = held.at("fc0.bias");
  double sum = 0, squares = 0;
  for (std::size_t i = 0; i < weight.size(); ++i) {
    const double expected = step.weight[i] - 0.01 * step.grad_weight[i];
    EXPECT_NEAR(weight[i], expected, 1e-6) << "fc0.weight[" << i << "]";
    sum += expected;
    squares += expected * expected;
  }
  for (std::size_t o = 0; o < bias.size(); ++o) {
    const double expected = step.bias[o] - 0.01 * step.grad_bias[o];
    EXPECT_NEAR(bias[o], expected, 1e-6) << "fc0.bias[" << o << "]";
    sum += expected;
    squares += expected * expected;
  }
  EXPECT_NEAR(rank.param_checksum, sum, 1e-5);
  EXPECT_NEAR(rank.param_sum_of_squares, squares, 1e-5);
  // The step moved the parameters (a gradient of zero would pass the comparisons above trivially).
  EXPECT_GT(std::abs(step.grad_weight[0]) + std::abs(step.grad_bias[0]), 1e-4);

  // Every compute op began and ended once; the run ended with "ok".
  int begins = 0, ends = 0;
  for (const auto& e : sink.events()) {
    begins += e.kind == TraceEventKind::OpBegin;
    ends += e.kind == TraceEventKind::OpEnd;
  }
  EXPECT_EQ(begins, 6);  // load, forward, loss, loss backward, fc0 backward, optimizer
  EXPECT_EQ(ends, 6);
  EXPECT_EQ(sink.events().back().kind, TraceEventKind::RunEnd);
  EXPECT_EQ(sink.events().back().text, "ok");
  EXPECT_EQ(sink.header().source, "executor cpu");
}

TEST(Executor, EventsOfARankAreTimeOrdered) {
  const ResolvedScenario scenario = tiny_scenario(StrategyKind::Single, 1, 3);
  VectorTraceSink sink;
  ASSERT_TRUE(execute(scenario, single_rank_plan(3), sink).ok);
  TimeNs last = 0;
  for (const auto& e : sink.events()) {
    EXPECT_GE(e.t_ns, last);
    last = e.t_ns;
  }
}

TEST(Executor, RefusesAPlanThatReadsAFreedTensor) {
  // Plan validation checks operand lifetimes before anything runs, so a lowering bug never reaches the kernels:
  // the run is refused up front, naming the op and the tensor, and nothing is emitted.
  const ResolvedScenario scenario = tiny_scenario(StrategyKind::Single, 1, 3);
  const Plan plan = single_rank_plan(3, /*free_output_before_loss=*/true);
  VectorTraceSink sink;
  try {
    execute(scenario, plan, sink);
    FAIL() << "a plan reading a freed tensor was executed";
  } catch (const std::exception& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("'mse loss'"), std::string::npos) << message;
    EXPECT_NE(message.find("operand 'fc0 output' is already freed"), std::string::npos) << message;
  }
  EXPECT_TRUE(sink.events().empty());
}

TEST(Executor, MeasuredMemoryEqualsExactAccountingByteForByte) {
  const ResolvedScenario scenario = tiny_scenario(StrategyKind::Single, 1, 5);
  const Plan plan = single_rank_plan(5);
  VectorTraceSink sink;
  const ExecutionResult result = execute(scenario, plan, sink);
  ASSERT_TRUE(result.ok) << result.error;
  const RankMemory predicted = account_memory(plan, AccountingMode::Exact, kGiB).ranks.at(0);
  const RankExecution& measured = result.ranks.at(0);

  // Hand count for batch 5, width 4 (bytes): parameters 64 + 16; x, y, output 80 each + loss 4 = activations 244;
  // the loss gradient 80 (temporaries); gradients 64 + 16.
  EXPECT_EQ(measured.measured_peak_by_category[Category::Parameters], 80);
  EXPECT_EQ(measured.measured_peak_by_category[Category::Activations], 244);
  EXPECT_EQ(measured.measured_peak_by_category[Category::Temporaries], 80);
  EXPECT_EQ(measured.measured_peak_by_category[Category::Gradients], 80);

  EXPECT_EQ(measured.measured_peak_bytes, predicted.peak_allocated);
  CategoryBytes predicted_category_peaks;
  for (const MemorySample& sample : predicted.series)
    for (Category c : kAllCategories)
      predicted_category_peaks[c] = std::max(predicted_category_peaks[c], sample.by_category[c]);
  for (Category c : kAllCategories) EXPECT_EQ(measured.measured_peak_by_category[c], predicted_category_peaks[c]);

  ASSERT_EQ(measured.phases.size(), predicted.phases.size());
  for (std::size_t i = 0; i < measured.phases.size(); ++i) {
    EXPECT_EQ(measured.phases[i].name, predicted.phases[i].name);
    EXPECT_EQ(measured.phases[i].allocated, predicted.phases[i].allocated);
    for (Category c : kAllCategories) EXPECT_EQ(measured.phases[i].by_category[c], predicted.phases[i].by_category[c]);
  }
  // Every Alloc / Free event carries the allocator's total after it: the accounting's series, in the same order.
  std::vector<Bytes> totals;
  for (const auto& e : sink.events())
    if (e.kind == TraceEventKind::Alloc || e.kind == TraceEventKind::Free) totals.push_back(e.allocated_after);
  ASSERT_EQ(totals.size(), predicted.series.size());
  for (std::size_t i = 0; i < totals.size(); ++i) EXPECT_EQ(totals[i], predicted.series[i].allocated) << i;
}

TEST(Executor, RefusesWhatTheCpuBackendCannotRun) {
  VectorTraceSink sink;
  // The plan of a lowering that is not annotated: fc0's forward has no kernel.
  Plan plan = single_rank_plan(3);
  for (auto& op : plan.programs[0].ops)
    if (op.label == "fc0 forward") op.kernel = Kernel::None;
  try {
    execute(tiny_scenario(StrategyKind::Single, 1, 3), plan, sink);
    FAIL() << "an op without a kernel ran";
  } catch (const UnsupportedPlanError& e) {
    EXPECT_NE(std::string(e.what()).find("'fc0 forward' has no kernel but computes layer 'fc0' (Linear)"),
              std::string::npos)
        << e.what();
  }

  Scenario vgg;
  vgg.model.spec = "vgg16";
  vgg.strategy.kind = StrategyKind::Single;
  EXPECT_THROW(execute(resolve_scenario(vgg), single_rank_plan(3), sink), UnsupportedPlanError);
}

// A backend that reports runtime versions, as the cuda backend does (driver, CUDA runtime, NCCL), running on the CPU.
class VersionedBackend final : public Backend {
 public:
  explicit VersionedBackend(std::unique_ptr<Backend> inner) : inner_(std::move(inner)) {}
  std::string name() const override { return inner_->name(); }
  RankBackend& rank(int rank) override { return inner_->rank(rank); }
  void abort(int failed_rank, std::string_view reason) override { inner_->abort(failed_rank, reason); }
  RuntimeVersions runtime_versions() const override { return {"13.0", "12.8", "2.28.9"}; }

 private:
  std::unique_ptr<Backend> inner_;
};

TEST(Executor, TheTraceHeaderCarriesTheBackendsRuntimeVersions) {
  const ResolvedScenario scenario = tiny_scenario(StrategyKind::Single, 1, 3);
  const Plan plan = single_rank_plan(3);
  VectorTraceSink cpu;
  ASSERT_TRUE(execute(scenario, plan, cpu, ExecutionOptions{}).ok);
  EXPECT_FALSE(cpu.header().driver_version.has_value());  // the cpu backend has none: null in the file
  EXPECT_FALSE(cpu.header().cuda_runtime_version.has_value());
  EXPECT_FALSE(cpu.header().nccl_version.has_value());

  VectorTraceSink versioned;
  const auto make = [](const Plan& p, const ExecutionOptions& o) -> std::unique_ptr<Backend> {
    return std::make_unique<VersionedBackend>(make_backend(p, o));
  };
  ASSERT_TRUE(execute(scenario, plan, versioned, ExecutionOptions{}, make).ok);
  EXPECT_EQ(versioned.header().driver_version, "13.0");
  EXPECT_EQ(versioned.header().cuda_runtime_version, "12.8");
  EXPECT_EQ(versioned.header().nccl_version, "2.28.9");
}

}  // namespace
}  // namespace shardscope::exec::test
