// MSE and cross-entropy forward and backward; log-sum-exp with the row maximum subtracted for stability.
#include "exec/cpu/loss_kernels.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "exec/cpu/span_checks.h"

namespace shardscope::exec::cpu {
namespace {

void check_targets(int classes, std::span<const std::int32_t> targets, const char* kernel) {
  for (std::size_t b = 0; b < targets.size(); ++b) {
    if (targets[b] < 0 || targets[b] >= classes) {
      throw std::invalid_argument(std::string(kernel) + ": target " + std::to_string(targets[b]) + " of sample " +
                                  std::to_string(b) + " is outside [0, " + std::to_string(classes) + ")");
    }
  }
}

void check_cross_entropy_operands(int batch, int classes, std::span<const float> logits,
                                  std::span<const std::int32_t> targets, const char* kernel) {
  require_positive(batch, kernel, "batch");
  require_positive(classes, kernel, "classes");
  require_size(logits, static_cast<std::size_t>(batch) * static_cast<std::size_t>(classes), kernel, "logits");
  require_size(targets, static_cast<std::size_t>(batch), kernel, "targets");
  check_targets(classes, targets, kernel);
}

// Row maximum and log Σ exp(x - max), in double for the sum.
struct RowLogSumExp {
  float max = 0.0f;
  double log_sum = 0.0;
};
RowLogSumExp row_log_sum_exp(const float* row, int classes) {
  RowLogSumExp r;
  r.max = *std::max_element(row, row + classes);
  double sum = 0.0;
  for (int c = 0; c < classes; ++c) sum += std::exp(static_cast<double>(row[c]) - r.max);
  r.log_sum = std::log(sum);
  return r;
}

}  // namespace

float mse_loss_forward(std::span<const float> prediction, std::span<const float> target) {
  require_size(target, prediction.size(), "mse_loss_forward", "target");
  if (prediction.empty()) throw std::invalid_argument("mse_loss_forward: empty prediction");
  double sum = 0.0;
  for (std::size_t i = 0; i < prediction.size(); ++i) {
    const double d = static_cast<double>(prediction[i]) - target[i];
    sum += d * d;
  }
  return static_cast<float>(sum / static_cast<double>(prediction.size()));
}

void mse_loss_backward(std::span<const float> prediction, std::span<const float> target, float grad_loss,
                       std::span<float> grad_prediction) {
  require_size(target, prediction.size(), "mse_loss_backward", "target");
  require_size(grad_prediction, prediction.size(), "mse_loss_backward", "grad_prediction");
  require_same_or_disjoint(prediction, grad_prediction, "mse_loss_backward", "prediction", "grad_prediction");
  if (prediction.empty()) throw std::invalid_argument("mse_loss_backward: empty prediction");
  const float scale = static_cast<float>(2.0 / static_cast<double>(prediction.size())) * grad_loss;
  for (std::size_t i = 0; i < prediction.size(); ++i) grad_prediction[i] = scale * (prediction[i] - target[i]);
}

float cross_entropy_forward(int batch, int classes, std::span<const float> logits,
                            std::span<const std::int32_t> targets) {
  check_cross_entropy_operands(batch, classes, logits, targets, "cross_entropy_forward");
  double total = 0.0;
  for (int b = 0; b < batch; ++b) {
    const float* row = logits.data() + static_cast<std::size_t>(b) * static_cast<std::size_t>(classes);
    const RowLogSumExp lse = row_log_sum_exp(row, classes);
    // -log_softmax[target] = log Σ exp(x) - x[target] = max + log_sum - x[target]
    total += static_cast<double>(lse.max) + lse.log_sum - row[targets[static_cast<std::size_t>(b)]];
  }
  return static_cast<float>(total / batch);
}

void cross_entropy_backward(int batch, int classes, std::span<const float> logits,
                            std::span<const std::int32_t> targets, float grad_loss, std::span<float> grad_logits) {
  constexpr const char* kKernel = "cross_entropy_backward";
  check_cross_entropy_operands(batch, classes, logits, targets, kKernel);
  require_size(grad_logits, logits.size(), kKernel, "grad_logits");
  require_same_or_disjoint(logits, grad_logits, kKernel, "logits", "grad_logits");
  const double scale = static_cast<double>(grad_loss) / batch;
  for (int b = 0; b < batch; ++b) {
    const std::size_t offset = static_cast<std::size_t>(b) * static_cast<std::size_t>(classes);
    const float* row = logits.data() + offset;
    // The row's statistics are taken before any write, so grad_logits may be the logits buffer.
    const RowLogSumExp lse = row_log_sum_exp(row, classes);
    const int target = targets[static_cast<std::size_t>(b)];
    for (int c = 0; c < classes; ++c) {
      const double softmax = std::exp(static_cast<double>(row[c]) - lse.max - lse.log_sum);
      grad_logits[offset + static_cast<std::size_t>(c)] =
          static_cast<float>((softmax - (c == target ? 1.0 : 0.0)) * scale);
    }
  }
}

}  // namespace shardscope::exec::cpu
