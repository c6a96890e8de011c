// One GPT-2 block (transformers' GPT2Block with eager attention: ln_1, c_attn, causal softmax attention with
// attn_dropout, c_proj, resid_dropout, residual; ln_2, c_fc, GELU tanh approximation ("gelu_new"), c_proj,
// resid_dropout, residual) on the CPU, fp32, forward and backward, keeping exactly the tensors
// model/gpt_block_layout.h lays out in the plan's two saved buffers. Backward needs no other memory: it reuses the
// saved tensors it has finished with as scratch (they are freed after it) and the gradient of its input.
// No dependency on plans or allocators.
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

// saved / attention: the layout's bytes. output empty: stop once what backward needs is in place (recomputation).
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
