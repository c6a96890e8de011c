// Naive model parallelism: the layers split over the devices (one stage each), the whole batch as one micro-batch,
// the activation sent forward and its gradient back at each boundary; only one device works at a time. Plain
// PyTorch (`nn.Sequential` pieces moved with .to(device_i)): gradients in .grad, one optimizer per device.
#include "strategy/pipeline_strategies.h"

namespace shardscope {

namespace {
std::vector<PipelineAction> forward_then_backward(int, int, int) { return {{true, 0}, {false, 0}}; }
}  // namespace

void lower_model_parallel(const LoweringContext& context, Plan& plan) {
  plan.notes.push_back("naive model parallelism: " + std::to_string(context.scenario.settings.strategy.stages) +
                       " devices each hold their layers' parameters, gradients, optimizer state and the whole batch's "
                       "activations of those layers; one device computes at a time (the others wait, as a pipeline with one micro-batch)");
  lower_pipeline(context, plan, forward_then_backward, StageGradients::AutogradGrad);
}

}  // namespace shardscope
