// Tensor parallelism executed on CPU threads (issue 39): an MLP's Linear pairs split column- then row-parallel over
// 2 ranks, alone, under DDP, ZeRO, FSDP2 (2-D), naive model parallelism and pipelines, must train as `single` on the
// same global batch: the parameters the ranks hold, put together (each rank's slice of the whole weights), equal the
// single run's after 3 steps; the ranks of a tensor-parallel group report the single run's loss; replicas
// (row-parallel biases, data-parallel copies) are bit-identical; every byte the executor allocated is what the exact
// accounting predicted, rank by rank and phase by phase.
//
// Tolerance. Op for op, a tensor-parallel rank computes what `single` computes on the same inputs, except two sums
// split across the group and finished by the all-reduce: the row-parallel layer's output (Σ over its 16 inputs, as
// two halves of 8, rank 0's with the bias) and the column-parallel layer's input gradient (Σ over its 16 outputs).
// Each is an fp32 sum of n ≤ 17 terms in another order, which moves it by at most 2(n − 1)·u·Σ|terms| (Higham,
// "Accuracy and Stability of Numerical Algorithms" §4.2, the recursive-summation bound for either order; u = 2^-24),
// i.e. 1.9e-6 of the terms' absolute sum, and by about √n·u of it for random rounding. Everything downstream (weight
// gradients over the 16 samples, the optimizer) is the same arithmetic on inputs that differ by that much, so after
// s = 3 steps a parameter differs by about s · lr · (its gradient's change): SGD's lr 1e-2 times a gradient moved by
// ~1e-6 of its terms' absolute sum (terms: products of activations and weights below 1 here, weights uniform in
// ±1/√16) is ~1e-8 per step; Adam's update (lr 1e-3) depends on g / √v̂, a ratio the same relative change moves by
// as much. Expected: a few ulps of the parameters (one ulp of |p| in [0.125, 0.25) is 2^-26 = 1.5e-8). The assertion
// is expect_same_model's 1e-5 · max(1, |p|), the bound every executed strategy is held to, hundreds of times that.
// Data parallelism adds the same to every case: the replicas' gradients summed (one fp32 addition of two terms, DDP's
// all-reduce or FSDP2's reduce-scatter alike) and divided by 2 (exact), against single's sum over the 16 rows in one
// order: the same n = 16 reordered-sum bound. FSDP2 shards each tensor-parallel shard's rows over dp: the same
// elements, updated by the same arithmetic.
// Not bounded by this: an Adam element whose gradient is itself at the rounding level (|g| ~ 1e-6 of its terms)
// could flip its first update's sign and move by 2 · lr; each test prints the largest difference it saw.
#include <cstdio>
#include <functional>
#include <map>

#include "executed_run.h"

namespace shardscope::exec {
namespace {

using test::Executed;
using test::expect_trains_as;
using test::Variant;
using test::expect_measured_equals_predicted;
using test::expect_same_model;
using test::executable_scenario;

constexpr int kTp = 2;

const std::vector<Variant>& variants() {
  static const std::vector<Variant> all = {
      {"adam, mse", [](Scenario&) {}},
      {"sgd, mse", [](Scenario& s) { s.training.optimizer = OptimizerKind::Sgd; }},
      {"adam, cross-entropy", [](Scenario& s) { s.training.loss = LossKind::CrossEntropy; }},
  };
  return all;
}

// The loss each rank that computes one reports, against the losses of the reference's ranks it should repeat:
// every tensor-parallel rank r·tp + k computes the loss of base rank r.
void expect_losses(const ExecutionResult& run, const ExecutionResult& reference, double relative) {
  for (const RankExecution& rank : run.ranks) {
    if (!rank.loss) continue;
    const RankExecution& base = reference.ranks.at(static_cast<std::size_t>(rank.rank / kTp));
    ASSERT_TRUE(base.loss.has_value()) << "rank " << rank.rank;
    EXPECT_NEAR(*rank.loss, *base.loss, relative * std::max(1.0, std::fabs(*base.loss))) << "rank " << rank.rank;
  }
}

TEST(ExecutedTensorParallel, LinearPairsTrainAsSingle) {
  for (const auto& variant : variants())
    for (const char* model : {"mlp:4x16:relu", "mlp:2x16"}) {
      SCOPED_TRACE(std::string(variant.what) + ", " + model);
      Scenario reference_scenario = executable_scenario(model, StrategyKind::Single, 1, 16);
      variant.apply(reference_scenario);
      const Executed reference = test::execute_scenario(reference_scenario);
      Scenario s = executable_scenario(model, StrategyKind::Single, kTp, 16);
      s.strategy.tp = kTp;
      variant.apply(s);
      const Executed executed = test::execute_scenario(s);
      expect_trains_as(executed, reference, std::string("single × tp 2, ") + variant.what + ", " + model);
      // Both ranks end on the whole output (the row-parallel all-reduce), so both report the batch loss: the same
      // sums as single's up to the order of the two reordered sums above (1e-5 relative, as the parameters).
      expect_losses(executed.result, reference.result, 1e-5);
      for (const RankExecution& rank : executed.result.ranks) EXPECT_TRUE(rank.loss.has_value()) << rank.rank;
    }
}

// Every rank holds a slice of each Linear of a pair (tensor_parallel_params.h): a column-parallel layer half the rows
// of weight and bias, a row-parallel weight half of each row's columns and the whole bias; together each element once.
TEST(ExecutedTensorParallel, RanksHoldSlicesOfTheWholeParameters) {
  Scenario s = executable_scenario("mlp:2x16", StrategyKind::Single, kTp, 4);
  s.strategy.tp = kTp;
  s.training.steps = 1;
  const Executed executed = test::execute_scenario(s);
  ASSERT_EQ(executed.result.ranks.size(), 2u);
  for (const RankExecution& rank : executed.result.ranks) {
    std::int64_t held = 0;
    for (const ParameterPiece& piece : rank.parameters) held += piece.numel;
    // fc0: 8 × 16 weight rows + 8 bias; fc1: 16 × 8 weight columns + the whole 16 bias = 128 + 8 + 128 + 16.
    EXPECT_EQ(held, 280) << "rank " << rank.rank;
  }
  const ModelParameters model = assemble_model_parameters(executed.result.ranks);
  EXPECT_EQ(model.gap, "");
  EXPECT_EQ(model.disagreement, "");
  EXPECT_EQ(model.elements, 2 * (16 * 16 + 16));
}

// The data-parallel cases: every variant under DDP, ZeRO-1 to 3 and FSDP2 (2-D: fully_shard over each tensor-parallel
// index's data-parallel group) with the first variant only (one each keeps the run short); `check` gets single's run
// on the 16 samples and the dp 2 run of batch 8 (DistributedSampler's halves).
void for_each_data_parallel_case(
    const std::function<void(const Variant&, StrategyKind, const Executed& reference, const Executed& dp)>& check) {
  for (const auto& variant : variants())
    for (StrategyKind strategy :
         {StrategyKind::Ddp, StrategyKind::Zero1, StrategyKind::Zero2, StrategyKind::Zero3, StrategyKind::Fsdp}) {
      if (strategy != StrategyKind::Ddp && &variant != &variants().front()) continue;
      SCOPED_TRACE(std::string(variant.what) + ", " + strategy_name(strategy));
      Scenario reference_scenario = executable_scenario("mlp:4x16:relu", StrategyKind::Single, 1, 16);
      variant.apply(reference_scenario);
      Scenario dp_scenario = executable_scenario("mlp:4x16:relu", strategy, 2, 8);
      variant.apply(dp_scenario);
      check(variant, strategy, test::execute_scenario(reference_scenario), test::execute_scenario(dp_scenario));
    }
}

// Tensor parallelism 2 with sequence parallelism (an MLP's rows split over the pair outside its Linear pairs).
Scenario sequence_parallel(Scenario s) {
  s.strategy.tp = kTp;
  s.strategy.sequence_parallel = true;
  return s;
}

// Pipelines × tp 2 (with sequence parallelism when `sp`), every variant, GPipe and 1F1B: 2 stages of mlp:4x16 (each
// stage one Linear pair), 2 micro-batches, dp 1 or 2 replicas of batch 16 / dp against single's 16 (under sp a
// micro-batch of 8 rows, or 4, split over the pair).
void expect_pipelines_train_as_single(bool sp) {
  struct Layout {
    int stages, dp;
  };
  for (const auto& variant : variants())
    for (StrategyKind strategy : {StrategyKind::PipelineGPipe, StrategyKind::Pipeline1F1B})
      for (const Layout layout : {Layout{2, 1}, Layout{2, 2}}) {
        SCOPED_TRACE(std::string(variant.what) + ", " + strategy_name(strategy) + ", dp " + std::to_string(layout.dp));
        Scenario reference_scenario = executable_scenario("mlp:4x16:relu", StrategyKind::Single, 1, 16);
        variant.apply(reference_scenario);
        const Executed reference = test::execute_scenario(reference_scenario);
        Scenario s = executable_scenario("mlp:4x16:relu", strategy, layout.stages * layout.dp * kTp, 16 / layout.dp);
        s.strategy.stages = layout.stages;
        s.strategy.dp = layout.dp;
        s.strategy.micro_batches = 2;
        s.strategy.tp = kTp;
        if (sp) s = sequence_parallel(s);
        variant.apply(s);
        const Executed executed = test::execute_scenario(s);
        expect_trains_as(executed, reference,
                         strategy_name(strategy) + " 2 stages × dp " + std::to_string(layout.dp) + " × tp 2" +
                             (sp ? " + sp, " : ", ") + variant.what);
      }
}

TEST(ExecutedTensorParallel, DataParallelTimesTensorParallelTrainsAsSingleOnTheGlobalBatch) {
  // dp 2 replicas of batch 8 see the 16 samples single sees with batch 16; each replica is a tensor-parallel pair,
  // ranks 2r and 2r + 1 (tp fastest).
  for_each_data_parallel_case([](const Variant& variant, StrategyKind strategy, const Executed& reference,
                                 const Executed& dp) {
    Scenario s = executable_scenario("mlp:4x16:relu", strategy, 2 * kTp, 8);
    s.strategy.tp = kTp;
    variant.apply(s);
    const Executed executed = test::execute_scenario(s);
    expect_trains_as(executed, reference, strategy_name(strategy) + " 2 × tp 2, " + variant.what);
    expect_losses(executed.result, dp.result, 1e-5);
  });
}

TEST(ExecutedTensorParallel, PipelineTimesTensorParallelTrainsAsSingle) { expect_pipelines_train_as_single(false); }

// Naive model parallelism (mp: a pipeline of one micro-batch, every layer's output sent whole to the next stage) ×
// tp 2 (with sequence parallelism when `sp`), every variant: 2 stages of mlp:4x16, each one Linear pair, on batch 16
// against single's 16; the same arithmetic as the pipelines' per op, so the same tolerance.
void expect_model_parallel_trains_as_single(bool sp) {
  for (const auto& variant : variants()) {
    SCOPED_TRACE(variant.what);
    Scenario reference_scenario = executable_scenario("mlp:4x16:relu", StrategyKind::Single, 1, 16);
    variant.apply(reference_scenario);
    const Executed reference = test::execute_scenario(reference_scenario);
    Scenario s = executable_scenario("mlp:4x16:relu", StrategyKind::ModelParallel, 2 * kTp, 16);
    s.strategy.stages = 2;
    s.strategy.tp = kTp;
    if (sp) s = sequence_parallel(s);
    variant.apply(s);
    const Executed executed = test::execute_scenario(s);
    expect_trains_as(executed, reference, std::string("mp 2 stages × tp 2") + (sp ? " + sp, " : ", ") + variant.what);
  }
}

TEST(ExecutedTensorParallel, ModelParallelTimesTensorParallelTrainsAsSingle) { expect_model_parallel_trains_as_single(false); }

// A pair cut by a stage boundary (3 stages of 4 Linears): the column-parallel half sends its split activation to the
// same tensor-parallel rank of the next stage, which runs the row-parallel half.
TEST(ExecutedTensorParallel, PairAcrossAStageBoundaryTrainsAsSingle) {
  Scenario reference_scenario = executable_scenario("mlp:4x16:relu", StrategyKind::Single, 1, 16);
  const Executed reference = test::execute_scenario(reference_scenario);
  Scenario s = executable_scenario("mlp:4x16:relu", StrategyKind::Pipeline1F1B, 3 * kTp, 16);
  s.strategy.stages = 3;
  s.strategy.micro_batches = 2;
  s.strategy.tp = kTp;
  const Executed executed = test::execute_scenario(s);
  expect_trains_as(executed, reference, "pp-1f1b 3 stages × tp 2");
}

// Sequence parallelism on the Linear pairs (training/model_pass_sequence_parallel.cpp): each tensor-parallel rank
// holds b/2 of the batch rows outside the pairs (its own samples, loaded by itself), all-gathers them before each
// column-parallel Linear, reduce-scatters each row-parallel Linear's output, adds that Linear's bias to its own rows
// and all-reduces the bias's partial gradient over the group. Tolerance: besides the two split sums above (the
// row-parallel output, now reduce-scattered: the same two halves of 8 per element; the column-parallel input
// gradient, reduce-scattered alike), the rows inside a pair come in another order (rank 0's samples 0, 2, 4, ...
// then rank 1's 1, 3, 5, ...), so each weight gradient (Σ over the 16 rows) and the row-parallel bias gradient (two
// partial sums of 8 rows, all-reduced) is the same fp32 sum of n = 16 terms in another order: the same
// 2(n − 1)·u·Σ|terms| bound as above (1.8e-6 of the terms' absolute sum), so the same expected few ulps and the same
// 1e-5 · max(1, |p|) assertion. The bias added after the reduction instead of before changes one rounding of each
// output element (one more u). The loss's split is exact: with t = 2 the scale 1/2 and its products are powers of
// two, so 2(o − y)/(N/2) × 1/2 and −(1/2)/(b/2) are single's 2(o − y)/N and −1/b bit for bit.
namespace {

// The losses of a tensor-parallel group's ranks, summed: each is its rows' share of the whole batch's mean, so the
// sum is the loss of the base rank (`reference` rank r for the group of ranks r·tp..), up to the rounding of the two
// shares' fp32 sum and the reordered sums above (1e-5 relative, as the parameters).
void expect_group_losses(const ExecutionResult& run, const ExecutionResult& reference) {
  std::map<int, double> sums;
  for (const RankExecution& rank : run.ranks)
    if (rank.loss) sums[rank.rank / kTp] += *rank.loss;
  ASSERT_FALSE(sums.empty());
  for (const auto& [base_rank, sum] : sums) {
    const RankExecution& base = reference.ranks.at(static_cast<std::size_t>(base_rank));
    ASSERT_TRUE(base.loss.has_value()) << "rank " << base_rank;
    EXPECT_NEAR(sum, *base.loss, 1e-5 * std::max(1.0, std::fabs(*base.loss))) << "group of base rank " << base_rank;
  }
}

}  // namespace

TEST(ExecutedSequenceParallel, LinearPairsTrainAsSingle) {
  for (const auto& variant : variants())
    for (const char* model : {"mlp:4x16:relu", "mlp:2x16"}) {
      SCOPED_TRACE(std::string(variant.what) + ", " + model);
      Scenario reference_scenario = executable_scenario(model, StrategyKind::Single, 1, 16);
      variant.apply(reference_scenario);
      const Executed reference = test::execute_scenario(reference_scenario);
      Scenario s = sequence_parallel(executable_scenario(model, StrategyKind::Single, kTp, 16));
      variant.apply(s);
      const Executed executed = test::execute_scenario(s);
      expect_trains_as(executed, reference, std::string("single × tp 2 + sp, ") + variant.what + ", " + model);
      for (const RankExecution& rank : executed.result.ranks) EXPECT_TRUE(rank.loss.has_value()) << rank.rank;
      expect_group_losses(executed.result, reference.result);
    }
}

TEST(ExecutedSequenceParallel, DataParallelTimesSequenceParallelTrainsAsSingle) {
  // dp 2 replicas of batch 8 (4 rows a tensor-parallel rank) against single's 16.
  for_each_data_parallel_case([](const Variant& variant, StrategyKind strategy, const Executed& reference,
                                 const Executed& dp) {
    Scenario s = sequence_parallel(executable_scenario("mlp:4x16:relu", strategy, 2 * kTp, 8));
    variant.apply(s);
    const Executed executed = test::execute_scenario(s);
    expect_trains_as(executed, reference, strategy_name(strategy) + " 2 × tp 2 + sp, " + variant.what);
    expect_group_losses(executed.result, dp.result);
  });
}

TEST(ExecutedSequenceParallel, PipelineTimesSequenceParallelTrainsAsSingle) { expect_pipelines_train_as_single(true); }

TEST(ExecutedSequenceParallel, ModelParallelTimesSequenceParallelTrainsAsSingle) { expect_model_parallel_trains_as_single(true); }

// A pair cut by a stage boundary (3 stages of 4 Linears): the column-parallel half's output, all rows of half the
// features, goes to the same tensor-parallel rank of the next stage.
TEST(ExecutedSequenceParallel, PairAcrossAStageBoundaryTrainsAsSingle) {
  const Executed reference = test::execute_scenario(executable_scenario("mlp:4x16:relu", StrategyKind::Single, 1, 16));
  Scenario s = sequence_parallel(executable_scenario("mlp:4x16:relu", StrategyKind::Pipeline1F1B, 3 * kTp, 16));
  s.strategy.stages = 3;
  s.strategy.micro_batches = 2;
  const Executed executed = test::execute_scenario(s);
  expect_trains_as(executed, reference, "pp-1f1b 3 stages × tp 2 + sp");
}

}  // namespace
}  // namespace shardscope::exec
