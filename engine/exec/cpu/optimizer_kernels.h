// Optimizer updates on flat fp32 spans (a whole flat buffer, one tensor, or a ZeRO shard alike), following the
// single-tensor paths of PyTorch 2.x torch/optim/sgd.py (_single_tensor_sgd), adam.py (_single_tensor_adam) and
// adamw.py (_single_tensor_adamw); no amsgrad, nesterov, maximize. No dependency on plans or allocators.
#pragma once
#include "exec/exec_layer.h"
#include <cstdint>
#include <span>

namespace shardscope::exec::cpu {

// Hyperparameters are doubles, as the Python floats torch.optim holds: scalars derived from them (1 - beta2, the
// bias corrections) are computed in double and only then rounded to fp32 for the elementwise work, as torch does.
struct SgdOptions {
  double lr = 0.01;
  double momentum = 0.0;      // 0: plain SGD, no buffer
  double dampening = 0.0;
  double weight_decay = 0.0;  // L2, added to the gradient
};

// g = grad + weight_decay·param; with momentum: buf = g on the first step (torch clones the gradient), else
// buf = momentum·buf + (1 - dampening)·g, and g = buf; then param -= lr·g.
// momentum_buffer: same size as params when momentum != 0, ignored (may be empty) otherwise.
void sgd_step(const SgdOptions& options, bool first_step, std::span<float> params, std::span<const float> grads,
              std::span<float> momentum_buffer);

struct AdamOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;  // Adam: L2 added to the gradient; AdamW: decoupled (param *= 1 - lr·weight_decay)
};

// step: the step count after this update's increment (1 on the first update), for the bias corrections.
//   m = lerp(m, g, 1 - beta1); v = beta2·v + (1 - beta2)·g²
//   param -= lr / (1 - beta1^step) · m / (sqrt(v) / sqrt(1 - beta2^step) + eps)   (eps outside the sqrt)
// exp_avg and exp_avg_sq start at zero and have params' size.
void adam_step(const AdamOptions& options, std::int64_t step, std::span<float> params, std::span<const float> grads,
               std::span<float> exp_avg, std::span<float> exp_avg_sq);

// As adam_step without the L2 term, after param *= 1 - lr·weight_decay (AdamW's decoupled decay; torch's default
// weight_decay for AdamW is 0.01, set it in the options).
void adamw_step(const AdamOptions& options, std::int64_t step, std::span<float> params, std::span<const float> grads,
                std::span<float> exp_avg, std::span<float> exp_avg_sq);

}  // namespace shardscope::exec::cpu
