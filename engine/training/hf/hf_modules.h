// transformers' causal language models written op by op over the eager ops (training/eager/ops.h), as transformers
// 5.x runs them on PyTorch 2.x: GPT2LMHeadModel (modeling_gpt2.py: GPT2Block, GPT2Attention, GPT2MLP with
// NewGELUActivation, Conv1D from pytorch_utils.py) and LlamaForCausalLM (modeling_llama.py: LlamaDecoderLayer,
// LlamaAttention with rotary positions, LlamaMLP, LlamaRMSNorm), with what the surrounding code adds: the position
// ids, the causal mask eager attention takes (masking_utils.py), the KV cache use_cache=True fills during a training
// forward (cache_utils.py DynamicLayer.update: a copy of each layer's keys and values), and the loss
// (loss/loss_utils.py ForCausalLMLoss: logits upcast to fp32, labels padded and shifted). Python's frees follow its
// reference counts: a C++ scope here is the Python function it is named after, a rebinding frees the old value, and
// what a returning function's frame held goes in the order its locals were assigned.
// Usage: Tensor loss = hf::causal_lm_loss(run, ids);   // model(input_ids=ids, labels=ids).loss
#pragma once
#include "training/eager/ops.h"

namespace shardscope::hf {

struct CausalLm {
  eager::Eager& e;
  const Model& model;                // layers as model/transformer.cpp builds them: embedding, blocks, norm, lm_head
  const LayerParams& params;         // each layer's parameter tensors, in the model's order
  eager::Dtype param_dtype = eager::Dtype::F32;  // fp32, or 16-bit under --dtype's mixed precision
  bool training = true;              // model.train(): dropout active
  // model.gradient_checkpointing_enable(): each decoder block under reentrant torch.utils.checkpoint
  // (training/eager/checkpoint.h), and use_cache forced off while training, as the model does
  bool gradient_checkpointing = false;
  // Whether the blocks run checkpointed: only in training with grad on (GradientCheckpointingLayer checks
  // self.training; under no_grad there is no graph to rebuild).
  bool checkpoints_blocks() const { return gradient_checkpointing && training && e.grad_enabled; }
};

// `model(input_ids=ids, labels=ids).loss` for the model's family; what the output held (logits, the cache) is gone
// when it returns, as after `.loss`.
eager::Tensor causal_lm_loss(const CausalLm& lm, const eager::Tensor& ids);

// Pieces both families share (hf_common.cpp).
namespace detail {
eager::Tensor gpt2_causal_lm_loss(const CausalLm& lm, const eager::Tensor& ids);
eager::Tensor llama_causal_lm_loss(const CausalLm& lm, const eager::Tensor& ids);
// The model parameter (layer, index) with the shape transformers registers it in.
eager::Tensor parameter(const CausalLm& lm, int layer, int index, eager::Sizes sizes);
// cache_position = torch.arange(...): two position-sized int64 allocations, the first dropped (measured on 2.11);
// the second is cache_position, which position_ids views.
eager::Tensor position_ids(eager::Eager& e, std::int64_t seq);
// create_causal_mask for eager attention: sdpa_mask's bool [s, s] from aranges, then eager_mask's additive mask
// [b, 1, s, s] in `dtype` (masking_utils.py, 5.17; allocations as measured). SDPA takes None (is_causal) instead.
eager::Tensor eager_causal_mask(eager::Eager& e, std::int64_t batch, std::int64_t seq, eager::Dtype dtype);
// ForCausalLMLoss(logits, labels): logits.float(), labels padded with -100 and shifted, cross-entropy (mean)
eager::Tensor for_causal_lm_loss(eager::Eager& e, const eager::Tensor& logits, const eager::Tensor& labels);
// The kernel F.scaled_dot_product_attention runs for q of `dtype` (after autocast's cast), PyTorch 2.11 on sm90:
// flash / cuDNN for 16-bit inputs, memory-efficient for fp32, the math fallback for fp32 with enable_gqa (which the
// memory-efficient kernel does not take); --attention flash forces flash.
eager::ops::SdpaKernel sdpa_kernel(AttentionKind attention, eager::Dtype dtype, bool grouped_query);
}  // namespace detail

}  // namespace shardscope::hf
