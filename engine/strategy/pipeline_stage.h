// One rank of a pipeline (naive model parallel, GPipe, 1F1B): the layers of its stage, their parameters and
// gradients, the forward and backward of one micro-batch with the activation messages between stages, and the
// optimizer step (with the gradient reduction of its data-parallel group when the pipeline is replicated).
// Schedules (mp.cpp, pp_gpipe.cpp, pp_1f1b.cpp) only decide the order of forwards and backwards.
#pragma once
#include <memory>
#include <vector>

#include "plan/plan.h"
#include "strategy/lowering_context.h"
#include "training/model_pass.h"
#include "training/param_slot.h"

namespace shardscope {

struct PipelineAction {
  bool forward = true;
  int micro_batch = 0;
};
// The actions of stage `stage` (0-based) of `stages`, over `micro_batches`, in program order.
using PipelineSchedule = std::vector<PipelineAction> (*)(int stage, int stages, int micro_batches);

// How a stage's gradients are kept: plain PyTorch .grad (naive model parallel), or Megatron-LM's contiguous
// gradient buffer (megatron/core/distributed/param_and_grad_buffer.py, core 0.8) that every micro-batch's
// gradient is added into, all-reduced (or reduce-scattered under the distributed optimizer) in its DP group.
enum class StageGradients { AutogradGrad, MegatronBuffer };

// The layers [first, end) of stage s when `layer_count` layers are split over `stages`: equal runs, the first
// (layer_count mod stages) stages one layer longer (Megatron's uniform split, by layer count).
std::pair<std::size_t, std::size_t> stage_layers(std::size_t layer_count, int stages, int stage);

// Lowers every rank of a pipeline scenario into `plan`. Rank = stage × dp + replica (pipeline outermost, as
// Megatron's default rank order); each stage's replicas form one process group for the gradient reduction.
// The layer of lm_head when it holds its own copy of tied word embeddings (a pipeline's last stage), else -1.
int untied_head_layer(const Model& model);

void lower_pipeline(const LoweringContext& context, Plan& plan, PipelineSchedule schedule, StageGradients gradients);

}  // namespace shardscope
