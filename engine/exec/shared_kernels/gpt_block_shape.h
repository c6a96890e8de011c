// The sizes of one GPT-2 block pass (samples, sequence, hidden, heads, inner width, dropout) and the element counts
// derived from them: what the CPU block (exec/cpu/gpt_block_kernels.h) and the CUDA one
// (exec/cuda/cuda_transformer_dispatch.cpp) both size their work by, so the two cannot disagree.
#pragma once
#include "exec/exec_layer.h"
#include <cstddef>
#include <cstdint>

#include "exec/shared_kernels/dropout_mask.h"
#include "model/transformer_config.h"

namespace shardscope::exec {

struct GptBlockShape {
  int rows = 0;  // samples
  int seq = 0;
  int hidden = 0;
  int heads = 0;
  int inner = 0;
  float eps = 1e-5f;
  double attn_dropout = 0, resid_dropout = 0;  // 0 in eval
  std::uint64_t dropout_key = 0;
  GlobalSamples samples = {};  // which samples of the global batch the pass holds, for the masks
  int tp = 1;  // tensor-parallel size: this rank holds heads/tp heads and inner/tp MLP columns (Megatron-LM's split)
  int tp_rank = 0;  // which: heads tp_rank · heads/tp on
  // Sequence parallelism (Megatron-LM's, with tp): outside the tensor-parallel regions the rank holds chunk tp_rank
  // of the pass's rows · seq tokens (the plan's reduce-scatters' share); inside them every token.
  bool sequence_parallel = false;
};

GptBlockShape gpt_block_shape(const TransformerConfig& config, int rows, int seq, bool training, std::uint64_t key,
                              GlobalSamples samples);

// Sizes of one block pass, in elements.
// Under tensor parallelism i, a and w are the rank's: its MLP columns, its heads and their width (a · d = hidden/tp).
struct GptBlockDims {
  int n = 0, h = 0, i = 0, s = 0, a = 0, d = 0, b = 0;  // tokens, hidden, inner, seq, heads, head width, samples
  int w = 0;                                             // the attention's width on this rank: a · d
  int local = 0;  // tokens outside the tensor-parallel regions: n, or n / tp under sequence parallelism
  std::size_t nh = 0, ni = 0, nw = 0, scores = 0;        // tokens × hidden, × inner, × w; b·a·s² attention elements
};
// Throws std::invalid_argument when a size is not positive, the heads do not divide hidden or tp does not divide
// the heads and the inner width.
GptBlockDims gpt_block_dims(const GptBlockShape& shape);

}  // namespace shardscope::exec
