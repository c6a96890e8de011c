// Plan validation: every strategy and model lowers to a valid plan; hand-made broken plans are caught.
#include <gtest/gtest.h>

#include <algorithm>

#include "memory/accounting.h"
#include "plan/program_builder.h"
#include "run_helpers.h"

namespace shardscope {
namespace {

struct Case {
  std::string model;
  StrategyKind strategy;
  int world;
};

TEST(PlanValidation, EveryStrategyAndModelLowersToAValidPlan) {
  const std::vector<std::string> models = {"mlp:3x16", "mlp:3x16:relu", "vgg16"};
  const std::vector<StrategyKind> strategies = {StrategyKind::Single, StrategyKind::DataParallel, StrategyKind::BalancedDataParallel,
                                                StrategyKind::Ddp, StrategyKind::Zero1, StrategyKind::Zero2, StrategyKind::Zero3,
                                                StrategyKind::ModelParallel, StrategyKind::PipelineGPipe, StrategyKind::Pipeline1F1B};
  int checked = 0;
  for (const auto& model : models)
    for (auto strategy : strategies)
      for (auto mode : {AccountingMode::Exact, AccountingMode::PyTorch18, AccountingMode::PyTorch2})
        for (bool no_grad : {false, true}) {
          if (no_grad && (strategy == StrategyKind::Zero1 || strategy == StrategyKind::Zero2)) continue;
          auto s = testing::make(model, strategy, strategy == StrategyKind::Single ? 1 : 3, 2, mode);
          s.training.steps = 2;
          s.training.no_grad = no_grad;
          s.training.loss = model == "vgg16" ? LossKind::CrossEntropy : LossKind::Mse;
          s.training.optimizer = checked % 2 ? OptimizerKind::Momentum : OptimizerKind::Adam;
          s.model.inplace_relu = checked % 3 == 0;
          s.strategy.gradient_as_bucket_view = checked % 4 == 1;
          if (strategy == StrategyKind::BalancedDataParallel) s.strategy.gpu0_batch = checked % 2;
          const bool data_parallel = strategy == StrategyKind::DataParallel || strategy == StrategyKind::BalancedDataParallel;
          if (!data_parallel) s.training.dtype = checked % 3 == 1 ? Dtype::Bf16 : (checked % 3 == 2 ? Dtype::Fp16 : Dtype::Fp32);
          if (strategy == StrategyKind::Zero2 || strategy == StrategyKind::Zero3) s.strategy.reduce_bucket_mb = 1;
          if (strategy == StrategyKind::Zero3) s.strategy.prefetch = checked % 3;
          if (strategy == StrategyKind::PipelineGPipe || strategy == StrategyKind::Pipeline1F1B) s.strategy.micro_batches = 2;
          const auto plan = lower_plan(resolve_scenario(s));
          const auto report = validate_plan(plan);
          EXPECT_TRUE(report.ok()) << model << " " << strategy_name(strategy) << ": " << report.errors.front();
          EXPECT_EQ(plan.programs.size(), static_cast<std::size_t>(s.cluster.world));
          ++checked;
        }
  EXPECT_EQ(checked, 162);  // 3 models × 10 strategies × 3 modes × 2, less ZeRO-1 and ZeRO-2 under no_grad (2 × 9)
}

// Pipelines replicated over data-parallel groups, with and without ZeRO-1 inside them, every schedule and dtype.
TEST(PlanValidation, PipelineTimesDataParallelLowersToAValidPlan) {
  int checked = 0;
  for (auto strategy : {StrategyKind::PipelineGPipe, StrategyKind::Pipeline1F1B})
    for (const std::string model : {"mlp:6x16:relu", "vgg16", "params:1M:12"})
      for (int dp_zero : {0, 1})
        for (const Dtype dtype : {Dtype::Fp32, Dtype::Bf16}) {
          auto s = testing::make(model, strategy, 6, 4, checked % 2 ? AccountingMode::PyTorch2 : AccountingMode::PyTorch18);
          s.strategy.stages = 3;
          s.strategy.micro_batches = 4;
          s.strategy.dp_zero_stage = dp_zero;
          s.training.dtype = dtype;
          s.training.steps = 2;
          if (model == "vgg16") s.training.loss = LossKind::CrossEntropy;
          const auto plan = lower_plan(resolve_scenario(s));
          const auto report = validate_plan(plan);
          EXPECT_TRUE(report.ok()) << model << " " << strategy_name(strategy) << ": " << report.errors.front();
          EXPECT_EQ(plan.programs.size(), 6u);
          EXPECT_EQ(plan.groups.size(), 1u + 3u);  // world + one data-parallel group per stage
          ++checked;
        }
  EXPECT_EQ(checked, 24);
}

Plan two_ranks() {
  Plan plan;
  plan.groups = {{0, 1}};
  return plan;
}

TEST(PlanValidation, CatchesALeak) {
  Plan plan = two_ranks();
  for (int r = 0; r < 2; ++r) {
    ProgramBuilder b(r);
    b.alloc("temp", 100, Category::Temporaries);  // never released, not persistent
    plan.programs.push_back(b.finish());
  }
  const auto report = validate_plan(plan);
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.errors.front().find("'temp' is never freed"), std::string::npos);
}

TEST(PlanValidation, CatchesAnUnmatchedCollective) {
  Plan plan = two_ranks();
  ProgramBuilder b0(0), b1(1);
  b0.collective(CollectiveKind::AllReduce, 0, 64, "all-reduce");
  plan.programs = {b0.finish(), b1.finish()};
  const auto report = validate_plan(plan);
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.errors.front().find("rank 1 never joins"), std::string::npos);
}

TEST(PlanValidation, CatchesMismatchedPayloads) {
  Plan plan = two_ranks();
  ProgramBuilder b0(0), b1(1);
  b0.collective(CollectiveKind::AllReduce, 0, 64, "all-reduce");
  b1.collective(CollectiveKind::AllReduce, 0, 128, "all-reduce");
  plan.programs = {b0.finish(), b1.finish()};
  EXPECT_FALSE(validate_plan(plan).ok());
}

TEST(PlanValidation, CatchesACrossRankCycle) {
  // Rank 0 joins collective #0 then #1; rank 1 waits for #1 (via a dependency) before #0: nobody can proceed.
  Plan plan = two_ranks();
  ProgramBuilder b0(0), b1(1);
  b0.collective(CollectiveKind::AllReduce, 0, 64, "first");
  b0.collective(CollectiveKind::AllReduce, 0, 64, "second");
  const OpIndex first = b1.collective(CollectiveKind::AllReduce, 0, 64, "first");
  const OpIndex second = b1.collective(CollectiveKind::AllReduce, 0, 64, "second");
  b1.add_dep(first, second);
  plan.programs = {b0.finish(), b1.finish()};
  const auto report = validate_plan(plan);
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.errors.back().find("cycle"), std::string::npos);
}

TEST(PlanValidation, CatchesDoubleFree) {
  Plan plan;
  plan.groups = {{0}};
  ProgramBuilder b(0);
  const TensorId t = b.alloc("x", 8, Category::Activations);
  b.release(t);
  Program program = b.finish();
  program.ops.push_back(program.ops.back());  // a second free of the same tensor
  plan.programs = {program};
  const auto report = validate_plan(plan);
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.errors.front().find("freed twice"), std::string::npos);
}

TEST(PlanValidation, CatchesAnOperandReadAfterItsFree) {
  Plan plan;
  plan.groups = {{0}};
  ProgramBuilder b(0);
  const TensorId x = b.alloc("x", 64, Category::Activations);
  const TensorId y = b.alloc("y", 64, Category::Activations);
  b.release(x);
  const OpIndex relu = b.compute(ComputeKind::Forward, "relu", 16, 128);
  b.set_kernel(relu, Kernel::ReluForward, {whole(x), whole(y)});
  b.release(y);
  plan.programs = {b.finish()};
  const auto report = validate_plan(plan);
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.errors.front().find("operand 'x' is already freed"), std::string::npos) << report.errors.front();
}

TEST(PlanValidation, CatchesAnOperandSliceOutsideItsTensor) {
  Plan plan;
  plan.groups = {{0}};
  ProgramBuilder b(0);
  const TensorId bucket = b.alloc("bucket", 100, Category::DdpBuckets);
  const OpIndex copy = b.compute(ComputeKind::Copy, "copy", 0, 0);
  b.set_kernel(copy, Kernel::Zero, {TensorSlice{bucket, 96, 8}});  // 96 + 8 > 100
  b.release(bucket);
  plan.programs = {b.finish()};
  const auto report = validate_plan(plan);
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.errors.front().find("lies outside 'bucket'"), std::string::npos) << report.errors.front();
}

TEST(PlanValidation, AcceptsMatchedSendAndRecv) {
  Plan plan = two_ranks();
  ProgramBuilder b0(0), b1(1);
  b0.send(1, 256, "activation to stage 1");
  b1.recv(0, 256, "activation from stage 0");
  b1.send(0, 256, "gradient to stage 0");
  b0.recv(1, 256, "gradient from stage 1");
  plan.programs = {b0.finish(), b1.finish()};
  const auto report = validate_plan(plan);
  EXPECT_TRUE(report.ok()) << report.errors.front();
}

TEST(PlanValidation, CountsTheOpsACycleOfDependenciesHoldsUp) {
  // One rank: a copy on the communication stream waits for forward A, and A is made to wait for the copy; forward C
  // follows A on the compute stream. Hand count: A and the copy wait on each other, C waits on A: 3 ops never start.
  Plan plan;
  ProgramBuilder b(0);
  const OpIndex a = b.compute(ComputeKind::Forward, "A", 1e6, 0);
  const OpIndex copy = b.communication_stream_copy("copy", 64, {a});
  b.add_dep(a, copy);
  b.compute(ComputeKind::Forward, "C", 1e6, 0);
  plan.programs = {b.finish()};
  const auto report = validate_plan(plan);
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.errors.back().find(": 3 ops can never start"), std::string::npos) << report.errors.back();
}

TEST(PlanValidation, CatchesAnUnreceivedSend) {
  Plan plan = two_ranks();
  ProgramBuilder b0(0), b1(1);
  b0.send(1, 256, "activation to stage 1");
  plan.programs = {b0.finish(), b1.finish()};
  const auto report = validate_plan(plan);
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.errors.front().find("sent but never received"), std::string::npos);
}

TEST(PlanValidation, CatchesCrossedBlockingSends) {
  // Each rank receives before it sends: both wait on each other (the classic pipeline deadlock).
  Plan plan = two_ranks();
  ProgramBuilder b0(0), b1(1);
  b0.recv(1, 8, "recv from 1");
  b0.send(1, 8, "send to 1");
  b1.recv(0, 8, "recv from 0");
  b1.send(0, 8, "send to 0");
  plan.programs = {b0.finish(), b1.finish()};
  const auto report = validate_plan(plan);
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.errors.back().find("cycle"), std::string::npos);
}

// Simulation and accounting lower without kernel operands (LoweringOptions): the plan must be the executed plan less
// its ops' args, op for op, and account to the same bytes.
TEST(PlanValidation, LoweringWithoutKernelOperandsDropsOnlyTheArgs) {
  for (auto strategy : {StrategyKind::Ddp, StrategyKind::Zero3, StrategyKind::Pipeline1F1B}) {
    auto s = testing::make("mlp:6x16:relu", strategy, 4, 4, AccountingMode::PyTorch2);
    if (strategy == StrategyKind::Pipeline1F1B) s.strategy.stages = 2;
    const auto resolved = resolve_scenario(s);
    const Plan full = lower_plan(resolved);
    const Plan bare = lower_plan(resolved, {.kernel_operands = false});
    EXPECT_TRUE(validate_plan(bare).ok()) << strategy_name(strategy);
    ASSERT_EQ(bare.programs.size(), full.programs.size());
    std::size_t full_args = 0, bare_args = 0;
    for (std::size_t r = 0; r < full.programs.size(); ++r) {
      const auto &a = full.programs[r], &b = bare.programs[r];
      ASSERT_EQ(a.ops.size(), b.ops.size()) << strategy_name(strategy) << " rank " << r;
      ASSERT_EQ(a.tensors.size(), b.tensors.size());
      for (std::size_t i = 0; i < a.ops.size(); ++i) {
        EXPECT_EQ(a.ops[i].kind, b.ops[i].kind);
        EXPECT_EQ(a.ops[i].kernel, b.ops[i].kernel);
        EXPECT_EQ(a.ops[i].label, b.ops[i].label);
        EXPECT_EQ(a.ops[i].tensor, b.ops[i].tensor);
        EXPECT_EQ(a.ops[i].sequence, b.ops[i].sequence);
        EXPECT_TRUE(std::equal(a.ops[i].deps.begin(), a.ops[i].deps.end(), b.ops[i].deps.begin(), b.ops[i].deps.end()));
        full_args += a.ops[i].args.size();
        bare_args += b.ops[i].args.size();
      }
    }
    EXPECT_GT(full_args, 0u) << strategy_name(strategy);
    EXPECT_EQ(bare_args, 0u) << strategy_name(strategy);
    const auto peaks = [&](const Plan& plan) {
      std::vector<Bytes> out;
      for (const auto& rank : account_memory(plan, AccountingMode::PyTorch2, resolved.device.capacity, false).ranks)
        out.push_back(rank.peak_allocated);
      return out;
    };
    EXPECT_EQ(peaks(bare), peaks(full)) << strategy_name(strategy);
  }
}

}  // namespace
}  // namespace shardscope
