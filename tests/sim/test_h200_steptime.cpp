// PyTorch 2.11's measured step times of held-out jobs on an H200 against our simulation of the same jobs with the
// PyTorch profile measured on that H200 (assets/devices/h200-torch-2.11.json). Measured: median of 12 steps, CUDA
// events around zero_grad, forward, backward and step, the batch made apart — held against the lease of 2026-11-28
// (tests/data/h200-torch-2.11/lease-2026-11-28/pytorch-steptime.json, all 12 jobs); the older lease's median
// (time/steptime.json, which lacks the 8 × Linear(4096) fp32 job) is printed beside it, with each job's spread
// within its run, to show how far a measurement itself moves. Each job is simulated as PyTorch ran it: fp32, or
// torch.autocast(bfloat16) (--precision autocast-bf16: fp32 parameters, each op timed in the type autocast runs it
// in); GPT-2 as transformers' GPT2LMHeadModel (--implementation hf) with the job's attention.
// What it holds (the goal is 3 %):
// - every fp32 job within 5 %: today 8 × Linear(4096) +3.0 %, 4 × Linear(8192) +0.7 %, 24 × Linear(2048) +3.4 %,
//   12 × Linear(3072) +1.7 %, GPT-2 SDPA +1.0 %, GPT-2 eager attention −2.5 %;
// - the autocast-bf16 MLPs within 20 %: −11.1, −13.6, −7.3 and −19.6 %; GPT-2 under autocast within 35 %: SDPA
//   −24.8 %, eager −33.2 %. Every autocast job is predicted below its median, every autocast MLP below its fastest
//   step. Why the bound is no tighter: an autocast step's GEMMs are ~10× shorter than fp32's, so the host
//   (Python, the autocast dispatch and its casts, the autograd engine) is no longer hidden behind the GPU; the
//   profile times kernels, not the host, and the steps show it — an autocast job's steps spread over 7–42 % of
//   their median within one run (fp32's ≤ 2.2 %) and its median moved by up to a quarter between the two leases
//   (24 × Linear(2048): 8.31 then 6.55 ms), fp32's by ≤ 0.8 %. (A uniform host cost per op does not close it: 7.3 µs,
//   the profile's launch floor, changes no job by 1 %; 25 µs brings GPT-2 to −27 / −18 % but 24 × Linear(2048) to
//   +27 %.)
// - every job within a factor of 2, every op of every job timed from the profile's curves.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "sim/simulator.h"
#include "strategy/lower.h"

namespace shardscope {
namespace {

using nlohmann::json;

const std::string kData = std::string(SHARDSCOPE_SOURCE_DIR) + "/tests/data/h200-torch-2.11/";

json read_json(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in) << path << " is missing";
  return in ? json::parse(in) : json();
}

// transformers' GPT-2 small with the job's config entries (dropout off) over the shipped config.json
std::string gpt2_config(const json& overrides) {
  json config = read_json(std::string(SHARDSCOPE_SOURCE_DIR) + "/assets/models/gpt2/config.json");
  config.update(overrides);
  const std::string path = ::testing::TempDir() + "h200-steptime-gpt2.json";
  std::ofstream(path) << config.dump();
  return path;
}

Scenario scenario_of(const json& spec) {
  Scenario s;
  s.strategy.kind = StrategyKind::Single;
  s.cluster.world = 1;
  s.cluster.device = "H200-141";
  s.cluster.device_profile = std::string(SHARDSCOPE_SOURCE_DIR) + "/assets/devices/h200-torch-2.11.json";
  s.training.steps = 2;  // the second step is the steady one (Adam's state exists)
  s.training.batch = spec["batch"].get<int>();
  s.training.optimizer = *parse_optimizer(spec["optimizer"].get<std::string>());
  const std::string precision = spec["precision"];
  EXPECT_TRUE(precision == "fp32" || precision == "autocast-bf16") << precision;
  if (precision == "autocast-bf16") s.training.precision = Precision::AutocastBf16;
  if (spec["kind"] == "mlp") {
    s.model.spec = "mlp:" + std::to_string(spec["layers"].get<int>()) + "x" + std::to_string(spec["width"].get<int>()) +
                   (spec["relu"].get<bool>() ? ":relu" : "");
    s.training.loss = LossKind::Mse;
  } else {
    // GPT2LMHeadModel (dropout off in the job: our cost model times no dropout kernel)
    s.model.spec = "hf:" + gpt2_config(spec["config"]);
    s.model.implementation = TransformerImplementation::Hf;
    s.model.attention = parse_attention(spec["attention"].get<std::string>());
    s.training.seq = spec["seq"].get<int>();
    s.training.loss = LossKind::CrossEntropy;
  }
  return s;
}

struct Row {
  std::string name;
  double predicted_s = 0, measured_s = 0, other_lease_s = 0, spread = 0;
  bool autocast = false, mlp = false;
  double error() const { return (predicted_s - measured_s) / measured_s; }
};

TEST(H200StepTime, SimulatedWithThePyTorchProfileBesideMeasured) {
  const json held = read_json(kData + "lease-2026-11-28/pytorch-steptime.json");
  const json older = read_json(kData + "time/steptime.json");
  std::map<std::string, double> older_median;
  for (const json& job : older["jobs"])
    if (job.contains("median_s")) older_median[job["spec"]["name"]] = job["median_s"];
  std::vector<Row> rows;
  for (const json& job : held["jobs"]) {
    const json& spec = job["spec"];
    ASSERT_TRUE(job.contains("median_s")) << spec["name"];
    const ResolvedScenario r = resolve_scenario(scenario_of(spec));
    DiscardTraceSink sink;
    const SimulationResult result = simulate(r, lower_validated_plan(r, {.kernel_operands = false}), sink);
    ASSERT_TRUE(result.error.empty()) << result.error;
    EXPECT_EQ(result.cost_source.roofline_ops, 0) << spec["name"] << ": every op should have its curve";
    const std::vector<double> steps = job["step_times_s"].get<std::vector<double>>();
    Row row{spec["name"], static_cast<double>(result.step_time_ns) * 1e-9, job["median_s"]};
    row.other_lease_s = older_median.contains(row.name) ? older_median[row.name] : 0;
    row.spread = (*std::max_element(steps.begin(), steps.end()) - *std::min_element(steps.begin(), steps.end())) / row.measured_s;
    row.autocast = spec["precision"] == "autocast-bf16";
    row.mlp = spec["kind"] == "mlp";
    rows.push_back(row);
  }
  ASSERT_EQ(rows.size(), 12u);
  std::printf("%-46s %10s %10s %8s %12s %8s\n", "job (PyTorch 2.11, H200)", "predicted", "measured", "error",
              "other lease", "spread");
  double abs_error[2] = {0, 0};
  int count[2] = {0, 0};
  for (const Row& row : rows) {
    char other[32] = "-";
    if (row.other_lease_s > 0) std::snprintf(other, sizeof other, "%.2f ms", row.other_lease_s * 1e3);
    std::printf("%-46s %8.2f ms %8.2f ms %+7.1f %% %12s %6.1f %%\n", row.name.c_str(), row.predicted_s * 1e3,
                row.measured_s * 1e3, row.error() * 100, other, row.spread * 100);
    EXPECT_LT(std::abs(std::log(row.predicted_s / row.measured_s)), std::log(2.0)) << row.name;
    const double bound = !row.autocast ? 0.05 : row.mlp ? 0.20 : 0.35;  // see the comment at the top
    EXPECT_LT(std::abs(row.error()), bound) << row.name;
    abs_error[row.autocast] += std::abs(row.error());
    ++count[row.autocast];
  }
  std::printf("fp32: mean absolute error %.1f %% over %d jobs; autocast-bf16: %.1f %% over %d (goal 3 %%)\n",
              100 * abs_error[0] / count[0], count[0], 100 * abs_error[1] / count[1], count[1]);
}

}  // namespace
}  // namespace shardscope
