// A block's saved bytes on one tensor-parallel rank, regrouped from block_activation_bytes' tensor-by-tensor count
// by where Megatron-LM's layer puts each tensor (Korthikanti et al. 2022, Section 4.2, Figure 4 and 5).
#include "model/tensor_parallel_costs.h"

#include "model/transformer_costs.h"

namespace shardscope {

std::int64_t TensorParallelBlockBytes::kept(CheckpointMode mode) const {
  switch (mode) {
    case CheckpointMode::None: return total();
    case CheckpointMode::Selective: return input + replicated + split;
    case CheckpointMode::Full: return input;
  }
  return total();
}

TensorParallelBlockBytes tensor_parallel_block_bytes(const TransformerConfig& c, std::int64_t seq, std::int64_t e,
                                                     AttentionKind attention, int tp, bool sequence_parallel) {
  const BlockActivationBytes whole = block_activation_bytes(c, seq, e, attention);
  const std::int64_t sh = seq * c.hidden;
  // Outside the tensor-parallel regions, besides the block input (Section 4.2.1): the QKV projection's input, the
  // second norm's input and the first MLP projection's input (f's input is whole on every rank), plus GPT-2's two
  // dropout masks (attention output and MLP output, sbh bytes each). Llama has the same three inputs and no dropout.
  const std::int64_t masks = c.family == TransformerFamily::Gpt2 ? 2 * sh : 0;
  const std::int64_t replicated = 3 * sh * e + masks;
  const std::int64_t sp = sequence_parallel ? tp : 1;
  TensorParallelBlockBytes bytes;
  // With sp the block input is the sequence shard: Megatron-LM checkpoints hidden_states as [s/t, b, h], so full
  // recomputation keeps 2sbh/t there. Table 2's "full activation recompute" row (2sbh) is the case without sp.
  bytes.input = whole.input / sp;
  bytes.replicated = replicated / sp;
  // Q, K, V and the output projection's input split by heads, the MLP's two inner tensors by columns (24sbh/t).
  bytes.split = (whole.other - replicated) / tp;
  bytes.attention = whole.attention / tp;  // a/t heads' scores, softmax output and its dropout mask: 5as²b/t
  return bytes;
}

}  // namespace shardscope
