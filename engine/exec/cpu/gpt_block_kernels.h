// One GPT-2 block (transformers' GPT2Block with eager attention: ln_1, c_attn, causal softmax attention with
// attn_dropout, c_proj, resid_dropout, residual; ln_2, c_fc, GELU tanh approximation ("gelu_new"), c_proj,
// resid_dropout, residual) on the CPU, fp32, forward and backward, keeping exactly the tensors
// model/gpt_block_layout.h lays out in the plan's two saved buffers. Backward needs no other memory: it reuses the
// saved tensors it has finished with as scratch (they are freed after it) and the gradient of its input.
// Under tensor parallelism (GptBlockShape::tp) a rank runs its shard (Megatron-LM's split: its heads, its MLP
// columns) in parts, with the plan's all-reduces between them: the forward as its attention part and its MLP part,
// each ending on the rank's partial product of a row-parallel c_proj (the all-reduce sums them); the backward as
// its MLP part, its attention part and the first norm's backward, the first two ending on a partial gradient of a
// column-parallel input. The whole block is the same parts at tp 1, in the same order. No dependency on plans or
// allocators.
#pragma once
#include "exec/exec_layer.h"
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "exec/shared_kernels/gpt_block_shape.h"
#include "model/gpt_block_layout.h"

namespace shardscope::exec::cpu {

// The block's 12 parameters in state_dict order (ln_1.weight … mlp.c_proj.bias); Conv1D weights in×out.
using GptBlockParams = std::array<std::span<const float>, 12>;
using GptBlockGrads = std::array<std::span<float>, 12>;

// The forward's attention part: ln_1 … attn.c_proj, its resid_dropout and residual into the layout's residual_1.
// `adds_replicated`: this rank adds c_proj's bias and the residual (tensor-parallel rank 0, as the plan's all-reduce
// then sums them once; dropout is applied to each partial product, its mask the same on every rank). The MLP part
// likewise from residual_1 (all-reduced by then) into `output`; output empty: stop once what backward needs is in
// place (recomputation).
void gpt_block_attention_forward(const GptBlockShape& shape, std::span<const float> input, const GptBlockParams& params,
                                 std::span<std::byte> saved, std::span<std::byte> attention, bool adds_replicated);
void gpt_block_mlp_forward(const GptBlockShape& shape, const GptBlockParams& params, std::span<std::byte> saved,
                           std::span<std::byte> attention, std::span<float> output, bool adds_replicated);

// The backward's parts. MLP: from grad_out to the rank's partial d(ln_2 output), left in the layout's ln_2_output.
// Attention: from that (all-reduced) and grad_out to d(residual_1) in grad_input and the rank's partial d(ln_1
// output) in residual_1. Input norm: ln_1's backward from that (all-reduced), added into grad_input. Each writes the
// gradients of the parameters it reaches (the two c_proj biases from the whole gradient, alike on every rank).
void gpt_block_mlp_backward(const GptBlockShape& shape, std::span<const float> grad_out, const GptBlockParams& params,
                            std::span<std::byte> saved, std::span<std::byte> attention, std::span<float> grad_input,
                            const GptBlockGrads& grads);
void gpt_block_attention_backward(const GptBlockShape& shape, std::span<const float> grad_out, const GptBlockParams& params,
                                  std::span<std::byte> saved, std::span<std::byte> attention,
                                  std::span<float> grad_input, const GptBlockGrads& grads);
void gpt_block_input_norm_backward(const GptBlockShape& shape, std::span<const float> input, const GptBlockParams& params,
                                   std::span<std::byte> saved, std::span<std::byte> attention,
                                   std::span<float> grad_input, const GptBlockGrads& grads);

// The whole block (tp 1). saved / attention: the layout's bytes. output empty: stop once what backward needs is in
// place (recomputation).
void gpt_block_forward(const GptBlockShape& shape, std::span<const float> input, const GptBlockParams& params,
                       std::span<std::byte> saved, std::span<std::byte> attention, std::span<float> output);

// Selective recomputation: probabilities, dropout mask and dropped probabilities again from the saved Q and K.
void gpt_attention_recompute(const GptBlockShape& shape, std::span<const std::byte> saved, std::span<std::byte> attention);

// grad_input and grads written; saved and attention are overwritten (scratch).
void gpt_block_backward(const GptBlockShape& shape, std::span<const float> grad_out, std::span<const float> input,
                        const GptBlockParams& params, std::span<std::byte> saved, std::span<std::byte> attention,
                        std::span<float> grad_input, const GptBlockGrads& grads);

// GELU's tanh approximation, elementwise (transformers' NewGELUActivation), and its derivative times grad.
void gelu_tanh_forward(std::span<const float> x, std::span<float> y);
void gelu_tanh_backward(std::span<const float> x, std::span<float> grad_in_out);

}  // namespace shardscope::exec::cpu
