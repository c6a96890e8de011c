// The per-rank loop of the strategies whose ranks each train the whole model on their own share of the batch
// (single, ddp, zero1, zero2, zero3): one LocalTraining subclass lowers each rank's program.
#pragma once
#include "plan/program_builder.h"
#include "strategy/lowering_context.h"

namespace shardscope {

template <class Training>
void lower_replicas(const LoweringContext& context, Plan& plan) {
  plan.programs.reserve(static_cast<std::size_t>(context.world()));
  for (int rank = 0; rank < context.world(); ++rank) {
    ProgramBuilder builder(rank, context.compute_element(), context.kernel_operands);
    if (!plan.programs.empty()) builder.reserve(plan.programs.back().ops.size(), plan.programs.back().tensors.size());
    Training training(context, builder);
    training.lower();
    plan.programs.push_back(builder.finish());
    plan.programs.back().data = {rank, context.world()};  // DistributedSampler: rank r of world
  }
}

}  // namespace shardscope
