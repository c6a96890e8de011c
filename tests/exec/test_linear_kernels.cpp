// nn.Linear kernels against plain triple loops (in double) and against central finite differences.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "exec/cpu/bias_kernels.h"
#include "exec/cpu/linear_kernels.h"

namespace shardscope::exec::cpu {
namespace {

std::vector<float> random_values(std::size_t count, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> values(count);
  for (float& v : values) v = dist(rng);
  return values;
}

struct LinearCase {
  LinearShape shape;
  std::vector<float> x, weight, bias;
};

LinearCase make_case(int batch, int in, int out, unsigned seed) {
  LinearCase c{{batch, in, out}, random_values(static_cast<std::size_t>(batch * in), seed),
               random_values(static_cast<std::size_t>(out * in), seed + 1),
               random_values(static_cast<std::size_t>(out), seed + 2)};
  return c;
}

class LinearShapes : public ::testing::TestWithParam<LinearShape> {};

TEST_P(LinearShapes, ForwardMatchesNaiveLoop) {
  const LinearShape s = GetParam();
  const LinearCase c = make_case(s.batch, s.in_features, s.out_features, 11);
  std::vector<float> y(static_cast<std::size_t>(s.batch * s.out_features), 99.0f);
  linear_forward(s, c.x, c.weight, c.bias, y);
  std::vector<float> y_no_bias(y.size(), 99.0f);
  linear_forward(s, c.x, c.weight, {}, y_no_bias);
  for (int b = 0; b < s.batch; ++b) {
    for (int o = 0; o < s.out_features; ++o) {
      double dot = 0.0;  // y[b][o] = Σ_i x[b][i]·W[o][i]
      for (int i = 0; i < s.in_features; ++i) dot += double(c.x[b * s.in_features + i]) * c.weight[o * s.in_features + i];
      EXPECT_NEAR(y[b * s.out_features + o], dot + c.bias[o], 1e-4) << b << "," << o;
      EXPECT_NEAR(y_no_bias[b * s.out_features + o], dot, 1e-4) << b << "," << o;
    }
  }
}

TEST_P(LinearShapes, BackwardMatchesNaiveLoopsAndAccumulates) {
  const LinearShape s = GetParam();
  const LinearCase c = make_case(s.batch, s.in_features, s.out_features, 21);
  const std::vector<float> grad_y = random_values(static_cast<std::size_t>(s.batch * s.out_features), 31);
  std::vector<float> grad_x(c.x.size(), 99.0f);
  linear_backward_input(s, grad_y, c.weight, grad_x);
  // Start the weight and bias gradients at 0.5 to see that the kernels add to them.
  std::vector<float> grad_w(c.weight.size(), 0.5f), grad_b(c.bias.size(), 0.5f);
  linear_backward_weight(s, grad_y, c.x, grad_w);
  linear_backward_bias(s, grad_y, grad_b);
  for (int b = 0; b < s.batch; ++b) {
    for (int i = 0; i < s.in_features; ++i) {
      double sum = 0.0;  // dX[b][i] = Σ_o dY[b][o]·W[o][i]
      for (int o = 0; o < s.out_features; ++o) sum += double(grad_y[b * s.out_features + o]) * c.weight[o * s.in_features + i];
      EXPECT_NEAR(grad_x[b * s.in_features + i], sum, 1e-4);
    }
  }
  for (int o = 0; o < s.out_features; ++o) {
    double bias_sum = 0.5;  // db[o] = 0.5 + Σ_b dY[b][o]
    for (int b = 0; b < s.batch; ++b) bias_sum += grad_y[b * s.out_features + o];
    EXPECT_NEAR(grad_b[o], bias_sum, 1e-4);
    for (int i = 0; i < s.in_features; ++i) {
      double sum = 0.5;  // dW[o][i] = 0.5 + Σ_b dY[b][o]·X[b][i]
      for (int b = 0; b < s.batch; ++b) sum += double(grad_y[b * s.out_features + o]) * c.x[b * s.in_features + i];
      EXPECT_NEAR(grad_w[o * s.in_features + i], sum, 1e-4);
    }
  }
}

// Odd sizes (no SIMD multiple), a single sample, and the 2000-wide MLP's shape shrunk to keep the loops quick.
INSTANTIATE_TEST_SUITE_P(Shapes, LinearShapes,
                         ::testing::Values(LinearShape{3, 5, 4}, LinearShape{1, 7, 1}, LinearShape{20, 200, 120},
                                           LinearShape{17, 33, 65}));

// L = Σ c ⊙ y for a fixed random c, so dL/dy = c; each gradient entry against (L(θ+h) − L(θ−h)) / 2h in double.
TEST(LinearBackward, MatchesFiniteDifferences) {
  const LinearShape s{4, 6, 5};
  LinearCase c = make_case(s.batch, s.in_features, s.out_features, 41);
  const std::vector<float> upstream = random_values(static_cast<std::size_t>(s.batch * s.out_features), 43);
  auto loss = [&] {
    std::vector<float> y(upstream.size());
    linear_forward(s, c.x, c.weight, c.bias, y);
    double l = 0.0;
    for (std::size_t i = 0; i < y.size(); ++i) l += double(upstream[i]) * y[i];
    return l;
  };
  std::vector<float> grad_x(c.x.size()), grad_w(c.weight.size(), 0.0f), grad_b(c.bias.size(), 0.0f);
  linear_backward_input(s, upstream, c.weight, grad_x);
  linear_backward_weight(s, upstream, c.x, grad_w);
  linear_backward_bias(s, upstream, grad_b);
  const float h = 1e-2f;
  auto check = [&](std::vector<float>& theta, const std::vector<float>& analytic, const char* what) {
    for (std::size_t k = 0; k < theta.size(); ++k) {
      const float saved = theta[k];
      theta[k] = saved + h;
      const double up = loss();
      theta[k] = saved - h;
      const double down = loss();
      theta[k] = saved;
      EXPECT_NEAR(analytic[k], (up - down) / (2.0 * h), 2e-3) << what << "[" << k << "]";
    }
  };
  check(c.x, grad_x, "x");
  check(c.weight, grad_w, "weight");
  check(c.bias, grad_b, "bias");
}

TEST(LinearKernels, RejectWrongSizesAndAliasing) {
  const LinearShape s{2, 3, 4};
  std::vector<float> x(6), w(12), b(4), y(8), small(7);
  EXPECT_THROW(linear_forward(s, x, w, b, small), std::invalid_argument);
  EXPECT_THROW(linear_forward(s, x, w, std::vector<float>(3), y), std::invalid_argument);
  std::vector<float> shared(12);
  const std::span<float> all(shared);
  EXPECT_THROW(linear_forward(s, all.subspan(0, 6), w, b, all.subspan(4, 8)), std::invalid_argument);
  try {
    linear_backward_input(s, y, w, small);
    FAIL() << "expected a size error";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "linear_backward_input: grad_x has 7 elements, expected 6");
  }
}

// The bias on its own (a row-parallel Linear's under sequence parallelism): 2 rows of 3, values exact in fp32.
TEST(BiasKernels, AddsToEveryRowAndSumsRows) {
  const std::vector<float> input = {1, 2, 3, 4, 5, 6}, bias = {0.5f, -1, 2};
  std::vector<float> output(6);
  bias_add(input, bias, output);
  EXPECT_EQ(output, (std::vector<float>{1.5f, 1, 5, 4.5f, 4, 8}));
  bias_add(output, bias, output);  // in place
  EXPECT_EQ(output, (std::vector<float>{2, 0, 7, 5, 3, 10}));
  std::vector<float> grad_bias = {10, 0, 0};  // accumulates into what is there
  bias_backward(input, grad_bias);
  EXPECT_EQ(grad_bias, (std::vector<float>{15, 7, 9}));
  std::vector<float> odd(5);
  EXPECT_THROW(bias_add(std::vector<float>(5), bias, odd), std::invalid_argument);  // not whole rows of 3
}

}  // namespace
}  // namespace shardscope::exec::cpu
