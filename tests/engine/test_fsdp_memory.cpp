// fsdp (FSDP2's fully_shard) by hand: L × Linear(D) on N ranks, each Linear one unit, exact accounting. Every
// expectation is a formula of L, D, N, the batch and the prefetch, derived in the comments from FSDP2's rules
// (strategy/fsdp.cpp), never read from the plan.
//
// Notation: S = ⌈D/N⌉ rows a shard; P = S(D + 1) the padded shard of one Linear (weight S × D, bias S); U = N·P its
// padded unsharded size; W = D(D + 1) its real size; r_k = clamp(D − kS, 0, S) rank k's real rows; A = batch·D one
// activation; fp32: 4 B an element. The cuBLAS workspaces (32 MiB for the main and the autograd thread, 1 MiB
// cuBLASLt for the main one, sm90) are temporaries and are added where they are alive.
#include <gtest/gtest.h>

#include <algorithm>

#include "run_helpers.h"

namespace shardscope {
namespace {

using testing::make;
using testing::run;

constexpr std::int64_t kBatch = 8;
constexpr Bytes kWorkspaces = 2 * 32 * kMiB + 1 * kMiB;

struct Sizes {
  std::int64_t L, D, N, S, P, U, W, A;
  std::int64_t rows(int rank) const { return std::clamp<std::int64_t>(D - rank * S, 0, S); }
};

Sizes sizes(std::int64_t layers, std::int64_t width, std::int64_t world) {
  const std::int64_t s = (width + world - 1) / world;
  const std::int64_t p = s * (width + 1);
  return {layers, width, world, s, p, world * p, width * (width + 1), kBatch * width};
}

Scenario fsdp(std::int64_t layers, std::int64_t width, int world) {
  auto s = make("mlp:" + std::to_string(layers) + "x" + std::to_string(width), StrategyKind::Fsdp, world,
                static_cast<int>(kBatch), AccountingMode::Exact);
  s.training.steps = 2;
  s.training.optimizer = OptimizerKind::Adam;
  return s;
}

int count_collectives(const Program& program, CollectiveKind kind, int step) {
  int n = 0;
  int at_step = 0;
  for (const Op& op : program.ops) {
    if (op.kind == OpKind::Phase && op.phase == "wrapped") at_step = 1;
    if (op.kind == OpKind::Phase && op.phase == "after_step") ++at_step;
    n += at_step == step && op.kind == OpKind::Collective && op.collective_kind == kind;
  }
  return n;
}

// Per rank: the padded shards of every parameter (4LP, the same on every rank: the padded chunk is allocated even
// where a rank's real rows are fewer), their gradients likewise (each unit's reduce-scatter output is its padded
// shard), and Adam's two moments for the unpadded local rows only (8L·r_k(D + 1): rank-dependent when N ∤ D).
TEST(FsdpByHand, ResidentStateIsPaddedShards) {
  for (int world : {4, 3}) {
    const Sizes z = sizes(4, 1000, world);
    const auto r = run(fsdp(z.L, z.D, world));
    for (int rank = 0; rank < world; ++rank) {
      const auto& wrapped = r.phase(rank, "wrapped", 0).by_category;
      const auto& before = r.phase(rank, "before_step", 2).by_category;
      const auto& after = r.phase(rank, "after_step", 2).by_category;
      EXPECT_EQ(wrapped[Category::Parameters], 4 * z.L * z.P) << "world " << world << " rank " << rank;
      EXPECT_EQ(after[Category::Parameters], 4 * z.L * z.P) << "world " << world << " rank " << rank;
      EXPECT_EQ(before[Category::Gradients], 4 * z.L * z.P) << "world " << world << " rank " << rank;
      EXPECT_EQ(after[Category::Gradients], 4 * z.L * z.P) << "world " << world << " rank " << rank;
      EXPECT_EQ(after[Category::OptimizerState], 8 * z.L * z.rows(rank) * (z.D + 1)) << "world " << world << " rank " << rank;
      // Nothing gathered and no collective buffer outlives the backward.
      EXPECT_EQ(before[Category::GatheredParameters], 0);
      EXPECT_EQ(before[Category::CommunicationBuffers], 0);
    }
  }
  // The figures the hand count gives: N = 4: 4,004,000 / 4,004,000 / 8,008,000; N = 3: 5,349,344 B of shards on
  // every rank, Adam 10,698,688 B on ranks 0–1 (334 rows) and 10,634,624 B on rank 2 (332 rows).
  const auto three = run(fsdp(4, 1000, 3));
  EXPECT_EQ(three.phase(0, "after_step", 2).by_category[Category::Parameters], 5'349'344);
  EXPECT_EQ(three.phase(1, "after_step", 2).by_category[Category::OptimizerState], 10'698'688);
  EXPECT_EQ(three.phase(2, "after_step", 2).by_category[Category::OptimizerState], 10'634'624);
}

// The transient peak. The issue expected "one (or prefetch + 1) unsharded unit more than the steady state"; FSDP2
// holds more, for three reasons of its own (fsdp.cpp): a prefetched unit is held as its flat all-gather output, not yet
// copied out; the previous unit's reduce-scatter input stays alive until the next reduce-scatter is issued
// (comm_ctx.reduce_scatter_state); and the unit in backward has its full-size gradients until its own reduce-scatter.
// With prefetch p (1 ≤ p ≤ L − 2) the peak comes at step 2 (Adam's state exists) in layer p's backward, right after
// its bias gradient, when the p units below it have been prefetched. Alive then:
//   parameters 4LP and Adam 8L·r(D + 1) (the steady state);
//   gathered: unit p unsharded, 4U;
//   communication: p flat outputs (units p−1 … 0) and unit p+1's retained reduce-scatter input, (p + 1)·4U;
//   gradients: unit p's full weight and bias gradients 4W, and the sharded gradients of the L − 1 − p units above, 4P each;
//   activations: x, y and the outputs of layers 0 … p−1 that layers 1 … p saved, 4A(2 + p); temporaries: the loss
//   (2.x keeps the mse result input-sized; a temporary, since no backward saves it: training/model_pass.cpp), layer p's
//   grad input and incoming gradient, 3·4A, and the backward seed 4 B.
// Sum: 4LP + 8L·r(D+1) + 4U(2 + p) + 4W + 4P(L − 1 − p) + 4A(5 + p) + 4.
Bytes backward_peak(const Sizes& z, int rank, std::int64_t p) {
  return 4 * z.L * z.P + 8 * z.L * z.rows(rank) * (z.D + 1) + 4 * z.U * (2 + p) + 4 * z.W + 4 * z.P * (z.L - 1 - p) +
         4 * z.A * (5 + p) + 4;
}

TEST(FsdpByHand, BackwardPeakIsNotOneUnitMore) {
  for (int world : {4, 3}) {
    const Sizes z = sizes(4, 1000, world);
    const auto r = run(fsdp(z.L, z.D, world));
    for (int rank = 0; rank < world; ++rank) {
      const auto& memory = r.report.ranks[static_cast<std::size_t>(rank)];
      EXPECT_EQ(memory.peak_allocated, backward_peak(z, rank, 1) + kWorkspaces) << "world " << world << " rank " << rank;
      const auto& at_peak = memory.peak_by_category;
      EXPECT_EQ(at_peak[Category::GatheredParameters], 4 * z.U) << "world " << world;
      EXPECT_EQ(at_peak[Category::CommunicationBuffers], 2 * 4 * z.U) << "world " << world;
      EXPECT_EQ(at_peak[Category::Gradients], 4 * z.W + 2 * 4 * z.P) << "world " << world;
      EXPECT_EQ(at_peak[Category::Activations], 3 * 4 * z.A) << "world " << world;
      EXPECT_EQ(at_peak[Category::Temporaries], 3 * 4 * z.A + 4 + kWorkspaces) << "world " << world;
    }
  }
  // N = 4: 30,222,004 B besides the workspaces; N = 3: 34,954,732 (ranks 0–1) and 34,890,668 (rank 2).
  EXPECT_EQ(backward_peak(sizes(4, 1000, 4), 0, 1), 30'222'004);
  EXPECT_EQ(backward_peak(sizes(4, 1000, 3), 0, 1), 34'954'732);
  EXPECT_EQ(backward_peak(sizes(4, 1000, 3), 2, 1), 34'890'668);
}

// Each unit prefetched further ahead (set_modules_to_backward_prefetch) moves the peak one layer up: one more flat
// output (4U) and one more saved activation (4A), one sharded gradient fewer above it (−4P). L = 6, N = 4:
// 38,230,004 / 41,265,004 / 44,300,004 B at prefetch 1 / 2 / 3.
TEST(FsdpByHand, EachPrefetchedUnitAddsItsFlatOutput) {
  const Sizes z = sizes(6, 1000, 4);
  Bytes previous = 0;
  for (int prefetch : {1, 2, 3}) {
    auto s = fsdp(z.L, z.D, 4);
    s.strategy.prefetch = prefetch;
    const auto r = run(s);
    EXPECT_EQ(r.report.ranks[0].peak_allocated, backward_peak(z, 0, prefetch) + kWorkspaces) << "prefetch " << prefetch;
    EXPECT_EQ(r.report.ranks[0].peak_by_category[Category::CommunicationBuffers], (prefetch + 1) * 4 * z.U);
    if (previous > 0) {
      EXPECT_EQ(r.report.ranks[0].peak_allocated - previous, 4 * z.U - 4 * z.P + 4 * z.A);
    }
    previous = r.report.ranks[0].peak_allocated;
  }
  EXPECT_EQ(backward_peak(z, 0, 1), 38'230'004);
  EXPECT_EQ(backward_peak(z, 0, 3), 44'300'004);
}

// reshard_after_forward=false keeps every unit unsharded from its forward to its backward: at `forward` all L units
// are gathered (4LU; N = 4: 16,016,000 B, N = 3: 16,048,032 B), where true holds none, and each unit is all-gathered
// once a step instead of twice. The peak moves to the forward, at the last unit's copy-out (step 2, gradients freed by
// zero_grad): 4LP + 8L·r(D+1) + 4LU (every unit) + 2·4U (the previous unit's flat output, kept until this copy-out,
// and this one's) + 4A(L + 2) (x, y, step 1's loss still bound, the outputs of layers 0 … L−2) + split_with_sizes_copy's
// metadata, 8·(4k + 1 + B) with k = 2 parameters and B = Σ⌈shard bytes / 2048⌉ (one block per 2 KiB while
// blocks·N stays under the 4,224 an sm90 runs at once: 132 SMs × 2048 threads / 128 × 2).
TEST(FsdpByHand, NoReshardAfterForwardKeepsEveryUnitGathered) {
  for (int world : {4, 3}) {
    const Sizes z = sizes(4, 1000, world);
    auto keep = fsdp(z.L, z.D, world);
    keep.strategy.reshard_after_forward = "false";
    const auto kept = run(keep);
    const auto resharded = run(fsdp(z.L, z.D, world));
    EXPECT_EQ(kept.phase(0, "forward", 1).by_category[Category::GatheredParameters], 4 * z.L * z.U) << "world " << world;
    EXPECT_EQ(kept.phase(0, "forward", 2).by_category[Category::GatheredParameters], 4 * z.L * z.U) << "world " << world;
    EXPECT_EQ(resharded.phase(0, "forward", 1).by_category[Category::GatheredParameters], 0) << "world " << world;
    EXPECT_EQ(count_collectives(kept.plan.programs[0], CollectiveKind::AllGather, 1), z.L);
    EXPECT_EQ(count_collectives(resharded.plan.programs[0], CollectiveKind::AllGather, 1), 2 * z.L);
    const std::int64_t blocks = (z.S * z.D * 4 + 2047) / 2048 + (z.S * 4 + 2047) / 2048;
    const Bytes split_metadata = 8 * (4 * 2 + 1 + blocks);
    for (int rank = 0; rank < world; ++rank) {
      const Bytes expected = 4 * z.L * z.P + 8 * z.L * z.rows(rank) * (z.D + 1) + 4 * z.L * z.U + 2 * 4 * z.U +
                             4 * z.A * (z.L + 2) + split_metadata;
      EXPECT_EQ(kept.report.ranks[static_cast<std::size_t>(rank)].peak_allocated, expected + kWorkspaces)
          << "world " << world << " rank " << rank;
    }
  }
  EXPECT_EQ(4 * 4 * sizes(4, 1000, 4).U, 16'016'000);
  EXPECT_EQ(4 * 4 * sizes(4, 1000, 3).U, 16'048'032);
}

// World 1 takes FSDP2's shortcut: no all-gather, no flat buffer, so no communication buffer in forward; each unit is
// copied into one unsharded tensor per parameter (4W) while it runs and freed after.
TEST(FsdpByHand, WorldOneCopiesWithoutCollectives) {
  const Sizes z = sizes(4, 1000, 1);
  const auto r = run(fsdp(z.L, z.D, 1));
  Bytes most_gathered = 0;
  const auto& program = r.plan.programs[0];
  const auto& series = r.report.ranks[0].series;
  bool in_forward = false;
  std::size_t sample = 0;
  for (std::size_t i = 0; i < program.ops.size(); ++i) {
    const Op& op = program.ops[i];
    EXPECT_NE(op.kind, OpKind::Collective);
    if (op.kind == OpKind::Phase) in_forward = op.phase == "wrapped" || op.phase == "after_step";
    if (op.kind != OpKind::Alloc && op.kind != OpKind::Free) continue;
    const auto& s = series[sample++];
    if (in_forward) {
      EXPECT_EQ(s.by_category[Category::CommunicationBuffers], 0);
    }
    most_gathered = std::max(most_gathered, s.by_category[Category::GatheredParameters]);
  }
  EXPECT_EQ(most_gathered, 4 * z.W);
}

// reshard_after_forward=2 on 4 ranks: after its forward each unit keeps a half of its unsharded parameters (U/2 a
// rank), and its backward all-gather runs within the pair of ranks (0, 1) or (2, 3), not the world.
TEST(FsdpByHand, IntReshardKeepsASliceAndRegathersInItsGroup) {
  const Sizes z = sizes(4, 1000, 4);
  auto s = fsdp(z.L, z.D, 4);
  s.strategy.reshard_after_forward = "2";
  const auto r = run(s);
  EXPECT_EQ(r.phase(0, "forward", 1).by_category[Category::GatheredParameters], z.L * 4 * z.U / 2);
  int in_pairs = 0, in_world = 0;
  for (const Op& op : r.plan.programs[3].ops) {
    if (op.kind != OpKind::Collective || op.collective_kind != CollectiveKind::AllGather) continue;
    const auto& members = r.plan.groups.at(static_cast<std::size_t>(op.group));
    if (members == std::vector<int>{2, 3}) ++in_pairs;
    if (members.size() == 4) ++in_world;
  }
  EXPECT_EQ(in_pairs, 2 * z.L);  // every backward all-gather, both steps
  EXPECT_EQ(in_world, 2 * z.L);  // every forward all-gather
}

// The settings FSDP2 (or this model) refuses, each naming its field.
std::string refusal(const Scenario& s) {
  try {
    resolve_scenario(s);
  } catch (const ScenarioError& e) {
    return e.what();
  }
  return "";
}

TEST(FsdpSettings, RefusalsNameTheField) {
  auto s = fsdp(4, 1000, 4);
  s.strategy.reshard_after_forward = "3";
  EXPECT_EQ(refusal(s), "strategy.reshard_after_forward: 3 must divide the world (4): fully_shard regathers within "
                        "groups of that many consecutive ranks");
  s = fsdp(4, 1000, 4);
  s.strategy.reshard_after_forward = "sometimes";
  EXPECT_EQ(refusal(s), "strategy.reshard_after_forward: must be true, false or a number of ranks (got 'sometimes')");
  s = fsdp(4, 1000, 4);
  s.strategy.fsdp_units = FsdpUnits::Block;
  EXPECT_EQ(refusal(s), "strategy.fsdp_units: 'mlp:4x1000' has no transformer blocks; use layer or model");
  s = fsdp(4, 1000, 4);
  s.strategy.prefetch = 0;
  EXPECT_NE(refusal(s).find("strategy.prefetch: fsdp always all-gathers the previous unit"), std::string::npos);
  s = fsdp(4, 1000, 4);
  s.training.dtype = Dtype::Bf16;
  EXPECT_NE(refusal(s).find("training.dtype: fsdp keeps fp32 parameters"), std::string::npos);
  s = fsdp(4, 1000, 4);
  s.accounting.mode = AccountingMode::PyTorch18;
  EXPECT_NE(refusal(s).find("accounting.mode: fsdp is PyTorch 2.x's fully_shard"), std::string::npos);
  // fsdp's own options are refused elsewhere (the rules row lists them).
  auto ddp = make("mlp:4x1000", StrategyKind::Ddp, 2, 8, AccountingMode::Exact);
  ddp.strategy.reshard_after_forward = "false";
  EXPECT_EQ(refusal(ddp), "strategy.reshard_after_forward: only applies to fsdp");
  ddp = make("mlp:4x1000", StrategyKind::Ddp, 2, 8, AccountingMode::Exact);
  ddp.strategy.fsdp_param_dtype = Dtype::Bf16;
  EXPECT_EQ(refusal(ddp), "strategy.fsdp_param_dtype: only applies to fsdp");
  // Accepted: a transformer's blocks, an int equal to the world (True), inference.
  s = fsdp(4, 1000, 4);
  s.strategy.reshard_after_forward = "4";
  EXPECT_EQ(refusal(s), "");
  s.training.no_grad = true;
  EXPECT_EQ(refusal(s), "");
}

}  // namespace
}  // namespace shardscope
