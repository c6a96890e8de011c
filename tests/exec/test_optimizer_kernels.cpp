// Optimizer updates against steps worked by hand from torch.optim 2.x's update rules (the arithmetic is in the
// comments; figures to 6-7 significant digits, checked with a calculator).
#include <gtest/gtest.h>

#include <vector>

#include "exec/cpu/optimizer_kernels.h"

namespace shardscope::exec::cpu {
namespace {

constexpr float kTolerance = 2e-6f;

TEST(SgdStep, PlainAndWithL2WeightDecay) {
  std::vector<float> params = {1.0f, -2.0f};
  const std::vector<float> grads = {0.5f, 0.25f};
  // lr 0.1: 1 − 0.1·0.5 = 0.95; −2 − 0.1·0.25 = −2.025
  sgd_step({.lr = 0.1}, true, params, grads, {});
  EXPECT_NEAR(params[0], 0.95f, kTolerance);
  EXPECT_NEAR(params[1], -2.025f, kTolerance);

  std::vector<float> decayed = {1.0f, -2.0f};
  // weight_decay 0.1: g = 0.5 + 0.1·1 = 0.6 → 1 − 0.06 = 0.94; g = 0.25 + 0.1·(−2) = 0.05 → −2 − 0.005 = −2.005
  sgd_step({.lr = 0.1, .weight_decay = 0.1}, true, decayed, grads, {});
  EXPECT_NEAR(decayed[0], 0.94f, kTolerance);
  EXPECT_NEAR(decayed[1], -2.005f, kTolerance);
}

TEST(SgdStep, MomentumBufferStartsAsTheGradient) {
  std::vector<float> params = {1.0f, -2.0f};
  std::vector<float> buffer = {123.0f, -7.0f};  // garbage: the first step must overwrite it, not decay it
  const SgdOptions options{.lr = 0.1, .momentum = 0.9};
  // step 1: buf = g = (0.5, 0.25); p = (1 − 0.05, −2 − 0.025) = (0.95, −2.025)
  sgd_step(options, true, params, std::vector<float>{0.5f, 0.25f}, buffer);
  EXPECT_NEAR(buffer[0], 0.5f, kTolerance);
  EXPECT_NEAR(buffer[1], 0.25f, kTolerance);
  EXPECT_NEAR(params[0], 0.95f, kTolerance);
  // step 2, g = (1, −0.5): buf = 0.9·0.5 + 1 = 1.45, 0.9·0.25 − 0.5 = −0.275
  //                       p = 0.95 − 0.145 = 0.805, −2.025 + 0.0275 = −1.9975
  sgd_step(options, false, params, std::vector<float>{1.0f, -0.5f}, buffer);
  EXPECT_NEAR(buffer[0], 1.45f, kTolerance);
  EXPECT_NEAR(buffer[1], -0.275f, kTolerance);
  EXPECT_NEAR(params[0], 0.805f, kTolerance);
  EXPECT_NEAR(params[1], -1.9975f, kTolerance);
}

TEST(SgdStep, DampeningScalesOnlyLaterGradients) {
  std::vector<float> params = {1.0f};
  std::vector<float> buffer = {0.0f};
  const SgdOptions options{.lr = 0.1, .momentum = 0.9, .dampening = 0.5};
  sgd_step(options, true, params, std::vector<float>{0.5f}, buffer);  // buf = 0.5 (undamped), p = 0.95
  // step 2, g = 1: buf = 0.9·0.5 + (1 − 0.5)·1 = 0.95; p = 0.95 − 0.095 = 0.855
  sgd_step(options, false, params, std::vector<float>{1.0f}, buffer);
  EXPECT_NEAR(buffer[0], 0.95f, kTolerance);
  EXPECT_NEAR(params[0], 0.855f, kTolerance);
}

// Adam, lr 0.1, betas (0.9, 0.999), eps 1e-8, p = 1, gradients 0.5 then 0.25.
// step 1: m = 0.1·0.5 = 0.05; v = 0.001·0.25 = 0.00025; bc1 = 0.1, bc2 = 0.001
//         p −= (0.1/0.1)·0.05 / (sqrt(0.00025)/sqrt(0.001) + 1e-8) = 0.05/0.5 → p = 0.9 (first step = lr·sign)
// step 2: m = 0.9·0.05 + 0.1·0.25 = 0.07; v = 0.999·0.00025 + 0.001·0.0625 = 0.00031225
//         bc1 = 1 − 0.81 = 0.19; bc2 = 1 − 0.998001 = 0.001999
//         denom = 0.01767060/0.04471018 = 0.3952260; p −= (0.1/0.19)·0.07/0.3952260 = 0.0932180 → p = 0.8067820
TEST(AdamStep, TwoStepsWithBiasCorrection) {
  std::vector<float> params = {1.0f}, m = {0.0f}, v = {0.0f};
  const AdamOptions options{.lr = 0.1};
  adam_step(options, 1, params, std::vector<float>{0.5f}, m, v);
  EXPECT_NEAR(m[0], 0.05f, kTolerance);
  EXPECT_NEAR(v[0], 0.00025f, 1e-9f);
  EXPECT_NEAR(params[0], 0.9f, kTolerance);
  adam_step(options, 2, params, std::vector<float>{0.25f}, m, v);
  EXPECT_NEAR(m[0], 0.07f, kTolerance);
  EXPECT_NEAR(v[0], 0.00031225f, 1e-9f);
  EXPECT_NEAR(params[0], 0.8067820f, kTolerance);
}

// Adam's weight_decay is L2 on the gradient: p = 1, g = −0.05, weight_decay 0.1 → g' = −0.05 + 0.1 = +0.05, so the
// first step moves down (p = 0.9) where the raw gradient alone would move up.
// step 2, g = 0.25: g' = 0.25 + 0.1·0.9 = 0.34; m = 0.9·0.005 + 0.1·0.34 = 0.0385;
//         v = 0.999·2.5e-6 + 0.001·0.1156 = 1.180975e-4; denom = 0.01086727/0.04471018 = 0.2430603
//         p −= (0.1/0.19)·0.0385/0.2430603 = 0.0833668 → p = 0.8166332
TEST(AdamStep, WeightDecayIsAddedToTheGradient) {
  std::vector<float> params = {1.0f}, m = {0.0f}, v = {0.0f};
  const AdamOptions options{.lr = 0.1, .weight_decay = 0.1};
  adam_step(options, 1, params, std::vector<float>{-0.05f}, m, v);
  EXPECT_NEAR(params[0], 0.9f, kTolerance);
  adam_step(options, 2, params, std::vector<float>{0.25f}, m, v);
  EXPECT_NEAR(m[0], 0.0385f, kTolerance);
  EXPECT_NEAR(params[0], 0.8166332f, kTolerance);
}

// AdamW, lr 0.1, weight_decay 0.01: p *= 1 − 0.1·0.01 = 0.999 before the Adam update, which ignores the decay.
// g = 0.5, 0.25:  step 1: 0.999 − 0.1 = 0.899;  step 2: 0.899·0.999 − 0.0932180 (Adam's step 2 above) = 0.8048830
// g = −0.05, 0.25: step 1: 0.999 + 0.1 = 1.099; step 2: m = −0.0045 + 0.025 = 0.0205,
//         v = 0.999·2.5e-6 + 0.001·0.0625 = 6.49975e-5; denom = 0.00806210/0.04471018 = 0.1803192
//         p = 1.099·0.999 − (0.1/0.19)·0.0205/0.1803192 = 1.097901 − 0.0598354 = 1.0380656
TEST(AdamWStep, DecayIsDecoupledFromTheMoments) {
  std::vector<float> params = {1.0f, 1.0f}, m = {0.0f, 0.0f}, v = {0.0f, 0.0f};
  const AdamOptions options{.lr = 0.1, .weight_decay = 0.01};
  adamw_step(options, 1, params, std::vector<float>{0.5f, -0.05f}, m, v);
  EXPECT_NEAR(params[0], 0.899f, kTolerance);
  EXPECT_NEAR(params[1], 1.099f, kTolerance);
  EXPECT_NEAR(m[1], -0.005f, kTolerance);  // the moments see the raw gradient
  adamw_step(options, 2, params, std::vector<float>{0.25f, 0.25f}, m, v);
  EXPECT_NEAR(params[0], 0.8048830f, kTolerance);
  EXPECT_NEAR(params[1], 1.0380656f, kTolerance);
}

// A ZeRO shard updates a slice of the flat buffer: stepping two halves separately equals stepping the whole.
TEST(AdamStep, ShardsOfAFlatBufferUpdateIndependently) {
  std::vector<float> whole = {0.3f, -0.7f, 1.1f, 2.0f, -0.2f}, grads = {0.1f, 0.2f, -0.3f, 0.05f, -0.9f};
  std::vector<float> m(5, 0.0f), v(5, 0.0f);
  std::vector<float> sharded = whole, ms = m, vs = v;
  const AdamOptions options{.lr = 0.01};
  adam_step(options, 1, whole, grads, m, v);
  const std::span<float> p(sharded), sm(ms), sv(vs);
  const std::span<const float> g(grads);
  adam_step(options, 1, p.subspan(0, 2), g.subspan(0, 2), sm.subspan(0, 2), sv.subspan(0, 2));
  adam_step(options, 1, p.subspan(2), g.subspan(2), sm.subspan(2), sv.subspan(2));
  for (std::size_t i = 0; i < whole.size(); ++i) EXPECT_EQ(whole[i], sharded[i]) << i;
}

TEST(OptimizerKernels, RejectMismatchedSpans) {
  std::vector<float> params(3), grads(2), state(3);
  EXPECT_THROW(sgd_step({}, true, params, grads, {}), std::invalid_argument);
  EXPECT_THROW(sgd_step({.momentum = 0.9}, true, params, state, {}), std::invalid_argument);
  EXPECT_THROW(adam_step({}, 0, params, state, state, state), std::invalid_argument);  // steps count from 1
}

}  // namespace
}  // namespace shardscope::exec::cpu
