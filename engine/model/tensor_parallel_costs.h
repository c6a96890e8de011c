// What one transformer block keeps for backward on one tensor-parallel rank, by Korthikanti et al. 2022 ("Reducing
// Activation Recomputation in Large Transformer Models", Sections 4.2-4.3 and Table 2): with tensor parallelism the
// tensors inside the attention and MLP regions are split t ways; the LayerNorm and dropout regions stay whole
// unless sequence parallelism splits them along the sequence. No strategy knowledge here: t and sp are numbers.
#pragma once
#include <cstdint>

#include "model/model.h"
#include "model/transformer_config.h"

namespace shardscope {

// Bytes per sample (b = 1) one rank's block holds after its forward.
struct TensorParallelBlockBytes {
  std::int64_t input = 0;       // the block input (first norm's): all that full recomputation keeps
  std::int64_t replicated = 0;  // the rest of the norm / dropout regions: whole on every rank unless sp
  std::int64_t split = 0;       // inside the tensor-parallel regions outside the attention core: 1/t
  std::int64_t attention = 0;   // the attention core (5as²b at 16-bit): 1/t, dropped by selective recomputation

  std::int64_t total() const { return input + replicated + split + attention; }
  std::int64_t kept(CheckpointMode mode) const;
};

// `element_bytes` as block_activation_bytes (model/transformer_costs.h). At 16-bit GPT-2 shapes (n_inner = 4h) the
// kept bytes are Table 2's rows: sbh(10 + 24/t + 5as/(ht)) without sp, sbh/t·(34 + 5as/h) with sp, the same less
// the 5as/h term under selective recomputation, and 2sbh under full recomputation without sp. t must divide heads,
// the MLP width and (with sp) seq; tensor_parallel_checks (scenario/) refuses the rest before this is called.
TensorParallelBlockBytes tensor_parallel_block_bytes(const TransformerConfig& config, std::int64_t seq,
                                                     std::int64_t element_bytes, AttentionKind attention, int tp,
                                                     bool sequence_parallel);

}  // namespace shardscope
