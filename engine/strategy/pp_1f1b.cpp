// 1F1B (PipeDream-Flush; Megatron-LM megatron/core/pipeline_parallel/schedules.py
// forward_backward_pipelining_without_interleaving, core 0.8): stage i runs min(p - i - 1, m) warm-up forwards,
// then alternates one forward and one backward, then drains the remaining backwards; it holds at most
// min(p - i, m) micro-batches of activations, stage 0 the most.
#include "strategy/pipeline_strategies.h"

#include <algorithm>

namespace shardscope {

std::vector<PipelineAction> one_f_one_b_schedule(int stage, int stages, int micro_batches) {
  const int warmup = std::min(stages - stage - 1, micro_batches);
  std::vector<PipelineAction> actions;
  for (int m = 0; m < warmup; ++m) actions.push_back({true, m});
  for (int i = 0; i < micro_batches - warmup; ++i) {
    actions.push_back({true, warmup + i});
    actions.push_back({false, i});
  }
  for (int m = micro_batches - warmup; m < micro_batches; ++m) actions.push_back({false, m});
  return actions;
}

void lower_pp_1f1b(const LoweringContext& context, Plan& plan) {
  add_pipeline_notes(context, plan, "1F1B: stage i runs min(p - i - 1, m) warm-up forwards, then one forward and one "
                                    "backward in turn; stage i holds at most min(p - i, m) micro-batches' activations",
                     StageGradients::MegatronBuffer);
  lower_pipeline(context, plan, one_f_one_b_schedule, StageGradients::MegatronBuffer);
}

}  // namespace shardscope
