// A full recomputation's forward, as readers of a plan tell it apart from a block's own forward: the model pass
// labels it "<block> recompute" (training/model_pass.cpp), and where it has operands it writes no output
// (plan/kernel.h, GptBlockForward). It re-runs the block only up to the last tensor the block's backward reads
// (model/transformer_costs.h, block_recompute_flops): no MLP output projection, no residual after it, and so under
// tensor parallelism no collective after that projection.
#pragma once
#include <string>
#include <string_view>

#include "plan/kernel.h"
#include "plan/op.h"

namespace shardscope {

inline constexpr std::string_view kFullRecomputeSuffix = " recompute";
inline constexpr std::string_view kAttentionRecomputeSuffix = " attention recompute";  // selective recomputation

inline std::string full_recompute_label(const std::string& layer_name) {
  return layer_name + std::string(kFullRecomputeSuffix);
}

// `op` is a full recomputation of a block, or (a tensor-parallel split, strategy/tensor_parallel_split.h) its
// attention or MLP part.
inline bool is_full_recompute(const Op& op) {
  if (op.kind != OpKind::Compute || op.compute_kind != ComputeKind::Forward) return false;
  const bool block_kernel = op.kernel == Kernel::GptBlockForward || op.kernel == Kernel::GptBlockAttentionForward ||
                            op.kernel == Kernel::GptBlockMlpForward;
  constexpr std::size_t kOutput = 15;  // GptBlockForward's operands: input, params×12, saved, attention, output-
  if (block_kernel && op.args.size() > kOutput) return !op.args[kOutput].present();
  const std::string& label = op.label.str();
  return label.ends_with(kFullRecomputeSuffix) && !label.ends_with(kAttentionRecomputeSuffix);
}

}  // namespace shardscope
