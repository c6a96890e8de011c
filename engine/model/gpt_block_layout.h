// Where a GPT-2 block's saved tensors lie inside the two buffers the plan allocates for them ("saved activations"
// and "saved attention scores", model/transformer_costs.h's `other` and `attention` bytes), so that the executor
// keeps exactly what the accounting counts. Tensors in the order the block's forward produces them; fp32 elements
// at `element_bytes`, dropout keep masks at 1 byte an element. On tensor-parallel rank of `tp` (Megatron-LM's split,
// model/tensor_parallel_costs.h) the tensors inside the attention and MLP regions hold the rank's heads and MLP
// columns (1/tp), the rest stays whole, or with `sequence_parallel` the rank's 1/tp of the tokens (the norms'
// outputs, residual_1 and the residual dropout masks). No dependency beyond the config.
#pragma once
#include <cstdint>

#include "model/transformer_config.h"

namespace shardscope {

struct GptBlockLayout {
  // Byte offsets into the `saved` buffer (tokens = batch × seq rows each):
  std::int64_t ln_1_output = 0;     // c_attn's input           tokens × h
  std::int64_t qkv = 0;             // c_attn's output: Q, K, V  tokens × 3h/tp (split views of one tensor)
  std::int64_t attention_output = 0;  // c_proj's input (heads merged)  tokens × h/tp
  std::int64_t residual_1 = 0;      // x + attention: ln_2's input        tokens × h
  std::int64_t ln_2_output = 0;     // c_fc's input             tokens × h
  std::int64_t fc_output = 0;       // GELU's input             tokens × inner/tp
  std::int64_t gelu_output = 0;     // mlp.c_proj's input       tokens × inner/tp
  std::int64_t attention_mask = 0;  // resid dropout after attn.c_proj, 1 byte an element  tokens × h
  std::int64_t mlp_mask = 0;        // resid dropout after mlp.c_proj   tokens × h
  std::int64_t saved_bytes = 0;
  // Byte offsets into the `attention` buffer (batch × heads/tp × seq × seq each):
  std::int64_t probabilities = 0;          // softmax output
  std::int64_t dropped_probabilities = 0;  // after attn_dropout (what multiplies V)
  std::int64_t probability_mask = 0;       // attn_dropout's keep mask, 1 byte an element
  std::int64_t attention_bytes = 0;
};

inline GptBlockLayout gpt_block_layout(const TransformerConfig& c, std::int64_t batch, std::int64_t seq,
                                       std::int64_t element_bytes, int tp = 1, bool sequence_parallel = false) {
  const std::int64_t th = batch * seq * c.hidden, ti = batch * seq * c.intermediate / tp;
  const std::int64_t outside = sequence_parallel ? th / tp : th;  // tokens × h outside the tensor-parallel regions
  const std::int64_t split_th = th / tp;
  const std::int64_t scores = batch * (c.heads / tp) * seq * seq;
  GptBlockLayout l;
  std::int64_t at = 0;
  auto place = [&at](std::int64_t bytes) { const std::int64_t start = at; at += bytes; return start; };
  l.ln_1_output = place(outside * element_bytes);
  l.qkv = place(3 * split_th * element_bytes);
  l.attention_output = place(split_th * element_bytes);
  l.residual_1 = place(outside * element_bytes);
  l.ln_2_output = place(outside * element_bytes);
  l.fc_output = place(ti * element_bytes);
  l.gelu_output = place(ti * element_bytes);
  l.attention_mask = place(outside);
  l.mlp_mask = place(outside);
  l.saved_bytes = at;
  at = 0;
  l.probabilities = place(scores * element_bytes);
  l.dropped_probabilities = place(scores * element_bytes);
  l.probability_mask = place(scores);
  l.attention_bytes = at;
  return l;
}

}  // namespace shardscope
