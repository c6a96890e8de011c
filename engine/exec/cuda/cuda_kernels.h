// The CUDA backend's own kernels (everything but the GEMMs, which are cuBLAS): host functions that launch on a
// stream and return at once (the caller synchronises). Numerics follow the CPU kernels of exec/cpu/ operation for
// operation (fp32 elementwise, scalars prepared on the host in double, row sums in double, which makes their order
// immaterial at fp32, and fp32 sums in the CPU's order) so CPU and GPU parameters can be compared; cuda_kernels.cu is compiled with
// --fmad=false for the same reason. CUDA backend only.
#pragma once
#include "exec/exec_layer.h"
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace shardscope::exec::cuda {

// y[r, c] = bias[c] for every row (the GEMM then adds x·Wᵀ with beta = 1, as torch.addmm).
void launch_bias_rows(float* y, const float* bias, int rows, int cols, cudaStream_t stream);
// y[r, c] = x[r, c] + bias[c] (Kernel::BiasAdd: a row-parallel layer's bias after the reduce-scatter, under sequence
// parallelism); y may be x.
void launch_bias_add(const float* x, const float* bias, float* y, int rows, int cols, cudaStream_t stream);
// grad_bias[c] = Σ_r grad_y[r, c], in double in chunks of rows (column_sums.cuh; the CPU sums in fp32, so the two
// differ by the CPU's rounding).
void launch_bias_grad(const float* grad_y, float* grad_bias, int rows, int cols, cudaStream_t stream);

void launch_relu_forward(const float* x, float* y, std::size_t n, cudaStream_t stream);
void launch_relu_backward(const float* grad_y, const float* output, float* grad_x, std::size_t n, cudaStream_t stream);

// loss[0] = mean((p − t)²), the sum in double.
void launch_mse_loss(const float* prediction, const float* target, std::size_t n, float* loss, cudaStream_t stream);
// grad = float(2/n) × grad_loss × (p − t).
void launch_mse_backward(const float* prediction, const float* target, float* grad, std::size_t n, float grad_loss,
                         cudaStream_t stream);

// log_softmax per row (max subtracted, Σ exp in double; one block a row, row_reduce.cuh), then loss[0] = mean NLL
// (double, one thread).
void launch_log_softmax(const float* logits, float* log_probs, int rows, int classes, cudaStream_t stream);
void launch_nll_loss(const float* log_probs, const std::int64_t* targets, int rows, int classes, float* loss,
                     cudaStream_t stream);
// grad = 0 except float(−grad_loss/rows) at each row's target (grad_loss: Op::scale). Targets outside
// [0, classes) are skipped.
void launch_nll_backward(const std::int64_t* targets, float* grad, int rows, int classes, double grad_loss,
                         cudaStream_t stream);
void launch_log_softmax_backward(const float* grad_log_probs, const float* log_probs, float* grad_logits, int rows,
                                 int classes, cudaStream_t stream);

void launch_accumulate(float* dst, const float* src, std::size_t n, cudaStream_t stream);        // dst += src
// Mixed precision: n 16-bit values (bf16 when `bf16`, else fp16) to fp32 and back, rounding to nearest even
// (__float2bfloat16_rn / __float2half_rn, as the CPU's exec/sixteen_bit.h).
void launch_widen(const void* src, float* dst, std::size_t n, bool bf16, cudaStream_t stream);
void launch_narrow(const float* src, void* dst, std::size_t n, bool bf16, cudaStream_t stream);
// dst = src · factor; *found set to 1 where a src value is inf or NaN (GradScaler's unscale and check).
void launch_unscale(float* dst, const float* src, std::size_t n, float factor, int* found, cudaStream_t stream);
void launch_copy_scaled(float* dst, const float* src, std::size_t n, float factor, cudaStream_t stream);  // dst = src·f
void launch_scale(float* dst, std::size_t n, float factor, cudaStream_t stream);                 // dst *= f

// SGD (momentum 0: no buffer) as exec/cpu/optimizer_kernels.cpp sgd_step.
struct SgdScalars {
  float minus_lr, momentum, one_minus_dampening, weight_decay;
  bool with_momentum, with_weight_decay, first_step;
};
void launch_sgd(const SgdScalars& s, float* params, const float* grads, float* momentum_buffer, std::size_t n,
                cudaStream_t stream);

// Adam / AdamW as exec/cpu/optimizer_kernels.cpp adam_update, scalars computed on the host the same way.
struct AdamScalars {
  float step_size, bias_correction2_sqrt, decay_factor, one_minus_beta1, one_minus_beta2, beta2, eps, weight_decay;
  bool decoupled_decay, with_weight_decay;
};
void launch_adam(const AdamScalars& s, float* params, const float* grads, float* exp_avg, float* exp_avg_sq,
                 std::size_t n, cudaStream_t stream);

}  // namespace shardscope::exec::cuda
