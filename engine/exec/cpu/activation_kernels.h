// ReLU on the CPU, fp32, elementwise (PyTorch 2.x: torch.relu / relu_, and its derivative in
// tools/autograd/derivatives.yaml, threshold_backward(grad, result, 0)). No dependency on plans or allocators.
#pragma once
#include "exec/exec_layer.h"
#include <span>

namespace shardscope::exec::cpu {

// y = max(x, 0). y and x have the same size; they may be the same buffer (then it is relu_forward_inplace), but
// must not partially overlap.
void relu_forward(std::span<const float> x, std::span<float> y);

// x = max(x, 0) in place: nn.ReLU(inplace=True). The input is gone, so the backward reads the output.
void relu_forward_inplace(std::span<float> x);

// grad_x = output > 0 ? grad_y : 0, from the forward's output (works for both forms: output > 0 exactly where
// input > 0). grad_x may be the same buffer as grad_y (in-place backward), not a partial overlap.
void relu_backward(std::span<const float> grad_y, std::span<const float> output, std::span<float> grad_x);

}  // namespace shardscope::exec::cpu
