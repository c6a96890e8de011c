// The pieces a GPT-2 block's CPU kernels are made of (exec/cpu/gpt_block_kernels.h for the whole block and its
// tensor-parallel parts, gpt_block_sequence_parallel.h for its sequence-parallel parts): typed views of the saved
// buffers' layout, the attention and MLP regions forward and backward (from their input, the first norm's or second
// norm's output, to their row-parallel layer's partial output, and back), and the residual dropout masks. Internal
// to exec/cpu.
#pragma once
#include <cstdint>
#include <span>

#include "exec/cpu/gpt_block_kernels.h"
#include "model/gpt_block_layout.h"

namespace shardscope::exec::cpu::gpt_block {

enum Param { Ln1W, Ln1B, AttnW, AttnB, ProjW, ProjB, Ln2W, Ln2B, FcW, FcB, MlpProjW, MlpProjB };

// Typed views of the layout's tensors.
struct Views {
  float *ln1 = nullptr, *qkv = nullptr, *attn_out = nullptr, *resid1 = nullptr, *ln2 = nullptr, *fc = nullptr,
        *gelu = nullptr, *probs = nullptr, *dropped = nullptr;
  std::uint8_t *attn_mask = nullptr, *mlp_mask = nullptr, *prob_mask = nullptr;
};

GptBlockLayout layout_of(const GptBlockShape& shape);
// Throws std::invalid_argument when the buffers are not the layout's sizes. The views of a const buffer are only
// read by the caller (recomputation reads the saved one).
Views views_of(const GptBlockShape& shape, std::span<const std::byte> saved, std::span<const std::byte> attention);

// Checks the parameters' sizes (the rank's shard under tensor parallelism).
void check_params(const GptBlockDims& d, const GptBlockParams& p);

inline std::span<float> span_of(float* p, std::size_t n) { return {p, n}; }
inline std::span<std::uint8_t> span_of(std::uint8_t* p, std::size_t n) { return {p, n}; }

// The residual dropout's keep mask at `site` for the tokens this pass holds (all of them; under sequence parallelism
// the rank's contiguous share of the batch's tokens, drawn where they lie in the whole pass's mask).
void fill_residual_mask(const GptBlockShape& shape, int site, std::span<std::uint8_t> mask);

// Attention region: x (tokens × h, the first norm's output) → Q, K, V, the attention core and its output (saved),
// then attn.c_proj's product into `partial` (tokens × h), with its bias where `adds_bias`.
void attention_region_forward(const GptBlockShape& shape, const GptBlockDims& d, const Views& v, const float* x,
                              const GptBlockParams& p, float* partial, bool adds_bias);
// MLP region: x (the second norm's output) → c_fc and GELU (saved), then mlp.c_proj's product into `partial` with its
// bias where `adds_bias`; partial null: stop after GELU (recomputation).
void mlp_region_forward(const GptBlockDims& d, const Views& v, const float* x, const GptBlockParams& p, float* partial,
                        bool adds_bias);
// MLP region backward: from d_out (d of mlp.c_proj's output, tokens × h) and x (the region's input) to the gradients
// of mlp.c_proj and c_fc and the partial d(x) into d_x (tokens × h; may be d_out or x: written last). Without
// `bias_grad` mlp.c_proj's bias gradient is left alone (sequence parallelism takes it from this rank's tokens).
void mlp_region_backward(const GptBlockDims& d, const Views& v, const GptBlockParams& p, const GptBlockGrads& g,
                         const float* d_out, const float* x, float* d_x, bool bias_grad = true);
// Attention region backward: from d_out (d of attn.c_proj's output) and x to the gradients of attn.c_proj and c_attn
// and the partial d(x) into d_x (may be d_out or x: written last). Uses the layout's ln_2 output and MLP tensors
// as scratch (tokens × w and tokens × 3w). `bias_grad` as the MLP's.
void attention_region_backward(const GptBlockShape& shape, const GptBlockDims& d, const Views& v, const GptBlockParams& p,
                               const GptBlockGrads& g, const float* d_out, const float* x, float* d_x,
                               bool bias_grad = true);

// grad_bias = Σ rows dy (written, not accumulated): `rows` rows of `width` (bias_kernels.h's bias_backward).
void bias_grad_of(int rows, int width, const float* dy, std::span<float> grad_bias);

// The attention core again (scores, softmax, dropout mask, dropped probabilities) from the saved Q and K.
void attention_probabilities(const GptBlockShape& shape, const GptBlockDims& d, const Views& v);

}  // namespace shardscope::exec::cpu::gpt_block
