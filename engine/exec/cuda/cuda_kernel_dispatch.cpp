// run_cuda_kernel: operand checks (a kernel must not read or write past a block), then the launches. The operand
// order and formulas are plan/kernel.h's; the numerics mirror exec/cpu/cpu_kernel_dispatch.cpp.
#include "exec/cuda/cuda_kernel_dispatch.h"

#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

#include "exec/kernel_operands.h"
#include "exec/cuda/cublas_gemm.h"
#include "exec/cuda/cuda_check.h"
#include "exec/cuda/cuda_kernels.h"
#include "exec/cuda/cuda_transformer_dispatch.h"
#include "exec/cuda/device_flag.h"
#include "exec/cuda/device_operands.h"

namespace shardscope::exec::cuda {

namespace {

void require_shape(const KernelLaunch& l) {
  if (l.rows <= 0 || l.in_features <= 0 || l.out_features <= 0)
    throw std::invalid_argument(kernel_name(l.kernel) + ": shape rows=" + std::to_string(l.rows) + " in=" +
                                std::to_string(l.in_features) + " out=" + std::to_string(l.out_features));
}

void linear_forward(const KernelLaunch& l, cublasHandle_t h, cudaStream_t s) {
  require_shape(l);
  const float* x = floats(l, 0, "input", cells(l.rows, l.in_features));
  const float* w = floats(l, 1, "weight", cells(l.out_features, l.in_features));
  float* y = floats(l, 3, "output", cells(l.rows, l.out_features));
  float beta = 0.0f;
  if (has_operand(l, 2)) {
    launch_bias_rows(y, floats(l, 2, "bias", static_cast<std::size_t>(l.out_features)), l.rows, l.out_features, s);
    beta = 1.0f;
  }
  gemm_row_major(h, false, true, l.rows, l.out_features, l.in_features, 1.0f, x, w, beta, y);  // y (+)= x·Wᵀ
}

// The plan's LinearBackward writes its gradients (beta = 0; Accumulate ops add them into .grad).
void linear_backward(const KernelLaunch& l, cublasHandle_t h, cudaStream_t s) {
  require_shape(l);
  const float* grad_out = floats(l, 0, "grad_out", cells(l.rows, l.out_features));
  const float* x = floats(l, 1, "input", cells(l.rows, l.in_features));
  if (has_operand(l, 3)) {
    const float* w = floats(l, 2, "weight", cells(l.out_features, l.in_features));
    gemm_row_major(h, false, false, l.rows, l.in_features, l.out_features, 1.0f, grad_out, w, 0.0f,
                   floats(l, 3, "grad_input", cells(l.rows, l.in_features)));  // grad_x = grad_y·W
  }
  gemm_row_major(h, true, false, l.out_features, l.in_features, l.rows, 1.0f, grad_out, x, 0.0f,
                 floats(l, 4, "grad_weight", cells(l.out_features, l.in_features)));  // grad_W = grad_yᵀ·x
  if (has_operand(l, 5))
    launch_bias_grad(grad_out, floats(l, 5, "grad_bias", static_cast<std::size_t>(l.out_features)), l.rows,
                     l.out_features, s);
}

void optimizer_step(const KernelLaunch& l, cudaStream_t s) {
  const OptimizerSettings& o = l.optimizer;
  const std::size_t state = o.kind == OptimizerKind::Sgd ? 0 : o.kind == OptimizerKind::Momentum ? 1 : 2;
  const std::size_t stride = 2 + state;
  if (l.operands.size() % stride != 0 || l.operands.size() / stride != l.optimizer_steps.size())
    throw std::invalid_argument("OptimizerStep: " + std::to_string(l.operands.size()) +
                                " operands do not form (param, grad, state) groups for " +
                                std::to_string(l.optimizer_steps.size()) + " parameters");
  for (std::size_t p = 0; p < l.optimizer_steps.size(); ++p) {
    const std::size_t base = p * stride;
    const std::size_t n = operand(l, base, "param").float_count();
    float* params = floats(l, base, "param", n);
    const float* grads = floats(l, base + 1, "grad", n);
    const std::int64_t step = l.optimizer_steps[p];
    if (state < 2) {
      // exec/cpu/optimizer_kernels.cpp sgd_step with dampening 0; as there (and in torch), momentum 0 keeps no
      // buffer: the update is plain SGD and the buffer operand is left as it is.
      const SgdScalars scalars{static_cast<float>(-o.lr), static_cast<float>(o.momentum), 1.0f,
                               static_cast<float>(o.weight_decay), state == 1 && o.momentum != 0.0,
                               o.weight_decay != 0.0, step == 1};
      launch_sgd(scalars, params, grads, state == 1 ? floats(l, base + 2, "momentum_buffer", n) : nullptr, n, s);
      continue;
    }
    if (step < 1) throw std::invalid_argument("OptimizerStep: step must be 1 or more, got " + std::to_string(step));
    // exec/cpu/optimizer_kernels.cpp adam_update: the step's scalars in double, then fp32.
    const double bias_correction1 = 1.0 - std::pow(o.beta1, static_cast<double>(step));
    const double bias_correction2 = 1.0 - std::pow(o.beta2, static_cast<double>(step));
    const AdamScalars scalars{static_cast<float>(o.lr / bias_correction1),
                              static_cast<float>(std::sqrt(bias_correction2)),
                              static_cast<float>(1.0 - o.lr * o.weight_decay),
                              static_cast<float>(1.0 - o.beta1),
                              static_cast<float>(1.0 - o.beta2),
                              static_cast<float>(o.beta2),
                              static_cast<float>(o.eps),
                              static_cast<float>(o.weight_decay),
                              o.kind == OptimizerKind::AdamW,
                              o.weight_decay != 0.0};
    launch_adam(scalars, params, grads, floats(l, base + 2, "exp_avg", n), floats(l, base + 3, "exp_avg_sq", n), n, s);
  }
}

// Accumulate and Copy take (dst, src) pairs of equal size.
template <typename Fn>
void for_each_pair(const KernelLaunch& l, Fn&& fn) {
  if (l.operands.empty() || l.operands.size() % 2 != 0)
    throw std::invalid_argument(kernel_name(l.kernel) + ": operands come in (dst, src) pairs, got " +
                                std::to_string(l.operands.size()));
  for (std::size_t k = 0; k < l.operands.size(); k += 2) {
    const std::size_t n = operand(l, k, "dst").float_count();
    if (operand(l, k + 1, "src").float_count() != n)
      throw std::invalid_argument(kernel_name(l.kernel) + ": dst has " + std::to_string(n) + " elements, src " +
                                  std::to_string(l.operands[k + 1].float_count()));
    fn(floats(l, k, "dst", n), floats(l, k + 1, "src", n), n);
  }
}

// GradScaler's unscale and check: each fp32 master gradient = 16-bit gradient (staged as fp32) × scale, and a flag
// on the device that any was inf or NaN, read back before returning (the step is decided on the host).
void unscale_gradients(const KernelLaunch& l, cudaStream_t s) {
  const DeviceFlag found(s);
  const auto factor = static_cast<float>(l.scale);
  for_each_pair(l, [&](float* dst, const float* src, std::size_t n) { launch_unscale(dst, src, n, factor, found.get(), s); });
  if (found.is_set() && l.found_non_finite != nullptr) *l.found_non_finite = true;
}

// Op::scale on a loss forward: a sequence-parallel rank's loss is its rows' share of the whole batch's mean (the CPU
// backend multiplies the same way).
void scale_loss(float* loss, const KernelLaunch& l, cudaStream_t s) {
  if (l.scale != 1.0) launch_scale(loss, 1, static_cast<float>(l.scale), s);
}

// A bias on its own: rows × cols from the rows operand's elements over the bias's, which must divide them.
std::pair<int, int> bias_shape(const DeviceBuffer& rows_operand, const DeviceBuffer& bias, const char* kernel) {
  const std::size_t n = rows_operand.float_count(), cols = bias.float_count();
  if (cols == 0 || n % cols != 0)
    throw std::invalid_argument(std::string(kernel) + ": " + std::to_string(n) + " elements are not rows of the bias's " +
                                std::to_string(cols));
  return {static_cast<int>(n / cols), static_cast<int>(cols)};
}

}  // namespace

void run_cuda_kernel(const KernelLaunch& l, cublasHandle_t cublas, cudaStream_t s) {
  switch (l.kernel) {
    case Kernel::None:
    case Kernel::LoadBatch:
      return;
    case Kernel::LinearForward: return linear_forward(l, cublas, s);
    case Kernel::LinearBackward: return linear_backward(l, cublas, s);
    case Kernel::ReluForward: {
      const std::size_t n = operand(l, 0, "input").float_count();
      return launch_relu_forward(floats(l, 0, "input", n), floats(l, 1, "output", n), n, s);
    }
    case Kernel::ReluBackward: {
      const std::size_t n = operand(l, 0, "grad_out").float_count();
      return launch_relu_backward(floats(l, 0, "grad_out", n), floats(l, 1, "output", n), floats(l, 2, "grad_input", n),
                                  n, s);
    }
    case Kernel::MseLoss: {
      const std::size_t n = operand(l, 0, "output").float_count();
      if (n == 0) throw std::invalid_argument("MseLoss: empty output");
      float* loss = floats(l, 2, "loss", 1);
      launch_mse_loss(floats(l, 0, "output", n), floats(l, 1, "target", n), n, loss, s);
      return scale_loss(loss, l, s);
    }
    case Kernel::MseLossBackward: {
      const std::size_t n = operand(l, 0, "output").float_count();
      if (n == 0) throw std::invalid_argument("MseLossBackward: empty output");
      return launch_mse_backward(floats(l, 0, "output", n), floats(l, 1, "target", n), floats(l, 2, "grad_input", n), n,
                                 static_cast<float>(l.scale), s);  // Op::scale: the loss gradient
    }
    case Kernel::CrossEntropyLoss: {
      if (l.rows <= 0 || l.classes <= 0) throw std::invalid_argument("CrossEntropyLoss: rows and classes must be positive");
      const std::size_t n = cells(l.rows, l.classes);
      float* log_probs = floats(l, 2, "log_probs", n);
      launch_log_softmax(floats(l, 0, "logits", n), log_probs, l.rows, l.classes, s);
      float* loss = floats(l, 3, "loss", 1);
      launch_nll_loss(log_probs, int64s(l, 1, "target", static_cast<std::size_t>(l.rows)), l.rows, l.classes, loss, s);
      return scale_loss(loss, l, s);
    }
    case Kernel::NllLossBackward:
      if (l.rows <= 0 || l.classes <= 0) throw std::invalid_argument("NllLossBackward: rows and classes must be positive");
      return launch_nll_backward(int64s(l, 0, "target", static_cast<std::size_t>(l.rows)),
                                 floats(l, 1, "grad_log_probs", cells(l.rows, l.classes)), l.rows, l.classes, l.scale,
                                 s);
    case Kernel::LogSoftmaxBackward: {
      const std::size_t n = cells(l.rows, l.classes);
      return launch_log_softmax_backward(floats(l, 0, "grad_log_probs", n), floats(l, 1, "log_probs", n),
                                         floats(l, 2, "grad_logits", n), l.rows, l.classes, s);
    }
    case Kernel::Accumulate:
      return for_each_pair(l, [s](float* dst, const float* src, std::size_t n) { launch_accumulate(dst, src, n, s); });
    case Kernel::Copy: {
      const auto factor = static_cast<float>(l.scale);
      return for_each_pair(l, [s, factor](float* dst, const float* src, std::size_t n) {
        launch_copy_scaled(dst, src, n, factor, s);
      });
    }
    case Kernel::Zero:
      for (std::size_t k = 0; k < l.operands.size() || k == 0; ++k) {
        const DeviceBuffer& dst = operand(l, k, "dst");
        check_cuda(cudaMemsetAsync(dst.data, 0, static_cast<std::size_t>(dst.bytes), s), "cudaMemsetAsync");
      }
      return;
    case Kernel::Scale: {
      const std::size_t n = operand(l, 0, "dst").float_count();
      return launch_scale(floats(l, 0, "dst", n), n, static_cast<float>(l.scale), s);
    }
    case Kernel::OptimizerStep: return optimizer_step(l, s);
    case Kernel::UnscaleGradients: return unscale_gradients(l, s);
    case Kernel::BiasAdd: {
      const auto [rows, cols] = bias_shape(operand(l, 0, "input"), operand(l, 1, "bias"), "BiasAdd");
      const std::size_t n = cells(rows, cols);
      return launch_bias_add(floats(l, 0, "input", n), floats(l, 1, "bias", static_cast<std::size_t>(cols)),
                             floats(l, 2, "output", n), rows, cols, s);
    }
    case Kernel::BiasBackward: {  // written, not accumulated, as the CPU backend's
      const auto [rows, cols] = bias_shape(operand(l, 0, "grad_out"), operand(l, 1, "grad_bias"), "BiasBackward");
      return launch_bias_grad(floats(l, 0, "grad_out", cells(rows, cols)), floats(l, 1, "grad_bias", static_cast<std::size_t>(cols)),
                              rows, cols, s);
    }
    default:
      if (is_transformer_kernel(l.kernel)) return run_cuda_transformer_kernel(l, cublas, s);
      break;
  }
  throw std::invalid_argument("the CUDA backend has no kernel " + kernel_name(l.kernel));
}

}  // namespace shardscope::exec::cuda
