// Device profiles (issue 40): the format (version 1 as python/shardscope/calibrate.py writes it, version 2 ours),
// the log-log interpolation, and that simulate times ops from the profile — a profile with doubled GEMM throughput
// halves the simulated GEMM time, against times counted by hand from the model's shapes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "cluster/device_profile.h"
#include "engine/hf_config_files.h"
#include "plan/cublas_workspace.h"
#include "run/step_timing.h"
#include "sim/profile_costs.h"
#include "sim/profile_interpolation.h"
#include "sim/simulator.h"
#include "strategy/lower.h"

namespace shardscope {
namespace {

using nlohmann::json;

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// ---- format ----

TEST(DeviceProfileFormat, ReadsTheShippedH200ProfileAsVersion1) {
  const std::string path = std::string(SHARDSCOPE_SOURCE_DIR) + "/assets/devices/h200-torch-2.11.json";
  const json raw = json::parse(read_text(path));
  const DeviceProfile p = load_device_profile_file(path);
  EXPECT_EQ(p.version, 1);
  EXPECT_EQ(p.source, "pytorch");
  EXPECT_EQ(p.backend, "cuda");  // version 1 names it as machine.device
  EXPECT_EQ(p.machine_name, "NVIDIA H200");
  EXPECT_EQ(p.gemm.at("bfloat16").size(), raw["gemm"]["bfloat16"].size());
  EXPECT_EQ(p.gemm.at("float32").front().seconds, raw["gemm"]["float32"][0]["seconds"].get<double>());
  EXPECT_EQ(p.elementwise.at("softmax").at("float16").size(), raw["elementwise"]["softmax"]["float16"].size());
  EXPECT_EQ(p.optimizer.at("adam").back().size, raw["optimizer"]["adam"].back()["parameters"].get<double>());
  EXPECT_EQ(p.collective_backend, "gloo");
  EXPECT_EQ(p.launch_s, raw["overheads"]["launch_s"].get<double>());
}

TEST(DeviceProfileFormat, Version2RoundTrips) {
  DeviceProfile p;
  p.source = "shardscope";
  p.backend = "cpu";
  p.machine_name = "test CPU";
  p.date = "2026-11-27T00:00:00Z";
  p.executor_op_s = 2e-6;
  p.gemm["float32"] = {{"forward", 8, 16, 32, 1, 1e-5}, {"batched", 4, 4, 4, 12, 2e-6}};
  p.elementwise["relu"]["float32"] = {{4096, 1e-6, 512, 0}};
  p.optimizer["adam"] = {{1024, 3e-6, 0, 2}};
  p.attention["float32"] = {{"shardscope-block-rest", 8, 64, 32, 1e-4, 2e-4}};
  p.collectives["all_reduce"] = {{2, 4096, 5e-5}};
  p.collective_backend = "threads";
  p.concurrency["gemm"] = {{2, 1.8}};
  const DeviceProfile q = parse_device_profile(device_profile_to_json(p), "round trip");
  EXPECT_EQ(q.version, kDeviceProfileVersion);
  EXPECT_EQ(q.source, "shardscope");
  EXPECT_EQ(q.backend, "cpu");
  EXPECT_EQ(q.machine_name, "test CPU");
  EXPECT_EQ(q.executor_op_s, 2e-6);
  ASSERT_EQ(q.gemm.at("float32").size(), 2u);
  EXPECT_EQ(q.gemm.at("float32")[1].batch, 12);
  EXPECT_EQ(q.gemm.at("float32")[1].layout, "batched");
  EXPECT_EQ(q.elementwise.at("relu").at("float32")[0].elements, 512);
  EXPECT_EQ(q.optimizer.at("adam")[0].tensors, 2);
  EXPECT_EQ(q.attention.at("float32")[0].backward_s, 2e-4);
  EXPECT_EQ(q.collectives.at("all_reduce")[0].seconds, 5e-5);
  EXPECT_EQ(q.collective_backend, "threads");
  EXPECT_EQ(q.concurrency.at("gemm")[0].slowdown, 1.8);
}

void expect_error(const std::string& text, const std::string& fragment) {
  try {
    parse_device_profile(text, "p.json");
    ADD_FAILURE() << "no error for " << text;
  } catch (const DeviceProfileError& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(DeviceProfileFormat, BadProfilesAreNamedByTheirPath) {
  expect_error(R"({"format": "something-else", "version": 1})", "format: must be \"shardscope-device-profile\"");
  expect_error(R"({"format": "shardscope-device-profile", "version": 3})", "version: 3 is not one this build reads");
  expect_error(R"({"format": "shardscope-device-profile", "version": 1, "gemm": {"float32": [{"layout": "forward",
               "m": 1, "n": 1, "k": 1, "seconds": -1}]}})", "p.json: gemm.float32[0].seconds: must be a positive");
  expect_error(R"({"format": "shardscope-device-profile", "version": 1, "elementwise": {"relu": {"float32": 3}}})",
               "elementwise.relu.float32: must be an array");
  expect_error(R"({"format": "shardscope-device-profile", "version": 1, "optimizer": {"adam": [{"seconds": 1}]}})",
               "optimizer.adam[0].parameters: missing");
  expect_error("[1, 2]", "must be a JSON object");
  expect_error(R"({"format": "shardscope-device-profile", "version": 2, "gemm": {"float32": [{"layout": "sideways",
               "m": 1, "n": 1, "k": 1, "seconds": 1}]}})", "gemm.float32[0].layout: must be forward, input_grad, weight_grad or batched");
  expect_error(R"({"format": "shardscope-device-profile", "version": 2, "gemm": {"float32": [{"layout": "batched",
               "m": 1, "n": 1, "k": 1, "batch": 0.5, "seconds": 1}]}})", "gemm.float32[0].batch: must be a whole number");
}

TEST(DeviceProfileFormat, ShippedProfilesAreFoundByName) {
  const std::string path = device_profile_path("h200-torch-2.11");
  EXPECT_NE(path.find("assets/devices/h200-torch-2.11.json"), std::string::npos);
  EXPECT_THROW(device_profile_path("no-such-profile"), DeviceProfileError);
  const auto names = shipped_device_profiles();
  EXPECT_NE(std::find(names.begin(), names.end(), "h200-torch-2.11"), names.end());
}

// ---- interpolation ----

TEST(ProfileInterpolation, CurveIsLogLogBetweenPointsAndHoldsItsEdges) {
  // t = 1e-9·size between the points (a power law is a line in log-log), a floor below, throughput held above.
  const std::vector<CurvePoint> curve = {{1e3, 1e-6}, {1e5, 1e-4}};
  EXPECT_DOUBLE_EQ(*curve_seconds(curve, 1e3), 1e-6);
  EXPECT_NEAR(*curve_seconds(curve, 1e4), 1e-5, 1e-5 * 1e-12);
  EXPECT_DOUBLE_EQ(*curve_seconds(curve, 10), 1e-6);   // below the smallest: its time
  // Above the largest: its throughput, 1e-4 s × (1e7 / 1e5); a product and a quotient, so a few ulps of 1e-2.
  EXPECT_NEAR(*curve_seconds(curve, 1e7), 1e-2, 1e-2 * 1e-14);
  // t = size² between (10, 1e-6) and (100, 1e-4): at sqrt(10)·10 the geometric mean.
  EXPECT_NEAR(*curve_seconds({{10, 1e-6}, {100, 1e-4}}, std::sqrt(10.0) * 10), 1e-5, 1e-17);
  EXPECT_FALSE(curve_seconds({}, 5));
}

TEST(ProfileInterpolation, GridInterpolatesThroughputAndFillsCutCorners) {
  // A 2 × 2 × 2 grid at 10 GFLOP/s everywhere but (64, 64, 64) at 40: the throughput at the centre (in log) is the
  // geometric mean of the corners, 10·4^(1/8).
  std::vector<GridPoint> points;
  for (double m : {8.0, 64.0})
    for (double n : {8.0, 64.0})
      for (double k : {8.0, 64.0}) {
        const double flops = 2 * m * n * k, rate = m == 64 && n == 64 && k == 64 ? 40e9 : 10e9;
        points.push_back({{m, n, k}, flops, flops / rate});
      }
  const double flops = 2 * std::pow(std::sqrt(8.0 * 64), 3);
  EXPECT_NEAR(*grid_seconds(points, {std::sqrt(8.0 * 64), std::sqrt(8.0 * 64), std::sqrt(8.0 * 64)}, flops),
              flops / (10e9 * std::pow(4.0, 1.0 / 8)), flops / 10e9 * 1e-12);
  // A corner left out (as calibrate.py cuts large products) takes the best throughput at smaller coordinates.
  points.pop_back();
  const double big = 2.0 * 64 * 64 * 64;
  EXPECT_NEAR(*grid_seconds(points, {64, 64, 64}, big), big / 10e9, big / 10e9 * 1e-12);
  // Beyond the grid the edge's throughput holds.
  EXPECT_NEAR(*grid_seconds(points, {512, 8, 8}, 2.0 * 512 * 8 * 8), 2.0 * 512 * 8 * 8 / 10e9, 1e-18);
}

// A batched product and its transpose are one GEMM to the BLAS (Cᵀ = Bᵀ·Aᵀ: cuBLAS and OpenBLAS run a row-major
// (m, n, k) product as the column-major (n, m, k) one), so a shape with m < n is priced at its transpose. The
// calibrations time two families, attention's scores (s, s, d) and context (s, d, s), both with m ≥ n; the key
// gradient of the scores, Qᵀ·dS, is (d, s, s), the context's product transposed.
TEST(ProfileInterpolation, ABatchedProductIsPricedAtItsTranspose) {
  DeviceProfile p;
  p.source = "pytorch";
  constexpr double kBatch = 96, kFast = 30e12, kSlow = 1e12;  // FLOP/s: (64, 64, 64) slow, as small products are
  const auto point = [&](double m, double n, double k) {
    const double rate = m == 64 && n == 64 && k == 64 ? kSlow : kFast;
    return ProfileGemmPoint{"batched", m, n, k, kBatch, 2 * m * n * k * kBatch / rate};
  };
  for (double s : {64.0, 512.0}) {
    p.gemm["float32"].push_back(point(s, s, 64));
    p.gemm["float32"].push_back(point(s, 64, s));
  }
  const ProfileCosts costs(std::make_shared<const DeviceProfile>(p), Dtype::Fp32);
  const double flops = 2.0 * 64 * 512 * 512 * kBatch;
  // The measured context product (512, 64, 512) and the key gradient (64, 512, 512): both at the measured 30 TFLOP/s.
  EXPECT_NEAR(*costs.gemm_seconds("batched", 512, 64, 512, kBatch), flops / kFast, flops / kFast * 1e-9);
  EXPECT_NEAR(*costs.gemm_seconds("batched", 64, 512, 512, kBatch), flops / kFast, flops / kFast * 1e-9);
}

// ---- simulate uses the profile ----

// A profile of our executor (source "shardscope") with every GEMM layout at `gflops` flat over a grid that brackets
// the test's shapes, and bias terms, ReLU, the MSE loss and Adam at fixed times.
std::string synthetic_profile(double gflops) {
  json gemm = json::array();
  for (const char* layout : {"forward", "input_grad", "weight_grad"})
    for (double m : {4.0, 4096.0})
      for (double n : {4.0, 4096.0})
        for (double k : {4.0, 4096.0})
          gemm.push_back({{"layout", layout}, {"m", m}, {"n", n}, {"k", k}, {"batch", 1}, {"seconds", 2 * m * n * k / (gflops * 1e9)}});
  // One point at 1 byte taking 1 ns: every op lies above it, so its throughput holds: 1 ns a byte.
  const auto flat = [] { return json::array({{{"bytes", 1}, {"seconds", 1e-9}}}); };
  json elementwise;
  for (const char* op : {"bias_add", "bias_grad", "relu", "relu_backward", "mse_loss", "mse_loss_backward"})
    elementwise[op]["float32"] = flat();
  json profile = {{"format", "shardscope-device-profile"},
                  {"version", 2},
                  {"source", "shardscope"},
                  {"backend", "cpu"},
                  {"gemm", {{"float32", gemm}}},
                  {"elementwise", elementwise},
                  {"optimizer", {{"adam", json::array({{{"parameters", 1}, {"seconds", 1e-9}}})}}}};  // 1 ns a parameter
  return profile.dump();
}

std::string write_temporary(const std::string& text, const std::string& name) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

// The simulated step's time by kind (run/step_timing.h), as simulate's trace gives it.
StepTiming simulated_step(const Scenario& s) {
  const ResolvedScenario r = resolve_scenario(s);
  const Plan plan = lower_validated_plan(r, {.kernel_operands = false});
  OpIntervalSink sink;
  const SimulationResult result = simulate(r, plan, sink);
  EXPECT_TRUE(result.error.empty()) << result.error;
  return step_timings(plan, sink.intervals()).back();
}

Scenario mlp_scenario(const std::string& profile_path) {
  Scenario s;
  s.model.spec = "mlp:3x256:relu";
  s.training.batch = 64;
  s.training.steps = 2;
  s.strategy.kind = StrategyKind::Single;
  s.cluster.world = 1;
  s.cluster.device_profile = profile_path;
  return s;
}

TEST(SimulateWithProfile, DoubledGemmThroughputHalvesTheGemmTime) {
  const std::string slow = write_temporary(synthetic_profile(50), "profile-50.json");
  const std::string fast = write_temporary(synthetic_profile(100), "profile-100.json");
  const StepTiming a = simulated_step(mlp_scenario(slow)), b = simulated_step(mlp_scenario(fast));
  // By hand, mlp:3x256 at batch 64: 3 Linear(256, 256); forward 3 GEMMs (64, 256, 256); backward the weight
  // gradient of each and the input gradient of layers 1 and 2 (layer 0's input needs none): 8 GEMMs of 2·64·256²
  // FLOPs. The bias terms ride at 1 ns a byte: 3 forward bias rows (2 passes over 64 × 256 fp32) and 3 bias
  // gradients (1 pass).
  const double gemm_flops = 8 * 2.0 * 64 * 256 * 256;
  const double bias_ns = 3 * (2 * 64 * 256 * 4) + 3 * (64 * 256 * 4);
  const auto gemm_ns = [&](double gflops) { return gemm_flops / gflops + bias_ns; };  // GFLOP/s = FLOP per ns
  const auto gemm = [](const StepTiming& t) { return static_cast<double>(t.by_kind[static_cast<std::size_t>(TimeKind::Gemm)]); };
  constexpr double kRounding = 6;  // one rounded ns per Linear op
  EXPECT_NEAR(gemm(a), gemm_ns(50), kRounding);
  EXPECT_NEAR(gemm(b), gemm_ns(100), kRounding);
  EXPECT_NEAR(gemm(a) - bias_ns, 2 * (gemm(b) - bias_ns), 2 * kRounding);
  // Everything else is the same in both: the elementwise and optimizer curves did not change.
  EXPECT_EQ(a.by_kind[static_cast<std::size_t>(TimeKind::Elementwise)], b.by_kind[static_cast<std::size_t>(TimeKind::Elementwise)]);
  EXPECT_EQ(a.by_kind[static_cast<std::size_t>(TimeKind::Optimizer)], b.by_kind[static_cast<std::size_t>(TimeKind::Optimizer)]);
  // Adam over 3 × (256² + 256) parameters at 1 ns a parameter.
  EXPECT_NEAR(static_cast<double>(a.by_kind[static_cast<std::size_t>(TimeKind::Optimizer)]), 3.0 * (256 * 256 + 256), 1);
}

// Our GPT-2 block taken apart (profile_costs.cpp gpt2_block_seconds) when the profile has no GELU curve, as a CUDA
// calibration has none (the GELU runs inside the block's kernel): the four Conv1D GEMMs, their bias rows, two
// LayerNorms and two residual adds from their curves, and the rest (GELU included) from the block's measured rest.
// Before, the missing curve failed the whole block over to the roofline, and the calibration, subtracting nothing,
// recorded the whole block as its rest.
TEST(SimulateWithProfile, AGpt2BlockWithoutGeluCurvesIsItsKernelsAndItsMeasuredRest) {
  json profile = json::parse(synthetic_profile(100));  // GEMMs at 100 FLOP per ns, bias terms at 1 ns a byte
  for (const char* op : {"layer_norm", "layer_norm_backward", "accumulate", "copy"})
    profile["elementwise"][op]["float32"] = json::array({{{"bytes", 1}, {"seconds", 1e-9}}});
  // b 2, s 16, h 64, 4 heads (width 16), inner 256: the rest measured at exactly this shape, 7 µs forward.
  profile["attention"]["float32"] = json::array({{{"kernel", "shardscope-block-rest"}, {"batch_heads", 8}, {"seq", 16},
                                                  {"head_dim", 16}, {"forward_s", 7e-6}, {"backward_s", 9e-6}}});
  const auto costs_of = [](const json& p) {
    return ProfileCosts(std::make_shared<const DeviceProfile>(parse_device_profile(p.dump(), "test")), Dtype::Fp32);
  };
  const double n = 2 * 16, h = 64, i = 256;
  // By hand, forward: GEMMs n × (3h·h + h·h + i·h + h·i) multiply-adds; bias rows 2 passes over each output; two
  // LayerNorms of 2 passes and two residual adds of 3 over n × h fp32.
  const double gemm_ns = 2 * n * (3 * h * h + h * h + i * h + h * i) / 100;
  const double bias_ns = 2 * n * (3 * h + h + i + h) * 4;
  const double norm_add_ns = 2 * (2 * n * h * 4) + 2 * (3 * n * h * 4);
  const ProfileCosts without_gelu = costs_of(profile);
  const auto others = without_gelu.gpt2_block_seconds(2, 16, h, 4, i, false, false);
  ASSERT_TRUE(others.has_value()) << "a block without GELU curves must not fall back to the roofline";
  const double others_ns = gemm_ns + bias_ns + norm_add_ns;
  const double rounding_ns = others_ns * 1e-9;  // log-log interpolation exactly on its points
  EXPECT_NEAR(*others * 1e9, others_ns, rounding_ns);
  // With the core: the measured rest added on top, so a calibration's rest (block − others) gives back the block.
  EXPECT_NEAR(*without_gelu.gpt2_block_seconds(2, 16, h, 4, i, false) * 1e9, others_ns + 7000, rounding_ns + 1e-6);
  // A CPU profile times the GELU apart (2 passes over n × inner fp32): then it is one of the block's kernels.
  profile["elementwise"]["gelu"]["float32"] = json::array({{{"bytes", 1}, {"seconds", 1e-9}}});
  EXPECT_NEAR(*costs_of(profile).gpt2_block_seconds(2, 16, h, 4, i, false, false) * 1e9, others_ns + 2 * n * i * 4,
              rounding_ns);
}

// A profile whose GEMM throughput depends on the output width n alone: 10 GFLOP/s at n = 4, 1000 at n = 4096
// (log-log between), so two shapes of the same FLOPs but different n take different times.
std::string width_dependent_profile() {
  json profile = json::parse(synthetic_profile(100));
  json gemm = json::array();
  for (const char* layout : {"forward", "input_grad", "weight_grad"})
    for (double m : {4.0, 4096.0})
      for (double n : {4.0, 4096.0})
        for (double k : {4.0, 4096.0})
          gemm.push_back({{"layout", layout}, {"m", m}, {"n", n}, {"k", k}, {"batch", 1},
                          {"seconds", 2 * m * n * k / ((n == 4 ? 10 : 1000) * 1e9)}});
  profile["gemm"]["float32"] = gemm;
  return profile.dump();
}

TEST(SimulateWithProfile, TensorParallelGemmsArePricedAtTheShardsShape) {
  // mlp:2x256 at batch 64 under tp 2: fc0 column-parallel, fc1 row-parallel. By hand, every rank's GEMMs (with and
  // without sequence parallelism, whose all-gathered inputs give the same b = 64 rows):
  //   fc0 forward (m 64, n 128, k 256); fc1 forward (64, 256, 128);
  //   fc1 backward: input gradient (m 64, n = in 128, k = out 256), weight gradient (m = out 256, n = in 128, k 64);
  //   fc0 backward: weight gradient only, the model's first layer (m 128, n 256, k 64).
  // Two profiles that differ in their GEMMs only: the step's GEMM time differs by exactly these shapes' difference.
  const std::string uniform_path = write_temporary(synthetic_profile(100), "profile-uniform.json");
  const std::string width_path = write_temporary(width_dependent_profile(), "profile-width.json");
  const ProfileCosts uniform(std::make_shared<const DeviceProfile>(load_device_profile_file(uniform_path)), Dtype::Fp32);
  const ProfileCosts width(std::make_shared<const DeviceProfile>(load_device_profile_file(width_path)), Dtype::Fp32);
  struct Shape {
    const char* layout;
    double m, n, k;
  };
  const auto difference = [&](const std::vector<Shape>& shapes) {
    double ns = 0;
    for (const Shape& g : shapes) ns += 1e9 * (*width.gemm_seconds(g.layout, g.m, g.n, g.k) - *uniform.gemm_seconds(g.layout, g.m, g.n, g.k));
    return ns;
  };
  const double expected = difference({{"forward", 64, 128, 256}, {"forward", 64, 256, 128}, {"input_grad", 64, 128, 256},
                                      {"weight_grad", 256, 128, 64}, {"weight_grad", 128, 256, 64}});
  // The whole layers' shapes on the shard's FLOPs (32 rows of 256 × 256), what was priced before: far off.
  const double whole_layers = difference({{"forward", 32, 256, 256}, {"forward", 32, 256, 256}, {"input_grad", 32, 256, 256},
                                          {"weight_grad", 256, 256, 32}, {"weight_grad", 256, 256, 32}});
  ASSERT_GT(std::abs(expected - whole_layers), 1000);
  for (const bool sp : {false, true}) {
    SCOPED_TRACE(sp ? "tp 2 + sp" : "tp 2");
    Scenario a = mlp_scenario(uniform_path), b = mlp_scenario(width_path);
    for (Scenario* s : {&a, &b}) {
      s->model.spec = "mlp:2x256:relu";
      s->strategy.tp = 2;
      s->strategy.sequence_parallel = sp;
      s->cluster.world = 2;
    }
    const auto gemm = [](const StepTiming& t) { return static_cast<double>(t.by_kind[static_cast<std::size_t>(TimeKind::Gemm)]); };
    EXPECT_NEAR(gemm(simulated_step(b)) - gemm(simulated_step(a)), expected, 2 * 5);  // a rounded ns per op, twice
  }
}

// A GPT-2 block's tensor-parallel shard is priced at the shard's shapes: with tp 2, c_attn makes 3h/2 columns from h,
// attn.c_proj h from h/2, c_fc i/2 from h and mlp.c_proj h from i/2, over all n tokens; the norms and residual adds
// run over all n tokens, or n/2 under sequence parallelism. By hand, against two profiles that differ only in their
// GEMMs (as the MLP test above), and the elementwise terms at 1 ns a byte. Before, a shard's block was priced as the
// whole block on (its FLOPs / the whole block's a sample) samples: at one sample a micro-batch, the whole block.
TEST(SimulateWithProfile, TensorParallelGptBlocksArePricedAtTheShardsShape) {
  const auto with_elementwise = [](const std::string& text) {
    json profile = json::parse(text);
    for (const char* op : {"layer_norm", "layer_norm_backward", "accumulate", "copy"})
      profile["elementwise"][op]["float32"] = json::array({{{"bytes", 1}, {"seconds", 1e-9}}});
    return ProfileCosts(std::make_shared<const DeviceProfile>(parse_device_profile(profile.dump(), "test")), Dtype::Fp32);
  };
  const ProfileCosts uniform = with_elementwise(synthetic_profile(100)), width = with_elementwise(width_dependent_profile());
  const double b = 2, s = 16, h = 64, a = 4, i = 256, n = b * s;
  struct Shape {
    const char* layout;
    double m, n, k;
  };
  const auto gemm_ns = [](const ProfileCosts& costs, const std::vector<Shape>& shapes) {
    double ns = 0;
    for (const Shape& g : shapes) ns += 1e9 * *costs.gemm_seconds(g.layout, g.m, g.n, g.k);
    return ns;
  };
  // Conv1D (out, in) of the shard.
  const double convs[4][2] = {{3 * h / 2, h}, {h, h / 2}, {i / 2, h}, {h, i / 2}};
  std::vector<Shape> forward, backward;
  double forward_bias_bytes = 0, backward_bias_bytes = 0;
  for (const auto& [out, in] : convs) {
    forward.push_back({"forward", n, out, in});
    backward.push_back({"input_grad", n, in, out});
    backward.push_back({"weight_grad", out, in, n});
    forward_bias_bytes += 2 * n * out * 4;  // our bias rows: 2 passes over the output
    backward_bias_bytes += n * out * 4;     // the bias gradient: 1 pass
  }
  for (const bool sp : {false, true}) {
    SCOPED_TRACE(sp ? "tp 2 + sp" : "tp 2");
    const ProfileCosts::BlockShard shard{2, sp};
    const double outside = (sp ? n / 2 : n) * h * 4;  // bytes of one [tokens, h] fp32 tensor outside the regions
    // Forward without the attention core: GEMMs, bias rows, 2 LayerNorms (2 passes), 2 residual adds (3 passes).
    const double forward_ns = gemm_ns(uniform, forward) + forward_bias_bytes + 2 * 2 * outside + 2 * 3 * outside;
    const auto f = uniform.gpt2_block_seconds(b, s, h, a, i, false, false, shard);
    ASSERT_TRUE(f.has_value());
    EXPECT_NEAR(*f * 1e9, forward_ns, forward_ns * 1e-9);
    EXPECT_NEAR((*width.gpt2_block_seconds(b, s, h, a, i, false, false, shard) - *f) * 1e9,
                gemm_ns(width, forward) - gemm_ns(uniform, forward), forward_ns * 1e-9);
    // Backward: GEMMs, bias gradients, 2 LayerNorm backwards (3 passes), the residual path's copy (2 passes).
    const double backward_ns = gemm_ns(uniform, backward) + backward_bias_bytes + 2 * 3 * outside + 2 * outside;
    EXPECT_NEAR(*uniform.gpt2_block_seconds(b, s, h, a, i, true, false, shard) * 1e9, backward_ns, backward_ns * 1e-9);
    // The parts' pieces: the attention part alone is c_attn and attn.c_proj, with ln_1 and the first residual
    // outside sequence parallelism's regions.
    const unsigned attention_part = ProfileCosts::kAttentionGemms | ProfileCosts::kNorm1 | ProfileCosts::kResidual1;
    const double attention_ns = gemm_ns(uniform, {forward[0], forward[1]}) + 2 * n * (3 * h / 2 + h) * 4 +
                                2 * outside + 3 * outside;
    EXPECT_NEAR(*uniform.gpt2_block_seconds(b, s, h, a, i, false, false, shard, attention_part) * 1e9, attention_ns,
                attention_ns * 1e-9);
  }
}

// A GPT model from a config.json, one rank per tensor-parallel shard, recomputing as `mode` says.
Scenario recomputing_gpt(const std::string& config, int batch, CheckpointMode mode, int tp) {
  Scenario s;
  s.model.spec = "hf:" + config;
  s.training.batch = batch;
  s.training.checkpoint = mode;
  s.strategy.kind = StrategyKind::Single;
  s.strategy.tp = tp;
  s.cluster.world = tp;
  return s;
}

// A full recomputation re-runs its block only up to GELU (plan/block_recompute.h), as the executors do: priced, it is
// the block's forward less mlp.c_proj's GEMM, that GEMM's bias rows (2 passes over its output) and the second
// residual add (3 passes over n × h), by hand from the shapes against the synthetic profile (GEMMs at 100 GFLOP/s,
// the elementwise terms at 1 ns a byte). On one rank the block is one op; under tp 2 the executed plan runs it in
// parts around its all-reduces and the simulated plan keeps it one op: both less the shard's c_proj (rows i/t).
TEST(SimulateWithProfile, AFullRecomputationIsPricedUpToItsGelu) {
  testing::TempConfigDir dir;
  const int h = 64, a = 4, positions = 32, b = 2, i = 4 * h;
  const std::string config = dir.write("tiny.json", testing::gpt2_config_json(h, a, 2, 256, positions));
  json text = json::parse(synthetic_profile(100));
  for (const char* op : {"layer_norm", "layer_norm_backward", "accumulate", "copy"})
    text["elementwise"][op]["float32"] = json::array({{{"bytes", 1}, {"seconds", 1e-9}}});
  for (const int batch_heads : {4, 8})  // the attention core, at the heads of tp 2 and of one rank
    text["attention"]["float32"].push_back({{"kernel", "shardscope"}, {"batch_heads", batch_heads}, {"seq", positions},
                                            {"head_dim", h / a}, {"forward_s", 5e-6}, {"backward_s", 9e-6}});
  const auto profile = std::make_shared<const DeviceProfile>(parse_device_profile(text.dump(), "test"));
  for (const int tp : {1, 2}) {
    const ResolvedScenario r = resolve_scenario(recomputing_gpt(config, b, CheckpointMode::Full, tp));
    const ProfileCosts costs(profile, r);
    const double n = b * positions;
    const double expected_ns = 1e9 * *costs.gemm_seconds("forward", n, h, i / tp) + 2 * n * h * 4 + 3 * n * h * 4;
    for (const bool operands : {true, false}) {
      SCOPED_TRACE(std::string("tp ") + std::to_string(tp) + (operands ? ", executed plan" : ", simulated plan"));
      const Plan plan = lower_validated_plan(r, {.kernel_operands = operands});
      // The ops of h.1's forward or recompute: the op itself, or its parts ("h.1 forward (mlp)").
      const auto seconds_of = [&](const std::string& label) {
        double total = 0;
        int found = 0;
        for (const Op& op : plan.programs.at(0).ops) {
          const std::string& l = op.label.str();
          if (op.kind != OpKind::Compute || op.step != 1 || (l != label && !l.starts_with(label + " ("))) continue;
          const auto t = costs.compute_seconds(op);
          EXPECT_TRUE(t.has_value()) << l;
          total += t.value_or(0);
          ++found;
        }
        EXPECT_EQ(found, operands && tp > 1 ? 2 : 1) << label;
        return total;
      };
      const double forward = seconds_of("h.1 forward"), recompute = seconds_of("h.1 recompute");
      EXPECT_NEAR((forward - recompute) * 1e9, expected_ns, 1e-6 * forward * 1e9);
    }
  }
}

// Selective recomputation re-runs the attention core up to its dropped probabilities (no product with V), as the
// executors do: our profile prices it at the calibration's timed recomputation kernel (its own attention points,
// kernel kAttentionRecomputeKernel), and a profile without them at the whole core's forward, as before (an upper
// bound); a PyTorch profile as the eager core's kernels up to the softmax: q and k made contiguous (2 passes over
// b·s·h each), q·kᵀ, the scale (2 passes over the b·a·s² scores), the mask (3) and the softmax (2), counted here at
// 1 ns a byte with q·kᵀ from the profile's batched curve. On one rank and under tp 2 (the shard's heads).
TEST(SimulateWithProfile, ASelectiveRecomputationIsPricedUpToItsProbabilities) {
  testing::TempConfigDir dir;
  const int h = 64, a = 4, positions = 32, b = 2;
  const std::string config = dir.write("tiny.json", testing::gpt2_config_json(h, a, 2, 256, positions));
  const auto point = [&](const char* kernel, int batch_heads, double forward_s, double backward_s) {
    return json{{"kernel", kernel}, {"batch_heads", batch_heads}, {"seq", positions}, {"head_dim", h / a},
                {"forward_s", forward_s}, {"backward_s", backward_s}};
  };
  json ours = json::parse(synthetic_profile(100));
  for (const int batch_heads : {4, 8}) ours["attention"]["float32"].push_back(point("shardscope-block-rest", batch_heads, 5e-6, 9e-6));
  json pytorch = ours;
  pytorch["source"] = "pytorch";
  for (const char* op : {"copy", "mul", "add", "softmax"})
    pytorch["elementwise"][op]["float32"] = json::array({{{"bytes", 1}, {"seconds", 1e-9}}});
  for (const double bh : {1.0, 64.0})
    for (const double m : {4.0, 4096.0})
      for (const double k : {4.0, 4096.0})
        pytorch["gemm"]["float32"].push_back({{"layout", "batched"}, {"m", m}, {"n", m}, {"k", k}, {"batch", bh},
                                              {"seconds", 2 * m * m * k * bh / 50e9}});
  json with_recompute = ours;
  for (const int batch_heads : {4, 8}) with_recompute["attention"]["float32"].push_back(point(kAttentionRecomputeKernel, batch_heads, 2e-6, 0));
  const auto costs_of = [](const json& text, const ResolvedScenario& r) {
    return ProfileCosts(std::make_shared<const DeviceProfile>(parse_device_profile(text.dump(), "test")), r);
  };
  for (const int tp : {1, 2}) {
    SCOPED_TRACE("tp " + std::to_string(tp));
    const ResolvedScenario r = resolve_scenario(recomputing_gpt(config, b, CheckpointMode::Selective, tp));
    const Plan plan = lower_validated_plan(r);
    const Op* recompute = nullptr;
    for (const Op& op : plan.programs.at(0).ops)
      if (op.label.str() == "h.1 attention recompute") recompute = &op;
    ASSERT_NE(recompute, nullptr);
    EXPECT_NEAR(*costs_of(with_recompute, r).compute_seconds(*recompute), 2e-6, 1e-15);
    EXPECT_NEAR(*costs_of(ours, r).compute_seconds(*recompute), 5e-6, 1e-15);  // the core's forward
    const ProfileCosts torch = costs_of(pytorch, r);
    const double bh = b * a / tp, scores = bh * positions * positions * 4, heads = b * positions * (h / tp) * 4.0;
    const double expected = 1e-9 * (2 * 2 * heads + 2 * scores + 3 * scores + 2 * scores) +
                            *torch.gemm_seconds("batched", positions, positions, h / a, bh);
    EXPECT_NEAR(*torch.compute_seconds(*recompute), expected, 1e-9 * expected);
  }
}

TEST(SimulateWithProfile, TheExecutorsHostTimeIsIdleBeforeTheNextComputeOp) {
  // overheads.executor_op_s = 1 µs (no "zero" curve, so an allocation costs no fill): every op of the plan costs the
  // host 1000 ns, spent before the rank's next compute-stream compute op begins (sim_graph.cpp), as the executed
  // trace shows it: a gap, counted as idle. The kernels' own times, and so the GEMM / elementwise / optimizer rows,
  // do not change.
  json profile = json::parse(synthetic_profile(50));
  const std::string plain = write_temporary(profile.dump(), "profile-no-host.json");
  profile["overheads"] = {{"executor_op_s", 1e-6}};
  const std::string hosted = write_temporary(profile.dump(), "profile-host.json");
  Scenario s = mlp_scenario(plain);
  s.training.steps = 3;
  const StepTiming a = simulated_step(s);
  s.cluster.device_profile = hosted;
  const StepTiming b = simulated_step(s);
  for (TimeKind k : {TimeKind::Gemm, TimeKind::Elementwise, TimeKind::Optimizer})
    EXPECT_EQ(a.by_kind[static_cast<std::size_t>(k)], b.by_kind[static_cast<std::size_t>(k)]) << time_kind_name(k);
  EXPECT_EQ(a.by_kind[static_cast<std::size_t>(TimeKind::Idle)], 0);
  // By hand from the plan: the step's window opens at the begin of its first compute op after the batch load
  // (allocations, frees and phases put no begin / end in a trace, executed or simulated; the host time of the ops
  // before that op delays its begin, outside the window) and closes at its last op's end. Inside it the host spends
  // 1000 ns for every op after that first one, through the step's last compute op (the ops after that are charged
  // to the next step's first compute op).
  const ResolvedScenario r = resolve_scenario(s);
  const Plan plan = lower_validated_plan(r, {.kernel_operands = false});
  const auto& ops = plan.programs[0].ops;
  std::size_t load = ops.size(), first_compute = ops.size(), last_compute = 0;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].step != 3 || ops[i].kind != OpKind::Compute) continue;
    if (ops[i].kernel == Kernel::LoadBatch) load = i;
    else if (load < i && first_compute == ops.size()) first_compute = i;
    if (ops[i].kernel != Kernel::LoadBatch) last_compute = i;
  }
  ASSERT_LT(load, first_compute);
  ASSERT_LT(first_compute, last_compute);
  const TimeNs host_ns = 1000 * static_cast<TimeNs>(last_compute - first_compute);
  EXPECT_EQ(b.step_ns - a.step_ns, host_ns);
  EXPECT_EQ(b.by_kind[static_cast<std::size_t>(TimeKind::Idle)], host_ns);
}

// The executor's host time for an allocation: its own time per op, plus the zero-fill of the new tensor from the
// "zero" curve (exec/rank_runner.cpp run_alloc), except a cuBLAS workspace, which it does not fill (scratch no
// kernel reads as values; PyTorch does not fill it either). A profile at 1 ns an op and 1 ns a byte filled.
TEST(SimulateWithProfile, AnAllocationCostsItsFillButACublasWorkspaceNone) {
  DeviceProfile p;
  p.source = "shardscope";
  p.executor_op_s = 1e-9;
  p.elementwise["zero"]["float32"] = {{1, 1e-9, 0, 0}};  // one point: 1 ns a byte at every size above it
  const ProfileCosts costs(std::make_shared<const DeviceProfile>(p), Dtype::Fp32);
  Program program;
  TensorInfo activation, workspace, lt_workspace;
  activation.name = "fc0 output";
  activation.bytes = 4096;
  workspace.name = cublas_workspace_tensor_name(kForwardGemmThread);
  workspace.bytes = Bytes{32} << 20;
  lt_workspace.name = cublaslt_workspace_tensor_name(kForwardGemmThread);
  lt_workspace.bytes = Bytes{1} << 20;
  program.tensors = {activation, workspace, lt_workspace};
  Op alloc;
  alloc.kind = OpKind::Alloc;
  alloc.tensor = 0;
  EXPECT_NEAR(costs.host_seconds(program, alloc), 1e-9 + 4096e-9, 1e-15);
  alloc.tensor = 1;
  EXPECT_NEAR(costs.host_seconds(program, alloc), 1e-9, 1e-15);  // 32 MiB unfilled: not 33.5 ms
  alloc.tensor = 2;
  EXPECT_NEAR(costs.host_seconds(program, alloc), 1e-9, 1e-15);  // cuBLASLt's 1 MiB: not 1 ms
}

TEST(SimulateWithProfile, WithoutAProfileTheRooflineTimesEveryOp) {
  Scenario s = mlp_scenario("");
  const ResolvedScenario r = resolve_scenario(s);
  DiscardTraceSink sink;
  const SimulationResult result = simulate(r, lower_validated_plan(r), sink);
  EXPECT_TRUE(result.cost_source.profile.empty());
  EXPECT_EQ(result.cost_source.profiled_ops, 0);
}

TEST(SimulateWithProfile, OpsWithoutACurveFallBackToTheRooflineAndAreCounted) {
  // The synthetic profile has no "accumulate" or "copy" curve: DDP's gradient copies into buckets are timed by the
  // roofline, and the result names them.
  Scenario s = mlp_scenario(write_temporary(synthetic_profile(50), "profile-ddp.json"));
  s.strategy.kind = StrategyKind::Ddp;
  s.cluster.world = 2;
  const ResolvedScenario r = resolve_scenario(s);
  DiscardTraceSink sink;
  const SimulationResult result = simulate(r, lower_validated_plan(r), sink);
  EXPECT_GT(result.cost_source.profiled_ops, 0);
  EXPECT_GT(result.cost_source.roofline_ops, 0);
  ASSERT_FALSE(result.cost_source.roofline_examples.empty());
  EXPECT_NE(result.cost_source.roofline_examples.front().find("bucket"), std::string::npos);
}

TEST(SimulateWithProfile, CollectivesComeFromTheProfileOfTheirKindAndSize) {
  json profile = json::parse(synthetic_profile(50));
  // All-reduce between 2 ranks: 1 ms at 1 MB, 10 ms at 10 MB (t ∝ S between them).
  profile["collectives"] = {{"backend", "threads"},
                            {"all_reduce", json::array({{{"ranks", 2}, {"bytes", 1e6}, {"seconds", 1e-3}},
                                                         {{"ranks", 2}, {"bytes", 1e7}, {"seconds", 1e-2}}})}};
  Scenario s = mlp_scenario(write_temporary(profile.dump(), "profile-collectives.json"));
  s.strategy.kind = StrategyKind::Ddp;
  s.cluster.world = 2;
  s.strategy.bucket_cap_mb = 1000;  // one bucket: all gradients in one all-reduce
  const ResolvedScenario r = resolve_scenario(s);
  DiscardTraceSink sink;
  const SimulationResult result = simulate(r, lower_validated_plan(r), sink);
  EXPECT_TRUE(result.cost_source.collectives_from_profile);
  ASSERT_EQ(result.collectives.size(), 1u);
  EXPECT_EQ(result.collectives[0].kind, "all-reduce");
  // The bucket holds every gradient: 3 × (256² + 256) fp32; below 1 MB the smallest point's time holds.
  const double bytes = 3.0 * (256 * 256 + 256) * 4;
  ASSERT_LT(bytes, 1e6);
  EXPECT_EQ(result.collectives[0].time_ns, 1'000'000);
  // PyTorch's gloo between processes on one GPU says nothing of NCCL between GPUs: a CUDA profile's gloo curves
  // are not used.
  profile["backend"] = "cuda";
  profile["collectives"]["backend"] = "gloo";
  s.cluster.device_profile = write_temporary(profile.dump(), "profile-gloo.json");
  const SimulationResult gloo = simulate(resolve_scenario(s), lower_validated_plan(resolve_scenario(s)), sink);
  EXPECT_FALSE(gloo.cost_source.collectives_from_profile);
}

TEST(SimulateWithProfile, ABadProfileIsAScenarioErrorNamingTheField) {
  Scenario s = mlp_scenario(write_temporary("{\"format\": \"x\"}", "bad-profile.json"));
  try {
    resolve_scenario(s);
    FAIL() << "no error";
  } catch (const ScenarioError& e) {
    EXPECT_EQ(e.field(), "cluster.device_profile");
  }
  s.cluster.device_profile = "/nonexistent/profile.json";
  EXPECT_THROW(resolve_scenario(s), ScenarioError);
}

}  // namespace
}  // namespace shardscope
