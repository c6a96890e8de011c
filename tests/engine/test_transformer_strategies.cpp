// Transformer models through every strategy and recomputation mode (GPT-2 style with tied embeddings, Llama with
// GQA; fp32 and bf16): the plans are valid (allocations freed or persistent, collectives and messages matched).
#include <gtest/gtest.h>

#include "engine/hf_config_files.h"
#include "plan/validate.h"
#include "scenario/scenario.h"
#include "strategy/lower.h"

namespace shardscope {
namespace {

TEST(TransformerStrategies, EveryStrategyAndCheckpointModeLowersToAValidPlan) {
  testing::TempConfigDir dir;
  const std::string gpt = "hf:" + dir.write("gpt.json", testing::gpt2_config_json(32, 4, 4, 64, 32));  // tied
  const std::string llama = "hf:" + dir.write("llama.json", testing::llama_config_json(32, 4, 2, 64, 4, 64, 32));
  const StrategyKind strategies[] = {StrategyKind::Single, StrategyKind::DataParallel, StrategyKind::Ddp,
                                     StrategyKind::Zero1,  StrategyKind::Zero2,        StrategyKind::Zero3,
                                     StrategyKind::ModelParallel, StrategyKind::PipelineGPipe, StrategyKind::Pipeline1F1B};
  int checked = 0;
  for (const auto& model : {gpt, llama})
    for (auto strategy : strategies)
      for (auto mode : {CheckpointMode::None, CheckpointMode::Selective, CheckpointMode::Full}) {
        Scenario s;
        s.model.spec = model;
        s.strategy.kind = strategy;
        s.cluster.world = strategy == StrategyKind::Single ? 1 : 2;
        s.training.batch = 2;
        s.training.seq = 16;
        s.training.steps = 2;
        s.training.checkpoint = mode;
        s.training.dtype = strategy == StrategyKind::DataParallel || checked % 2 ? Dtype::Fp32 : Dtype::Bf16;
        if (strategy == StrategyKind::PipelineGPipe || strategy == StrategyKind::Pipeline1F1B) s.strategy.micro_batches = 2;
        const auto plan = lower_plan(resolve_scenario(s));
        const auto report = validate_plan(plan);
        EXPECT_TRUE(report.ok()) << model << " " << strategy_name(strategy) << ": " << report.errors.front();
        ++checked;
      }
  EXPECT_EQ(checked, 54);  // 2 models × 9 strategies × 3 modes
}

}  // namespace
}  // namespace shardscope
