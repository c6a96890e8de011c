// SGD, momentum SGD, Adam and AdamW updates, elementwise in fp32 with the step's scalars computed in double as
// torch computes them in Python floats.
#include "exec/cpu/optimizer_kernels.h"

#include <cmath>
#include <string>

#include "exec/cpu/span_checks.h"

namespace shardscope::exec::cpu {
namespace {

// torch.lerp's CPU formula (aten/src/ATen/native/Lerp.h, lerp): two forms so that weight 1 returns `end` exactly.
float lerp(float self, float end, float weight) {
  return std::abs(weight) < 0.5f ? self + weight * (end - self) : end - (end - self) * (1.0f - weight);
}

void adam_update(const AdamOptions& o, std::int64_t step, bool decoupled_decay, std::span<float> params,
                 std::span<const float> grads, std::span<float> exp_avg, std::span<float> exp_avg_sq,
                 const char* kernel) {
  require_size(grads, params.size(), kernel, "grads");
  require_size(exp_avg, params.size(), kernel, "exp_avg");
  require_size(exp_avg_sq, params.size(), kernel, "exp_avg_sq");
  if (step < 1) throw std::invalid_argument(std::string(kernel) + ": step must be 1 or more, got " + std::to_string(step));
  const double bias_correction1 = 1.0 - std::pow(o.beta1, static_cast<double>(step));
  const double bias_correction2 = 1.0 - std::pow(o.beta2, static_cast<double>(step));
  const auto step_size = static_cast<float>(o.lr / bias_correction1);
  const auto bias_correction2_sqrt = static_cast<float>(std::sqrt(bias_correction2));
  const auto decay_factor = static_cast<float>(1.0 - o.lr * o.weight_decay);
  const auto one_minus_beta1 = static_cast<float>(1.0 - o.beta1);
  const auto one_minus_beta2 = static_cast<float>(1.0 - o.beta2);
  const auto beta2 = static_cast<float>(o.beta2);
  const auto eps = static_cast<float>(o.eps);
  const auto weight_decay = static_cast<float>(o.weight_decay);
  for (std::size_t i = 0; i < params.size(); ++i) {
    float g = grads[i];
    if (decoupled_decay) {
      params[i] *= decay_factor;
    } else if (o.weight_decay != 0.0) {
      g += weight_decay * params[i];
    }
    exp_avg[i] = lerp(exp_avg[i], g, one_minus_beta1);
    exp_avg_sq[i] = exp_avg_sq[i] * beta2 + one_minus_beta2 * g * g;
    const float denom = std::sqrt(exp_avg_sq[i]) / bias_correction2_sqrt + eps;
    params[i] += -step_size * (exp_avg[i] / denom);
  }
}

}  // namespace

void sgd_step(const SgdOptions& o, bool first_step, std::span<float> params, std::span<const float> grads,
              std::span<float> momentum_buffer) {
  require_size(grads, params.size(), "sgd_step", "grads");
  const bool with_momentum = o.momentum != 0.0;
  if (with_momentum) require_size(momentum_buffer, params.size(), "sgd_step", "momentum_buffer");
  const auto one_minus_dampening = static_cast<float>(1.0 - o.dampening);
  const auto momentum = static_cast<float>(o.momentum);
  const auto weight_decay = static_cast<float>(o.weight_decay);
  const auto minus_lr = static_cast<float>(-o.lr);
  for (std::size_t i = 0; i < params.size(); ++i) {
    float g = grads[i];
    if (o.weight_decay != 0.0) g += weight_decay * params[i];
    if (with_momentum) {
      momentum_buffer[i] = first_step ? g : momentum_buffer[i] * momentum + one_minus_dampening * g;
      g = momentum_buffer[i];
    }
    params[i] += minus_lr * g;
  }
}

void adam_step(const AdamOptions& options, std::int64_t step, std::span<float> params, std::span<const float> grads,
               std::span<float> exp_avg, std::span<float> exp_avg_sq) {
  adam_update(options, step, /*decoupled_decay=*/false, params, grads, exp_avg, exp_avg_sq, "adam_step");
}

void adamw_step(const AdamOptions& options, std::int64_t step, std::span<float> params, std::span<const float> grads,
                std::span<float> exp_avg, std::span<float> exp_avg_sq) {
  adam_update(options, step, /*decoupled_decay=*/true, params, grads, exp_avg, exp_avg_sq, "adamw_step");
}

}  // namespace shardscope::exec::cpu
