// The pipeline lowerings executed on CPU threads: naive model parallelism, GPipe and 1F1B (also replicated over
// data-parallel groups, with or without Megatron's distributed optimizer) must train exactly as one rank on the same
// global batch: each stage's layers, assembled across ranks, equal the single run's model after several steps;
// replicas of a stage hold bit-identical parameters; the loss a last stage reports is its replica's batch loss; and
// every byte the executor allocated is what the exact accounting predicted.
#include "executed_run.h"
#include "strategy/megatron_grad_buffer.h"

namespace shardscope::exec {
namespace {

using test::Executed;
using test::Variant;
using test::expect_measured_equals_predicted;
using test::expect_same_model;

Executed run(const Scenario& s) { return test::execute_scenario(s); }

// `stages` × `dp` ranks, each replica taking `batch` samples per step (the per-replica batch of the scenario).
Scenario pipeline(StrategyKind strategy, const std::string& model, int stages, int dp, int micro_batches, int batch) {
  Scenario s = test::executable_scenario(model, strategy, stages * dp, batch);
  s.strategy.stages = stages;
  s.strategy.dp = dp;
  s.strategy.micro_batches = micro_batches;
  return s;
}

Scenario single(const std::string& model, int batch) { return test::executable_scenario(model, StrategyKind::Single, 1, batch); }

const std::vector<Variant>& variants() {
  static const std::vector<Variant> all = {
      {"adam, mse", [](Scenario&) {}},
      {"sgd, mse", [](Scenario& s) { s.training.optimizer = OptimizerKind::Sgd; }},
      {"adam, cross-entropy", [](Scenario& s) { s.training.loss = LossKind::CrossEntropy; }},
      {"sgd, cross-entropy", [](Scenario& s) {
         s.training.optimizer = OptimizerKind::Sgd;
         s.training.loss = LossKind::CrossEntropy;
       }},
  };
  return all;
}

// The ranks holding the last stage: their loss is the mean loss of their replica's batch.
std::vector<double> last_stage_losses(const ExecutionResult& result, int stages, int dp) {
  std::vector<double> losses;
  for (int replica = 0; replica < dp; ++replica) {
    const RankExecution& rank = result.ranks.at(static_cast<std::size_t>((stages - 1) * dp + replica));
    EXPECT_TRUE(rank.loss.has_value()) << "rank " << rank.rank;
    losses.push_back(rank.loss.value_or(0));
  }
  return losses;
}

void expect_near_relative(double actual, double expected) {
  EXPECT_NEAR(actual, expected, 1e-5 * std::max(1.0, std::fabs(expected)));
}

TEST(ExecutedPipelines, ModelParallelTrainsAsOneRank) {
  for (const auto& variant : variants())
    for (const char* model : {"mlp:4x16:relu", "mlp:5x16:relu"}) {
      Scenario reference_scenario = single(model, 16);
      variant.apply(reference_scenario);
      const Executed reference = run(reference_scenario);
      for (int stages : {2, 3}) {
        SCOPED_TRACE(std::string(variant.what) + ", " + model + ", mp over " + std::to_string(stages));
        Scenario s = pipeline(StrategyKind::ModelParallel, model, stages, 1, 1, 16);
        variant.apply(s);
        const Executed executed = run(s);
        expect_same_model(executed.result, reference.result);
        expect_near_relative(last_stage_losses(executed.result, stages, 1)[0], reference.result.ranks[0].loss.value_or(-1));
        expect_measured_equals_predicted(executed);
      }
    }
}

TEST(ExecutedPipelines, GPipeAnd1F1BTrainAsOneRankOnTheWholeBatch) {
  for (const auto& variant : variants()) {
    Scenario reference_scenario = single("mlp:5x16:relu", 16);
    variant.apply(reference_scenario);
    const Executed reference = run(reference_scenario);
    for (StrategyKind strategy : {StrategyKind::PipelineGPipe, StrategyKind::Pipeline1F1B})
      for (int stages : {2, 3})
        for (int micro : {1, 2, 4}) {
          SCOPED_TRACE(std::string(variant.what) + ", " + strategy_name(strategy) + ", " + std::to_string(stages) +
                       " stages, " + std::to_string(micro) + " micro-batches");
          Scenario s = pipeline(strategy, "mlp:5x16:relu", stages, 1, micro, 16);
          variant.apply(s);
          const Executed executed = run(s);
          expect_same_model(executed.result, reference.result);
          // The mean of the micro-batch losses of equal size is the batch's mean loss.
          expect_near_relative(last_stage_losses(executed.result, stages, 1)[0], reference.result.ranks[0].loss.value_or(-1));
          expect_measured_equals_predicted(executed);
        }
  }
}

TEST(ExecutedPipelines, PipelineReplicasTrainAsOneRankOnTheGlobalBatch) {
  // dp replicas of batch 8 see, between them, the 16 samples one rank sees with batch 16 (DistributedSampler over
  // each stage's DP group); Megatron scales the grad buffer by 1/dp and sums it, so the update is the 16-sample one.
  // dp 3 × batch 6 against 18: stage buffers that do not split evenly cut parameters at shard boundaries and pad.
  struct Layout {
    int stages, dp, batch;
  };
  for (const auto& variant : variants())
    for (const Layout layout : {Layout{2, 2, 8}, Layout{3, 2, 8}, Layout{2, 3, 6}}) {
      Scenario reference_scenario = single("mlp:4x16:relu", layout.batch * layout.dp);
      variant.apply(reference_scenario);
      const Executed reference = run(reference_scenario);
      Scenario ddp_scenario = shardscope::testing::make("mlp:4x16:relu", StrategyKind::Ddp, layout.dp, layout.batch, AccountingMode::Exact);
      ddp_scenario.training.steps = 3;
      variant.apply(ddp_scenario);
      const Executed ddp = run(ddp_scenario);  // its rank r loads the samples of pipeline replica r
      for (StrategyKind strategy : {StrategyKind::PipelineGPipe, StrategyKind::Pipeline1F1B})
        for (int zero : {0, 1}) {
          SCOPED_TRACE(std::string(variant.what) + ", " + strategy_name(strategy) + ", " + std::to_string(layout.stages) +
                       " stages × dp " + std::to_string(layout.dp) + (zero ? ", distributed optimizer" : ""));
          Scenario s = pipeline(strategy, "mlp:4x16:relu", layout.stages, layout.dp, 2, layout.batch);
          s.strategy.dp_zero_stage = zero;
          variant.apply(s);
          const Executed executed = run(s);
          expect_same_model(executed.result, reference.result);
          for (int stage = 0; stage < layout.stages; ++stage)
            for (int replica = 1; replica < layout.dp; ++replica)
              EXPECT_EQ(executed.result.ranks[static_cast<std::size_t>(stage * layout.dp + replica)].param_checksum,
                        executed.result.ranks[static_cast<std::size_t>(stage * layout.dp)].param_checksum)
                  << "stage " << stage << " replica " << replica;
          const std::vector<double> losses = last_stage_losses(executed.result, layout.stages, layout.dp);
          for (int replica = 0; replica < layout.dp; ++replica)
            expect_near_relative(losses[static_cast<std::size_t>(replica)],
                                 ddp.result.ranks[static_cast<std::size_t>(replica)].loss.value_or(-1));
          expect_measured_equals_predicted(executed);
        }
    }
}

TEST(ExecutedPipelines, PyTorch18ModelParallelAccumulatesIntoZeroedGrad) {
  // 1.x zero_grad zeroes .grad in place: from the second step on, the stage's gradients are added into it.
  Scenario reference_scenario = single("mlp:4x16:relu", 16);
  reference_scenario.accounting.mode = AccountingMode::PyTorch18;
  const Executed reference = run(reference_scenario);
  Scenario s = pipeline(StrategyKind::ModelParallel, "mlp:4x16:relu", 2, 1, 1, 16);
  s.accounting.mode = AccountingMode::PyTorch18;
  expect_same_model(run(s).result, reference.result);
}

TEST(MegatronGradBuffer, ReverseOrderLayoutAndShardPieces) {
  // Three parameters of 5, 3 and 4 elements: the buffer holds them last first, [p2: 0-4) [p1: 4-7) [p0: 7-12).
  std::vector<ParamSlot> slots(3);
  slots[0].numel = 5;
  slots[1].numel = 3;
  slots[2].numel = 4;
  const std::vector<std::int64_t> offsets = megatron_grad_offsets(slots);
  EXPECT_EQ(offsets, (std::vector<std::int64_t>{7, 4, 0}));
  // Buffer elements [3, 9): the last element of p2, all of p1, the first two of p0.
  const auto pieces = megatron_shard_pieces(slots, offsets, 3, 6);
  ASSERT_EQ(pieces.size(), 3u);
  EXPECT_EQ(pieces[0].slot, 2u);
  EXPECT_EQ(pieces[0].first_element, 3);
  EXPECT_EQ(pieces[0].numel, 1);
  EXPECT_EQ(pieces[0].buffer_element, 3);
  EXPECT_EQ(pieces[1].slot, 1u);
  EXPECT_EQ(pieces[1].first_element, 0);
  EXPECT_EQ(pieces[1].numel, 3);
  EXPECT_EQ(pieces[1].buffer_element, 4);
  EXPECT_EQ(pieces[2].slot, 0u);
  EXPECT_EQ(pieces[2].first_element, 0);
  EXPECT_EQ(pieces[2].numel, 2);
  EXPECT_EQ(pieces[2].buffer_element, 7);
  // A shard of padding only (the buffer padded from 12 to 15 elements) holds no piece.
  EXPECT_TRUE(megatron_shard_pieces(slots, offsets, 12, 3).empty());
}

}  // namespace
}  // namespace shardscope::exec
