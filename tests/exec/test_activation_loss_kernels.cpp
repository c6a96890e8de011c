// ReLU, MSE and cross-entropy kernels against plain formulas in the test and central finite differences.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "exec/cpu/activation_kernels.h"
#include "exec/cpu/loss_kernels.h"

namespace shardscope::exec::cpu {
namespace {

std::vector<float> random_values(std::size_t count, unsigned seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<float> values(count);
  for (float& v : values) v = dist(rng);
  return values;
}

TEST(Relu, ForwardBothFormsAndBackwardFromOutput) {
  const std::vector<float> x = {-2.0f, -0.0f, 0.0f, 0.5f, 3.0f, -1e-30f};
  std::vector<float> y(x.size());
  relu_forward(x, y);
  EXPECT_EQ(y, (std::vector<float>{0.0f, 0.0f, 0.0f, 0.5f, 3.0f, 0.0f}));
  std::vector<float> in_place = x;
  relu_forward_inplace(in_place);
  EXPECT_EQ(in_place, y);
  const std::vector<float> grad_y = {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f};
  std::vector<float> grad_x(x.size());
  relu_backward(grad_y, y, grad_x);  // passes where the output is > 0 (threshold_backward, threshold 0)
  EXPECT_EQ(grad_x, (std::vector<float>{0.0f, 0.0f, 0.0f, 4.0f, 5.0f, 0.0f}));
  std::vector<float> grad_in_place = grad_y;
  relu_backward(grad_in_place, y, grad_in_place);
  EXPECT_EQ(grad_in_place, grad_x);
}

TEST(Relu, NanPassesThroughAsInTorch) {
  std::vector<float> x = {std::numeric_limits<float>::quiet_NaN()};
  relu_forward_inplace(x);
  EXPECT_TRUE(std::isnan(x[0]));
}

// What PyTorch 1.13's CPU kernels give (printed by torch.relu and aten.threshold_backward(g, relu(x), 0)): relu
// keeps -0.0 (clamp_min: only v < 0 becomes 0) and NaN, zeroes -inf and a negative denormal; the backward passes the
// gradient, NaN included, exactly where the output is > 0.
TEST(Relu, SpecialValuesAsTorchComputesThem) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const float denormal = std::numeric_limits<float>::denorm_min();
  const std::vector<float> x = {-0.0f, 0.0f, -inf, inf, nan, -denormal, denormal};
  std::vector<float> y(x.size());
  relu_forward(x, y);
  EXPECT_TRUE(y[0] == 0.0f && std::signbit(y[0]));
  EXPECT_TRUE(y[1] == 0.0f && !std::signbit(y[1]));
  EXPECT_TRUE(y[2] == 0.0f && !std::signbit(y[2]));
  EXPECT_EQ(y[3], inf);
  EXPECT_TRUE(std::isnan(y[4]));
  EXPECT_TRUE(y[5] == 0.0f && !std::signbit(y[5]));
  EXPECT_EQ(y[6], denormal);
  std::vector<float> in_place = x;
  relu_forward_inplace(in_place);
  for (std::size_t i = 0; i < x.size(); ++i)
    EXPECT_EQ(std::bit_cast<std::uint32_t>(in_place[i]), std::bit_cast<std::uint32_t>(y[i])) << i;
  const std::vector<float> grad_y = {1.0f, 2.0f, 3.0f, 4.0f, nan, 6.0f, 7.0f};
  std::vector<float> grad_x(x.size());
  relu_backward(grad_y, y, grad_x);
  const std::vector<float> expected = {0.0f, 0.0f, 0.0f, 4.0f, 0.0f, 0.0f, 7.0f};  // torch: [0, 0, 0, 4, nan, 0, 7]
  for (std::size_t i = 0; i < x.size(); ++i)
    if (i == 4) {
      EXPECT_TRUE(std::isnan(grad_x[i]));  // the output is NaN, not <= 0: the (NaN) gradient passes
    } else {
      EXPECT_EQ(grad_x[i], expected[i]) << i;
    }
}

// Many random values, each against the formula written plainly in the test.
TEST(Relu, RandomValuesMatchTheFormula) {
  const std::vector<float> x = random_values(10007, 9, 3.0f), grad_y = random_values(10007, 10);
  std::vector<float> y(x.size()), grad_x(x.size());
  relu_forward(x, y);
  relu_backward(grad_y, y, grad_x);
  for (std::size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(y[i], x[i] > 0.0f ? x[i] : 0.0f) << i;
    ASSERT_EQ(grad_x[i], x[i] > 0.0f ? grad_y[i] : 0.0f) << i;
  }
}

TEST(Relu, BackwardMatchesFiniteDifferences) {
  // Inputs kept at least 0.1 away from the kink so that ±h does not cross it.
  std::vector<float> x = random_values(40, 3);
  for (float& v : x) v = v < 0 ? v - 0.1f : v + 0.1f;
  const std::vector<float> upstream = random_values(x.size(), 4);
  auto loss = [&] {
    std::vector<float> y(x.size());
    relu_forward(x, y);
    double l = 0.0;
    for (std::size_t i = 0; i < y.size(); ++i) l += double(upstream[i]) * y[i];
    return l;
  };
  std::vector<float> y(x.size()), grad_x(x.size());
  relu_forward(x, y);
  relu_backward(upstream, y, grad_x);
  const float h = 1e-2f;
  for (std::size_t k = 0; k < x.size(); ++k) {
    const float saved = x[k];
    x[k] = saved + h;
    const double up = loss();
    x[k] = saved - h;
    const double down = loss();
    x[k] = saved;
    EXPECT_NEAR(grad_x[k], (up - down) / (2.0 * h), 1e-3) << k;
  }
}

TEST(MseLoss, MeanOfSquaresAndItsGradient) {
  // (1−0)², (2−4)², (−1−(−1))², (0.5−(−0.5))² = 1, 4, 0, 1 → mean 6/4 = 1.5
  const std::vector<float> prediction = {1.0f, 2.0f, -1.0f, 0.5f}, target = {0.0f, 4.0f, -1.0f, -0.5f};
  EXPECT_FLOAT_EQ(mse_loss_forward(prediction, target), 1.5f);
  // grad = 2·(p − t)·grad_loss/4 with grad_loss 1: (0.5, −1, 0, 0.5); with grad_loss 3, three times that
  std::vector<float> grad(4);
  mse_loss_backward(prediction, target, 1.0f, grad);
  EXPECT_EQ(grad, (std::vector<float>{0.5f, -1.0f, 0.0f, 0.5f}));
  mse_loss_backward(prediction, target, 3.0f, grad);
  EXPECT_EQ(grad, (std::vector<float>{1.5f, -3.0f, 0.0f, 1.5f}));
}

TEST(MseLoss, BackwardMatchesFiniteDifferences) {
  std::vector<float> prediction = random_values(24, 5);
  const std::vector<float> target = random_values(24, 6);
  std::vector<float> grad(prediction.size());
  mse_loss_backward(prediction, target, 1.0f, grad);
  const float h = 1e-2f;
  for (std::size_t k = 0; k < prediction.size(); ++k) {
    const float saved = prediction[k];
    prediction[k] = saved + h;
    const double up = mse_loss_forward(prediction, target);
    prediction[k] = saved - h;
    const double down = mse_loss_forward(prediction, target);
    prediction[k] = saved;
    EXPECT_NEAR(grad[k], (up - down) / (2.0 * h), 1e-4) << k;
  }
}

TEST(CrossEntropy, MatchesLogSoftmaxNllByHand) {
  // Row 0: logits (0, 0), target 1: −log(1/2) = ln 2 = 0.693147.
  // Row 1: logits (ln 3, 0), target 0: softmax = (3/4, 1/4): −log(3/4) = 0.287682.  Mean = 0.490415.
  const std::vector<float> logits = {0.0f, 0.0f, std::log(3.0f), 0.0f};
  const std::vector<std::int32_t> targets = {1, 0};
  EXPECT_NEAR(cross_entropy_forward(2, 2, logits, targets), 0.4904146f, 1e-6f);
  // grad = (softmax − onehot)/2: row 0 (0.5, −0.5)/2 = (0.25, −0.25); row 1 (−0.25, 0.25)/2 = (−0.125, 0.125)
  std::vector<float> grad(4);
  cross_entropy_backward(2, 2, logits, targets, 1.0f, grad);
  EXPECT_NEAR(grad[0], 0.25f, 1e-7f);
  EXPECT_NEAR(grad[1], -0.25f, 1e-7f);
  EXPECT_NEAR(grad[2], -0.125f, 1e-7f);
  EXPECT_NEAR(grad[3], 0.125f, 1e-7f);
}

TEST(CrossEntropy, NaiveFormulaOnRandomRowsAndLargeLogits) {
  const int batch = 5, classes = 7;
  std::vector<float> logits = random_values(batch * classes, 7, 4.0f);
  logits[3] = 1000.0f;  // exp(1000) overflows unless the row maximum is subtracted first
  const std::vector<std::int32_t> targets = {0, 6, 3, 3, 1};
  double expected = 0.0;
  for (int b = 0; b < batch; ++b) {
    double max = logits[b * classes];
    for (int c = 0; c < classes; ++c) max = std::max(max, double(logits[b * classes + c]));
    double sum = 0.0;
    for (int c = 0; c < classes; ++c) sum += std::exp(logits[b * classes + c] - max);
    expected += -(logits[b * classes + targets[b]] - max - std::log(sum));
  }
  expected /= batch;
  EXPECT_NEAR(cross_entropy_forward(batch, classes, logits, targets), expected, 1e-5);
  EXPECT_TRUE(std::isfinite(cross_entropy_forward(batch, classes, logits, targets)));
}

TEST(CrossEntropy, BackwardMatchesFiniteDifferencesAndMayRunInPlace) {
  const int batch = 3, classes = 4;
  std::vector<float> logits = random_values(batch * classes, 9, 2.0f);
  const std::vector<std::int32_t> targets = {2, 0, 3};
  std::vector<float> grad(logits.size());
  cross_entropy_backward(batch, classes, logits, targets, 1.0f, grad);
  const float h = 1e-2f;
  for (std::size_t k = 0; k < logits.size(); ++k) {
    const float saved = logits[k];
    logits[k] = saved + h;
    const double up = cross_entropy_forward(batch, classes, logits, targets);
    logits[k] = saved - h;
    const double down = cross_entropy_forward(batch, classes, logits, targets);
    logits[k] = saved;
    EXPECT_NEAR(grad[k], (up - down) / (2.0 * h), 1e-4) << k;
  }
  std::vector<float> in_place = logits;
  cross_entropy_backward(batch, classes, in_place, targets, 1.0f, in_place);
  EXPECT_EQ(in_place, grad);
}

TEST(CrossEntropy, RejectsTargetsOutsideTheClasses) {
  const std::vector<float> logits(6, 0.0f);
  try {
    cross_entropy_forward(2, 3, logits, std::vector<std::int32_t>{0, -100});
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "cross_entropy_forward: target -100 of sample 1 is outside [0, 3)");
  }
}

}  // namespace
}  // namespace shardscope::exec::cpu
