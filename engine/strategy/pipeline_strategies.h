// Entry points of the pipeline-family lowerings (one file each: mp.cpp, pp_gpipe.cpp, pp_1f1b.cpp) and their schedules.
#pragma once
#include <string>
#include <vector>

#include "strategy/pipeline_stage.h"

namespace shardscope {

void lower_model_parallel(const LoweringContext& context, Plan& plan);
void lower_pp_gpipe(const LoweringContext& context, Plan& plan);
void lower_pp_1f1b(const LoweringContext& context, Plan& plan);

std::vector<PipelineAction> gpipe_schedule(int stage, int stages, int micro_batches);
std::vector<PipelineAction> one_f_one_b_schedule(int stage, int stages, int micro_batches);

// Schedule, bubble and data-parallel notes shared by pp-gpipe and pp-1f1b.
void add_pipeline_notes(const LoweringContext& context, Plan& plan, const std::string& schedule, StageGradients gradients);

}  // namespace shardscope
