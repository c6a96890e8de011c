// nn.Linear on the CPU (PyTorch 2.x torch/nn/modules/linear.py: y = x·Wᵀ + b, weight stored out×in), fp32,
// row-major, batch-first; forward and the three backward products. No dependency on plans or allocators.
#pragma once
#include "exec/exec_layer.h"
#include <span>

namespace shardscope::exec::cpu {

struct LinearShape {
  int batch = 0;
  int in_features = 0;
  int out_features = 0;
};

// y[batch×out] = x[batch×in] · weight[out×in]ᵀ + bias[out]. bias may be empty (bias=False). y must not overlap
// x, weight or bias.
void linear_forward(const LinearShape& shape, std::span<const float> x, std::span<const float> weight,
                    std::span<const float> bias, std::span<float> y);

// grad_x[batch×in] = grad_y[batch×out] · weight[out×in] (overwrites grad_x; no overlap with the inputs).
void linear_backward_input(const LinearShape& shape, std::span<const float> grad_y, std::span<const float> weight,
                           std::span<float> grad_x);

// grad_weight[out×in] += grad_yᵀ · x: accumulates, as autograd does into .grad (zero it first for a fresh one).
void linear_backward_weight(const LinearShape& shape, std::span<const float> grad_y, std::span<const float> x,
                            std::span<float> grad_weight);

// grad_bias[out] += Σ over the batch of grad_y (accumulates).
void linear_backward_bias(const LinearShape& shape, std::span<const float> grad_y, std::span<float> grad_bias);

}  // namespace shardscope::exec::cpu
