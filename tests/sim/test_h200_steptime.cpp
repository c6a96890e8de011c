// PyTorch 2.11's measured step times of held-out jobs on an H200 (tests/data/h200-torch-2.11/time/steptime.json:
// median of 12 steps, CUDA events around zero_grad, forward, backward and step, the batch made apart) against our
// simulation of the same jobs with the PyTorch profile measured on that H200 (assets/devices/h200-torch-2.11.json).
// Prints predicted beside measured with the error (the goal is 3 %). What it holds: eager fp32 jobs within
// 10 %; every job within a factor of 2. Known gaps, printed rather than hidden: our plan runs GPT-2's attention as
// eager attention (the SDPA job is held against it too), and our bf16 is "16-bit model + fp32 master weights" where
// the jobs ran torch.autocast, whose fp32 regions (LayerNorm, softmax, losses, GELU's pow, the fp32 residual
// stream) and casts our plan does not have.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

#include "sim/simulator.h"
#include "strategy/lower.h"

namespace shardscope {
namespace {

using nlohmann::json;

struct Row {
  std::string name;
  double predicted_s = 0, measured_s = 0;
  bool eager_fp32 = false;
};

Scenario scenario_of(const json& spec) {
  Scenario s;
  s.strategy.kind = StrategyKind::Single;
  s.cluster.world = 1;
  s.cluster.device = "H200-141";
  s.cluster.device_profile = std::string(SHARDSCOPE_SOURCE_DIR) + "/assets/devices/h200-torch-2.11.json";
  s.training.steps = 2;  // the second step is the steady one (Adam's state exists)
  s.training.batch = spec["batch"].get<int>();
  s.training.optimizer = *parse_optimizer(spec["optimizer"].get<std::string>());
  s.training.dtype = spec["precision"] == "fp32" ? Dtype::Fp32 : Dtype::Bf16;
  if (spec["kind"] == "mlp") {
    s.model.spec = "mlp:" + std::to_string(spec["layers"].get<int>()) + "x" + std::to_string(spec["width"].get<int>()) +
                   (spec["relu"].get<bool>() ? ":relu" : "");
    s.training.loss = LossKind::Mse;
  } else {
    // GPT2LMHeadModel with GPT-2 small's config (dropout off in the job: our cost model times no dropout kernel).
    s.model.spec = "gpt2";
    s.training.seq = spec["seq"].get<int>();
    s.training.loss = LossKind::CrossEntropy;
  }
  return s;
}

TEST(H200StepTime, SimulatedWithThePyTorchProfileBesideMeasured) {
  std::ifstream in(std::string(SHARDSCOPE_SOURCE_DIR) + "/tests/data/h200-torch-2.11/time/steptime.json");
  ASSERT_TRUE(in) << "tests/data/h200-torch-2.11/time/steptime.json is missing";
  const json data = json::parse(in);
  std::vector<Row> rows;
  for (const json& job : data["jobs"]) {
    if (!job.contains("median_s")) continue;  // the first job failed on the GPU (README: fixed in the script since)
    const json& spec = job["spec"];
    const ResolvedScenario r = resolve_scenario(scenario_of(spec));
    DiscardTraceSink sink;
    const SimulationResult result = simulate(r, lower_validated_plan(r, {.kernel_operands = false}), sink);
    ASSERT_TRUE(result.error.empty()) << result.error;
    EXPECT_EQ(result.cost_source.roofline_ops, 0) << spec["name"] << ": every op should have its curve";
    const bool eager = spec["kind"] == "mlp" || spec.value("attention", "") == "eager";
    rows.push_back({spec["name"].get<std::string>(), static_cast<double>(result.step_time_ns) * 1e-9,
                    job["median_s"].get<double>(), eager && spec["precision"] == "fp32"});
  }
  ASSERT_GE(rows.size(), 10u);
  std::printf("%-46s %10s %10s %8s\n", "job (PyTorch 2.11, H200)", "predicted", "measured", "error");
  double eager_fp32_abs = 0;
  int eager_fp32 = 0;
  for (const Row& row : rows) {
    const double error = (row.predicted_s - row.measured_s) / row.measured_s;
    std::printf("%-46s %8.2f ms %8.2f ms %+7.1f %%\n", row.name.c_str(), row.predicted_s * 1e3, row.measured_s * 1e3, error * 100);
    EXPECT_LT(std::abs(std::log(row.predicted_s / row.measured_s)), std::log(2.0)) << row.name;
    if (row.eager_fp32) {
      EXPECT_LT(std::abs(error), 0.10) << row.name;
      eager_fp32_abs += std::abs(error);
      ++eager_fp32;
    }
  }
  std::printf("eager fp32: mean absolute error %.1f %% over %d jobs (goal 3 %%)\n", 100 * eager_fp32_abs / eager_fp32, eager_fp32);
}

}  // namespace
}  // namespace shardscope
