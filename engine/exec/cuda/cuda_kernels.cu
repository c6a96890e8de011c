// Kernels of cuda_kernels.h. Kept lean (one small kernel per operation, grid-stride loops) so that the nvcc time for
// two architectures stays small on CI. Built with --fmad=false: a fused multiply-add rounds once where the CPU
// rounds twice, and CPU and GPU results are compared.
#include "exec/cuda/cuda_kernels.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "exec/cuda/launch_geometry.h"
#include "exec/cuda/column_sums.cuh"
#include "exec/cuda/row_reduce.cuh"

namespace shardscope::exec::cuda {

namespace {

constexpr int kThreads = static_cast<int>(kThreadsPerBlock);

unsigned blocks_for(std::size_t n) { return grid_blocks(n); }  // launch_geometry.h, unit-tested without a GPU

#define GRID_LOOP(i, n) \
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < (n); i += static_cast<std::size_t>(blockDim.x) * gridDim.x)

__global__ void bias_rows_kernel(float* y, const float* bias, int rows, int cols) {
  GRID_LOOP(i, static_cast<std::size_t>(rows) * cols) y[i] = bias[i % cols];
}

__global__ void bias_add_kernel(const float* x, const float* bias, float* y, int rows, int cols) {
  GRID_LOOP(i, static_cast<std::size_t>(rows) * cols) y[i] = x[i] + bias[i % cols];
}

struct BiasGradElement {
  const float* grad_y;
  int cols;
  __device__ double2 operator()(int r, int c) const {
    return make_double2(grad_y[static_cast<std::size_t>(r) * cols + c], 0.0);
  }
};

// `v <= 0 ? 0 : v` lets a NaN through, as torch.relu and the CPU kernel do.
__global__ void relu_forward_kernel(const float* x, float* y, std::size_t n) {
  GRID_LOOP(i, n) y[i] = x[i] <= 0.0f ? 0.0f : x[i];
}

__global__ void relu_backward_kernel(const float* grad_y, const float* output, float* grad_x, std::size_t n) {
  GRID_LOOP(i, n) grad_x[i] = output[i] <= 0.0f ? 0.0f : grad_y[i];
}

// Σ (p − t)² in double, deterministically, in two launches: kMseBlocks blocks each add a grid-stride share and
// reduce it (row_reduce.cuh's block_sum) into partials[block]; then one block adds the partials the same way. The
// block count is fixed (not the device's), so every GPU sums in the same order. One block over the whole output
// took 7 ms for 1024 × 4096 elements on an H200 (2026-11-28), a quarter of an MLP's step.
constexpr unsigned kMseBlocks = 256;

__global__ void mse_partials_kernel(const float* p, const float* t, std::size_t n, double* partials) {
  double sum = 0.0;
  GRID_LOOP(i, n) {
    const double d = static_cast<double>(p[i]) - t[i];
    sum += d * d;
  }
  const double total = block_sum(sum);
  if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

__global__ void mse_total_kernel(const double* partials, unsigned count, std::size_t n, float* loss) {
  double sum = 0.0;
  for (unsigned k = threadIdx.x; k < count; k += blockDim.x) sum += partials[k];
  const double total = block_sum(sum);
  if (threadIdx.x == 0) loss[0] = static_cast<float>(total / static_cast<double>(n));
}

__global__ void mse_backward_kernel(const float* p, const float* t, float* grad, std::size_t n, float scale) {
  GRID_LOOP(i, n) grad[i] = scale * (p[i] - t[i]);
}

// One block a row (a row is a vocabulary wide: tens of thousands of classes), max then Σ exp in double.
__global__ void log_softmax_kernel(const float* logits, float* log_probs, int rows, int classes) {
  for (std::size_t b = blockIdx.x; b < static_cast<std::size_t>(rows); b += gridDim.x) {
    const float* row = logits + b * classes;
    float local_max = -INFINITY;
    for (int k = threadIdx.x; k < classes; k += blockDim.x) local_max = fmaxf(local_max, row[k]);
    const float max = block_max(local_max);
    double local_sum = 0.0;
    for (int k = threadIdx.x; k < classes; k += blockDim.x) local_sum += exp(static_cast<double>(row[k]) - max);
    const double log_sum = max + log(block_sum(local_sum));
    for (int k = threadIdx.x; k < classes; k += blockDim.x)
      log_probs[b * classes + k] = static_cast<float>(static_cast<double>(row[k]) - log_sum);
  }
}

// One block: each thread adds a strided share of the rows' picked log-probabilities in double, then block_sum. With
// one thread walking every row, the whole cross-entropy took 12 ms for 65,536 rows × 1,024 classes on an H200
// (2026-11-28 calibration) against 2.2 ms for GPT-2's 4,096 × 50,257, about as many bytes: the rows, walked one
// load at a time, set its time, and the profile's curve (by bytes) was 17× too slow for GPT-2.
__global__ void nll_loss_kernel(const float* log_probs, const std::int64_t* targets, int rows, int classes, float* loss) {
  double sum = 0.0;
  for (int b = static_cast<int>(threadIdx.x); b < rows; b += static_cast<int>(blockDim.x)) {
    const std::int64_t t = targets[b];
    if (t >= 0 && t < classes) sum -= log_probs[static_cast<std::size_t>(b) * classes + t];
  }
  const double total = block_sum(sum);
  if (threadIdx.x == 0) loss[0] = static_cast<float>(total / rows);
}

__global__ void nll_backward_kernel(const std::int64_t* targets, float* grad, int rows, int classes, float weight) {
  GRID_LOOP(i, static_cast<std::size_t>(rows) * classes) {
    const std::size_t b = i / classes;
    grad[i] = targets[b] == static_cast<std::int64_t>(i % classes) ? weight : 0.0f;
  }
}

__global__ void log_softmax_backward_kernel(const float* grad_lp, const float* lp, float* grad_logits, int rows,
                                            int classes) {
  for (std::size_t b = blockIdx.x; b < static_cast<std::size_t>(rows); b += gridDim.x) {
    double local_sum = 0.0;
    for (int k = threadIdx.x; k < classes; k += blockDim.x) local_sum += grad_lp[b * classes + k];
    const double row_sum = block_sum(local_sum);
    for (int k = threadIdx.x; k < classes; k += blockDim.x)
      grad_logits[b * classes + k] =
          static_cast<float>(grad_lp[b * classes + k] - exp(static_cast<double>(lp[b * classes + k])) * row_sum);
  }
}

__global__ void accumulate_kernel(float* dst, const float* src, std::size_t n) { GRID_LOOP(i, n) dst[i] += src[i]; }
__global__ void copy_scaled_kernel(float* dst, const float* src, std::size_t n, float f) { GRID_LOOP(i, n) dst[i] = src[i] * f; }
__global__ void scale_kernel(float* dst, std::size_t n, float f) { GRID_LOOP(i, n) dst[i] *= f; }

__global__ void sgd_kernel(SgdScalars s, float* params, const float* grads, float* buffer, std::size_t n) {
  GRID_LOOP(i, n) {
    float g = grads[i];
    if (s.with_weight_decay) g += s.weight_decay * params[i];
    if (s.with_momentum) {
      buffer[i] = s.first_step ? g : buffer[i] * s.momentum + s.one_minus_dampening * g;
      g = buffer[i];
    }
    params[i] += s.minus_lr * g;
  }
}

// torch.lerp's formula (aten/src/ATen/native/Lerp.h), as the CPU kernel uses it.
__device__ float lerp_torch(float self, float end, float weight) {
  return fabsf(weight) < 0.5f ? self + weight * (end - self) : end - (end - self) * (1.0f - weight);
}

__global__ void adam_kernel(AdamScalars s, float* params, const float* grads, float* exp_avg, float* exp_avg_sq,
                            std::size_t n) {
  GRID_LOOP(i, n) {
    float g = grads[i];
    if (s.decoupled_decay) {
      params[i] *= s.decay_factor;
    } else if (s.with_weight_decay) {
      g += s.weight_decay * params[i];
    }
    exp_avg[i] = lerp_torch(exp_avg[i], g, s.one_minus_beta1);
    exp_avg_sq[i] = exp_avg_sq[i] * s.beta2 + s.one_minus_beta2 * g * g;
    const float denom = sqrtf(exp_avg_sq[i]) / s.bias_correction2_sqrt + s.eps;
    params[i] += -s.step_size * (exp_avg[i] / denom);
  }
}

}  // namespace

void launch_bias_rows(float* y, const float* bias, int rows, int cols, cudaStream_t stream) {
  bias_rows_kernel<<<blocks_for(static_cast<std::size_t>(rows) * cols), kThreads, 0, stream>>>(y, bias, rows, cols);
}
void launch_bias_add(const float* x, const float* bias, float* y, int rows, int cols, cudaStream_t stream) {
  bias_add_kernel<<<blocks_for(static_cast<std::size_t>(rows) * cols), kThreads, 0, stream>>>(x, bias, y, rows, cols);
}
void launch_bias_grad(const float* grad_y, float* grad_bias, int rows, int cols, cudaStream_t stream) {
  launch_column_sums(BiasGradElement{grad_y, cols}, rows, cols, grad_bias, nullptr, stream);
}
void launch_relu_forward(const float* x, float* y, std::size_t n, cudaStream_t stream) {
  relu_forward_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, y, n);
}
void launch_relu_backward(const float* grad_y, const float* output, float* grad_x, std::size_t n, cudaStream_t stream) {
  relu_backward_kernel<<<blocks_for(n), kThreads, 0, stream>>>(grad_y, output, grad_x, n);
}
void launch_mse_loss(const float* prediction, const float* target, std::size_t n, float* loss, cudaStream_t stream) {
  double* partials = nullptr;
  check_cuda(cudaMallocAsync(reinterpret_cast<void**>(&partials), kMseBlocks * sizeof(double), stream),
             "cudaMallocAsync (mse partial sums)");
  mse_partials_kernel<<<kMseBlocks, kThreads, 0, stream>>>(prediction, target, n, partials);
  mse_total_kernel<<<1, kThreads, 0, stream>>>(partials, kMseBlocks, n, loss);
  check_cuda(cudaFreeAsync(partials, stream), "cudaFreeAsync (mse partial sums)");
}
void launch_mse_backward(const float* prediction, const float* target, float* grad, std::size_t n, float grad_loss,
                         cudaStream_t stream) {
  const float scale = static_cast<float>(2.0 / static_cast<double>(n)) * grad_loss;
  mse_backward_kernel<<<blocks_for(n), kThreads, 0, stream>>>(prediction, target, grad, n, scale);
}
void launch_log_softmax(const float* logits, float* log_probs, int rows, int classes, cudaStream_t stream) {
  log_softmax_kernel<<<row_blocks(rows), kThreads, 0, stream>>>(logits, log_probs, rows, classes);
}
void launch_nll_loss(const float* log_probs, const std::int64_t* targets, int rows, int classes, float* loss,
                     cudaStream_t stream) {
  nll_loss_kernel<<<1, kThreads, 0, stream>>>(log_probs, targets, rows, classes, loss);
}
void launch_nll_backward(const std::int64_t* targets, float* grad, int rows, int classes, double grad_loss,
                         cudaStream_t stream) {
  const auto weight = static_cast<float>(-grad_loss / rows);  // as exec/cpu/log_softmax_kernels.cpp
  nll_backward_kernel<<<blocks_for(static_cast<std::size_t>(rows) * classes), kThreads, 0, stream>>>(targets, grad, rows,
                                                                                                    classes, weight);
}
void launch_log_softmax_backward(const float* grad_log_probs, const float* log_probs, float* grad_logits, int rows,
                                 int classes, cudaStream_t stream) {
  log_softmax_backward_kernel<<<row_blocks(rows), kThreads, 0, stream>>>(grad_log_probs, log_probs, grad_logits,
                                                                           rows, classes);
}
void launch_accumulate(float* dst, const float* src, std::size_t n, cudaStream_t stream) {
  accumulate_kernel<<<blocks_for(n), kThreads, 0, stream>>>(dst, src, n);
}
void launch_copy_scaled(float* dst, const float* src, std::size_t n, float factor, cudaStream_t stream) {
  copy_scaled_kernel<<<blocks_for(n), kThreads, 0, stream>>>(dst, src, n, factor);
}
void launch_scale(float* dst, std::size_t n, float factor, cudaStream_t stream) {
  scale_kernel<<<blocks_for(n), kThreads, 0, stream>>>(dst, n, factor);
}
void launch_sgd(const SgdScalars& s, float* params, const float* grads, float* momentum_buffer, std::size_t n,
                cudaStream_t stream) {
  sgd_kernel<<<blocks_for(n), kThreads, 0, stream>>>(s, params, grads, momentum_buffer, n);
}
void launch_adam(const AdamScalars& s, float* params, const float* grads, float* exp_avg, float* exp_avg_sq,
                 std::size_t n, cudaStream_t stream) {
  adam_kernel<<<blocks_for(n), kThreads, 0, stream>>>(s, params, grads, exp_avg, exp_avg_sq, n);
}

namespace {

__global__ void widen_kernel(const unsigned short* src, float* dst, std::size_t n, bool bf16) {
  GRID_LOOP(i, n) dst[i] = bf16 ? __bfloat162float(__ushort_as_bfloat16(src[i])) : __half2float(__ushort_as_half(src[i]));
}

__global__ void narrow_kernel(const float* src, unsigned short* dst, std::size_t n, bool bf16) {
  GRID_LOOP(i, n) dst[i] = bf16 ? __bfloat16_as_ushort(__float2bfloat16_rn(src[i])) : __half_as_ushort(__float2half_rn(src[i]));
}

__global__ void unscale_kernel(float* dst, const float* src, std::size_t n, float factor, int* found) {
  GRID_LOOP(i, n) {
    if (!isfinite(src[i])) *found = 1;
    dst[i] = src[i] * factor;
  }
}

}  // namespace

void launch_widen(const void* src, float* dst, std::size_t n, bool bf16, cudaStream_t stream) {
  if (n > 0) widen_kernel<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const unsigned short*>(src), dst, n, bf16);
}

void launch_narrow(const float* src, void* dst, std::size_t n, bool bf16, cudaStream_t stream) {
  if (n > 0) narrow_kernel<<<blocks_for(n), kThreads, 0, stream>>>(src, static_cast<unsigned short*>(dst), n, bf16);
}

void launch_unscale(float* dst, const float* src, std::size_t n, float factor, int* found, cudaStream_t stream) {
  if (n > 0) unscale_kernel<<<blocks_for(n), kThreads, 0, stream>>>(dst, src, n, factor, found);
}

}  // namespace shardscope::exec::cuda
