// torch.autocast in time (issue 40 with issue 42's --precision): each op of an autocast step is timed in the type
// autocast runs it in (PyTorch 2.x aten/src/ATen/autocast_mode.h: addmm / mm / bmm / linear on the
// lower_precision_fp list run in 16-bit; mse_loss on the fp32 list; relu on neither, so in its input's type), the
// weight casts (autocast_mode.cpp cached_cast) and their gradients' casts back (ToCopyBackward0) as copies — against
// a step counted by hand on a made-up profile whose bf16 GEMMs are 10× faster than fp32's and whose bf16
// elementwise kernels are 2× slower per byte than fp32's, so a GEMM or an elementwise op timed in the wrong type
// shows by a factor. Without a profile the roofline takes a 16-bit op's peak from the bf16 tensor cores.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "run/step_timing.h"
#include "sim/cost_model.h"
#include "sim/simulator.h"
#include "strategy/lower.h"

namespace shardscope {
namespace {

using nlohmann::json;

constexpr double kFp32GemmFlopPerNs = 100, kBf16GemmFlopPerNs = 1000;  // GFLOP/s = FLOP per ns
constexpr double kFp32NsPerByte = 1, kBf16NsPerByte = 2;

// GEMMs at a constant throughput over the grid (each layout, each type); elementwise curves of one point, whose
// throughput holds for every size above it; Adam at 1 ns a parameter.
std::string autocast_profile() {
  json gemm;
  for (const auto& [dtype, rate] : {std::pair{"float32", kFp32GemmFlopPerNs}, std::pair{"bfloat16", kBf16GemmFlopPerNs}})
    for (const char* layout : {"forward", "input_grad", "weight_grad"})
      for (double m : {4.0, 4096.0})
        for (double n : {4.0, 4096.0})
          for (double k : {4.0, 4096.0})
            gemm[dtype].push_back({{"layout", layout}, {"m", m}, {"n", n}, {"k", k}, {"batch", 1}, {"seconds", 2 * m * n * k / rate * 1e-9}});
  json elementwise;
  for (const char* op : {"copy", "relu", "relu_backward", "sum_rows", "mul", "add"}) {
    elementwise[op]["float32"] = json::array({{{"bytes", 1}, {"seconds", kFp32NsPerByte * 1e-9}}});
    elementwise[op]["bfloat16"] = json::array({{{"bytes", 1}, {"seconds", kBf16NsPerByte * 1e-9}}});
  }
  json profile = {{"format", "shardscope-device-profile"},
                  {"version", 2},
                  {"source", "pytorch"},
                  {"backend", "cuda"},
                  {"gemm", gemm},
                  {"elementwise", elementwise},
                  {"optimizer", {{"adam", json::array({{{"parameters", 1}, {"seconds", 1e-9}}})}}}};
  return profile.dump();
}

Scenario autocast_mlp(const std::string& profile_path) {
  Scenario s;
  s.model.spec = "mlp:3x256:relu";  // fc0, relu0, fc1, relu1, fc2
  s.training.batch = 64;
  s.training.steps = 2;  // step 2: Adam's state exists, as in every later step
  s.training.loss = LossKind::Mse;
  s.training.precision = Precision::AutocastBf16;
  s.strategy.kind = StrategyKind::Single;
  s.cluster.world = 1;
  s.cluster.device_profile = profile_path;
  return s;
}

TEST(AutocastTime, EachOpIsTimedInTheTypeAutocastRunsItIn) {
  const std::string path = ::testing::TempDir() + "autocast-profile.json";
  std::ofstream(path) << autocast_profile();
  const ResolvedScenario r = resolve_scenario(autocast_mlp(path));
  const Plan plan = lower_validated_plan(r, {.kernel_operands = false});
  OpIntervalSink sink;
  const SimulationResult result = simulate(r, plan, sink);
  ASSERT_TRUE(result.error.empty()) << result.error;
  EXPECT_EQ(result.cost_source.roofline_ops, 0) << "every op of the step has a curve in this profile";
  const StepTiming step = step_timings(plan, sink.intervals()).back();

  // By hand, one step of mlp:3x256:relu at batch 64 under autocast(bf16); b = 64 rows, w = 256.
  const double b = 64, w = 256;
  const double f32 = 4, h = 2;  // bytes of an fp32 and a bf16 element
  // GEMMs, all bf16 (addmm, and AddmmBackward0's two mm): forward 3 × (b, w, w); backward the weight gradient of
  // each layer and the input gradient of fc2 and fc1 (fc0's input, the fp32 batch, needs none): 8 of 2·b·w² FLOPs.
  const double gemm_ns = 8 * 2 * b * w * w / kBf16GemmFlopPerNs;
  // Copies at the bytes they read and write, on the curve of the type they read:
  //   forward, fp32 → bf16: each layer's weight (w² elements) and bias (w), and the batch x (b·w) before fc0;
  //   fc2's bf16 output → fp32 for mse_loss (b·w);
  //   backward: the loss gradient fp32 → bf16 (ToCopyBackward0 of that cast, b·w); each weight's and bias's bf16
  //   gradient → fp32 (ToCopyBackward0 of the weight casts), into AccumulateGrad.
  const double cast_ns = (3 * (w * w + w) + b * w) * (f32 + h) * kFp32NsPerByte  // forward casts of fp32
                         + b * w * (h + f32) * kBf16NsPerByte                      // the output to fp32
                         + b * w * (f32 + h) * kFp32NsPerByte                      // the loss gradient to bf16
                         + 3 * (w * w + w) * (h + f32) * kBf16NsPerByte;           // the gradients to fp32
  // relu (bf16: after a bf16 GEMM) reads and writes b·w; threshold_backward reads the gradient and the result and
  // writes one: two of each.
  const double relu_ns = 2 * (2 * b * w * h) * kBf16NsPerByte + 2 * (3 * b * w * h) * kBf16NsPerByte;
  // The bias gradients: sum_to over the rows of the bf16 output gradient, b·w read and w written, one per layer.
  const double bias_ns = 3 * (b * w + w) * h * kBf16NsPerByte;
  // mse_loss in fp32 (no curve of its own): (x − y)² over three passes as a mul, the mean as one reduction pass;
  // its backward three passes as a mul.
  const double loss_ns = (3 * b * w * f32 + b * w * f32) * kFp32NsPerByte + 3 * b * w * f32 * kFp32NsPerByte;
  const double adam_ns = 3 * (w * w + w);  // 1 ns a parameter
  // Every op's time is rounded to the ns: at most half a ns each, over fewer than 64 ops.
  constexpr double kRounding = 32;
  const auto kind = [&](TimeKind k) { return static_cast<double>(step.by_kind[static_cast<std::size_t>(k)]); };
  EXPECT_NEAR(kind(TimeKind::Gemm), gemm_ns, kRounding);
  EXPECT_NEAR(kind(TimeKind::Elementwise), cast_ns + relu_ns + bias_ns + loss_ns, kRounding);
  EXPECT_NEAR(kind(TimeKind::Optimizer), adam_ns, kRounding);
  EXPECT_NEAR(static_cast<double>(step.step_ns), gemm_ns + cast_ns + relu_ns + bias_ns + loss_ns + adam_ns, 2 * kRounding);
  // The same GEMMs in fp32 would have taken 10× as long: the time is the bf16 curve's.
  EXPECT_LT(kind(TimeKind::Gemm), gemm_ns * kBf16GemmFlopPerNs / kFp32GemmFlopPerNs / 2);
}

TEST(AutocastTime, TheRooflineTakesA16BitOpsPeakFromTheTensorCores) {
  // Wide enough that a GEMM is compute-bound at either peak: (4096, 4096, 4096).
  Scenario s = autocast_mlp("");
  s.cluster.device_profile.clear();
  s.cluster.device = "H200-141";
  s.model.spec = "mlp:3x4096:relu";
  s.training.batch = 4096;
  const ResolvedScenario r = resolve_scenario(s);
  ASSERT_EQ(r.settings.training.dtype, Dtype::Fp32) << "autocast keeps fp32 parameters: --dtype stays fp32";
  const Plan plan = lower_validated_plan(r, {.kernel_operands = false});
  const CostModel costs = CostModel::from_scenario(r);
  const auto& sim = r.settings.simulation;
  const double overhead_ns = sim.kernel_overhead_us * 1e3;
  int gemms = 0, losses = 0;
  for (const Op& op : plan.programs[0].ops) {
    if (op.kind != OpKind::Compute || op.step != 2) continue;
    const double memory_ns = static_cast<double>(op.bytes_accessed) / (r.device.hbm_gbps * sim.memory_efficiency);
    if (op.label == "fc1 addmm") {  // bf16 at the bf16 peak, where fp32's is 15× lower
      const double math_ns = op.flops / (r.device.bf16_tflops * 1e3 * sim.compute_efficiency);
      ASSERT_GT(math_ns, memory_ns);
      EXPECT_NEAR(static_cast<double>(costs.compute_ns(op)), math_ns + overhead_ns, 0.5);
      ++gemms;
    }
    if (op.label == "loss mse_loss") {  // fp32, 3 FLOPs an element at the fp32 peak
      const double math_ns = op.flops / (r.device.fp32_tflops * 1e3 * sim.compute_efficiency);
      EXPECT_NEAR(static_cast<double>(costs.compute_ns(op)), std::max(math_ns, memory_ns) + overhead_ns, 0.5);
      ++losses;
    }
  }
  EXPECT_EQ(gemms, 1);
  EXPECT_EQ(losses, 1);
}

}  // namespace
}  // namespace shardscope
