// Cross-entropy as the plan splits it (log_softmax, nll_loss, their backward), run through the CPU kernel dispatch,
// against plain-loop softmax arithmetic: the chain must give torch's (softmax − onehot) / batch.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "exec/cpu/cpu_kernel_dispatch.h"

namespace shardscope::exec::cpu {
namespace {

template <typename T>
DeviceBuffer buffer(std::vector<T>& values) {
  return {reinterpret_cast<std::byte*>(values.data()), static_cast<Bytes>(values.size() * sizeof(T))};
}

TEST(LogSoftmaxKernels, CrossEntropyChainMatchesSoftmaxMinusOneHot) {
  const int batch = 2, classes = 3;
  std::vector<float> logits = {1.0f, 2.0f, 0.5f, -1.0f, 0.0f, 3.0f};
  std::vector<std::int64_t> targets = {1, 0};
  std::vector<float> log_probs(6), loss(1), grad_log_probs(6), grad_logits(6);

  KernelLaunch launch;
  launch.rows = batch;
  launch.classes = classes;
  launch.kernel = Kernel::CrossEntropyLoss;
  launch.operands = {buffer(logits), buffer(targets), buffer(log_probs), buffer(loss)};
  run_cpu_kernel(launch);
  launch.kernel = Kernel::NllLossBackward;
  launch.operands = {buffer(targets), buffer(grad_log_probs)};
  run_cpu_kernel(launch);
  launch.kernel = Kernel::LogSoftmaxBackward;
  launch.operands = {buffer(grad_log_probs), buffer(log_probs), buffer(grad_logits)};
  run_cpu_kernel(launch);

  double expected_loss = 0;
  for (int b = 0; b < batch; ++b) {
    double z = 0;
    for (int k = 0; k < classes; ++k) z += std::exp(static_cast<double>(logits[b * classes + k]));
    for (int k = 0; k < classes; ++k) {
      const double p = std::exp(static_cast<double>(logits[b * classes + k])) / z;
      EXPECT_NEAR(log_probs[b * classes + k], std::log(p), 1e-6);
      const double onehot = k == targets[b] ? 1.0 : 0.0;
      EXPECT_NEAR(grad_logits[b * classes + k], (p - onehot) / batch, 1e-6);
    }
    expected_loss -= std::log(std::exp(static_cast<double>(logits[b * classes + targets[b]])) / z) / batch;
  }
  EXPECT_NEAR(loss[0], expected_loss, 1e-6);
  // e.g. row 0: z = e + e² + e^0.5 = 2.71828 + 7.38906 + 1.64872 = 11.75606; p(target 1) = 7.38906 / 11.75606 = 0.628532.
  EXPECT_NEAR(std::exp(log_probs[1]), 0.628532, 1e-5);
}

TEST(LogSoftmaxKernels, TargetOutsideTheClassesIsAnError) {
  std::vector<float> log_probs(3), loss(1), logits = {0.0f, 0.0f, 0.0f};
  std::vector<std::int64_t> targets = {3};
  KernelLaunch launch;
  launch.kernel = Kernel::CrossEntropyLoss;
  launch.rows = 1;
  launch.classes = 3;
  launch.operands = {buffer(logits), buffer(targets), buffer(log_probs), buffer(loss)};
  EXPECT_THROW(run_cpu_kernel(launch), std::invalid_argument);
}

}  // namespace
}  // namespace shardscope::exec::cpu
