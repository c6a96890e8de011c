// ZeRO stages against the ZeRO paper (Rajbhandari et al. 2019, Figure 1) and hand counts of ZeRO-2/3 buffers.
#include <gtest/gtest.h>

#include <algorithm>

#include "run_helpers.h"

namespace shardscope {
namespace {

using testing::make;
using testing::run;

// Model states = what the paper counts: parameters, gradients (DDP's gradients live in its buckets under
// gradient_as_bucket_view) and optimizer state (fp32 master weights + Adam's two moments).
Bytes model_states(const testing::Run& r, int rank) {
  const auto& after = r.phase(rank, "after_step", 1).by_category;
  return after[Category::Parameters] + after[Category::Gradients] + after[Category::DdpBuckets] + after[Category::OptimizerState];
}

// What ZeRO-3 (and the ZeRO-2 bucket) hold for their collectives: all-gather outputs and reduce-scatter buffers
// (communication buffers) and the gathered units themselves (gathered parameters).
Bytes sharding_buffers(const CategoryBytes& bytes) {
  return bytes[Category::CommunicationBuffers] + bytes[Category::GatheredParameters];
}

Scenario paper_scenario(StrategyKind strategy) {
  auto s = make("params:7.5e9", strategy, 64, 1, AccountingMode::Exact);
  s.training.dtype = Dtype::Fp16;
  s.strategy.gradient_as_bucket_view = true;
  s.cluster.capacity_gib = 1024;  // the figure is about bytes, not about fitting an 80 GB device
  return s;
}

// Figure 1: Ψ = 7.5e9, N_d = 64, K = 12, GB = 1e9 B. Baseline (2 + 2 + K)Ψ = 120 GB; P_os 4Ψ + KΨ/N = 31.4 GB;
// P_os+g 2Ψ + (2 + K)Ψ/N = 16.6 GB; P_os+g+p (2 + 2 + K)Ψ/N = 1.9 GB (the figure's rounding: one decimal).
TEST(ZeroPaperFigure1, ModelStatesPerDevice) {
  constexpr double kPsi = 7.5e9, kN = 64;
  const struct {
    StrategyKind strategy;
    double paper_gb;
    double formula_bytes;
  } cases[] = {
      {StrategyKind::Ddp, 120.0, 16 * kPsi},
      {StrategyKind::Zero1, 31.4, 4 * kPsi + 12 * kPsi / kN},
      {StrategyKind::Zero2, 16.6, 2 * kPsi + 14 * kPsi / kN},
      {StrategyKind::Zero3, 1.9, 16 * kPsi / kN},
  };
  for (const auto& c : cases) {
    const auto r = run(paper_scenario(c.strategy));
    for (int rank : {0, 63}) {
      const auto bytes = static_cast<double>(model_states(r, rank));
      EXPECT_NEAR(bytes / 1e9, c.paper_gb, 0.05) << strategy_name(c.strategy) << " rank " << rank;
      // Flat buffers are padded to a multiple of N elements (ZeRO-3: per unit, 128 units × < 64 elements × 16 B).
      EXPECT_NEAR(bytes, c.formula_bytes, 128.0 * 64 * 16) << strategy_name(c.strategy) << " rank " << rank;
    }
  }
}

// ZeRO-3 created partitioned (strategy.zero3_init's default: deepspeed.zero.Init, FSDP from a meta-device model):
// Figure 1's (2 + 2 + K)Ψ/N = 16 × 7.5e9 / 64 = 1.875e9 B of model states are all resident at the peak, and the peak
// holds nothing else of the model. It comes at the first optimizer step, when Adam's state has just been created; the
// working set the plan adds there is the step's own, 8Ψ/N: the fp32 copy of the gradient partition (4Ψ/N, as
// DeepSpeed's stage-3 step casts the 16-bit gradients) and torch.optim.Adam's exp_avg_sq.sqrt() (4Ψ/N, foreach) —
// no gathered unit or reduce-scatter buffer is alive then (one gathered layer is 2Ψ/128 = 117 MB, the (p + 3)
// units of Zero3.CommunicationBuffersGrowWithPrefetch at prefetch 1 are 469 MB, both below those 8Ψ/N = 938 MB), and
// the loss (4 B) is the only activation. Padding: 128 units × < 64 elements × 16 B, as above.
// Built whole on the device and then sharded (materialize), the peak is the fp16 model itself, 2Ψ = 15 GB.
TEST(ZeroPaperFigure1, Zero3HoldsTheFigureAtThePeakWhenCreatedPartitioned) {
  constexpr double kPsi = 7.5e9, kN = 64, kPadding = 128.0 * 64 * 16;
  const auto partitioned = run(paper_scenario(StrategyKind::Zero3));
  auto materialize_scenario = paper_scenario(StrategyKind::Zero3);
  materialize_scenario.strategy.zero3_init = Zero3Init::Materialize;
  const auto materialize = run(materialize_scenario);
  for (int rank : {0, 63}) {
    const auto& memory = partitioned.report.ranks[static_cast<std::size_t>(rank)];
    const auto& at_peak = memory.peak_by_category;
    const auto model_states = static_cast<double>(at_peak[Category::Parameters] + at_peak[Category::Gradients] +
                                                  at_peak[Category::OptimizerState]);
    EXPECT_NEAR(model_states / 1e9, 1.9, 0.05) << "rank " << rank;
    EXPECT_NEAR(model_states, 16 * kPsi / kN, kPadding) << "rank " << rank;
    EXPECT_NEAR(static_cast<double>(at_peak[Category::Temporaries]), 8 * kPsi / kN, kPadding) << "rank " << rank;
    EXPECT_EQ(sharding_buffers(at_peak), 0) << "rank " << rank;
    EXPECT_LE(at_peak[Category::Activations], 4) << "rank " << rank;
    EXPECT_NEAR(static_cast<double>(memory.peak_allocated), 24 * kPsi / kN, kPadding) << "rank " << rank;
    // At model creation only the rank's 16-bit shards exist: 2Ψ/N.
    EXPECT_NEAR(static_cast<double>(partitioned.phase(rank, "model_created", 0).allocated), 2 * kPsi / kN, 128.0 * 64 * 2);
    const auto& whole_first = materialize.report.ranks[static_cast<std::size_t>(rank)];
    EXPECT_GE(static_cast<double>(whole_first.peak_allocated), 2 * kPsi) << "rank " << rank;
    EXPECT_GE(static_cast<double>(materialize.phase(rank, "model_created", 0).allocated), 2 * kPsi) << "rank " << rank;
    // After the step both hold the same (the figure's model states): only the way there differs.
    EXPECT_EQ(materialize.phase(rank, "after_step", 1).allocated, partitioned.phase(rank, "after_step", 1).allocated);
  }
}

// ZeRO-2 in fp32 (DeepSpeed keeps an fp32 partition even then): 4P whole parameters + 4P/N gradients + 4P/N fp32
// partition + 8P/N Adam = 4P + 16P/N. P = 4,096,000 parameters, N = 4: 16,384,000 + 16,384,000 = 32,768,000 B.
TEST(Zero2, Fp32ModelStatesHandCount) {
  auto s = make("params:4096000:8", StrategyKind::Zero2, 4, 1, AccountingMode::Exact);
  s.strategy.reduce_bucket_mb = 1;
  EXPECT_EQ(model_states(run(s), 0), 4 * 4'096'000 + 16 * 4'096'000 / 4);
}

// The reduce bucket is reduce_bucket_mb whatever N is: 1 MiB of fp16 = 524,288 elements, alive during backward only.
TEST(Zero2, ReduceBucketIsFixedSize) {
  for (int world : {2, 8}) {
    auto s = make("params:4096000:8", StrategyKind::Zero2, world, 1, AccountingMode::Exact);
    s.training.dtype = Dtype::Bf16;
    s.strategy.reduce_bucket_mb = 1;
    const auto r = run(s);
    Bytes peak_comm = 0;
    for (const auto& sample : r.report.ranks[0].series) peak_comm = std::max(peak_comm, sharding_buffers(sample.by_category));
    EXPECT_EQ(peak_comm, 1 * kMiB) << "world " << world;
    EXPECT_EQ(sharding_buffers(r.phase(0, "after_step", 1).by_category), 0);
  }
}

// ZeRO-3 gather/reduce buffers, hand count. 8 equal units of U = 512,000 fp16 parameters = 1,024,000 B (N = 4 divides
// them, so no padding). In backward, when unit u starts (u < 7) with prefetch p: units u .. u-p are gathered
// (p + 1 units, u's own gathered earlier), the newest prefetch's all-gather output is alive beside its copy-out (1),
// and unit u+1's reduce-scatter input is kept until the next reduce-scatter is issued (1): (p + 3) U at the peak.
TEST(Zero3, CommunicationBuffersGrowWithPrefetch) {
  constexpr Bytes kUnit = 512'000 * 2;
  for (int prefetch : {0, 1, 2}) {
    auto s = make("params:4096000:8", StrategyKind::Zero3, 4, 1, AccountingMode::Exact);
    s.training.dtype = Dtype::Fp16;
    s.strategy.prefetch = prefetch;
    const auto r = run(s);
    Bytes peak_comm = 0;
    for (const auto& sample : r.report.ranks[0].series) peak_comm = std::max(peak_comm, sharding_buffers(sample.by_category));
    EXPECT_EQ(peak_comm, (prefetch + 3) * kUnit) << "prefetch " << prefetch;
  }
}

// allgather_bucket_mb groups consecutive layers into one unit until it holds that much: 1.5 MiB of fp16 is 786,432
// elements, so each unit takes two 512,000-element blocks (4 units of 2,048,000 B); the (p + 3)-unit count above
// then holds with the bigger unit.
TEST(Zero3, AllgatherBucketGroupsLayersIntoUnits) {
  constexpr Bytes kUnit = 2 * 512'000 * 2;
  auto s = make("params:4096000:8", StrategyKind::Zero3, 4, 1, AccountingMode::Exact);
  s.training.dtype = Dtype::Fp16;
  s.strategy.allgather_bucket_mb = 1.5;
  const auto r = run(s);
  Bytes peak_comm = 0;
  for (const auto& sample : r.report.ranks[0].series) peak_comm = std::max(peak_comm, sharding_buffers(sample.by_category));
  EXPECT_EQ(peak_comm, (1 + 3) * kUnit);
  int gathers = 0;
  for (const auto& op : r.plan.programs[0].ops) gathers += op.kind == OpKind::Collective && op.collective_kind == CollectiveKind::AllGather;
  EXPECT_EQ(gathers, 2 * 4);  // each unit before its forward and again before its backward
}

// A reduce bucket larger than a unit (DeepSpeed's fixed reduce_bucket_size) replaces the unit-sized reduce-scatter
// input, and two are in flight (the previous one is kept until the next is issued): with prefetch 0 and a 3 MiB
// bucket the peak is 2 × 3 MiB, above the 2U + 3 MiB of a gather (gathered unit + all-gather output) beside a bucket,
// and the same for every N.
TEST(Zero3, FixedReduceBucketDoesNotShrinkWithN) {
  constexpr Bytes kUnit = 512'000 * 2;
  static_assert(2 * kUnit + 3 * kMiB < 6 * kMiB);
  for (int world : {2, 4}) {
    auto s = make("params:4096000:8", StrategyKind::Zero3, world, 1, AccountingMode::Exact);
    s.training.dtype = Dtype::Fp16;
    s.strategy.prefetch = 0;
    s.strategy.reduce_bucket_mb = 3;
    const auto r = run(s);
    Bytes peak_comm = 0;
    for (const auto& sample : r.report.ranks[0].series) peak_comm = std::max(peak_comm, sharding_buffers(sample.by_category));
    EXPECT_EQ(peak_comm, 6 * kMiB) << "world " << world;
  }
}

}  // namespace
}  // namespace shardscope
