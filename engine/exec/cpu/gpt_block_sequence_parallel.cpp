// The sequence-parallel parts of a GPT-2 block, from the regions of exec/cpu/gpt_block_regions.h; norms, residuals
// and residual dropout on this rank's tokens (GptBlockDims::local).
#include "exec/cpu/gpt_block_sequence_parallel.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "exec/cpu/bias_kernels.h"
#include "exec/cpu/gpt_block_regions.h"
#include "exec/cpu/layer_norm_kernels.h"
#include "exec/cpu/span_checks.h"
#include "exec/shared_kernels/dropout_mask.h"

namespace shardscope::exec::cpu {

using namespace gpt_block;

namespace {

struct Pass {
  GptBlockDims d;
  Views v;
  std::size_t local;  // this rank's tokens × h
  LayerNormShape norm;  // over this rank's tokens
};

Pass pass_of(const GptBlockShape& shape, const GptBlockParams& p, std::span<std::byte> saved, std::span<std::byte> attention,
             const char* kernel) {
  if (!shape.sequence_parallel) throw std::invalid_argument(std::string(kernel) + ": the shape is not sequence-parallel");
  const GptBlockDims d = gpt_block_dims(shape);
  check_params(d, p);
  const std::size_t local = static_cast<std::size_t>(d.local) * static_cast<std::size_t>(d.h);
  return {d, views_of(shape, saved, attention), local, LayerNormShape{d.local, d.h, shape.eps}};
}

void check_grads(const GptBlockParams& p, const GptBlockGrads& g, const char* kernel) {
  for (std::size_t k = 0; k < 12; ++k) require_size(g[k], p[k].size(), kernel, "gradient");
}

}  // namespace

void gpt_block_sp_attention_forward(const GptBlockShape& shape, std::span<const float> gathered, const GptBlockParams& p,
                                    std::span<std::byte> saved, std::span<std::byte> attention, std::span<float> partial) {
  const Pass s = pass_of(shape, p, saved, attention, "gpt_block_sp_attention_forward");
  require_size(gathered, s.d.nh, "gpt_block_sp_attention_forward", "gathered");
  require_size(partial, s.d.nh, "gpt_block_sp_attention_forward", "partial");
  attention_region_forward(shape, s.d, s.v, gathered.data(), p, partial.data(), /*adds_bias=*/false);
}

void gpt_block_sp_mlp_forward(const GptBlockShape& shape, std::span<const float> gathered, const GptBlockParams& p,
                              std::span<std::byte> saved, std::span<std::byte> attention, std::span<float> partial) {
  const Pass s = pass_of(shape, p, saved, attention, "gpt_block_sp_mlp_forward");
  require_size(gathered, s.d.nh, "gpt_block_sp_mlp_forward", "gathered");
  if (partial.empty()) {  // recomputation: only the mask is still missing from what backward reads
    mlp_region_forward(s.d, s.v, gathered.data(), p, nullptr, false);
    fill_residual_mask(shape, kResidualDropoutSite2, span_of(s.v.mlp_mask, s.local));
    return;
  }
  require_size(partial, s.d.nh, "gpt_block_sp_mlp_forward", "partial");
  mlp_region_forward(s.d, s.v, gathered.data(), p, partial.data(), /*adds_bias=*/false);
}

void gpt_block_sp_residual_norm(const GptBlockShape& shape, std::span<const float> input, const GptBlockParams& p,
                                std::span<std::byte> saved, std::span<std::byte> attention) {
  const Pass s = pass_of(shape, p, saved, attention, "gpt_block_sp_residual_norm");
  require_size(input, s.local, "gpt_block_sp_residual_norm", "input");
  const auto resid1 = span_of(s.v.resid1, s.local);
  bias_add(resid1, p[ProjB], resid1);
  fill_residual_mask(shape, kResidualDropoutSite1, span_of(s.v.attn_mask, s.local));
  apply_keep_mask(resid1, span_of(s.v.attn_mask, s.local), shape.resid_dropout);
  for (std::size_t k = 0; k < s.local; ++k) resid1[k] += input[k];
  layer_norm_forward(s.norm, resid1, p[Ln2W], p[Ln2B], span_of(s.v.ln2, s.local));
}

void gpt_block_sp_residual(const GptBlockShape& shape, const GptBlockParams& p, std::span<std::byte> saved,
                           std::span<std::byte> attention, std::span<float> output) {
  const Pass s = pass_of(shape, p, saved, attention, "gpt_block_sp_residual");
  require_size(output, s.local, "gpt_block_sp_residual", "output");
  bias_add(output, p[MlpProjB], output);
  fill_residual_mask(shape, kResidualDropoutSite2, span_of(s.v.mlp_mask, s.local));
  apply_keep_mask(output, span_of(s.v.mlp_mask, s.local), shape.resid_dropout);
  for (std::size_t k = 0; k < s.local; ++k) output[k] += s.v.resid1[k];
}

void gpt_block_sp_mlp_dropout_backward(const GptBlockShape& shape, std::span<const float> grad_out,
                                       std::span<std::byte> saved, std::span<std::byte> attention,
                                       std::span<float> grad_input, std::span<float> grad_bias) {
  if (!shape.sequence_parallel)
    throw std::invalid_argument("gpt_block_sp_mlp_dropout_backward: the shape is not sequence-parallel");
  const GptBlockDims d = gpt_block_dims(shape);
  const Views v = views_of(shape, saved, attention);
  const std::size_t local = static_cast<std::size_t>(d.local) * static_cast<std::size_t>(d.h);
  require_size(grad_out, local, "gpt_block_sp_mlp_dropout_backward", "grad_out");
  require_size(grad_input, local, "gpt_block_sp_mlp_dropout_backward", "grad_input");
  apply_keep_mask(grad_out, v.mlp_mask, shape.resid_dropout, grad_input.data());
  // mlp.c_proj's bias was added to this rank's tokens after the reduce-scatter: its gradient is their sum, partial
  // (the plan all-reduces it over the group).
  require_size(grad_bias, static_cast<std::size_t>(d.h), "gpt_block_sp_mlp_dropout_backward", "grad_bias");
  bias_grad_of(d.local, d.h, grad_input.data(), grad_bias);
}

void gpt_block_sp_mlp_backward(const GptBlockShape& shape, std::span<const float> gathered, const GptBlockParams& p,
                               std::span<std::byte> saved, std::span<std::byte> attention, std::span<float> partial,
                               const GptBlockGrads& g) {
  const Pass s = pass_of(shape, p, saved, attention, "gpt_block_sp_mlp_backward");
  check_grads(p, g, "gpt_block_sp_mlp_backward");
  require_size(gathered, s.d.nh, "gpt_block_sp_mlp_backward", "gathered");
  require_size(partial, s.d.nh, "gpt_block_sp_mlp_backward", "partial");
  mlp_region_backward(s.d, s.v, p, g, partial.data(), gathered.data(), partial.data(), /*bias_grad=*/false);
}

void gpt_block_sp_attention_dropout_backward(const GptBlockShape& shape, std::span<const float> grad_out,
                                             const GptBlockParams& p, std::span<std::byte> saved,
                                             std::span<std::byte> attention, std::span<float> grad_input,
                                             const GptBlockGrads& g) {
  const Pass s = pass_of(shape, p, saved, attention, "gpt_block_sp_attention_dropout_backward");
  check_grads(p, g, "gpt_block_sp_attention_dropout_backward");
  require_size(grad_out, s.local, "gpt_block_sp_attention_dropout_backward", "grad_out");
  require_size(grad_input, s.local, "gpt_block_sp_attention_dropout_backward", "grad_input");
  std::copy(grad_out.begin(), grad_out.end(), grad_input.begin());  // the residual path, then ln_2's share added
  layer_norm_backward(s.norm, span_of(s.v.ln2, s.local), span_of(s.v.resid1, s.local), p[Ln2W], grad_input, true,
                      g[Ln2W], g[Ln2B]);
  apply_keep_mask(grad_input, s.v.attn_mask, shape.resid_dropout, s.v.resid1);
  bias_grad_of(s.d.local, s.d.h, s.v.resid1, g[ProjB]);  // attn.c_proj's bias, as mlp.c_proj's
}

void gpt_block_sp_attention_backward(const GptBlockShape& shape, std::span<const float> gathered, const GptBlockParams& p,
                                     std::span<std::byte> saved, std::span<std::byte> attention,
                                     std::span<float> partial, const GptBlockGrads& g) {
  const Pass s = pass_of(shape, p, saved, attention, "gpt_block_sp_attention_backward");
  check_grads(p, g, "gpt_block_sp_attention_backward");
  require_size(gathered, s.d.nh, "gpt_block_sp_attention_backward", "gathered");
  require_size(partial, s.d.nh, "gpt_block_sp_attention_backward", "partial");
  if (2 * s.d.i < 3 * s.d.w)
    throw std::invalid_argument("gpt_block_sp_attention_backward: the MLP width must be at least 1.5 × hidden (its two "
                                "saved tensors hold the Q, K, V gradient)");
  attention_region_backward(shape, s.d, s.v, p, g, partial.data(), gathered.data(), partial.data(), /*bias_grad=*/false);
}

void gpt_block_sp_input_norm_backward(const GptBlockShape& shape, std::span<const float> input, const GptBlockParams& p,
                                      std::span<std::byte> saved, std::span<std::byte> attention,
                                      std::span<float> grad_input, const GptBlockGrads& g) {
  const Pass s = pass_of(shape, p, saved, attention, "gpt_block_sp_input_norm_backward");
  check_grads(p, g, "gpt_block_sp_input_norm_backward");
  require_size(input, s.local, "gpt_block_sp_input_norm_backward", "input");
  require_size(grad_input, s.local, "gpt_block_sp_input_norm_backward", "grad_input");
  layer_norm_backward(s.norm, span_of(s.v.resid1, s.local), input, p[Ln1W], grad_input, true, g[Ln1W], g[Ln1B]);
}

}  // namespace shardscope::exec::cpu
