// torch.nn.DataParallel (and BalancedDataParallel) over all devices of one process: programs for every device
// are lowered together, since device 0 drives the others.
#pragma once
#include <vector>

#include "plan/plan.h"
#include "strategy/lowering_context.h"

namespace shardscope {

// torch.chunk sizes: ceil(B / n) per chunk, the last takes the rest; fewer than n chunks if B is small.
std::vector<std::int64_t> data_parallel_chunk_sizes(std::int64_t batch, int devices);
// BalancedDataParallel.scatter (Transformer-XL utils/data_parallel.py): unit = (B - g) // (n - 1); if g < unit the
// sizes are [g, unit, ...] with the remainder handed one by one to devices 1, 2, ...; otherwise equal chunks.
// Returns one size per device (device 0 may get 0).
std::vector<std::int64_t> balanced_chunk_sizes(std::int64_t batch, int devices, std::int64_t gpu0_batch);

// Fill plan.programs (one per device) for dp and for balanced-dp.
void lower_data_parallel(const LoweringContext& context, Plan& plan);
void lower_balanced_data_parallel(const LoweringContext& context, Plan& plan);

}  // namespace shardscope
