// Activation bytes and FLOPs of transformer blocks, counted tensor by tensor as Korthikanti et al. 2022
// (Section 4.1) do: each tensor saved for backward once, at the activation dtype, dropout masks at 1 byte.
#include "model/transformer_costs.h"

namespace shardscope {

std::int64_t BlockActivationBytes::kept(CheckpointMode mode) const {
  switch (mode) {
    case CheckpointMode::None: return total();
    case CheckpointMode::Selective: return input + other;
    case CheckpointMode::Full: return input;
  }
  return total();
}

BlockActivationBytes block_activation_bytes(const TransformerConfig& c, std::int64_t seq, std::int64_t e) {
  const std::int64_t sh = seq * c.hidden;              // one s×h tensor, in elements
  const std::int64_t si = seq * c.intermediate;        // one s×(MLP width) tensor
  const std::int64_t scores = static_cast<std::int64_t>(c.heads) * seq * seq;  // a·s² attention scores
  BlockActivationBytes bytes;
  bytes.input = sh * e;  // first norm's input (the paper's first LayerNorm 2sbh at 16-bit)
  if (c.family == TransformerFamily::Gpt2) {
    // Attention (paper: 11sbh + 5as²b at 16-bit): QKV-projection input, Q and K, V, output-projection input
    // (5 tensors) + the attention-output dropout mask (1 byte); MLP (19sbh with 4h): fc input, GeLU input,
    // fc2 input + dropout mask; second LayerNorm's input. Core: softmax output, its dropout mask and output.
    bytes.other = (5 + 1 + 1) * sh * e + 2 * si * e + 2 * sh;
    bytes.attention = 2 * scores * e + scores;
  } else {
    // Llama (HF LlamaDecoderLayer, eager attention, no dropout), counted the same way: q/k/v-projection input,
    // Q and K after rotary, V (K and V at full width after repeat_kv, so GQA does not shrink them), o_proj input,
    // post-attention norm input, gate/up input; SwiGLU: SiLU input, SiLU output and up output (saved by the
    // product), down_proj input. Core: the softmax output (saved once; matmul and softmax share it).
    // RMSNorm is counted as LayerNorm is in the paper (its input only), not as HF's unfused fp32 steps.
    bytes.other = 7 * sh * e + 4 * si * e;
    bytes.attention = scores * e;
  }
  return bytes;
}

BlockActivationBytes block_activation_bytes(const TransformerConfig& c, std::int64_t seq, std::int64_t e, AttentionKind attention) {
  BlockActivationBytes bytes = block_activation_bytes(c, seq, e);
  if (attention != AttentionKind::Eager) bytes.attention = static_cast<std::int64_t>(c.heads) * seq * 4;
  return bytes;
}

double block_forward_flops(const TransformerConfig& c, std::int64_t seq) {
  const double s = static_cast<double>(seq), h = static_cast<double>(c.hidden);
  const double qkv = 2.0 * s * h * (h + 2.0 * static_cast<double>(c.kv_width()));  // = 6sh² without GQA
  const double out_proj = 2.0 * s * h * h;
  const double mlp_matrices = c.family == TransformerFamily::Llama ? 3.0 : 2.0;    // gate, up, down / fc, proj
  const double mlp = mlp_matrices * 2.0 * s * h * static_cast<double>(c.intermediate);
  return qkv + out_proj + mlp + attention_core_flops(c, seq);
}

double block_recompute_flops(const TransformerConfig& c, std::int64_t seq) {
  const double output_projection = 2.0 * static_cast<double>(seq) * static_cast<double>(c.hidden) *
                                   static_cast<double>(c.intermediate);
  return block_forward_flops(c, seq) - output_projection;
}

double attention_core_flops(const TransformerConfig& c, std::int64_t seq) {
  const double s = static_cast<double>(seq), h = static_cast<double>(c.hidden);
  return 2.0 * 2.0 * s * s * h;  // QKᵀ and scores·V, each 2·s²·h
}

double attention_scores_flops(const TransformerConfig& c, std::int64_t seq) {
  return attention_core_flops(c, seq) / 2;  // QKᵀ, as much as the product with V
}

double lm_head_flops(const TransformerConfig& c, std::int64_t seq) {
  return 2.0 * static_cast<double>(seq) * static_cast<double>(c.hidden) * static_cast<double>(c.vocab);
}

}  // namespace shardscope
