// The CUDA kernels of the GPT-2 ops (embedding, LayerNorm, causal softmax attention, GELU, dropout) that are not
// GEMMs, as host functions launching on a stream. Each mirrors its CPU kernel in exec/cpu/ operation for operation
// (statistics and row sums in double where the CPU sums in double, one thread owning each such sum in the CPU's
// order), so CPU and GPU runs of one plan can be compared; compiled with --fmad=false for the same reason.
// CUDA backend only.
#pragma once
#include "exec/exec_layer.h"
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace shardscope::exec::cuda {

// Dropout keep masks: exec/shared_kernels/dropout_mask.h's generator (splitmix64 of site_key + e, 24-bit uniforms
// against `threshold` = p·2^24), e being element i's place in the whole batch's mask (whole_batch_element: sample s =
// i / per_sample of the pass is global sample first + stride · s); site_key = splitmix64(key + site ·
// 0x632be59bd9b4e019) computed on the host.
void launch_fill_keep_mask(std::uint64_t site_key, std::uint64_t threshold, std::uint8_t* mask, std::size_t n,
                           std::size_t per_sample, std::int64_t first, std::int64_t stride, cudaStream_t stream);
// out[i] = mask[i] ? x[i] · scale : 0 (out may be x).
void launch_apply_keep_mask(const float* x, const std::uint8_t* mask, float scale, float* out, std::size_t n,
                            cudaStream_t stream);

// out[t, j] = wte[ids[t], j] + wpe[t mod seq, j]; *bad_id set to 1 where an id lies outside [0, vocab) (its row
// is left as it was).
void launch_embedding_gather(const std::int64_t* ids, const float* wte, const float* wpe, float* out, int tokens,
                             int seq, int hidden, std::int64_t vocab, int* bad_id, cudaStream_t stream);
// grad_wte, grad_wpe zeroed, then for each token in order: += (mask ? grad · scale : 0) at its id and position;
// one thread per column, so every sum runs in the CPU's token order. mask may be null (no dropout).
void launch_embedding_scatter(const float* grad_out, const std::int64_t* ids, const std::uint8_t* mask, float scale,
                              float* grad_wte, float* grad_wpe, int tokens, int seq, int hidden, std::size_t wte_elements,
                              std::size_t wpe_elements, cudaStream_t stream);

// LayerNorm over rows of `features`, statistics in double (exec/cpu/layer_norm_kernels.cpp).
void launch_layer_norm_forward(const float* x, const float* weight, const float* bias, float* y, int rows, int features,
                               float eps, cudaStream_t stream);
// grad_x written (or added to, `accumulate`) when not null; grad_weight / grad_bias written, summed over rows in
// double (column_sums.cuh). row_stats: device scratch of 2 · rows doubles.
void launch_layer_norm_backward(const float* grad_y, const float* x, const float* weight, float* grad_x,
                                bool accumulate, float* grad_weight, float* grad_bias, int rows, int features,
                                float eps, double* row_stats, cudaStream_t stream);

// GELU, tanh approximation (transformers' NewGELUActivation): y = gelu(x); grad *= gelu'(x).
void launch_gelu_forward(const float* x, float* y, std::size_t n, cudaStream_t stream);
void launch_gelu_backward(const float* x, float* grad, std::size_t n, cudaStream_t stream);

// Each of `rows` rows of `seq` scores (row t of a seq × seq block: query t): / scale, causal softmax over j ≤ t
// (Σ exp in double), zeros past t, and a copy into `copy`.
void launch_causal_softmax(float* scores, float* copy, int rows, int seq, float scale, cudaStream_t stream);
// Softmax backward in place on d(dropped probabilities): dropout (mask, kept_scale), then p·(g − Σ g·p) (double
// sum) times inverse_scale, zeros past t.
void launch_causal_softmax_backward(float* grad, const float* probabilities, const std::uint8_t* mask, float kept_scale,
                                    float inverse_scale, int rows, int seq, cudaStream_t stream);

}  // namespace shardscope::exec::cuda
