// GPipe (Huang et al. 2019; torch.distributed.pipelining ScheduleGPipe, 2.4): every stage runs all m forwards,
// then all m backwards in micro-batch order, so every stage holds m micro-batches of activations at its peak.
#include "strategy/pipeline_strategies.h"

namespace shardscope {

std::vector<PipelineAction> gpipe_schedule(int /*stage*/, int /*stages*/, int micro_batches) {
  std::vector<PipelineAction> actions;
  for (int m = 0; m < micro_batches; ++m) actions.push_back({true, m});
  for (int m = 0; m < micro_batches; ++m) actions.push_back({false, m});
  return actions;
}

void lower_pp_gpipe(const LoweringContext& context, Plan& plan) {
  add_pipeline_notes(context, plan, "GPipe: all forwards, then all backwards; every stage holds all m micro-batches' activations");
  lower_pipeline(context, plan, gpipe_schedule, StageGradients::MegatronBuffer);
}

}  // namespace shardscope
