// Dropout keep masks from a counter-based generator: element i of a mask is a pure function of (key, site, i), so a
// recomputed forward (torch.utils.checkpoint with preserve_rng_state) draws exactly the masks the first forward drew,
// and no generator state passes between ops or threads. Standard library only.
#pragma once
#include "exec/exec_layer.h"
#include <cstdint>
#include <span>

#include "exec/data/splitmix64.h"

namespace shardscope::exec {

// The dropout sites of one layer pass: the embedding's, then a GPT block's attn_dropout and its two resid_dropouts.
inline constexpr int kEmbeddingDropoutSite = 0, kAttentionDropoutSite = 1, kResidualDropoutSite1 = 2,
                     kResidualDropoutSite2 = 3;

// One key per executed layer pass: the run's seed, the rank, the step, the micro-batch and the layer.
std::uint64_t dropout_key(std::uint64_t seed, int rank, int step, int micro_batch, int layer);

// mask[i] = 1 with probability 1 − p (kept), else 0, for elements first + i of the site's mask (torch's
// bernoulli_(1 − p) in native_dropout). p = 0 keeps everything.
void fill_keep_mask(std::uint64_t key, int site, double p, std::int64_t first, std::span<std::uint8_t> mask);

// The mask's generator, shared with the CUDA backend's (exec/cuda/transformer_kernels.h): element i of a site's
// mask is kept when splitmix64(site key + i)'s top 24 bits reach p's threshold on the 2^-24 grid.
inline std::uint64_t keep_mask_site_key(std::uint64_t key, int site) {
  return splitmix64(key + static_cast<std::uint64_t>(site) * 0x632be59bd9b4e019ull);
}
inline std::uint64_t keep_mask_threshold(double p) { return static_cast<std::uint64_t>(p * 16777216.0); }

// 1 / (1 − p), the factor kept elements are scaled by (1 when p = 0).
inline float keep_scale(double p) { return p > 0 ? static_cast<float>(1.0 / (1.0 - p)) : 1.0f; }

// x[i] = x[i] · mask[i] / (1 − p): native_dropout's output from its mask (in place).
void apply_keep_mask(std::span<float> x, std::span<const std::uint8_t> mask, double p);
// out[i] = x[i] · mask[i] / (1 − p) (native_dropout_backward on a gradient); out may be x.
void apply_keep_mask(std::span<const float> x, const std::uint8_t* mask, double p, float* out);

}  // namespace shardscope::exec
