// Dropout keep masks from a counter-based generator: element i of a mask is a pure function of (key, site, i), so a
// recomputed forward (torch.utils.checkpoint with preserve_rng_state) draws exactly the masks the first forward drew,
// and no generator state passes between ops or threads. The key holds no rank and no micro-batch, and i counts over
// the step's whole global batch, sample by sample (whole_batch_element): a sample's mask is the same whichever rank
// or micro-batch runs it, so data-parallel and pipeline runs with dropout train as one device on the whole batch
// does. (PyTorch itself promises no such thing: each process draws from its own generator state.) Standard library
// only.
#pragma once
#include "exec/exec_layer.h"
#include <cstdint>
#include <span>

#include "exec/data/splitmix64.h"

namespace shardscope::exec {

// The dropout sites of one layer pass: the embedding's, then a GPT block's attn_dropout and its two resid_dropouts.
inline constexpr int kEmbeddingDropoutSite = 0, kAttentionDropoutSite = 1, kResidualDropoutSite1 = 2,
                     kResidualDropoutSite2 = 3;

// One key per layer and step: the run's seed, the step and the layer (its global index in the model).
std::uint64_t dropout_key(std::uint64_t seed, int step, int layer);

// Which samples of the step's global batch a pass holds: its sample s is global sample first + stride · s.
// DistributedSampler deals rank r of w the samples r, r + w, r + 2w, … (exec/data/batch_source.h), and a
// micro-batch takes consecutive ones of a rank's.
struct GlobalSamples {
  std::int64_t first = 0;
  std::int64_t stride = 1;
};

// Where element i of a pass's sample-major mask (per_sample elements a sample) lies in the site's mask over the
// whole global batch.
inline std::int64_t whole_batch_element(GlobalSamples samples, std::int64_t i, std::int64_t per_sample) {
  return (samples.first + samples.stride * (i / per_sample)) * per_sample + i % per_sample;
}

// A pass's mask of `rows` samples (mask.size() / rows elements each), every element drawn at its whole-batch place.
// A tensor-parallel rank's share (part `part` of `parts` equal slices of each sample's whole mask: its attention
// heads) is drawn where those elements lie in the whole layer's mask, so that its heads drop what `single`'s drop.
void fill_pass_keep_mask(std::uint64_t key, int site, double p, GlobalSamples samples, int rows, std::span<std::uint8_t> mask,
                         int part = 0, int parts = 1);

// Elements [first, first + mask.size()) of a pass's sample-major mask (per_sample elements a sample), each drawn at
// its whole-batch place: a sequence-parallel rank's contiguous share of the pass's tokens.
void fill_pass_keep_mask_range(std::uint64_t key, int site, double p, GlobalSamples samples, std::int64_t per_sample,
                               std::int64_t first, std::span<std::uint8_t> mask);

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
