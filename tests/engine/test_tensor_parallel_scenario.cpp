// strategy.tp / strategy.sequence_parallel in a scenario: the layout (world = tp × the strategy's ranks), the
// refusals, and model.activation_bytes_per_layer against Korthikanti et al. 2022 ("Reducing Activation Recomputation
// in Large Transformer Models"), Table 2, for GPT-3 175B's shape of their Table 3 (a = 96, h = 12288, s = 2048,
// L = 96, t = 8, b = 1). Every expected figure is the paper's formula evaluated here in integers, not our output.
#include <gtest/gtest.h>

#include "engine/hf_config_files.h"
#include "scenario/rank_coordinates.h"
#include "scenario/tensor_parallel.h"

namespace shardscope {
namespace {

using testing::TempConfigDir;

// GPT-3 175B (Brown et al. 2020, Table 2.1): h 12288, 96 heads, 96 layers, 2048 positions; the vocabulary as
// Megatron-LM pads GPT-2's 50257 for t = 8 (a multiple of 128 × 8).
constexpr std::int64_t kA = 96, kH = 12288, kS = 2048, kLayers = 96, kT = 8, kB = 1, kVocab = 51200;

Scenario gpt3(const std::string& config, int tp, bool sp, CheckpointMode mode) {
  Scenario s;
  s.model.spec = "hf:" + config;
  s.strategy.kind = StrategyKind::Single;
  s.strategy.tp = tp;
  s.strategy.sequence_parallel = sp;
  s.training.batch = static_cast<int>(kB);
  s.training.seq = static_cast<int>(kS);
  s.training.dtype = Dtype::Bf16;  // the paper counts 16-bit activations and 1-byte dropout masks
  s.training.checkpoint = mode;
  s.accounting.mode = AccountingMode::Exact;
  return s;
}

std::int64_t figure(const std::string& config, int tp, bool sp, CheckpointMode mode) {
  const ResolvedScenario resolved = resolve_scenario(gpt3(config, tp, sp, mode));
  EXPECT_EQ(resolved.settings.cluster.world, tp);  // single: one device per tensor-parallel rank
  return activation_bytes_per_layer(resolved).value();
}

TEST(TensorParallelScenario, Gpt3ActivationRowsOfKorthikantiTable2) {
  TempConfigDir dir;
  const std::string config =
      dir.write("gpt3.json", testing::gpt2_config_json(kH, kA, kLayers, kVocab, kS));
  const std::int64_t sbh = kS * kB * kH;
  const std::int64_t t = kT;
  // Row "no parallelism": sbh(34 + 5as/h).
  EXPECT_EQ(figure(config, 1, false, CheckpointMode::None), sbh * (34 * kH + 5 * kA * kS) / kH);
  // Row "tensor parallel (baseline)": sbh(10 + 24/t + 5as/(ht)) = 23·sbh here.
  EXPECT_EQ(figure(config, 8, false, CheckpointMode::None), sbh * (10 * kH * t + 24 * kH + 5 * kA * kS) / (kH * t));
  // Row "tensor + sequence parallel": sbh/t·(34 + 5as/h) = 14.25·sbh.
  EXPECT_EQ(figure(config, 8, true, CheckpointMode::None), sbh * (34 * kH + 5 * kA * kS) / (kH * t));
  // Row "tensor parallel + selective activation recompute": sbh(10 + 24/t) = 13·sbh.
  EXPECT_EQ(figure(config, 8, false, CheckpointMode::Selective), sbh * (10 * t + 24) / t);
  // Row "tensor + sequence parallel + selective activation recompute": sbh·34/t = 4.25·sbh.
  EXPECT_EQ(figure(config, 8, true, CheckpointMode::Selective), sbh * 34 / t);
  // Row "full activation recompute": 2sbh (the layer input only, whole on every tensor-parallel rank).
  EXPECT_EQ(figure(config, 8, false, CheckpointMode::Full), 2 * sbh);
  // Not a row of Table 2: with sp, Megatron-LM checkpoints the layer input as its [s/t, b, h] shard.
  EXPECT_EQ(figure(config, 8, true, CheckpointMode::Full), 2 * sbh / t);
  // The values themselves, as the paper's Table 2 evaluates for this shape (sbh = 25,165,824 B at b = 1).
  EXPECT_EQ(sbh, 25165824);
  EXPECT_EQ(figure(config, 8, false, CheckpointMode::None), 23 * sbh);
}

TEST(TensorParallelScenario, PipelineFigureIsPerMicroBatch) {
  TempConfigDir dir;
  const std::string config = dir.write("g.json", testing::gpt2_config_json(64, 4, 4, 512, 32));
  Scenario s;
  s.model.spec = "hf:" + config;
  s.strategy.kind = StrategyKind::Pipeline1F1B;
  s.strategy.stages = 2;
  s.strategy.dp = 2;
  s.strategy.tp = 2;
  s.strategy.micro_batches = 4;
  s.training.batch = 8;  // micro-batches of b = 2
  s.training.dtype = Dtype::Bf16;
  const ResolvedScenario resolved = resolve_scenario(s);
  EXPECT_EQ(resolved.settings.cluster.world, 8);
  const std::int64_t s_ = 32, h = 64, a = 4, t = 2, b = 2;
  EXPECT_EQ(activation_bytes_per_layer(resolved).value(), s_ * b * h * (10 * h * t + 24 * h + 5 * a * s_) / (h * t));
}

// Runs resolve_scenario and returns its message; "" when it resolves.
std::string refusal(Scenario s) {
  try {
    resolve_scenario(s);
  } catch (const ScenarioError& error) {
    return error.what();
  }
  return "";
}

// fsdp × tp (2-D) and mp × tp: world = tp × the strategy's ranks (fsdp: dp; mp: stages), ranks named tp fastest, and
// the scenario file (which the CLI flags and the GUI form write through scenario_fields.cpp) reads them back.
// reshard_after_forward = k regathers within k of FSDP's ranks, which under tp are the dp ranks of one tensor-parallel
// index: k must divide dp, not the world.
TEST(TensorParallelScenario, FsdpAndModelParallelLayOutTensorParallelGroups) {
  Scenario fsdp;
  fsdp.model.spec = "mlp:2x16";
  fsdp.strategy.kind = StrategyKind::Fsdp;
  fsdp.strategy.tp = 2;
  fsdp.strategy.sequence_parallel = true;
  fsdp.training.batch = 4;
  fsdp.cluster.world = 8;  // tp 2 × dp 4
  const ResolvedScenario resolved = resolve_scenario(fsdp);
  EXPECT_EQ(resolved.settings.cluster.world, 8);
  EXPECT_EQ(rank_label(resolved.settings, 5), "rank 5 (tp1·pp0·dp2)");
  const Scenario read_back = parse_scenario_json(scenario_to_json(resolved.settings), "fsdp-tp.json");
  EXPECT_EQ(read_back.strategy.kind, StrategyKind::Fsdp);
  EXPECT_EQ(read_back.strategy.tp, 2);
  EXPECT_TRUE(read_back.strategy.sequence_parallel);
  EXPECT_EQ(refusal(read_back), "");
  fsdp.strategy.reshard_after_forward = "4";  // dp 4: one group
  EXPECT_EQ(refusal(fsdp), "");
  fsdp.strategy.reshard_after_forward = "8";  // the world, but not a divisor of dp 4
  EXPECT_NE(refusal(fsdp).find("strategy.reshard_after_forward: 8 must divide"), std::string::npos) << refusal(fsdp);

  Scenario mp;
  mp.model.spec = "mlp:4x16";
  mp.strategy.kind = StrategyKind::ModelParallel;
  mp.strategy.tp = 2;
  mp.cluster.world = 4;  // tp 2 × 2 stages
  const ResolvedScenario stages = resolve_scenario(mp);
  EXPECT_EQ(stages.settings.strategy.stages, 2);
  EXPECT_EQ(rank_label(stages.settings, 3), "rank 3 (tp1·pp1·dp0)");
  mp.strategy.stages = 4;
  EXPECT_NE(refusal(mp).find("mp puts one stage on each device: stages (4) must equal world (2); with tp 2 the "
                             "strategy lays out world / tp = 2 ranks"),
            std::string::npos)
      << refusal(mp);
}

TEST(TensorParallelScenario, Refusals) {
  Scenario s;
  s.model.spec = "gpt2-tiny";  // 4 heads, h 128
  s.strategy.kind = StrategyKind::Single;
  s.strategy.sequence_parallel = true;
  EXPECT_NE(refusal(s).find("strategy.sequence_parallel: needs tp > 1"), std::string::npos) << refusal(s);
  s.strategy.sequence_parallel = false;
  s.strategy.tp = 2;
  s.cluster.world = 3;
  EXPECT_NE(refusal(s).find("cluster.world: world (3) must be tp × the strategy's ranks"), std::string::npos) << refusal(s);
  s.cluster.world = 4;
  EXPECT_NE(refusal(s).find("set world to tp (2)"), std::string::npos) << refusal(s);
  s.cluster.world = 0;
  s.strategy.tp = 3;
  EXPECT_NE(refusal(s).find("strategy.tp: tp (3) must divide the model's attention heads (4)"), std::string::npos)
      << refusal(s);
  s.strategy.kind = StrategyKind::Pipeline1F1B;
  s.strategy.tp = 2;
  s.strategy.stages = 2;
  s.strategy.dp = 2;
  s.cluster.world = 6;
  EXPECT_NE(refusal(s).find("world (6) must equal tp × stages × dp (2 × 2 × 2)"), std::string::npos) << refusal(s);
  s.cluster.world = 8;
  EXPECT_EQ(refusal(s), "");
  s.strategy.kind = StrategyKind::DataParallel;
  s.strategy.stages = s.strategy.dp = 0;
  s.cluster.world = 0;
  // DataParallel is one process: the refusal says why and names the strategy that has a process per rank.
  EXPECT_NE(refusal(s).find("strategy.tp: only applies to single, ddp, zero1, zero2, zero3, fsdp, mp, pp-gpipe and "
                            "pp-1f1b; torch.nn.DataParallel is one process driving every device from device 0's "
                            "replica"),
            std::string::npos)
      << refusal(s);
  EXPECT_NE(refusal(s).find(": use ddp"), std::string::npos) << refusal(s);

  Scenario mlp;
  mlp.strategy.kind = StrategyKind::Ddp;
  mlp.strategy.tp = 2;
  mlp.model.spec = "mlp:3x8";
  EXPECT_NE(refusal(mlp).find("3 Linear layers"), std::string::npos) << refusal(mlp);
  mlp.model.spec = "mlp:2x9";
  EXPECT_NE(refusal(mlp).find("tp (2) must divide the model's fc0's output features (9)"), std::string::npos)
      << refusal(mlp);
  mlp.model.spec = "mlp:2x8";
  EXPECT_EQ(refusal(mlp), "");
  // Sequence parallelism splits an MLP's batch rows (each sample one token): tp must divide them.
  mlp.strategy.sequence_parallel = true;
  mlp.training.batch = 3;
  EXPECT_NE(refusal(mlp).find("strategy.sequence_parallel: tp (2) must divide the rows it splits: the batch (3)"),
            std::string::npos)
      << refusal(mlp);
  mlp.training.batch = 4;
  EXPECT_EQ(refusal(mlp), "");
  const int world = mlp.cluster.world;
  mlp.strategy.kind = StrategyKind::Pipeline1F1B;  // 2 micro-batches of 2 rows split over tp 2: allowed; of 3, not
  mlp.cluster.world = 4;
  mlp.strategy.stages = 2;
  mlp.strategy.micro_batches = 2;
  mlp.model.spec = "mlp:4x8";
  EXPECT_EQ(refusal(mlp), "");
  mlp.training.batch = 6;
  EXPECT_NE(refusal(mlp).find("the batch (6) per micro-batch (3)"), std::string::npos) << refusal(mlp);
  mlp.strategy.kind = StrategyKind::Ddp;
  mlp.strategy.stages = 0;
  mlp.strategy.micro_batches = 1;
  mlp.cluster.world = world;
  mlp.model.spec = "mlp:2x8";
  mlp.training.batch = 4;
  mlp.strategy.sequence_parallel = false;
  mlp.model.spec = "vgg16";
  EXPECT_NE(refusal(mlp).find("has neither"), std::string::npos) << refusal(mlp);

  Scenario gpt2;  // vocabulary 50257: padded to 50432 (Megatron-LM's 128 × tp), so it splits
  gpt2.model.spec = "gpt2";
  gpt2.strategy.kind = StrategyKind::Single;
  gpt2.strategy.tp = 2;
  EXPECT_EQ(refusal(gpt2), "");
}

TEST(TensorParallelScenario, RankCoordinatesPutTensorParallelFastest) {
  // Megatron-LM: rank = (stage · dp + replica) · tp + tp index. pp-1f1b, 2 stages × dp 2 × tp 2.
  Scenario s;
  s.model.spec = "gpt2-tiny";
  s.strategy.kind = StrategyKind::Pipeline1F1B;
  s.strategy.stages = 2;
  s.strategy.dp = 2;
  s.strategy.tp = 2;
  const Scenario resolved = resolve_scenario(s).settings;
  for (int rank = 0; rank < 8; ++rank) {
    const auto c = rank_coordinates(resolved, rank).value();
    EXPECT_EQ(c.tp, rank % 2) << rank;
    EXPECT_EQ(c.dp, rank / 2 % 2) << rank;
    EXPECT_EQ(c.pp, rank / 4) << rank;
  }
  EXPECT_EQ(rank_label(resolved, 6), "rank 6 (tp0·pp1·dp1)");
  // ddp × tp 2 on 6 ranks: three replicas of one stage.
  Scenario ddp;
  ddp.model.spec = "gpt2-tiny";
  ddp.strategy.kind = StrategyKind::Ddp;
  ddp.strategy.tp = 2;
  ddp.cluster.world = 6;
  EXPECT_EQ(rank_range_label(resolve_scenario(ddp).settings, 2, 5), "ranks 2–5 (tp0·pp0·dp1 … tp1·pp0·dp2)");
  // Without tensor parallelism ranks keep their plain numbers.
  ddp.strategy.tp = 1;
  EXPECT_EQ(rank_label(resolve_scenario(ddp).settings, 5), "rank 5");
}

}  // namespace
}  // namespace shardscope
