// Kernel dispatch on the CPU: operands as fp32 (int64 for class targets) spans, then the kernels of this folder;
// 16-bit operands staged through fp32 (exec/cpu/fp32_staging.h).
#include "exec/cpu/cpu_kernel_dispatch.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "exec/kernel_operands.h"
#include "exec/cpu/activation_kernels.h"
#include "exec/cpu/bias_kernels.h"
#include "exec/cpu/blas_gemm.h"
#include "exec/cpu/fp32_staging.h"
#include "exec/cpu/linear_kernels.h"
#include "exec/cpu/log_softmax_kernels.h"
#include "exec/cpu/loss_kernels.h"
#include "exec/cpu/operand_spans.h"
#include "exec/cpu/optimizer_kernels.h"
#include "exec/cpu/transformer_dispatch.h"
#include "exec/cpu/vocab_parallel_loss_kernels.h"
#include "exec/shared_kernels/gpt_block_staging.h"

namespace shardscope::exec::cpu {

namespace {


void linear_forward_launch(const KernelLaunch& l) {
  const LinearShape shape{l.rows, l.in_features, l.out_features};
  const std::span<float> bias = has_operand(l, 2) ? floats(l.operands[2]) : std::span<float>{};
  linear_forward(shape, floats(operand(l, 0, "input")), floats(operand(l, 1, "weight")), bias,
                 floats(operand(l, 3, "output")));
}

// The plan's LinearBackward writes its gradients (no accumulation; Accumulate ops add them into .grad).
void linear_backward_launch(const KernelLaunch& l) {
  const LinearShape shape{l.rows, l.in_features, l.out_features};
  const auto grad_out = floats(operand(l, 0, "grad_out"));
  const auto input = floats(operand(l, 1, "input"));
  if (has_operand(l, 3)) linear_backward_input(shape, grad_out, floats(operand(l, 2, "weight")), floats(l.operands[3]));
  const auto grad_weight = floats(operand(l, 4, "grad_weight"));
  std::fill(grad_weight.begin(), grad_weight.end(), 0.0f);
  linear_backward_weight(shape, grad_out, input, grad_weight);
  if (has_operand(l, 5)) {
    const auto grad_bias = floats(l.operands[5]);
    std::fill(grad_bias.begin(), grad_bias.end(), 0.0f);
    linear_backward_bias(shape, grad_out, grad_bias);
  }
}

void relu_forward_launch(const KernelLaunch& l) {
  const auto input = floats(operand(l, 0, "input"));
  const auto output = floats(operand(l, 1, "output"));
  if (input.data() == output.data()) {
    relu_forward_inplace(output);
  } else {
    relu_forward(input, output);
  }
}

void write_scalar(const DeviceBuffer& buffer, float value, const char* kernel) {
  if (buffer.bytes < static_cast<Bytes>(sizeof(float)))
    throw std::invalid_argument(std::string(kernel) + ": the loss operand holds no fp32 scalar");
  floats(buffer)[0] = value;
}

void cross_entropy_launch(const KernelLaunch& l) {
  const auto logits = floats(operand(l, 0, "logits"));
  const auto targets = int64s(operand(l, 1, "target"));
  const auto log_probs = floats(operand(l, 2, "log_probs"));
  log_softmax_forward(l.rows, l.classes, logits, log_probs);
  write_scalar(operand(l, 3, "loss"),
               nll_loss_forward(l.rows, l.classes, log_probs, targets) * static_cast<float>(l.scale), "CrossEntropyLoss");
}

// Cross-entropy's parts over vocabulary-parallel logits (kernel.h lists the operands).
void vocab_parallel_loss_launch(const KernelLaunch& l) {
  const VocabShard shard{l.rows, l.classes, l.tp, l.tp_rank};
  switch (l.kernel) {
    case Kernel::VocabParallelLossMax:
      return vocab_parallel_loss_max(shard, floats(operand(l, 0, "logits")), floats(operand(l, 1, "stats")));
    case Kernel::VocabParallelLossSums:
      return vocab_parallel_loss_sums(shard, floats(operand(l, 0, "logits")), int64s(operand(l, 1, "target")),
                                      floats(operand(l, 2, "stats")));
    case Kernel::VocabParallelLossFinish:
      return write_scalar(operand(l, 4, "loss"),
                          vocab_parallel_loss_finish(shard, floats(operand(l, 0, "logits")), floats(operand(l, 2, "stats")),
                                                     floats(operand(l, 3, "log_probs"))) *
                              static_cast<float>(l.scale),
                          "VocabParallelLossFinish");
    case Kernel::VocabParallelNllLossBackward:
      return vocab_parallel_nll_loss_backward(shard, int64s(operand(l, 0, "target")),
                                              floats(operand(l, 1, "grad_log_probs")), l.scale);
    case Kernel::VocabParallelLogSoftmaxBackward:
      return vocab_parallel_log_softmax_backward(shard, floats(operand(l, 0, "grad_log_probs")),
                                                 floats(operand(l, 1, "log_probs")), floats(operand(l, 2, "grad_logits")),
                                                 l.scale);
    default:
      throw std::invalid_argument(kernel_name(l.kernel) + " is not a vocabulary-parallel loss kernel");
  }
}

// (param, grad, state...) × k; the state count per parameter follows the optimizer kind.
void optimizer_launch(const KernelLaunch& l) {
  const OptimizerSettings& o = l.optimizer;
  const std::size_t state = o.kind == OptimizerKind::Sgd ? 0 : o.kind == OptimizerKind::Momentum ? 1 : 2;
  const std::size_t stride = 2 + state;
  if (l.operands.size() % stride != 0 || l.operands.size() / stride != l.optimizer_steps.size())
    throw std::invalid_argument("OptimizerStep: " + std::to_string(l.operands.size()) + " operands do not form (param, grad, " +
                                std::to_string(state) + " state) groups for " + std::to_string(l.optimizer_steps.size()) +
                                " parameters");
  for (std::size_t p = 0; p < l.optimizer_steps.size(); ++p) {
    const std::size_t base = p * stride;
    const auto params = floats(operand(l, base, "param"));
    const auto grads = floats(operand(l, base + 1, "grad"));
    if (grads.size() != params.size())
      throw std::invalid_argument("OptimizerStep: grad has " + std::to_string(grads.size()) + " elements, param " +
                                  std::to_string(params.size()));
    const std::int64_t step = l.optimizer_steps[p];
    if (state < 2) {
      const SgdOptions sgd{o.lr, state == 1 ? o.momentum : 0.0, 0.0, o.weight_decay};
      sgd_step(sgd, step == 1, params, grads, state == 1 ? floats(operand(l, base + 2, "momentum_buffer")) : std::span<float>{});
    } else {
      const AdamOptions adam{o.lr, o.beta1, o.beta2, o.eps, o.weight_decay};
      const auto exp_avg = floats(operand(l, base + 2, "exp_avg"));
      const auto exp_avg_sq = floats(operand(l, base + 3, "exp_avg_sq"));
      if (o.kind == OptimizerKind::AdamW) {
        adamw_step(adam, step, params, grads, exp_avg, exp_avg_sq);
      } else {
        adam_step(adam, step, params, grads, exp_avg, exp_avg_sq);
      }
    }
  }
}

void require_same_size(std::span<float> a, std::span<float> b, Kernel kernel) {
  if (a.size() != b.size())
    throw std::invalid_argument(kernel_name(kernel) + ": dst has " + std::to_string(a.size()) + " elements, src " +
                                std::to_string(b.size()));
}

// Accumulate and Copy take (dst, src) pairs (plan/kernel.h); an odd count is a lowering bug, not a silent skip.
template <typename Fn>
void for_each_pair(const KernelLaunch& l, Fn&& fn) {
  if (l.operands.empty() || l.operands.size() % 2 != 0)
    throw std::invalid_argument(kernel_name(l.kernel) + ": operands come in (dst, src) pairs, got " + std::to_string(l.operands.size()));
  for (std::size_t k = 0; k < l.operands.size(); k += 2) {
    const auto dst = floats(operand(l, k, "dst"));
    const auto src = floats(operand(l, k + 1, "src"));
    require_same_size(dst, src, l.kernel);
    fn(dst, src);
  }
}

// dst = src × scale for each (fp32 master gradient, 16-bit gradient) pair, noting any inf or NaN (GradScaler's
// _amp_foreach_non_finite_check_and_unscale_).
void unscale_gradients(const KernelLaunch& l) {
  const auto factor = static_cast<float>(l.scale);
  bool found = false;
  for_each_pair(l, [&](std::span<float> dst, std::span<const float> src) {
    for (std::size_t i = 0; i < dst.size(); ++i) {
      if (!std::isfinite(src[i])) found = true;
      dst[i] = src[i] * factor;
    }
  });
  if (l.found_non_finite != nullptr && found) *l.found_non_finite = true;
}

void run_fp32_kernel(const KernelLaunch& l) {
  switch (l.kernel) {
    case Kernel::None:
    case Kernel::LoadBatch:
      return;
    case Kernel::LinearForward: return linear_forward_launch(l);
    case Kernel::LinearBackward: return linear_backward_launch(l);
    case Kernel::ReluForward: return relu_forward_launch(l);
    case Kernel::ReluBackward:
      return relu_backward(floats(operand(l, 0, "grad_out")), floats(operand(l, 1, "output")),
                           floats(operand(l, 2, "grad_input")));
    case Kernel::MseLoss:
      return write_scalar(operand(l, 2, "loss"),
                          mse_loss_forward(floats(operand(l, 0, "output")), floats(operand(l, 1, "target"))) *
                              static_cast<float>(l.scale),
                          "MseLoss");
    case Kernel::MseLossBackward:
      return mse_loss_backward(floats(operand(l, 0, "output")), floats(operand(l, 1, "target")),
                               static_cast<float>(l.scale), floats(operand(l, 2, "grad_input")));
    case Kernel::CrossEntropyLoss: return cross_entropy_launch(l);
    case Kernel::NllLossBackward:
      return nll_loss_backward(l.rows, l.classes, int64s(operand(l, 0, "target")), floats(operand(l, 1, "grad_log_probs")),
                               l.scale);
    case Kernel::LogSoftmaxBackward:
      return log_softmax_backward(l.rows, l.classes, floats(operand(l, 0, "grad_log_probs")),
                                  floats(operand(l, 1, "log_probs")), floats(operand(l, 2, "grad_logits")));
    case Kernel::VocabParallelLossMax:
    case Kernel::VocabParallelLossSums:
    case Kernel::VocabParallelLossFinish:
    case Kernel::VocabParallelNllLossBackward:
    case Kernel::VocabParallelLogSoftmaxBackward: return vocab_parallel_loss_launch(l);
    case Kernel::Accumulate:
      return for_each_pair(l, [](std::span<float> dst, std::span<const float> src) {
        for (std::size_t i = 0; i < dst.size(); ++i) dst[i] += src[i];
      });
    case Kernel::Copy: {
      const auto factor = static_cast<float>(l.scale);
      return for_each_pair(l, [factor](std::span<float> dst, std::span<const float> src) {
        for (std::size_t i = 0; i < dst.size(); ++i) dst[i] = src[i] * factor;
      });
    }
    case Kernel::Zero:  // every operand
      for (std::size_t k = 0; k < l.operands.size() || k == 0; ++k) {
        const auto dst = floats(operand(l, k, "dst"));
        std::fill(dst.begin(), dst.end(), 0.0f);
      }
      return;
    case Kernel::Scale: {
      const auto dst = floats(operand(l, 0, "dst"));
      const auto factor = static_cast<float>(l.scale);
      for (float& x : dst) x *= factor;
      return;
    }
    case Kernel::OptimizerStep: return optimizer_launch(l);
    case Kernel::UnscaleGradients: return unscale_gradients(l);
    case Kernel::BiasAdd:
      return bias_add(floats(operand(l, 0, "input")), floats(operand(l, 1, "bias")), floats(operand(l, 2, "output")));
    case Kernel::BiasBackward: {
      const auto grad_bias = floats(operand(l, 1, "grad_bias"));
      std::fill(grad_bias.begin(), grad_bias.end(), 0.0f);
      return bias_backward(floats(operand(l, 0, "grad_out")), grad_bias);
    }
    default:
      if (is_transformer_kernel(l.kernel)) return run_transformer_kernel(l);
  }
  throw std::invalid_argument("unknown kernel " + std::to_string(static_cast<int>(l.kernel)));
}

}  // namespace

void run_cpu_kernel(const KernelLaunch& l) {
  if (!has_16_bit_operand(l.operands)) return run_fp32_kernel(l);
  KernelLaunch staged = l;
  Fp32Staging staging(staged.operands, &l, gpt_block_value_bytes);
  run_fp32_kernel(staged);
  staging.write_back();
}

}  // namespace shardscope::exec::cpu
