// ZeRO stage 1: DDP + torch.distributed.optim.ZeroRedundancyOptimizer. Each rank keeps optimizer state only
// for the parameters it owns, steps them, then broadcasts them to the other ranks.
#pragma once
#include <vector>

#include "strategy/ddp.h"

namespace shardscope {

// ZeroRedundancyOptimizer._partition_parameters: whole parameters, each to the rank with the fewest elements
// so far (ties: lowest rank); sorted by size, largest first (stable), from 1.10; registration order before.
// Returns the owner rank of each parameter.
std::vector<int> partition_parameters(const std::vector<Bytes>& param_bytes, int world, bool sort_by_size);

class Zero1Training : public DdpTraining {
 public:
  Zero1Training(const LoweringContext& context, ProgramBuilder& builder);

 protected:
  void wrap() override;
  std::vector<ParamSlot*> optimizer_params() override;
  void after_optimizer_step() override;

 private:
  std::vector<int> owner_;
};

}  // namespace shardscope
