// A bias on its own, outside a Linear: Megatron-LM's RowParallelLinear under sequence parallelism adds its bias
// after the reduce-scatter, to each rank's own rows (core/tensor_parallel/layers.py, RowParallelLinear.forward:
// `output = output_ + self.bias`), so its gradient is the sum of those rows' output gradient only. fp32, row-major.
#pragma once
#include "exec/exec_layer.h"
#include <span>

namespace shardscope::exec::cpu {

// output[r, o] = input[r, o] + bias[o] for every row r; output may be input.
void bias_add(std::span<const float> input, std::span<const float> bias, std::span<float> output);

// grad_bias[o] += Σ over rows of grad_out[r, o], rows in order (accumulates: zero it first for a fresh one).
void bias_backward(std::span<const float> grad_out, std::span<float> grad_bias);

}  // namespace shardscope::exec::cpu
