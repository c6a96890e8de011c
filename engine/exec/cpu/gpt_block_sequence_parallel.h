// A GPT-2 block's tensor-parallel shard under sequence parallelism on the CPU, fp32 (Megatron-LM's layer with
// --sequence-parallel: core/tensor_parallel/layers.py and mappings.py): outside the tensor-parallel regions the rank
// holds its share of the tokens (GptBlockShape::sequence_parallel: the norms, the residual adds and the residual
// dropout), inside them every token. The plan runs these parts with its collectives between them
// (strategy/tensor_parallel_split.h): ln_1 (LayerNormForward), all-gather into Megatron's buffer, attention region,
// reduce-scatter, residual and ln_2, all-gather, MLP region, reduce-scatter, residual; backward: the MLP dropout,
// all-gather of that gradient and of ln_2's output again, MLP region, reduce-scatter, ln_2 and the attention
// dropout, all-gathers, attention region, reduce-scatter, ln_1. `gathered`: the region's input for every token (the
// norm's output all-gathered); `partial`: tokens × h, the row-parallel product before its reduce-scatter, or in
// backward the all-gathered output gradient, then the partial input gradient (both in one buffer). Saved buffers as
// model/gpt_block_layout.h lays them out for sequence parallelism. No dependency on plans or allocators.
#pragma once
#include "exec/cpu/gpt_block_kernels.h"

namespace shardscope::exec::cpu {

// Forward. The attention and MLP regions from `gathered` into `partial`, without c_proj's bias (Megatron's
// RowParallelLinear adds it after the reduce-scatter, to this rank's tokens: the parts below). The MLP's with
// `partial` empty stops after GELU and draws its dropout mask (full recomputation).
void gpt_block_sp_attention_forward(const GptBlockShape& shape, std::span<const float> gathered, const GptBlockParams& params,
                                    std::span<std::byte> saved, std::span<std::byte> attention, std::span<float> partial);
void gpt_block_sp_mlp_forward(const GptBlockShape& shape, std::span<const float> gathered, const GptBlockParams& params,
                              std::span<std::byte> saved, std::span<std::byte> attention, std::span<float> partial);
// After the attention output's reduce-scatter into residual_1: attn.c_proj's bias, its dropout, the residual (this
// rank's tokens of the block input) and ln_2 into the layout's ln_2 output.
void gpt_block_sp_residual_norm(const GptBlockShape& shape, std::span<const float> input, const GptBlockParams& params,
                                std::span<std::byte> saved, std::span<std::byte> attention);
// After the MLP output's reduce-scatter into `output`: mlp.c_proj's bias, its dropout and the residual.
void gpt_block_sp_residual(const GptBlockShape& shape, const GptBlockParams& params, std::span<std::byte> saved,
                           std::span<std::byte> attention, std::span<float> output);

// Backward. The MLP's resid_dropout on this rank's output gradient, into grad_input (all-gathered next), and
// mlp.c_proj's bias gradient from this rank's tokens (Megatron adds the bias after the reduce-scatter, so its
// gradient is partial; the plan all-reduces it). The regions below leave the c_proj biases' gradients alone.
void gpt_block_sp_mlp_dropout_backward(const GptBlockShape& shape, std::span<const float> grad_out,
                                       std::span<std::byte> saved, std::span<std::byte> attention,
                                       std::span<float> grad_input, std::span<float> grad_bias);
// The MLP region from the all-gathered gradient (`partial`) and input (`gathered`): its gradients, and the partial
// d(ln_2 output) into `partial` (reduce-scattered into the layout's ln_2 output next).
void gpt_block_sp_mlp_backward(const GptBlockShape& shape, std::span<const float> gathered, const GptBlockParams& params,
                               std::span<std::byte> saved, std::span<std::byte> attention, std::span<float> partial,
                               const GptBlockGrads& grads);
// ln_2's backward on this rank's tokens plus the residual path into grad_input (d residual_1), then the attention's
// resid_dropout into the layout's residual_1 (all-gathered next) and attn.c_proj's bias gradient from it.
void gpt_block_sp_attention_dropout_backward(const GptBlockShape& shape, std::span<const float> grad_out,
                                             const GptBlockParams& params, std::span<std::byte> saved,
                                             std::span<std::byte> attention, std::span<float> grad_input,
                                             const GptBlockGrads& grads);
// The attention region from the all-gathered gradient and input: its gradients, and the partial d(ln_1 output) into
// `partial` (reduce-scattered into the layout's residual_1 next).
void gpt_block_sp_attention_backward(const GptBlockShape& shape, std::span<const float> gathered,
                                     const GptBlockParams& params, std::span<std::byte> saved,
                                     std::span<std::byte> attention, std::span<float> partial, const GptBlockGrads& grads);
// ln_1's backward on this rank's tokens from the reduce-scattered d(ln_1 output), added into grad_input.
void gpt_block_sp_input_norm_backward(const GptBlockShape& shape, std::span<const float> input, const GptBlockParams& params,
                                      std::span<std::byte> saved, std::span<std::byte> attention,
                                      std::span<float> grad_input, const GptBlockGrads& grads);

}  // namespace shardscope::exec::cpu
