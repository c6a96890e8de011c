// What one transformer block keeps for backward and what it computes, per sample (batch b = 1), by formula.
// Activations follow Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models",
// Section 4.1 and Table 2 (no tensor or sequence parallelism); FLOPs follow Narayanan et al. 2021 (Megatron-LM,
// "Efficient Large-Scale Language Model Training on GPU Clusters", Section 5.1). No strategy knowledge here.
#pragma once
#include <cstdint>

#include "model/model.h"
#include "model/transformer_config.h"

namespace shardscope {

// Bytes per sample a block's autograd graph holds after its forward, split as recomputation needs it.
struct BlockActivationBytes {
  std::int64_t input = 0;      // the block input (saved by the first norm): all that full recomputation keeps
  std::int64_t other = 0;      // the rest outside the attention core: kept under selective recomputation
  std::int64_t attention = 0;  // attention core (scores, softmax output, its dropout mask): the 5as²b term

  std::int64_t total() const { return input + other + attention; }
  std::int64_t kept(CheckpointMode mode) const;  // what stays alive from forward to backward
};

// `element_bytes` is the activation dtype's size (2 at fp16/bf16, 4 at fp32). Dropout masks are 1 byte per
// element whatever the dtype, so the paper's 16-bit 34·sbh + 5·as²b is split into elements and masks:
// GPT-2: (16 elements + 2 mask bytes)·sbh + (2 elements + 1 mask byte)·as²b, i.e. 34sbh + 5as²b at 2 bytes
// and 66sbh + 9as²b at 4 bytes (with n_inner = 4h; a different MLP width scales the two MLP tensors).
BlockActivationBytes block_activation_bytes(const TransformerConfig& config, std::int64_t seq, std::int64_t element_bytes);
// The same with a fused attention kernel (F.scaled_dot_product_attention's flash / memory-efficient kernels, Megatron's
// --use-flash-attn): the core keeps no s×s probabilities, dropout mask or dropped copy, only its logsumexp (one fp32
// per head and position; the kernel regenerates dropout from its RNG state); Q, K, V and the output stay in `other`.
BlockActivationBytes block_activation_bytes(const TransformerConfig& config, std::int64_t seq, std::int64_t element_bytes,
                                            AttentionKind attention);

// Forward FLOPs of one block per sample: the matrix multiplications (2 per multiply-add), as Megatron counts
// them; with n_inner = 4h and no GQA this is 24·s·h² + 4·s²·h. Element-wise work is left out, as there.
double block_forward_flops(const TransformerConfig& config, std::int64_t seq);
// What full recomputation re-runs: the block's forward up to the last tensor its backward reads, the input of the MLP's
// output projection (GPT-2's mlp.c_proj, Llama's down_proj), so all but that projection's 2·s·h·i. This is PyTorch's
// non-reentrant torch.utils.checkpoint (use_reentrant=False; PyTorch 2.11's torch/utils/checkpoint.py: "By default,
// non-reentrant checkpoint stops recomputation as soon as it has computed all needed Tensors"), and autograd saves an
// addmm's inputs before it runs the product; the executors stop there too (after GELU). Megatron-LM's reentrant
// tensor_parallel.checkpoint, and PyTorch's when a dropout follows the projection (its mask is saved after it),
// re-run the projection too.
double block_recompute_flops(const TransformerConfig& config, std::int64_t seq);
// The attention core alone (QKᵀ and attention over V): 4·s²·h.
double attention_core_flops(const TransformerConfig& config, std::int64_t seq);
// Its scores alone (QKᵀ): 2·s²·h, what selective recomputation re-runs. The core's backward reads the softmax output,
// the dropout mask and the dropped probabilities, all made before the product with V, which reads the last of them:
// the recomputation stops there, as block_recompute_flops's does (non-reentrant checkpoint; the executors too).
double attention_scores_flops(const TransformerConfig& config, std::int64_t seq);
// The LM head (logits over the vocabulary): 2·s·h·V.
double lm_head_flops(const TransformerConfig& config, std::int64_t seq);

}  // namespace shardscope
