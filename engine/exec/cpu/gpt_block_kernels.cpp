// GPT-2 block forward and backward over the saved-buffer layout, whole or in its tensor-parallel parts, from the
// regions of exec/cpu/gpt_block_regions.h.
#include "exec/cpu/gpt_block_kernels.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "exec/cpu/gpt_block_regions.h"
#include "exec/cpu/layer_norm_kernels.h"
#include "exec/cpu/span_checks.h"
#include "exec/shared_kernels/dropout_mask.h"

namespace shardscope::exec::cpu {

using namespace gpt_block;

namespace {

constexpr float kGeluC = 0.7978845608028654f;  // sqrt(2/π)
constexpr float kGeluA = 0.044715f;

// gelu_new, 0.5·v·(1 + tanh(u)) with u = √(2/π)(v + 0.044715v³), is computed as v·σ(2u), since 1 + tanh(u) = 2σ(2u):
// the same function within an ulp or two, but one expf a value where tanhf's cost depends on |u| (glibc 2.36 on a
// Xeon: 17 ns an element at GPT-2's initial scale, 27 ns at |u| near 1; expf 7.5 ns at any scale). A kernel whose
// speed follows the values times differently in calibration and in a run (our GPT-2 block ran 22 % faster in a
// step than calibrate timed it on uniform [-1, 1) values).
float sigmoid_of_twice(float u) { return 1.0f / (1.0f + std::exp(-2.0f * u)); }
float gelu_inner(float v) { return kGeluC * (v + kGeluA * v * v * v); }

Views checked_views(const GptBlockShape& shape, const GptBlockDims& d, const GptBlockParams& p, std::span<std::byte> saved,
                    std::span<std::byte> attention) {
  if (shape.sequence_parallel)
    throw std::invalid_argument("gpt_block: a sequence-parallel shard runs gpt_block_sequence_parallel.h's parts");
  check_params(d, p);
  return views_of(shape, saved, attention);
}

void residual_dropout(const GptBlockShape& shape, int site, std::span<float> x, std::span<std::uint8_t> mask) {
  fill_residual_mask(shape, site, mask);
  apply_keep_mask(x, mask, shape.resid_dropout);
}

}  // namespace

void gelu_tanh_forward(std::span<const float> x, std::span<float> y) {
  for (std::size_t k = 0; k < x.size(); ++k) {
    const float v = x[k];
    y[k] = v * sigmoid_of_twice(gelu_inner(v));
  }
}

// d/dv: 0.5(1 + t) + 0.5·v·(1 − t²)·u', and with s = σ(2u): 1 + t = 2s, 1 − t² = 4s(1 − s).
void gelu_tanh_backward(std::span<const float> x, std::span<float> grad) {
  for (std::size_t k = 0; k < x.size(); ++k) {
    const float v = x[k];
    const float s = sigmoid_of_twice(gelu_inner(v));
    const float dinner = kGeluC * (1.0f + 3.0f * kGeluA * v * v);
    grad[k] *= s + 2.0f * v * s * (1.0f - s) * dinner;
  }
}

void gpt_block_attention_forward(const GptBlockShape& shape, std::span<const float> input, const GptBlockParams& p,
                                 std::span<std::byte> saved, std::span<std::byte> attention, bool adds_replicated) {
  const GptBlockDims d = gpt_block_dims(shape);
  const Views v = checked_views(shape, d, p, saved, attention);
  const std::size_t nh = d.nh;
  require_size(input, nh, "gpt_block_forward", "input");
  layer_norm_forward(LayerNormShape{d.n, d.h, shape.eps}, input, p[Ln1W], p[Ln1B], span_of(v.ln1, nh));
  attention_region_forward(shape, d, v, v.ln1, p, v.resid1, adds_replicated);
  residual_dropout(shape, kResidualDropoutSite1, span_of(v.resid1, nh), span_of(v.attn_mask, nh));
  if (adds_replicated)
    for (std::size_t k = 0; k < nh; ++k) v.resid1[k] += input[k];
}

void gpt_block_mlp_forward(const GptBlockShape& shape, const GptBlockParams& p, std::span<std::byte> saved,
                           std::span<std::byte> attention, std::span<float> output, bool adds_replicated) {
  const GptBlockDims d = gpt_block_dims(shape);
  const Views v = checked_views(shape, d, p, saved, attention);
  const std::size_t nh = d.nh;
  if (!output.empty()) require_size(output, nh, "gpt_block_forward", "output");
  layer_norm_forward(LayerNormShape{d.n, d.h, shape.eps}, span_of(v.resid1, nh), p[Ln2W], p[Ln2B], span_of(v.ln2, nh));
  if (output.empty()) {  // recomputation: only the mask is still missing from what backward reads
    mlp_region_forward(d, v, v.ln2, p, nullptr, false);
    fill_residual_mask(shape, kResidualDropoutSite2, span_of(v.mlp_mask, nh));
    return;
  }
  mlp_region_forward(d, v, v.ln2, p, output.data(), adds_replicated);
  residual_dropout(shape, kResidualDropoutSite2, output, span_of(v.mlp_mask, nh));
  if (adds_replicated)
    for (std::size_t k = 0; k < nh; ++k) output[k] += v.resid1[k];
}

void gpt_block_forward(const GptBlockShape& shape, std::span<const float> input, const GptBlockParams& p,
                       std::span<std::byte> saved, std::span<std::byte> attention, std::span<float> output) {
  if (shape.tp != 1) throw std::invalid_argument("gpt_block_forward: a tensor-parallel shard runs in two parts");
  gpt_block_attention_forward(shape, input, p, saved, attention, true);
  gpt_block_mlp_forward(shape, p, saved, attention, output, true);
}

void gpt_attention_recompute(const GptBlockShape& shape, std::span<const std::byte> saved, std::span<std::byte> attention) {
  const GptBlockDims d = gpt_block_dims(shape);
  // Only the attention buffer is written; the saved one is read (Q and K).
  attention_probabilities(shape, d, views_of(shape, saved, attention));
}

namespace {

struct BackwardPass {
  GptBlockDims d;
  Views v;
  LayerNormShape norm;
};

BackwardPass backward_pass(const GptBlockShape& shape, const GptBlockParams& p, std::span<std::byte> saved,
                           std::span<std::byte> attention, std::span<float> grad_input, const GptBlockGrads& g) {
  const GptBlockDims d = gpt_block_dims(shape);
  const Views v = checked_views(shape, d, p, saved, attention);
  for (int k = 0; k < 12; ++k)
    require_size(g[static_cast<std::size_t>(k)], p[static_cast<std::size_t>(k)].size(), "gpt_block_backward", "gradient");
  require_size(grad_input, d.nh, "gpt_block_backward", "grad_input");
  if (2 * d.i < 3 * d.w)
    throw std::invalid_argument("gpt_block_backward: the MLP width must be at least 1.5 × hidden (its two saved "
                                "tensors hold the Q, K, V gradient)");
  return {d, v, LayerNormShape{d.n, d.h, shape.eps}};
}

}  // namespace

void gpt_block_mlp_backward(const GptBlockShape& shape, std::span<const float> grad_out, const GptBlockParams& p,
                            std::span<std::byte> saved, std::span<std::byte> attention, std::span<float> grad_input,
                            const GptBlockGrads& g) {
  const auto [d, v, norm] = backward_pass(shape, p, saved, attention, grad_input, g);
  require_size(grad_out, d.nh, "gpt_block_backward", "grad_out");
  float* dx = grad_input.data();
  // d(mlp.c_proj output) through resid_dropout, kept in grad_input until the attention part's residual path.
  apply_keep_mask(grad_out, v.mlp_mask, shape.resid_dropout, dx);
  mlp_region_backward(d, v, p, g, dx, v.ln2, v.ln2);  // d(ln_2 output) over ln_2's output
}

void gpt_block_attention_backward(const GptBlockShape& shape, std::span<const float> grad_out, const GptBlockParams& p,
                                  std::span<std::byte> saved, std::span<std::byte> attention,
                                  std::span<float> grad_input, const GptBlockGrads& g) {
  const auto [d, v, norm] = backward_pass(shape, p, saved, attention, grad_input, g);
  require_size(grad_out, d.nh, "gpt_block_backward", "grad_out");
  const std::size_t nh = d.nh;
  std::copy(grad_out.begin(), grad_out.end(), grad_input.begin());  // the residual path, then ln_2's share added
  layer_norm_backward(norm, span_of(v.ln2, nh), span_of(v.resid1, nh), p[Ln2W], grad_input, true, g[Ln2W], g[Ln2B]);
  // d(attn.c_proj output) through resid_dropout, over residual_1; then d(ln_1 output) over it.
  apply_keep_mask(grad_input, v.attn_mask, shape.resid_dropout, v.resid1);
  attention_region_backward(shape, d, v, p, g, v.resid1, v.ln1, v.resid1);
}

void gpt_block_input_norm_backward(const GptBlockShape& shape, std::span<const float> input, const GptBlockParams& p,
                                   std::span<std::byte> saved, std::span<std::byte> attention,
                                   std::span<float> grad_input, const GptBlockGrads& g) {
  const auto [d, v, norm] = backward_pass(shape, p, saved, attention, grad_input, g);
  require_size(input, d.nh, "gpt_block_backward", "input");
  layer_norm_backward(norm, span_of(v.resid1, d.nh), input, p[Ln1W], grad_input, true, g[Ln1W], g[Ln1B]);
}

void gpt_block_backward(const GptBlockShape& shape, std::span<const float> grad_out, std::span<const float> input,
                        const GptBlockParams& p, std::span<std::byte> saved, std::span<std::byte> attention,
                        std::span<float> grad_input, const GptBlockGrads& g) {
  if (shape.tp != 1) throw std::invalid_argument("gpt_block_backward: a tensor-parallel shard runs in three parts");
  gpt_block_mlp_backward(shape, grad_out, p, saved, attention, grad_input, g);
  gpt_block_attention_backward(shape, grad_out, p, saved, attention, grad_input, g);
  gpt_block_input_norm_backward(shape, input, p, saved, attention, grad_input, g);
}

}  // namespace shardscope::exec::cpu
