// Kernels of transformer_kernels.h: one thread an element; a block (LayerNorm) or a warp (attention's softmax) a
// row, summing in double as the CPU does; LayerNorm's parameter gradients down the columns in double
// (column_sums.cuh); one thread a column where the CPU sums a column in fp32 (the embedding's gradient), so that
// sum runs in the CPU's order. Small and plain, for nvcc's time on CI.
#include "exec/cuda/transformer_kernels.h"

#include "exec/cuda/launch_geometry.h"
#include "exec/cuda/column_sums.cuh"
#include "exec/cuda/row_reduce.cuh"

namespace shardscope::exec::cuda {

namespace {

constexpr int kThreads = static_cast<int>(kThreadsPerBlock);

#define GRID_LOOP(i, n) \
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < (n); i += static_cast<std::size_t>(blockDim.x) * gridDim.x)

__device__ std::uint64_t splitmix64_device(std::uint64_t z) {  // exec/data/splitmix64.h
  z += 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

__global__ void fill_keep_mask_kernel(std::uint64_t site_key, std::uint64_t threshold, std::uint8_t* mask, std::size_t n,
                                      std::size_t per_sample, std::int64_t first, std::int64_t stride) {
  GRID_LOOP(i, n) {
    // exec/shared_kernels/dropout_mask.h whole_batch_element
    const auto sample = static_cast<std::int64_t>(i / per_sample);
    const auto element = static_cast<std::uint64_t>((first + stride * sample) * static_cast<std::int64_t>(per_sample)) + i % per_sample;
    mask[i] = (splitmix64_device(site_key + element) >> 40) >= threshold ? 1 : 0;
  }
}

__global__ void apply_keep_mask_kernel(const float* x, const std::uint8_t* mask, float scale, float* out, std::size_t n) {
  GRID_LOOP(i, n) out[i] = mask[i] ? x[i] * scale : 0.0f;
}

__global__ void embedding_gather_kernel(const std::int64_t* ids, const float* wte, const float* wpe, float* out,
                                        int tokens, int seq, int hidden, std::int64_t vocab, int* bad_id) {
  GRID_LOOP(i, static_cast<std::size_t>(tokens) * hidden) {
    const std::size_t t = i / hidden, j = i % hidden;
    const std::int64_t id = ids[t];
    if (id < 0 || id >= vocab) {
      *bad_id = 1;
      continue;
    }
    out[i] = wte[static_cast<std::size_t>(id) * hidden + j] + wpe[(t % seq) * hidden + j];
  }
}

__global__ void zero_kernel(float* x, std::size_t n) { GRID_LOOP(i, n) x[i] = 0.0f; }

__global__ void embedding_scatter_kernel(const float* grad_out, const std::int64_t* ids, const std::uint8_t* mask,
                                         float scale, float* grad_wte, float* grad_wpe, int tokens, int seq, int hidden) {
  GRID_LOOP(j, static_cast<std::size_t>(hidden)) {
    for (int t = 0; t < tokens; ++t) {
      const std::size_t at = static_cast<std::size_t>(t) * hidden + j;
      const float g = mask == nullptr ? grad_out[at] : (mask[at] ? grad_out[at] * scale : 0.0f);
      grad_wte[static_cast<std::size_t>(ids[t]) * hidden + j] += g;
      grad_wpe[static_cast<std::size_t>(t % seq) * hidden + j] += g;
    }
  }
}

struct RowStats {
  double mean, rstd;
};

// The row's statistics by the block's threads (every thread gets them), in double as the CPU's.
__device__ RowStats block_row_stats(const float* x, int n, float eps) {
  double sum = 0;
  for (int j = threadIdx.x; j < n; j += blockDim.x) sum += x[j];
  const double mean = block_sum(sum) / n;
  double sq = 0;
  for (int j = threadIdx.x; j < n; j += blockDim.x) {
    const double d = x[j] - mean;
    sq += d * d;
  }
  return {mean, 1.0 / sqrt(block_sum(sq) / n + static_cast<double>(eps))};
}

// One block a row.
__global__ void layer_norm_forward_kernel(const float* x, const float* weight, const float* bias, float* y, int rows,
                                          int n, float eps) {
  for (std::size_t r = blockIdx.x; r < static_cast<std::size_t>(rows); r += gridDim.x) {
    const float* in = x + r * n;
    float* out = y + r * n;
    const RowStats st = block_row_stats(in, n, eps);
    for (int j = threadIdx.x; j < n; j += blockDim.x)
      out[j] = static_cast<float>((in[j] - st.mean) * st.rstd) * weight[j] + bias[j];
  }
}

// One block a row: its statistics into row_stats (for the column pass) and, when grad_x is set, the input gradient.
__global__ void layer_norm_backward_rows_kernel(const float* grad_y, const float* x, const float* weight, float* grad_x,
                                                bool accumulate, int rows, int n, float eps, double* row_stats) {
  for (std::size_t r = blockIdx.x; r < static_cast<std::size_t>(rows); r += gridDim.x) {
    const float* in = x + r * n;
    const float* gy = grad_y + r * n;
    const RowStats st = block_row_stats(in, n, eps);
    if (threadIdx.x == 0) {
      row_stats[2 * r] = st.mean;
      row_stats[2 * r + 1] = st.rstd;
    }
    if (grad_x == nullptr) continue;  // the same for every thread of the block
    double sum_g = 0, sum_gx = 0;
    for (int j = threadIdx.x; j < n; j += blockDim.x) {
      const double g = static_cast<double>(gy[j]) * weight[j];
      sum_g += g;
      sum_gx += g * ((in[j] - st.mean) * st.rstd);
    }
    const double mean_g = block_sum(sum_g) / n;
    const double mean_gx = block_sum(sum_gx) / n;
    float* gx = grad_x + r * n;
    for (int j = threadIdx.x; j < n; j += blockDim.x) {
      const double xhat = (in[j] - st.mean) * st.rstd;
      const auto value = static_cast<float>(st.rstd * (static_cast<double>(gy[j]) * weight[j] - mean_g - xhat * mean_gx));
      gx[j] = accumulate ? gx[j] + value : value;
    }
  }
}

// (grad_y · x̂, grad_y) of an element: its share of the weight's and the bias's gradient.
struct LayerNormParamElement {
  const float* grad_y;
  const float* x;
  const double* row_stats;
  int n;
  __device__ double2 operator()(int r, int c) const {
    const std::size_t at = static_cast<std::size_t>(r) * n + c;
    const double g = grad_y[at];
    return make_double2(g * ((x[at] - row_stats[2 * r]) * row_stats[2 * r + 1]), g);
  }
};

constexpr float kGeluC = 0.7978845608028654f;  // sqrt(2/π)
constexpr float kGeluA = 0.044715f;

__global__ void gelu_forward_kernel(const float* x, float* y, std::size_t n) {
  GRID_LOOP(i, n) {
    const float v = x[i];
    y[i] = 0.5f * v * (1.0f + tanhf(kGeluC * (v + kGeluA * v * v * v)));
  }
}

__global__ void gelu_backward_kernel(const float* x, float* grad, std::size_t n) {
  GRID_LOOP(i, n) {
    const float v = x[i];
    const float t = tanhf(kGeluC * (v + kGeluA * v * v * v));
    const float dinner = kGeluC * (1.0f + 3.0f * kGeluA * v * v);
    grad[i] *= 0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * dinner;
  }
}

// One warp a row (a row holds at most the context's scores): warps loop over rows together.
#define WARP_ROW_LOOP(r, rows)                                                                          \
  for (std::size_t r = (blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x) / 32; r < (rows); \
       r += static_cast<std::size_t>(blockDim.x) * gridDim.x / 32)

__global__ void causal_softmax_kernel(float* scores, float* copy, int rows, int seq, float scale) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  WARP_ROW_LOOP(r, static_cast<std::size_t>(rows)) {
    const int t = static_cast<int>(r % seq);
    float* row = scores + r * seq;
    float max = -INFINITY;
    for (int j = lane; j <= t; j += 32) {
      row[j] /= scale;
      max = fmaxf(max, row[j]);
    }
    max = warp_max(max);
    double sum = 0;
    for (int j = lane; j <= t; j += 32) sum += row[j] = expf(row[j] - max);
    const auto inverse = static_cast<float>(1.0 / warp_sum(sum));
    for (int j = lane; j < seq; j += 32) {
      const float p = j <= t ? row[j] * inverse : 0.0f;
      row[j] = p;
      copy[r * seq + j] = p;
    }
  }
}

__global__ void causal_softmax_backward_kernel(float* grad, const float* p, const std::uint8_t* mask, float kept_scale,
                                               float inverse_scale, int rows, int seq) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  WARP_ROW_LOOP(r, static_cast<std::size_t>(rows)) {
    const int t = static_cast<int>(r % seq);
    float* row = grad + r * seq;
    const float* prow = p + r * seq;
    const std::uint8_t* mrow = mask + r * seq;
    double dot = 0;
    for (int j = lane; j <= t; j += 32) {
      row[j] = mrow[j] ? row[j] * kept_scale : 0.0f;
      dot += static_cast<double>(row[j]) * prow[j];
    }
    const auto dotf = static_cast<float>(warp_sum(dot));
    for (int j = lane; j < seq; j += 32) row[j] = j <= t ? prow[j] * (row[j] - dotf) * inverse_scale : 0.0f;
  }
}

}  // namespace

void launch_fill_keep_mask(std::uint64_t site_key, std::uint64_t threshold, std::uint8_t* mask, std::size_t n,
                           std::size_t per_sample, std::int64_t first, std::int64_t stride, cudaStream_t stream) {
  if (n > 0 && per_sample > 0)
    fill_keep_mask_kernel<<<grid_blocks(n), kThreads, 0, stream>>>(site_key, threshold, mask, n, per_sample, first, stride);
}

void launch_apply_keep_mask(const float* x, const std::uint8_t* mask, float scale, float* out, std::size_t n,
                            cudaStream_t stream) {
  if (n > 0) apply_keep_mask_kernel<<<grid_blocks(n), kThreads, 0, stream>>>(x, mask, scale, out, n);
}

void launch_embedding_gather(const std::int64_t* ids, const float* wte, const float* wpe, float* out, int tokens,
                             int seq, int hidden, std::int64_t vocab, int* bad_id, cudaStream_t stream) {
  const std::size_t n = static_cast<std::size_t>(tokens) * hidden;
  embedding_gather_kernel<<<grid_blocks(n), kThreads, 0, stream>>>(ids, wte, wpe, out, tokens, seq, hidden, vocab, bad_id);
}

void launch_embedding_scatter(const float* grad_out, const std::int64_t* ids, const std::uint8_t* mask, float scale,
                              float* grad_wte, float* grad_wpe, int tokens, int seq, int hidden, std::size_t wte_elements,
                              std::size_t wpe_elements, cudaStream_t stream) {
  zero_kernel<<<grid_blocks(wte_elements), kThreads, 0, stream>>>(grad_wte, wte_elements);
  zero_kernel<<<grid_blocks(wpe_elements), kThreads, 0, stream>>>(grad_wpe, wpe_elements);
  embedding_scatter_kernel<<<grid_blocks(hidden), kThreads, 0, stream>>>(grad_out, ids, mask, scale, grad_wte, grad_wpe,
                                                                          tokens, seq, hidden);
}

void launch_layer_norm_forward(const float* x, const float* weight, const float* bias, float* y, int rows, int features,
                               float eps, cudaStream_t stream) {
  layer_norm_forward_kernel<<<row_blocks(rows), kThreads, 0, stream>>>(x, weight, bias, y, rows, features, eps);
}

void launch_layer_norm_backward(const float* grad_y, const float* x, const float* weight, float* grad_x,
                                bool accumulate, float* grad_weight, float* grad_bias, int rows, int features,
                                float eps, double* row_stats, cudaStream_t stream) {
  layer_norm_backward_rows_kernel<<<row_blocks(rows), kThreads, 0, stream>>>(grad_y, x, weight, grad_x, accumulate,
                                                                               rows, features, eps, row_stats);
  launch_column_sums(LayerNormParamElement{grad_y, x, row_stats, features}, rows, features, grad_weight, grad_bias,
                     stream);
}

void launch_gelu_forward(const float* x, float* y, std::size_t n, cudaStream_t stream) {
  if (n > 0) gelu_forward_kernel<<<grid_blocks(n), kThreads, 0, stream>>>(x, y, n);
}

void launch_gelu_backward(const float* x, float* grad, std::size_t n, cudaStream_t stream) {
  if (n > 0) gelu_backward_kernel<<<grid_blocks(n), kThreads, 0, stream>>>(x, grad, n);
}

namespace {
unsigned warp_row_blocks(int rows) { return grid_blocks(static_cast<std::size_t>(rows) * 32); }
}  // namespace

void launch_causal_softmax(float* scores, float* copy, int rows, int seq, float scale, cudaStream_t stream) {
  causal_softmax_kernel<<<warp_row_blocks(rows), kThreads, 0, stream>>>(scores, copy, rows, seq, scale);
}

void launch_causal_softmax_backward(float* grad, const float* probabilities, const std::uint8_t* mask, float kept_scale,
                                    float inverse_scale, int rows, int seq, cudaStream_t stream) {
  causal_softmax_backward_kernel<<<warp_row_blocks(rows), kThreads, 0, stream>>>(grad, probabilities, mask, kept_scale,
                                                                                 inverse_scale, rows, seq);
}

}  // namespace shardscope::exec::cuda
