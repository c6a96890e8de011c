// Mixed-precision training as the ZeRO paper counts it (Rajbhandari et al. 2019, §3.1): 16-bit parameters and
// gradients (2 + 2 bytes per parameter), fp32 master weights plus fp32 Adam state (4 + 4 + 4 = 12 bytes, K = 12).
// The fp32 master weights are categorised as optimizer_state, as the paper counts them in K.
// Usage (per rank, after wrapping):
//   create_master_weights(builder, optimizer_params);           // at optimizer construction
//   lower_update(builder, behaviour, config, params, mixed);     // replaces optimizer.step()
#pragma once
#include <utility>
#include <vector>

#include "training/optimizer_step.h"

namespace shardscope {

// The fp32 master copy of each parameter the rank's optimizer owns (DeepSpeed FP16_Optimizer / stage_1_and_2
// `single_partition_of_fp32_groups`, Megatron Float16OptimizerWithFloat16Params `fp32_from_float16_groups`):
// made at optimizer construction, kept for good. Masters of parameters with a tensor of their own start as a copy
// of it (`param.detach().clone().float()`); a caller whose optimizer steps partitions (no tensor) copies those.
void create_master_weights(ProgramBuilder& builder, const std::vector<ParamSlot*>& params);

// optimizer.step(). fp32 training: the plain optimizer step. Mixed precision, as DeepSpeed and Megatron do it:
// each 16-bit gradient is unscaled into an fp32 gradient of its master weight (a temporary, numel × 4 B; an inf
// or NaN among them makes fp16's dynamic loss scaling skip the step), the optimizer steps the master weights, the
// fp32 gradients are dropped, and the masters are copied back into the 16-bit parameters in place. `copy_back`:
// (16-bit destination, fp32 master source) pairs for parameters without a tensor of their own (partitions);
// those with one are copied back from their masters whole. The overflow check's flag (a few bytes) is not counted.
void lower_update(ProgramBuilder& builder, const FrameworkBehaviour& behaviour, const OptimizerConfig& config,
                  const std::vector<ParamSlot*>& params, bool mixed_precision,
                  std::vector<TensorSlice> copy_back = {});

// Kernel::Copy's (destination, source) pairs turned around: a partition's master starts as its copy-back read the
// other way (parameters into master), so both copies come from one list.
inline std::vector<TensorSlice> reversed_pairs(std::vector<TensorSlice> pairs) {
  for (std::size_t k = 0; k + 1 < pairs.size(); k += 2) std::swap(pairs[k], pairs[k + 1]);
  return pairs;
}

}  // namespace shardscope
