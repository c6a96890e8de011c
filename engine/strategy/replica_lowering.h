// The per-rank loop of the strategies whose ranks each train the whole model on their own share of the batch
// (single, ddp, zero1, zero2, zero3): one LocalTraining subclass lowers each rank's program.
#pragma once
#include "plan/program_builder.h"
#include "strategy/lowering_context.h"

namespace shardscope {

template <class Training>
void lower_replicas(const LoweringContext& context, Plan& plan) {
  for (int rank = 0; rank < context.world(); ++rank) {
    ProgramBuilder builder(rank);
    Training training(context, builder);
    training.lower();
    plan.programs.push_back(builder.finish());
    plan.programs.back().data = {rank, context.world()};  // DistributedSampler: rank r of world
  }
}

}  // namespace shardscope
