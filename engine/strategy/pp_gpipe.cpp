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

// Gradients: one pipeline (dp = 1) is ScheduleGPipe over plain stage modules, or the same loop written by hand with
// torch.distributed send / recv: each micro-batch's backward is torch.autograd.backward (pipelining/_backward.py
// stage_backward), so the parameters' gradients are autograd's .grad, made by AccumulateGrad at the first
// micro-batch's backward and added into by the later ones, dropped by zero_grad(set_to_none=True); there is no
// buffer allocated when the stage is built (Megatron-LM, whose contiguous grad buffer that would be, has no GPipe
// schedule). Replicated pipelines (dp > 1) reduce each stage's gradients in its data-parallel group through
// Megatron-LM's grad buffer (and its distributed optimizer under --dp-zero 1), as pp-1f1b.
void lower_pp_gpipe(const LoweringContext& context, Plan& plan) {
  const StageGradients gradients =
      context.scenario.settings.strategy.dp > 1 ? StageGradients::MegatronBuffer : StageGradients::AutogradGrad;
  add_pipeline_notes(context, plan, "GPipe: all forwards, then all backwards; every stage holds all m micro-batches' activations",
                     gradients);
  lower_pipeline(context, plan, gpipe_schedule, gradients);
}

}  // namespace shardscope
