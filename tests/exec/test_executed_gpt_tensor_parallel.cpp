// A GPT-2 model under tensor parallelism executed on CPU threads (issue 39): each rank runs its shard of every block
// (its heads, its MLP columns) in parts with the tensor-parallel collectives between them, the vocabulary-parallel
// embedding and cross-entropy on its vocab/tp ids, with or without sequence parallelism; alone, under DDP and under
// 1F1B, it must train as `single` on the
// same global batch (the ranks' slices of every parameter put together equal the single run's after 2 steps), every
// tensor-parallel rank reports the single run's loss, and every byte the executor allocated is what the exact
// accounting predicted, rank by rank and phase by phase.
//
// Tolerance: expect_same_model's 1e-5 · max(1, |p|), as every executed strategy. Against `single`, a rank's
// arithmetic differs in the sums the all-reduces finish: each block's attn.c_proj and mlp.c_proj outputs (sums over
// h = 128 and 4h = 512 products, split in two halves), the two input gradients of its column-parallel layers, the
// embedding's lookup (one non-zero term) and lm_head's input gradient (a sum over the vocabulary, 512 terms, split in
// two), and the cross-entropy's Σ exp (2 terms in fp32). Each moves by at most 2(n − 1)·u of its terms' absolute sum
// (Higham §4.2; n ≤ 512, u = 2^-24: 6e-5 of it, about √n·u = 1.3e-6 in practice). SGD (lr 1e-2, 2 steps) moves a
// parameter by lr times its gradient's change, ~1e-8 here. Not Adam: c_attn's key bias has a gradient that is zero
// but for rounding (softmax ignores a shift shared by a row's scores), and Adam's m/√v turns rounding noise into
// steps of up to lr: 7e-6 apart after 2 steps on this machine (DDP without tp: 3.4e-6), too close to 1e-5 to hold
// on another CPU's BLAS. Each case prints the largest difference it saw.
#include <cstdio>

#include "executed_run.h"

namespace shardscope::exec {
namespace {

using test::Executed;
using test::expect_trains_as;

constexpr int kTp = 2;
const std::string kTinyNoDropout = "hf:" SHARDSCOPE_SOURCE_DIR "/tests/torch/gpt2-tiny-no-dropout/config.json";
const std::string kTiny = "hf:" SHARDSCOPE_SOURCE_DIR "/assets/models/gpt2-tiny/config.json";

// seq 16, 2 steps with SGD, cross-entropy; `batch` samples per rank (per replica for pipelines, 2 micro-batches).
Scenario gpt(const std::string& model, StrategyKind strategy, int world, int batch) {
  Scenario s = shardscope::testing::make(model, strategy, world, batch, AccountingMode::Exact);
  s.training.seq = 16;
  s.training.steps = 2;
  s.training.loss = LossKind::CrossEntropy;
  s.training.optimizer = OptimizerKind::Sgd;
  if (strategy == StrategyKind::Pipeline1F1B) s.strategy.micro_batches = 2;
  return s;
}

Scenario with_tp(Scenario s, bool sequence_parallel = false) {
  s.strategy.tp = kTp;
  s.strategy.sequence_parallel = sequence_parallel;
  s.cluster.world *= kTp;
  return s;
}

std::string named(const std::string& what, bool sequence_parallel) { return what + (sequence_parallel ? " + sp" : ""); }

// Every rank that reports a loss reports the single run's (each step's, on a rank that computes the loss), within the
// same 1e-5 relative.
void expect_single_losses(const ExecutionResult& run, const ExecutionResult& single) {
  const std::vector<double>& expected = single.ranks.at(0).step_losses;
  ASSERT_FALSE(expected.empty());
  int reporting = 0;
  for (const RankExecution& rank : run.ranks) {
    if (rank.step_losses.empty()) continue;
    ++reporting;
    ASSERT_EQ(rank.step_losses.size(), expected.size()) << "rank " << rank.rank;
    for (std::size_t s = 0; s < expected.size(); ++s)
      EXPECT_NEAR(rank.step_losses[s], expected[s], 1e-5 * std::max(1.0, std::fabs(expected[s])))
          << "rank " << rank.rank << " step " << s + 1;
  }
  EXPECT_GE(reporting, kTp);  // the whole tensor-parallel group holding the loss reports it
}

// With sequence parallelism (sp) a rank also holds only its half of the tokens outside the tensor-parallel regions:
// its norms, residuals and dropout on them, all-gathers and reduce-scatters around each region, the norms' and c_proj
// biases' gradients (partial over its tokens) all-reduced, the embedding's output reduce-scattered and the head's
// input all-gathered (strategy/tensor_parallel_split.h); the same sums, so the same bounds.
TEST(ExecutedGptTensorParallel, TensorParallelAloneTrainsAsSingle) {
  const Executed single = test::execute_scenario(gpt(kTinyNoDropout, StrategyKind::Single, 1, 4));
  const char* names[] = {"none", "selective", "full"};
  for (const bool sp : {false, true})
    for (CheckpointMode mode : {CheckpointMode::None, CheckpointMode::Selective, CheckpointMode::Full}) {
      const std::string what =
          named(std::string("gpt2 single × tp 2, checkpoint ") + names[static_cast<int>(mode)], sp);
      SCOPED_TRACE(what);
      Scenario s = with_tp(gpt(kTinyNoDropout, StrategyKind::Single, 1, 4), sp);
      s.training.checkpoint = mode;
      const Executed run = test::execute_scenario(s);
      expect_trains_as(run, single, what);
      expect_single_losses(run.result, single.result);
    }
}

// DDP over 2 replicas of a tp 2 group (world 4: ranks 2r, 2r + 1 are replica r's), 2 samples each; 1F1B over 2 stages
// of tp 2 (world 4), 4 samples in 2 micro-batches.
TEST(ExecutedGptTensorParallel, UnderDdpAndPipelinesTrainsAsSingle) {
  const Executed single = test::execute_scenario(gpt(kTinyNoDropout, StrategyKind::Single, 1, 4));
  for (const bool sp : {false, true}) {
    const Executed ddp = test::execute_scenario(with_tp(gpt(kTinyNoDropout, StrategyKind::Ddp, 2, 2), sp));
    expect_trains_as(ddp, single, named("gpt2 ddp 2 × tp 2", sp));
    const Executed pipeline = test::execute_scenario(with_tp(gpt(kTinyNoDropout, StrategyKind::Pipeline1F1B, 2, 4), sp));
    expect_trains_as(pipeline, single, named("gpt2 pp-1f1b 2 stages × tp 2", sp));
  }
}

// Dropout on (gpt2-tiny: 0.1 at the embedding, attention and residuals): a rank's attention heads draw their masks
// where those heads lie in the whole layer's mask, the residual and embedding masks are the whole layer's on every
// rank, so tp 2 trains as `single` with the same masks.
// Under sp the embedding's and residuals' masks of a rank's tokens are drawn where those tokens lie in the pass.
TEST(ExecutedGptTensorParallel, WithDropoutTrainsAsSingle) {
  const Executed single = test::execute_scenario(gpt(kTiny, StrategyKind::Single, 1, 4));
  for (const bool sp : {false, true})
    for (CheckpointMode mode : {CheckpointMode::None, CheckpointMode::Full}) {  // recomputation draws the same masks
      Scenario s = with_tp(gpt(kTiny, StrategyKind::Single, 1, 4), sp);
      s.training.checkpoint = mode;
      const Executed run = test::execute_scenario(s);
      expect_trains_as(run, single, named(std::string("gpt2 (dropout 0.1) single × tp 2, checkpoint ") +
                                              (mode == CheckpointMode::None ? "none" : "full"), sp));
      expect_single_losses(run.result, single.result);
    }
}

}  // namespace
}  // namespace shardscope::exec
