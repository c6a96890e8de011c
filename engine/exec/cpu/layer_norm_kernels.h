// nn.LayerNorm over the last dimension on the CPU, fp32 (PyTorch 2.x aten/src/ATen/native/layer_norm.cpp: biased
// variance, y = (x − mean) / sqrt(var + eps) · weight + bias). The statistics are recomputed in backward from the
// saved input, where torch keeps them (mean, rstd: 2 floats a row that the accounting leaves out, as Korthikanti
// et al. do). No dependency on plans or allocators.
#pragma once
#include "exec/exec_layer.h"
#include <span>

namespace shardscope::exec::cpu {

struct LayerNormShape {
  int rows = 0;
  int features = 0;
  float eps = 1e-5f;
};

// y[rows×features]; y may not overlap x.
void layer_norm_forward(const LayerNormShape& shape, std::span<const float> x, std::span<const float> weight,
                        std::span<const float> bias, std::span<float> y);

// grad_x (written, or added to when accumulate_grad_x: a residual branch meeting the main path) may be empty;
// grad_weight and grad_bias are written.
void layer_norm_backward(const LayerNormShape& shape, std::span<const float> grad_y, std::span<const float> x,
                         std::span<const float> weight, std::span<float> grad_x, bool accumulate_grad_x,
                         std::span<float> grad_weight, std::span<float> grad_bias);

}  // namespace shardscope::exec::cpu
