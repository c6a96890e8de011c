// ZeRO-2 (DeepSpeed stage_1_and_2.py: flat parameters, reduce buckets, fp32 partition, chunked all-gather) and
// ZeRO-3 (DeepSpeed stage3.py's resident shards, FSDP2's per-unit gather and reduce-scatter) executed on CPU threads.
// "ZeRO-1/2/3 equal plain Adam": on 2 and 3 ranks (3 pads the flat buffer and every unit) the model the ranks hold
// together after 3 steps equals one rank trained on the whole batch, for every optimizer, loss, bucket, chunk, unit
// and prefetch setting; replicas agree bit for bit; measured memory equals the exact accounting byte for byte.
#include <thread>

#include "exec/cpu/cpu_backend.h"
#include "executed_run.h"

namespace shardscope::exec {
namespace {

using test::Executed;
using test::Variant;
using test::expect_measured_equals_predicted;
using test::expect_same_model;

// 4 × Linear(16, 16) + ReLU: 4 × 272 = 1,088 parameters, which 3 ranks do not divide (ZeRO-2 pads 1 element; ZeRO-3
// pads each unit: 272 → 273, 544 → 546).
constexpr const char* kModel = "mlp:4x16:relu";
constexpr int kBatch = 8;  // per rank

Scenario zero(StrategyKind strategy, int world) {
  Scenario s = shardscope::testing::make(kModel, strategy, world, kBatch, AccountingMode::Exact);
  s.training.steps = 3;
  return s;
}

Scenario reference_for(const Scenario& s) {
  Scenario single = s;
  single.strategy = StrategySettings{};
  single.strategy.kind = StrategyKind::Single;
  single.cluster.world = 1;
  single.training.batch = s.training.batch * s.cluster.world;
  return single;
}

const std::vector<Variant> kTrainingVariants = {
    {"adam", [](Scenario&) {}},
    {"adam + weight decay", [](Scenario& s) { s.training.weight_decay = 0.1; }},
    {"adamw", [](Scenario& s) { s.training.optimizer = OptimizerKind::AdamW; }},
    {"sgd", [](Scenario& s) { s.training.optimizer = OptimizerKind::Sgd; }},
    {"momentum", [](Scenario& s) { s.training.optimizer = OptimizerKind::Momentum; }},
    {"cross-entropy", [](Scenario& s) { s.training.loss = LossKind::CrossEntropy; }},
    {"pytorch-1.8 (zero_grad in place, 1.8 optimizer loop)", [](Scenario& s) { s.accounting.mode = AccountingMode::PyTorch18; }},
};

// ZeRO-2 bucket settings: one bucket and one all-gather; about one bucket per parameter and a few all-gather chunks;
// every weight larger than the bucket (extra_large_param_to_reduce) and many chunks; all reduced by reduce-scatter
// (the default) but the last, which all-reduces.
const std::vector<Variant> kZero2Buckets = {
    {"reduce 25 MiB, all-gather default", [](Scenario& s) { s.strategy.reduce_bucket_mb = 25; }},
    {"reduce 0.001 MiB, all-gather 0.001 MiB", [](Scenario& s) { s.strategy.reduce_bucket_mb = 0.001; s.strategy.allgather_bucket_mb = 0.001; }},
    {"reduce 0.0001 MiB, all-gather 0.0001 MiB", [](Scenario& s) { s.strategy.reduce_bucket_mb = 0.0001; s.strategy.allgather_bucket_mb = 0.0001; }},
    {"reduce 0.001 MiB, all-reduce", [](Scenario& s) { s.strategy.reduce_bucket_mb = 0.001; s.strategy.zero2_reduce = Zero2Reduce::AllReduce; }},
};

// ZeRO-3 unit and prefetch settings: a unit per layer; two layers per unit; one unit for the whole model; all created
// as shards (the default) but the last, built whole and then sharded.
const std::vector<Variant> kZero3Units = {
    {"unit per layer, prefetch 1", [](Scenario& s) { s.strategy.prefetch = 1; }},
    {"unit per layer, prefetch 0, reduce bucket 0.01 MiB", [](Scenario& s) { s.strategy.prefetch = 0; s.strategy.reduce_bucket_mb = 0.01; }},
    {"two layers per unit, prefetch 1", [](Scenario& s) { s.strategy.allgather_bucket_mb = 0.002; s.strategy.prefetch = 1; }},
    {"two layers per unit, prefetch 2", [](Scenario& s) { s.strategy.allgather_bucket_mb = 0.002; s.strategy.prefetch = 2; }},
    {"one unit", [](Scenario& s) { s.strategy.allgather_bucket_mb = 25; s.strategy.prefetch = 0; }},
    {"unit per layer, built whole then sharded", [](Scenario& s) { s.strategy.zero3_init = Zero3Init::Materialize; }},
};

int count_ops(const Plan& plan, CollectiveKind kind, int step) {
  int n = 0;
  for (const Op& op : plan.programs[0].ops)
    if (op.kind == OpKind::Collective && op.collective_kind == kind && op.step == step) ++n;
  return n;
}

int count_tensors(const Plan& plan, const std::string& name_part) {
  int n = 0;
  for (const TensorInfo& t : plan.programs[0].tensors)
    if (t.name.find(name_part) != std::string::npos) ++n;
  return n;
}

Executed expect_trains_as_one_rank(const Scenario& s, const Executed& reference) {
  Executed executed = test::execute_scenario(s);
  EXPECT_EQ(executed.result.ranks.size(), static_cast<std::size_t>(s.cluster.world));
  expect_same_model(executed.result, reference.result);
  expect_measured_equals_predicted(executed);
  return executed;
}

TEST(ExecutedZero, Zero2TrainsAsOneRankOnTheWholeBatch) {
  for (int world : {2, 3}) {
    SCOPED_TRACE("world " + std::to_string(world));
    for (const auto& variant : kTrainingVariants) {
      SCOPED_TRACE(variant.what);
      Scenario base = zero(StrategyKind::Zero2, world);
      variant.apply(base);
      const Executed reference = test::execute_scenario(reference_for(base));
      for (const auto& buckets : kZero2Buckets) {
        SCOPED_TRACE(buckets.what);
        Scenario s = base;
        buckets.apply(s);
        const Executed executed = expect_trains_as_one_rank(s, reference);
        // Every rank holds the whole flat buffer after the all-gather: identical bits everywhere.
        for (const auto& rank : executed.result.ranks) {
          EXPECT_EQ(rank.param_checksum, executed.result.ranks[0].param_checksum);
          EXPECT_EQ(rank.parameters.size(), reference.result.ranks[0].parameters.size());
        }
      }
    }
  }
}

TEST(ExecutedZero, Zero3TrainsAsOneRankOnTheWholeBatch) {
  for (int world : {2, 3}) {
    SCOPED_TRACE("world " + std::to_string(world));
    for (const auto& variant : kTrainingVariants) {
      SCOPED_TRACE(variant.what);
      Scenario base = zero(StrategyKind::Zero3, world);
      variant.apply(base);
      const Executed reference = test::execute_scenario(reference_for(base));
      for (const auto& units : kZero3Units) {
        SCOPED_TRACE(units.what);
        Scenario s = base;
        units.apply(s);
        expect_trains_as_one_rank(s, reference);
      }
    }
  }
}

// The settings above do what they are meant to: several reduce buckets, extra-large parameters, several all-gather
// chunks, several units per model, padding on 3 ranks.
TEST(ExecutedZero, SettingsForceSeveralBucketsChunksAndUnits) {
  auto plan_of = [](const Scenario& s) { return lower_validated_plan(resolve_scenario(s)); };
  {
    Scenario s = zero(StrategyKind::Zero2, 2);
    kZero2Buckets[0].apply(s);
    const Plan plan = plan_of(s);
    EXPECT_EQ(count_ops(plan, CollectiveKind::ReduceScatter, 1), 1);
    EXPECT_EQ(count_ops(plan, CollectiveKind::AllReduce, 1), 0);
    EXPECT_EQ(count_ops(plan, CollectiveKind::AllGather, 1), 1);
  }
  {
    Scenario s = zero(StrategyKind::Zero2, 2);
    kZero2Buckets[1].apply(s);
    const Plan plan = plan_of(s);
    EXPECT_GE(count_ops(plan, CollectiveKind::ReduceScatter, 1), 4);
    EXPECT_GE(count_ops(plan, CollectiveKind::AllGather, 1), 3);
  }
  {
    Scenario s = zero(StrategyKind::Zero2, 2);
    kZero2Buckets[3].apply(s);
    const Plan plan = plan_of(s);
    EXPECT_GE(count_ops(plan, CollectiveKind::AllReduce, 1), 4);
    EXPECT_EQ(count_ops(plan, CollectiveKind::ReduceScatter, 1), 0);
  }
  {
    Scenario s = zero(StrategyKind::Zero2, 3);
    kZero2Buckets[2].apply(s);
    const Plan plan = plan_of(s);
    int extra_large = 0;
    for (const Op& op : plan.programs[0].ops)
      if (op.step == 1 && op.label.find("larger than the bucket") != std::string::npos) ++extra_large;
    EXPECT_EQ(extra_large, 4);  // every weight (256 elements > 26)
    EXPECT_GE(count_ops(plan, CollectiveKind::AllGather, 1), 10);
    Bytes flat = 0;
    for (const TensorInfo& t : plan.programs[0].tensors)
      if (t.name.find("bit16_groups_flat") != std::string::npos) flat = t.bytes;
    EXPECT_EQ(flat, 1089 * 4);  // 1,088 parameters padded to a multiple of 3
  }
  const std::pair<std::size_t, int> units[] = {{0, 4}, {2, 2}, {4, 1}, {5, 4}};
  for (const auto& [variant, expected] : units) {
    Scenario s = zero(StrategyKind::Zero3, 3);
    kZero3Units[variant].apply(s);
    const Plan plan = plan_of(s);
    EXPECT_EQ(count_tensors(plan, "parameter shard"), expected) << kZero3Units[variant].what;
    EXPECT_EQ(count_ops(plan, CollectiveKind::ReduceScatter, 1), expected) << kZero3Units[variant].what;
  }
}

// Reduce-scatter's per-member form (plan/kernel.h): parts of different sizes, not contiguous, listed under their
// members (one member with none); each ends reduced on its member; a list per member is required.
TEST(ExecutedZero, CpuBackendReducesEachPartIntoItsMember) {
  for (int n : {1, 2, 3}) {
    // Part p covers [kStart[p], kStart[p] + kSize[p]) of a 12-element buffer and belongs to member p % n.
    constexpr std::size_t kStart[] = {0, 5, 9}, kSize[] = {3, 4, 2}, kLength = 12;
    cpu::CpuBackend backend(n);
    std::vector<std::vector<float>> buffers(static_cast<std::size_t>(n), std::vector<float>(kLength));
    std::vector<std::string> errors(static_cast<std::size_t>(n));
    std::vector<std::thread> threads;
    for (int r = 0; r < n; ++r)
      threads.emplace_back([&, r] {
        auto& buffer = buffers[static_cast<std::size_t>(r)];
        for (std::size_t i = 0; i < kLength; ++i) buffer[i] = static_cast<float>(r + 1) * static_cast<float>(i);
        CommunicationLaunch launch;
        launch.collective = CollectiveKind::ReduceScatter;
        for (int k = 0; k < n; ++k) launch.group.push_back(k);
        for (int member = 0; member < n; ++member) {
          launch.operands.push_back(DeviceBuffer{});
          for (std::size_t p = 0; p < 3; ++p)
            if (static_cast<int>(p) % n == member)
              launch.operands.push_back(DeviceBuffer{reinterpret_cast<std::byte*>(buffer.data() + kStart[p]),
                                                     static_cast<Bytes>(kSize[p] * sizeof(float))});
        }
        try {
          backend.rank(r).run_communication(launch);
        } catch (const std::exception& e) {
          errors[static_cast<std::size_t>(r)] = e.what();
        }
      });
    for (auto& t : threads) t.join();
    const float ranks_sum = static_cast<float>(n * (n + 1) / 2);  // Σ (r + 1)
    for (int r = 0; r < n; ++r) {
      ASSERT_EQ(errors[static_cast<std::size_t>(r)], "") << "n=" << n;
      for (std::size_t p = 0; p < 3; ++p) {
        if (static_cast<int>(p) % n != r) continue;
        for (std::size_t i = kStart[p]; i < kStart[p] + kSize[p]; ++i)
          EXPECT_EQ(buffers[static_cast<std::size_t>(r)][i], ranks_sum * static_cast<float>(i)) << "n=" << n << " rank " << r << " [" << i << "]";
      }
    }
  }
  cpu::CpuBackend backend(2);
  std::vector<float> data(4);
  CommunicationLaunch launch;
  launch.collective = CollectiveKind::ReduceScatter;
  launch.group = {0, 1};
  launch.operands = {DeviceBuffer{}, DeviceBuffer{reinterpret_cast<std::byte*>(data.data()), 4 * sizeof(float)}};
  EXPECT_THROW(backend.rank(0).run_communication(launch), std::invalid_argument);  // one list for 2 members
}

// All-gather into a list of outputs (plan/kernel.h): outputs strided through one buffer, the caller's own output its
// input (in place), or a separate input; a wrong operand count is refused.
TEST(ExecutedZero, CpuBackendAllGathersIntoAListOfOutputs) {
  for (int n : {1, 2, 3, 4}) {
    for (bool in_place : {true, false}) {
      constexpr std::size_t kCount = 5, kStride = 7;  // outputs at 0, 7, 14, ...: not contiguous
      cpu::CpuBackend backend(n);
      std::vector<std::vector<float>> buffers(static_cast<std::size_t>(n), std::vector<float>(kStride * n, -1.0f));
      std::vector<std::vector<float>> inputs(static_cast<std::size_t>(n));
      std::vector<std::string> errors(static_cast<std::size_t>(n));
      std::vector<std::thread> threads;
      for (int r = 0; r < n; ++r)
        threads.emplace_back([&, r] {
          auto& buffer = buffers[static_cast<std::size_t>(r)];
          auto& input = inputs[static_cast<std::size_t>(r)];
          input.resize(kCount);
          for (std::size_t i = 0; i < kCount; ++i) input[i] = static_cast<float>(100 * r) + static_cast<float>(i);
          auto slice = [](float* data, std::size_t count) {
            return DeviceBuffer{reinterpret_cast<std::byte*>(data), static_cast<Bytes>(count * sizeof(float))};
          };
          CommunicationLaunch launch;
          launch.collective = CollectiveKind::AllGather;
          for (int k = 0; k < n; ++k) launch.group.push_back(k);
          float* own = buffer.data() + kStride * static_cast<std::size_t>(r);
          if (in_place) std::copy(input.begin(), input.end(), own);
          launch.operands.push_back(in_place ? slice(own, kCount) : slice(input.data(), kCount));
          for (int k = 0; k < n; ++k) launch.operands.push_back(slice(buffer.data() + kStride * static_cast<std::size_t>(k), kCount));
          try {
            backend.rank(r).run_communication(launch);
          } catch (const std::exception& e) {
            errors[static_cast<std::size_t>(r)] = e.what();
          }
        });
      for (auto& t : threads) t.join();
      for (int r = 0; r < n; ++r) {
        ASSERT_EQ(errors[static_cast<std::size_t>(r)], "") << "n=" << n;
        for (int k = 0; k < n; ++k)
          for (std::size_t i = 0; i < kStride; ++i)
            EXPECT_EQ(buffers[static_cast<std::size_t>(r)][kStride * static_cast<std::size_t>(k) + i],
                      i < kCount ? static_cast<float>(100 * k) + static_cast<float>(i) : -1.0f)
                << "n=" << n << " rank " << r << " output " << k << " [" << i << "]";
      }
    }
  }
  cpu::CpuBackend backend(2);
  std::vector<float> data(8);
  CommunicationLaunch launch;
  launch.collective = CollectiveKind::AllGather;
  launch.group = {0, 1};
  for (int k = 0; k < 4; ++k)
    launch.operands.push_back(DeviceBuffer{reinterpret_cast<std::byte*>(data.data() + 2 * k), 2 * sizeof(float)});
  EXPECT_THROW(backend.rank(0).run_communication(launch), std::invalid_argument);  // 3 outputs for 2 members
}

// The model the CLI prints for `run --strategy zero3 --world 2 --batch 8` is the one `--strategy single --world 1
// --batch 16` trains (the README's example, through the same engine calls).
TEST(ExecutedZero, Zero2AndZero3OnTwoRanksGiveTheSingleRankChecksum) {
  const Executed single = test::execute_scenario(test::executable_mlp(StrategyKind::Single, 1, 16));
  const double expected = assemble_model_parameters(single.result.ranks).checksum;
  for (StrategyKind strategy : {StrategyKind::Zero2, StrategyKind::Zero3}) {
    Scenario s = test::executable_mlp(strategy, 2, 8);
    s.strategy.reduce_bucket_mb = 1;  // DeepSpeed's default bucket is 5e8 elements: 1.9 GiB a rank in fp32
    const Executed executed = test::execute_scenario(s);
    EXPECT_NEAR(assemble_model_parameters(executed.result.ranks).checksum, expected, 1e-5) << strategy_name(strategy);
    expect_same_model(executed.result, single.result);
  }
}

// What the CPU backend still cannot run is refused by name before anything runs, ZeRO lowerings included.
// GPT-2 under zero1-3 (and every other strategy) executes: tests/exec/test_executed_transformers.cpp.

}  // namespace
}  // namespace shardscope::exec
