// PyTorch-rules accounting against hand-worked figures (PYTORCH_MEMORY.md rules, worked step by step in comments).
#include <gtest/gtest.h>

#include "run_helpers.h"

namespace shardscope {
namespace {

using testing::make;
using testing::run;

class BothProfiles : public ::testing::TestWithParam<AccountingMode> {};

// nn.Linear(1000, 1000).to('cuda'): weight 4,000,000 B → 4,000,256 B (split 20 MiB segment), bias 4,000 B → 4,096 B.
TEST_P(BothProfiles, LinearThousandAfterTo) {
  const auto r = run(make("mlp:1x1000", StrategyKind::Single, 1, 1, GetParam()));
  EXPECT_EQ(r.phase(0, "model_created", 0).allocated, 4'004'352);
}

// DDP doubles it: the Reducer's bucket(s) hold a second copy. 2.x: one bucket of 4,004,000 B → 4,004,352 B from the
// cached remainder of the weight's segment. 1.8: buckets [bias] → 4,096 B and [weight] → 4,000,256 B.
TEST_P(BothProfiles, LinearThousandAfterDdpIsTwice) {
  const auto r = run(make("mlp:1x1000", StrategyKind::Ddp, 2, 1, GetParam()));
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_EQ(r.phase(rank, "model_created", 0).allocated, 4'004'352);
    EXPECT_EQ(r.phase(rank, "wrapped", 0).allocated, 2 * 4'004'352);
  }
}

// 20 × Linear(2000, 2000): each weight (16,000,000 B) sits alone in an unsplit 16 MiB segment: 16,777,216 B;
// each bias 8,000 B → 8,192 B.
constexpr Bytes kParamsCounted = 20 * (16'777'216 + 8'192);                   // 335,708,160
constexpr Bytes kParamsReserved = 20 * 16 * kMiB + 2 * kMiB;                  // weights' segments + one small segment
// broadcast_coalesced (250 MiB buckets): [16 layers + W17] = 272,128,000 B and the rest 48,032,000 B; flat copies of
// 130 × 2 MiB and 23 × 2 MiB, cached after use.
constexpr Bytes kBroadcastSegments = 130 * 2 * kMiB + 23 * 2 * kMiB;         // 320,864,256
// 2.x: one Reducer bucket of all 320,160,000 B does not fit the cached blocks: a new 153 × 2 MiB segment, unsplit.
constexpr Bytes kSingleBucket = 153 * 2 * kMiB;                              // 320,864,256

TEST(PyTorch2, DdpTwentyLinearAfterWrap) {
  const auto r = run(make("mlp:20x2000", StrategyKind::Ddp, 2, 20, AccountingMode::PyTorch2));
  EXPECT_EQ(r.phase(0, "model_created", 0).allocated, kParamsCounted);
  EXPECT_EQ(r.phase(0, "model_created", 0).reserved, kParamsReserved);
  EXPECT_EQ(r.phase(0, "wrapped", 0).allocated, kParamsCounted + kSingleBucket);
  EXPECT_EQ(r.phase(0, "wrapped", 0).reserved, kParamsReserved + kBroadcastSegments + kSingleBucket);
  EXPECT_EQ(r.phase(0, "wrapped", 0).by_category[Category::DdpBuckets], kSingleBucket);
}

// 1.8: buckets [1 MiB, 25 MiB] over registration order, reversed: [b19 W20 b20] 16,016,000 B, nine of
// [b W b W] 32,016,000 B, then [W1] 16,000,000 B. All fit the cached broadcast segments (best fit):
// 16,016,384 from the 46 MiB block (split, 32,218,112 left); 32,016,384 takes that whole (201,728 B left: no split);
// eight more 32,016,384 from the 260 MiB block (16,498,688 left); W1 takes that whole.
TEST(PyTorch18, DdpTwentyLinearBucketsReuseBroadcastCache) {
  const auto r = run(make("mlp:20x2000", StrategyKind::Ddp, 2, 20, AccountingMode::PyTorch18));
  constexpr Bytes buckets = 16'016'384 + 32'218'112 + 8 * 32'016'384 + 16'498'688;
  EXPECT_EQ(r.phase(0, "wrapped", 0).allocated, kParamsCounted + buckets);
  EXPECT_EQ(r.phase(0, "wrapped", 0).reserved, kParamsReserved + kBroadcastSegments);  // no new segment
  // While the two broadcast flats were in flight, both counted on top of the parameters, and the second flat's cat
  // held its metadata buffer: 128 inputs × 24 B = 3,072 B (1.8's parallel_cat, Shape.cu), a multiple of 512, taken
  // from the biases' small segment (no new segment).
  EXPECT_EQ(r.phase(0, "wrapped", 0).max_allocated, kParamsCounted + kBroadcastSegments + 3'072);
}

// 2.x passes cat's metadata as kernel arguments: no buffer, so DDP's construction peaks at the two flats alone.
TEST(PyTorch2, NoCatMetadataBuffer) {
  const auto r = run(make("mlp:20x2000", StrategyKind::Ddp, 2, 20, AccountingMode::PyTorch2));
  for (const Op& op : r.plan.programs[0].ops) {
    if (op.kind != OpKind::Alloc) continue;
    EXPECT_EQ(r.plan.programs[0].tensors[static_cast<std::size_t>(op.tensor)].name.str().rfind("cat metadata", 0), std::string::npos);
  }
}

// cuBLAS workspaces (2.x): the first GEMM of the forward (main thread) and of the backward (autograd thread) each
// create one, 32 MiB on sm90 and 8,519,680 B elsewhere, kept for good. 1.x does not count them.
TEST(PyTorch2, CublasWorkspacesPerThread) {
  auto s = make("mlp:1x1000", StrategyKind::Single, 1, 1, AccountingMode::PyTorch2);
  s.cluster.device = "H100-80";
  const auto h100 = run(s);
  s.cluster.device = "A100-80";
  const auto a100 = run(s);
  const Bytes delta_forward = h100.phase(0, "forward", 1).allocated - a100.phase(0, "forward", 1).allocated;
  const Bytes delta_backward = h100.phase(0, "before_step", 1).allocated - a100.phase(0, "before_step", 1).allocated;
  EXPECT_EQ(delta_forward, 32 * kMiB - 8'519'680);
  EXPECT_EQ(delta_backward, 2 * (32 * kMiB - 8'519'680));
  s.accounting.mode = AccountingMode::PyTorch18;
  const auto v18 = run(s);
  // and 2.x's loss keeps its output-sized MSE buffer (1 × 1000 fp32: a 4,096 B block) where 1.x's is a 512 B block,
  // and 2.x's forward keeps the 1 MiB cuBLASLt workspace, at batch 1 too (measured on 2.11)
  EXPECT_EQ(a100.phase(0, "before_step", 1).allocated - v18.phase(0, "before_step", 1).allocated,
            2 * 8'519'680 + 4'096 - 512 + 1024 * 1024);
}

// accounting.cublas_workspaces autograd-only: forward's main thread keeps none, so on an A100 the forward holds one
// workspace (8,519,680 B) less, and after backward the difference is still that one (autograd's is in both).
TEST(PyTorch2, CublasWorkspacesAutogradOnly) {
  auto s = make("mlp:1x1000", StrategyKind::Single, 1, 4, AccountingMode::PyTorch2);
  s.cluster.device = "A100-80";
  const auto per_thread = run(s);
  s.accounting.cublas_workspaces = "autograd-only";
  const auto autograd_only = run(s);
  EXPECT_EQ(per_thread.phase(0, "forward", 1).allocated - autograd_only.phase(0, "forward", 1).allocated, 8'519'680);
  EXPECT_EQ(per_thread.phase(0, "before_step", 1).allocated - autograd_only.phase(0, "before_step", 1).allocated, 8'519'680);
}

// A biased Linear's forward is addmm on the cuBLASLt path (gemm_and_bias), whose workspace, CUBLASLT_WORKSPACE_SIZE
// = 1024 KiB by default, 2.x caches per handle and stream (measured on 2.11): in the plan one 1 MiB allocation,
// before the first Linear forward op, never freed, over two steps; none under 1.x.
TEST(PyTorch2, CublasLtWorkspaceKeptFromTheFirstBiasedForwardGemm) {
  for (const AccountingMode mode : {AccountingMode::PyTorch2, AccountingMode::PyTorch18}) {
    auto s = make("mlp:3x1000", StrategyKind::Single, 1, 4, mode);
    s.training.steps = 2;
    const auto r = run(s);
    const Program& p = r.plan.programs[0];
    std::vector<std::size_t> lt_allocs;
    std::size_t first_forward = p.ops.size();
    bool freed = false;
    for (std::size_t i = 0; i < p.ops.size(); ++i) {
      const Op& op = p.ops[i];
      if (op.kind == OpKind::Compute && op.compute_kind == ComputeKind::Forward) first_forward = std::min(first_forward, i);
      if (op.tensor < 0 || p.tensors[static_cast<std::size_t>(op.tensor)].name.str().rfind("cuBLASLt", 0) != 0) continue;
      if (op.kind == OpKind::Alloc) lt_allocs.push_back(i);
      if (op.kind == OpKind::Free) freed = true;
    }
    if (mode == AccountingMode::PyTorch18) {
      EXPECT_TRUE(lt_allocs.empty());
      continue;
    }
    ASSERT_EQ(lt_allocs.size(), 1u);
    EXPECT_LT(lt_allocs[0], first_forward);
    EXPECT_EQ(p.tensors[static_cast<std::size_t>(p.ops[lt_allocs[0]].tensor)].bytes, 1024 * 1024);
    EXPECT_FALSE(freed);
  }
}

INSTANTIATE_TEST_SUITE_P(Profiles, BothProfiles, ::testing::Values(AccountingMode::PyTorch18, AccountingMode::PyTorch2),
                         [](const auto& info) { return info.param == AccountingMode::PyTorch18 ? "pytorch18" : "pytorch2"; });

}  // namespace
}  // namespace shardscope
