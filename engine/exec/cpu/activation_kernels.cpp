// ReLU forward (both forms) and threshold_backward.
#include "exec/cpu/activation_kernels.h"

#include "exec/cpu/span_checks.h"
#include "exec/shared_kernels/kept_or_zero.h"

// As torch.relu (clamp_min: `v < 0 ? 0 : v`) and threshold_backward (`self <= threshold ? 0 : grad`) compute them
// on the CPU (PyTorch 1.13: relu(-0.0) is -0.0, a NaN passes through), so a diverging run shows NaNs instead of
// silent zeros. Without a branch (shared_kernels/kept_or_zero.h): which side of 0 an activation lies on is data.

namespace shardscope::exec::cpu {

void relu_forward(std::span<const float> x, std::span<float> y) {
  require_size(y, x.size(), "relu_forward", "y");
  require_same_or_disjoint(x, y, "relu_forward", "x", "y");
  for (std::size_t i = 0; i < x.size(); ++i) y[i] = kept_or_zero(!(x[i] < 0.0f), x[i]);
}

void relu_forward_inplace(std::span<float> x) {
  for (float& v : x) v = kept_or_zero(!(v < 0.0f), v);
}

void relu_backward(std::span<const float> grad_y, std::span<const float> output, std::span<float> grad_x) {
  require_size(output, grad_y.size(), "relu_backward", "output");
  require_size(grad_x, grad_y.size(), "relu_backward", "grad_x");
  require_same_or_disjoint(grad_y, grad_x, "relu_backward", "grad_y", "grad_x");
  for (std::size_t i = 0; i < grad_y.size(); ++i) grad_x[i] = kept_or_zero(!(output[i] <= 0.0f), grad_y[i]);
}

}  // namespace shardscope::exec::cpu
