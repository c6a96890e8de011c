// Tensor-parallel plans (strategy/tensor_parallel.h over model/tensor_parallel_shard.h): per-rank parameter and
// activation bytes counted by hand from Megatron-LM's split, and the tensor-parallel collectives counted by hand from
// its f / g (and sequence-parallel) mappings, for an MLP split column → row and a tiny GPT-2; rank order and groups
// of a 3-D plan (pp-1f1b × dp × tp). Expected figures come from the shapes, never from the code under test.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "engine/hf_config_files.h"
#include "memory/accounting.h"
#include "model/tensor_parallel_shard.h"
#include "strategy/lower.h"

namespace shardscope {
namespace {

using testing::TempConfigDir;

Scenario base(const std::string& spec, StrategyKind kind, int tp, int world) {
  Scenario s;
  s.model.spec = spec;
  s.strategy.kind = kind;
  s.strategy.tp = tp;
  s.cluster.world = world;
  s.accounting.mode = AccountingMode::Exact;
  s.training.optimizer = OptimizerKind::Sgd;  // no optimizer state: parameters and gradients alone
  return s;
}

Bytes category_at(const MemoryReport& report, int rank, const std::string& phase, Category category) {
  for (const auto& p : report.ranks.at(static_cast<std::size_t>(rank)).phases)
    if (p.name == phase && p.step == (phase == "model_created" ? 0 : 1)) return p.by_category[category];
  throw std::runtime_error("no phase " + phase);
}

// The collectives of one program on `group` in step `step`: kind → (count, payload sum).
std::map<CollectiveKind, std::pair<int, Bytes>> collectives(const Program& program, int group, int step = 1) {
  std::map<CollectiveKind, std::pair<int, Bytes>> out;
  for (const Op& op : program.ops)
    if (op.kind == OpKind::Collective && op.group == group && op.step == step) {
      ++out[op.collective_kind].first;
      out[op.collective_kind].second += op.payload;
    }
  return out;
}

int group_of(const Plan& plan, const std::vector<int>& ranks) {
  for (std::size_t g = 0; g < plan.groups.size(); ++g)
    if (plan.groups[g] == ranks) return static_cast<int>(g);
  return -1;
}

TEST(TensorParallelPlan, MlpPairsSplitColumnThenRow) {
  // mlp:4x8: fc0 column, fc1 row, fc2 column, fc3 row, each Linear(8, 8) with bias.
  Scenario s = base("mlp:4x8", StrategyKind::Single, 2, 2);
  s.training.batch = 3;
  const Plan plan = lower_validated_plan(resolve_scenario(s));
  ASSERT_EQ(plan.programs.size(), 2u);
  // Per rank: a column layer holds 8·8/2 weights + 8/2 bias, a row layer 8·8/2 weights + the whole bias of 8.
  const Bytes per_rank = 4 * (2 * (32 + 4) + 2 * (32 + 8));
  const MemoryReport report = account_memory(plan, AccountingMode::Exact, resolve_scenario(s).device.capacity);
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_EQ(category_at(report, rank, "model_created", Category::Parameters), per_rank);
    EXPECT_EQ(category_at(report, rank, "before_step", Category::Gradients), per_rank);
  }
  const int tp_group = group_of(plan, {0, 1});
  ASSERT_GE(tp_group, 0);
  // Forward: an all-reduce of the output after each row layer (fc1, fc3); backward: of the input gradient after
  // each column layer but the first (fc2; fc0's input needs no gradient). Each b·8 fp32.
  for (const auto& program : plan.programs) {
    const auto found = collectives(program, tp_group);
    ASSERT_EQ(found.size(), 1u);
    EXPECT_EQ(found.at(CollectiveKind::AllReduce).first, 3);
    EXPECT_EQ(found.at(CollectiveKind::AllReduce).second, 3 * (3 * 8 * 4));
  }
}

// Sequence parallelism on mlp:4x8 (fc0 column, fc1 row, fc2 column, fc3 row; Linear(8, 8) with bias, no ReLU),
// b = 4 rows, t = 2: outside the pairs a rank holds b/t = 2 rows. Megatron's mappings, by hand (e = 4 B, fp32):
//   forward  fc0, fc2: all-gather of the input, each member contributing its b/t·8·e = 64 B;
//            fc1, fc3: reduce-scatter of the partial output, the whole b·8·e = 128 B;
//   backward fc3, fc1: all-reduce of the bias's partial gradient, 8·e = 32 B (Megatron's sequence-parallel
//                      parameters' all-reduce), then all-gather of the output gradient, 64 B;
//            fc2, fc0: all-gather of the saved input again, 64 B; fc2 only: reduce-scatter of the input gradient of all
//                      rows, 128 B (fc0's input needs no gradient).
// So per rank and step: 6 all-gathers of 64 B, 3 reduce-scatters of 128 B, 2 all-reduces of 32 B, all on the
// tensor-parallel group, none without sequence parallelism's replacements (no output all-reduce).
TEST(TensorParallelPlan, SequenceParallelMlpCollectives) {
  Scenario s = base("mlp:4x8", StrategyKind::Single, 2, 2);
  s.training.batch = 4;
  s.strategy.sequence_parallel = true;
  const Plan plan = lower_validated_plan(resolve_scenario(s));
  ASSERT_EQ(plan.programs.size(), 2u);
  const int tp_group = group_of(plan, {0, 1});
  ASSERT_GE(tp_group, 0);
  for (const auto& program : plan.programs) {
    SCOPED_TRACE("rank " + std::to_string(program.rank));
    const auto found = collectives(program, tp_group);
    ASSERT_EQ(found.size(), 3u);
    EXPECT_EQ(found.at(CollectiveKind::AllGather), std::make_pair(6, Bytes{6 * 64}));
    EXPECT_EQ(found.at(CollectiveKind::ReduceScatter), std::make_pair(3, Bytes{3 * 128}));
    EXPECT_EQ(found.at(CollectiveKind::AllReduce), std::make_pair(2, Bytes{2 * 32}));
    for (const Op& op : program.ops)
      if (op.kind == OpKind::Collective && op.step == 1) {
        EXPECT_EQ(op.payload, op.collective_kind == CollectiveKind::AllGather       ? 64
                              : op.collective_kind == CollectiveKind::ReduceScatter ? 128
                                                                                    : 32)
            << op.label.str();
        EXPECT_EQ(op.stream, Stream::Compute) << op.label.str();  // Megatron waits for each
      }
  }
  // Each rank loads its own 2 of the 4 samples: rank k the samples k, k + 2 (DataShard {k, 2}).
  EXPECT_EQ(plan.programs[0].data.index, 0);
  EXPECT_EQ(plan.programs[1].data.index, 1);
  EXPECT_EQ(plan.programs[0].data.count, 2);
}

// The same model's memory per rank after forward (SGD, exact bytes), by hand. Activations: x and y, b/t rows of 8
// floats each (64 B apiece); the outputs the next layer or the loss saves: fc0's (all b rows of 8/t features, 64 B),
// fc1's (b/t rows of 8 after the reduce-scatter and the bias, 64 B), fc2's and fc3's alike: 6 × 64 = 384 B. Without
// sequence parallelism: x, y, fc1's and fc3's outputs whole (b·8·4 = 128 B each), fc0's and fc2's 64 B: 640 B.
// The buffers the collectives fill are temporaries, freed by then; at fc1's reduce-scatter the rank holds its
// partial sum of all rows (128 B) and its reduce-scattered rows (64 B), beside the activations so far.
TEST(TensorParallelPlan, SequenceParallelMlpActivations) {
  for (const bool sp : {false, true}) {
    SCOPED_TRACE(sp ? "sp" : "tp");
    Scenario s = base("mlp:4x8", StrategyKind::Single, 2, 2);
    s.training.batch = 4;
    s.strategy.sequence_parallel = sp;
    const ResolvedScenario resolved = resolve_scenario(s);
    const MemoryReport report = account_memory(lower_validated_plan(resolved), AccountingMode::Exact, resolved.device.capacity);
    for (int rank = 0; rank < 2; ++rank) {
      EXPECT_EQ(category_at(report, rank, "forward", Category::Activations), sp ? 6 * 64 : 640) << rank;
    }
  }
}

TEST(TensorParallelPlan, DdpReplicasReduceTheirShardsAcrossTensorParallelIndex) {
  Scenario s = base("mlp:2x8", StrategyKind::Ddp, 2, 4);  // ranks 0,1 (replica 0) and 2,3 (replica 1)
  s.training.batch = 2;
  const Plan plan = lower_validated_plan(resolve_scenario(s));
  ASSERT_EQ(plan.programs.size(), 4u);
  const int tp0 = group_of(plan, {0, 1}), tp1 = group_of(plan, {2, 3});
  const int dp0 = group_of(plan, {0, 2}), dp1 = group_of(plan, {1, 3});
  ASSERT_GE(tp0, 0);
  ASSERT_GE(tp1, 0);
  ASSERT_GE(dp0, 0);
  ASSERT_GE(dp1, 0);
  // Each rank's gradients: fc0 32 + 4, fc1 32 + 8 floats; DDP all-reduces them (all its buckets) in its dp group.
  const Bytes shard_grads = 4 * ((32 + 4) + (32 + 8));
  for (int rank = 0; rank < 4; ++rank) {
    const auto& program = plan.programs[static_cast<std::size_t>(rank)];
    const auto dp = collectives(program, rank % 2 == 0 ? dp0 : dp1);
    EXPECT_EQ(dp.at(CollectiveKind::AllReduce).second, shard_grads) << rank;
    const auto tp = collectives(program, rank < 2 ? tp0 : tp1);
    EXPECT_EQ(tp.at(CollectiveKind::AllReduce).first, 1) << rank;  // fc1's output; fc0 is the first layer
  }
}

// fsdp × tp 2 (2-D: FSDP2's fully_shard over each tensor-parallel index's data-parallel group, as torchtitan composes
// them) on mlp:2x6, world 4 = tp 2 × dp 2, Adam; rank r is tensor-parallel index r % 2, data-parallel index r / 2.
// A tensor-parallel rank's shard (Megatron's split): fc0 column-parallel, weight 3 × 6 and bias 3; fc1 row-parallel,
// weight 6 × 3 and its whole bias 6. FSDP2 chunks each on dim 0 over dp = 2 (torch.chunk: S = ⌈rows/2⌉ rows, the
// padded chunk of S rows allocated on every rank, FSDPParam._init_sharded_param), fp32:
//   fc0.weight 3 rows of 6:  S = 2, padded 2·6 = 12; real rows 2 (dp 0) and 1 (dp 1): 12 / 6 elements
//   fc0.bias   3 rows of 1:  S = 2, padded 2;        real 2 / 1
//   fc1.weight 6 rows of 3:  S = 3, padded 3·3 = 9;  real 9 / 9
//   fc1.bias   6 rows of 1:  S = 3, padded 3;        real 3 / 3
// Parameters (the padded shards) and gradients (each unit's reduce-scatter output, its padded shard) 12 + 2 + 9 + 3
// = 26 floats = 104 B on every rank; Adam's two moments zeros_like the unpadded local shard: dp 0 2 · 26 · 4 = 208 B,
// dp 1 2 · (6 + 1 + 9 + 3) · 4 = 152 B. Against 1/(tp·dp) of the whole model: (6·6 + 6)·2 / 4 = 21 floats a rank of
// real parameters on average, the row-parallel bias 1/dp (3 of 6) instead of 1/(tp·dp). Sequence parallelism
// changes no parameter.
TEST(TensorParallelPlan, FsdpShardsEachTensorParallelShardOverItsDataParallelGroup) {
  for (const bool sp : {false, true}) {
    SCOPED_TRACE(sp ? "sp" : "tp");
    Scenario s = base("mlp:2x6", StrategyKind::Fsdp, 2, 4);
    s.training.batch = 4;
    s.training.optimizer = OptimizerKind::Adam;
    s.strategy.sequence_parallel = sp;
    const ResolvedScenario resolved = resolve_scenario(s);
    const Plan plan = lower_validated_plan(resolved);
    ASSERT_EQ(plan.programs.size(), 4u);
    const MemoryReport report = account_memory(plan, AccountingMode::Exact, resolved.device.capacity);
    auto at = [&](int rank, const std::string& phase, int step) -> const PhaseMemory& {
      for (const auto& p : report.ranks.at(static_cast<std::size_t>(rank)).phases)
        if (p.name == phase && p.step == step) return p;
      throw std::runtime_error("no phase " + phase);
    };
    for (int rank = 0; rank < 4; ++rank) {
      SCOPED_TRACE("rank " + std::to_string(rank));
      EXPECT_EQ(at(rank, "wrapped", 0).by_category[Category::Parameters], 104);
      EXPECT_EQ(at(rank, "before_step", 1).by_category[Category::Gradients], 104);
      EXPECT_EQ(at(rank, "after_step", 1).by_category[Category::Parameters], 104);
      EXPECT_EQ(at(rank, "after_step", 1).by_category[Category::OptimizerState], rank / 2 == 0 ? 208 : 152);
    }
    // The data-parallel groups FSDP gathers and reduce-scatters in are the ranks of one tensor-parallel index.
    const int dp0 = group_of(plan, {0, 2}), dp1 = group_of(plan, {1, 3});
    ASSERT_GE(dp0, 0);
    ASSERT_GE(dp1, 0);
    for (const auto& program : plan.programs) {
      const auto dp = collectives(program, program.rank % 2 == 0 ? dp0 : dp1);
      EXPECT_EQ(dp.count(CollectiveKind::AllGather), 1u) << program.rank;
      EXPECT_EQ(dp.count(CollectiveKind::ReduceScatter), 1u) << program.rank;
    }
  }
}

struct TinyGpt {
  static constexpr std::int64_t h = 64, a = 4, layers = 2, vocab = 256, positions = 32, b = 2;
};

Scenario tiny_gpt(const std::string& config, StrategyKind kind, int tp, int world, bool sp) {
  Scenario s = base("hf:" + config, kind, tp, world);
  s.strategy.sequence_parallel = sp;
  s.training.batch = static_cast<int>(TinyGpt::b);
  return s;
}

TEST(TensorParallelPlan, TinyGptBytesAndCollectives) {
  TempConfigDir dir;
  using T = TinyGpt;
  const std::string config = dir.write("tiny.json", testing::gpt2_config_json(T::h, T::a, T::layers, T::vocab, T::positions));
  for (const bool sp : {false, true}) {
    SCOPED_TRACE(sp ? "sequence parallel" : "tensor parallel");
    const Scenario s = tiny_gpt(config, StrategyKind::Single, 2, 2, sp);
    const ResolvedScenario resolved = resolve_scenario(s);
    const Plan plan = lower_validated_plan(resolved);
    const std::int64_t h = T::h, t = 2, s_ = T::positions, b = T::b, i = 4 * h;
    // Parameters per rank: wte V·h/t, wpe whole; per block ln_1 and ln_2 (2h each) whole, c_attn (h·3h + 3h)/t,
    // attn.c_proj h·h/t + h (bias whole), c_fc (h·4h + 4h)/t, mlp.c_proj 4h·h/t + h; ln_f 2h; lm_head tied.
    const std::int64_t block = 2 * (2 * h) + (h * 3 * h + 3 * h) / t + (h * h / t + h) + (h * i + i) / t + (i * h / t + h);
    const Bytes params = 4 * (T::vocab * h / t + T::positions * h + T::layers * block + 2 * h);
    const MemoryReport report = account_memory(plan, AccountingMode::Exact, resolved.device.capacity);
    EXPECT_EQ(category_at(report, 1, "model_created", Category::Parameters), params);
    // Saved by a block at fp32 (e = 4), per sample: outside the regions the QKV, second-norm and fc1 inputs (3sh·e)
    // and two 1-byte dropout masks (2sh), whole (sp: 1/t); inside, Q, K, V and the projection input (4sh·e) and
    // fc1's and GeLU's outputs (2·s·4h·e), 1/t; the attention core (2as²·e + as², scores and mask) 1/t.
    const std::int64_t sh = s_ * h;
    const std::int64_t other = (3 * sh * 4 + 2 * sh) / (sp ? t : 1) + (4 * sh * 4 + 2 * s_ * i * 4) / t;
    const std::int64_t attention = (2 * T::a * s_ * s_ * 4 + T::a * s_ * s_) / t;
    std::map<std::string, Bytes> tensors;
    for (const auto& tensor : plan.programs[1].tensors) tensors[tensor.name.str()] = tensor.bytes;
    EXPECT_EQ(tensors.at("h.0 saved activations"), b * other);
    EXPECT_EQ(tensors.at("h.0 saved attention scores"), b * attention);

    const auto found = collectives(plan.programs[1], group_of(plan, {0, 1}));
    const Bytes hidden = b * sh * 4, positions = b * s_ * 4;
    if (!sp) {
      // Forward: embedding output, 2 per block, 3 for the vocabulary-parallel cross-entropy; backward: 2 per block
      // and the LM head's input gradient.
      ASSERT_EQ(found.size(), 1u);
      EXPECT_EQ(found.at(CollectiveKind::AllReduce).first, (1 + 2 * 2 + 3) + (2 * 2 + 1));
      EXPECT_EQ(found.at(CollectiveKind::AllReduce).second, (1 + 4 + 4 + 1) * hidden + 3 * positions);
    } else {
      // All-gathers: forward 2 per block and the head's input; backward 2 × 2 per block, the head's input again and
      // the embedding's output gradient. Reduce-scatters: forward 2 per block and the embedding's output; backward
      // 2 per block and the head's input gradient. All-reduces: the cross-entropy's 3 (b·s fp32 each) and the
      // gradients sequence parallelism leaves partial: per block ln_1, ln_2 (weight and bias) and the two c_proj
      // biases, 6h fp32, and ln_f's 2h (Megatron's _allreduce_layernorm_grads).
      ASSERT_EQ(found.size(), 3u);
      EXPECT_EQ(found.at(CollectiveKind::AllGather).first, (4 + 1) + (8 + 1 + 1));
      EXPECT_EQ(found.at(CollectiveKind::AllGather).second, 15 * hidden / t);
      EXPECT_EQ(found.at(CollectiveKind::ReduceScatter).first, (4 + 1) + (4 + 1));
      EXPECT_EQ(found.at(CollectiveKind::ReduceScatter).second, 10 * hidden);
      EXPECT_EQ(found.at(CollectiveKind::AllReduce).first, 3 + T::layers + 1);
      EXPECT_EQ(found.at(CollectiveKind::AllReduce).second, 3 * positions + (T::layers * 6 * h + 2 * h) * 4);
      // Each block's forward and backward hold one whole [s, b, h] temporary with their collectives (the row-parallel
      // partial output before its reduce-scatter; the all-gathered output gradient), allocated just before the op
      // (here, a plan with operands: its first part) and freed after its last collective: 4 collectives in forward,
      // 7 in backward (the norms' and biases' gradient all-reduce among them), between its parts.
      for (const char* what : {"h.0 row-parallel output before its reduce-scatter (sequence parallel)",
                               "h.0 all-gathered gradient (sequence parallel)"}) {
        SCOPED_TRACE(what);
        EXPECT_EQ(tensors.at(what), hidden);
        const Program& program = plan.programs[1];
        std::size_t alloc = program.ops.size(), free = 0;
        for (std::size_t k = 0; k < program.ops.size(); ++k) {
          const Op& op = program.ops[k];
          if (op.tensor < 0 || program.tensors[static_cast<std::size_t>(op.tensor)].name.str() != what) continue;
          if (op.kind == OpKind::Alloc && alloc == program.ops.size()) alloc = k;
          if (op.kind == OpKind::Free && free == 0) free = k;
        }
        ASSERT_LT(alloc + 1, program.ops.size());
        ASSERT_LT(free, program.ops.size());
        EXPECT_EQ(program.ops[alloc + 1].kind, OpKind::Compute);
        EXPECT_EQ(program.ops[alloc + 1].layer, program.ops[free].layer);
        const bool backward = program.ops[alloc + 1].compute_kind == ComputeKind::Backward;
        std::size_t between = 0;
        for (std::size_t k = alloc + 1; k < free; ++k) {
          between += program.ops[k].kind == OpKind::Collective;
          if (program.ops[k].kind == OpKind::Compute) {
            EXPECT_EQ(program.ops[k].layer, program.ops[alloc + 1].layer);
          }
        }
        EXPECT_EQ(between, backward ? 7u : 4u);
      }
    }
  }
}

// Full recomputation under tensor parallelism: the recomputed forward stops after GELU (plan/block_recompute.h), so
// of the two regions it re-runs only the attention's collective, in the plan an executor runs (the block in parts)
// and in the one the simulator times (the block one op, its collectives after it) alike. By hand, per step on a
// rank, L = 2 blocks: without sp, all-reduces forward 1 + 2L + 3 (embedding, blocks, cross-entropy), recomputed L,
// backward 2L + 1 (blocks, the LM head's input gradient), each b·s·h fp32 but the cross-entropy's b·s. With sp,
// all-gathers forward 2L + 1, recomputed 2L (both regions' inputs), backward 4L + 2; reduce-scatters forward 2L + 1,
// recomputed L (the attention's output), backward 2L + 1. The FLOPs of the recomputation, one op or its parts, are
// the block's less mlp.c_proj's: per sample (6sh² + 2sh² + 8sh² + 4s²h) / t with an inner width of 4h.
TEST(TensorParallelPlan, TinyGptFullRecomputationStopsBeforeTheMlpOutputProjection) {
  TempConfigDir dir;
  using T = TinyGpt;
  const std::string config = dir.write("tiny.json", testing::gpt2_config_json(T::h, T::a, T::layers, T::vocab, T::positions));
  const std::int64_t t = 2, L = T::layers, sh = T::positions * T::h;
  const Bytes hidden = T::b * sh * 4, positions = T::b * T::positions * 4;
  for (const bool sp : {false, true})
    for (const bool operands : {true, false}) {
      SCOPED_TRACE(std::string(sp ? "sequence parallel" : "tensor parallel") + (operands ? ", executed" : ", simulated"));
      Scenario s = tiny_gpt(config, StrategyKind::Single, static_cast<int>(t), 2, sp);
      s.training.checkpoint = CheckpointMode::Full;
      const Plan plan = lower_validated_plan(resolve_scenario(s), {.kernel_operands = operands});
      const auto found = collectives(plan.programs[1], group_of(plan, {0, 1}));
      if (!sp) {
        ASSERT_EQ(found.size(), 1u);
        EXPECT_EQ(found.at(CollectiveKind::AllReduce).first, (1 + 2 * L + 3) + L + (2 * L + 1));
        EXPECT_EQ(found.at(CollectiveKind::AllReduce).second, (1 + 2 * L + L + 2 * L + 1) * hidden + 3 * positions);
      } else {
        ASSERT_EQ(found.size(), 3u);
        EXPECT_EQ(found.at(CollectiveKind::AllGather).first, (2 * L + 1) + 2 * L + (4 * L + 2));
        EXPECT_EQ(found.at(CollectiveKind::ReduceScatter).first, (2 * L + 1) + L + (2 * L + 1));
        EXPECT_EQ(found.at(CollectiveKind::ReduceScatter).second, (2 * L + 1 + L + 2 * L + 1) * hidden);
      }
      double recompute_flops = 0;
      for (const Op& op : plan.programs[1].ops)
        if (op.kind == OpKind::Compute && op.step == 1 && op.label.str().starts_with("h.0 recompute"))
          recompute_flops += op.flops;
      const double s_ = T::positions, h = T::h;
      const double per_sample = (16 * s_ * h * h + 4 * s_ * s_ * h) / static_cast<double>(t);
      EXPECT_NEAR(recompute_flops, T::b * per_sample, 1e-9 * T::b * per_sample);
    }
}

// Without sequence parallelism a block's collectives fall inside it, and the plan says so (Megatron-LM's
// transformer_layer.py order): its forward is the attention part, the all-reduce of attn.c_proj's partial output,
// the MLP part and the all-reduce of mlp.c_proj's; its backward the MLP part, the all-reduce of d(ln_2 output), the
// attention part, the all-reduce of d(ln_1 output) and ln_1's backward. Each all-reduce names the b·s·h fp32 it
// sums: in the block's saved buffer (model/gpt_block_layout.h: ln_1's output b·s·h, Q, K, V 3b·s·h/t and the
// attention output b·s·h/t precede residual_1, which precedes ln_2's output), or the block's output. The loss is
// three parts with its three all-reduces of b·s fp32 between, over a statistics tensor of 3·b·s fp32 allocated and
// freed around them.
TEST(TensorParallelPlan, TinyGptCollectivesFallInsideTheBlockAndTheLoss) {
  TempConfigDir dir;
  using T = TinyGpt;
  const std::string config = dir.write("tiny.json", testing::gpt2_config_json(T::h, T::a, T::layers, T::vocab, T::positions));
  const Plan plan = lower_validated_plan(resolve_scenario(tiny_gpt(config, StrategyKind::Single, 2, 2, false)));
  const Program& program = plan.programs[1];
  const Bytes bsh = T::b * T::positions * T::h * 4, t = 2;
  const Bytes residual_1 = bsh + 3 * bsh / t + bsh / t, ln_2_output = residual_1 + bsh;
  std::map<std::string, TensorId> ids;
  for (std::size_t i = 0; i < program.tensors.size(); ++i) ids[program.tensors[i].name.str()] = static_cast<TensorId>(i);
  const TensorId saved = ids.at("h.0 saved activations");
  auto find = [&](const std::string& label) {
    for (std::size_t i = 0; i < program.ops.size(); ++i)
      if (program.ops[i].label.str() == label) return i;
    ADD_FAILURE() << "no op '" << label << "'";
    return program.ops.size();
  };
  auto expect_buffer = [&](std::size_t op, TensorId tensor, Bytes offset) {
    ASSERT_LT(op, program.ops.size());
    ASSERT_EQ(program.ops[op].args.size(), 1u) << program.ops[op].label.str();
    EXPECT_EQ(program.ops[op].args[0].tensor, tensor) << program.ops[op].label.str();
    EXPECT_EQ(program.ops[op].args[0].offset, offset) << program.ops[op].label.str();
    EXPECT_EQ(program.ops[op].args[0].bytes, bsh) << program.ops[op].label.str();
    EXPECT_EQ(program.ops[op].payload, bsh) << program.ops[op].label.str();
  };
  const std::size_t forward = find("h.0 forward (attention)");
  ASSERT_LT(forward + 3, program.ops.size());
  EXPECT_EQ(program.ops[forward + 1].label.str(), "tp all-reduce h.0 attention output");
  expect_buffer(forward + 1, saved, residual_1);
  EXPECT_EQ(program.ops[forward + 2].label.str(), "h.0 forward (mlp)");
  EXPECT_EQ(program.ops[forward + 3].label.str(), "tp all-reduce h.0 mlp output");
  ASSERT_EQ(program.ops[forward + 2].args.size(), 16u);
  EXPECT_EQ(program.ops[forward + 3].args[0].tensor, program.ops[forward + 2].args[15].tensor);  // the output
  const std::size_t backward = find("h.0 backward (mlp)");
  ASSERT_LT(backward + 4, program.ops.size());
  EXPECT_EQ(program.ops[backward + 1].label.str(), "tp all-reduce h.0 mlp grad input");
  expect_buffer(backward + 1, saved, ln_2_output);
  EXPECT_EQ(program.ops[backward + 2].label.str(), "h.0 backward (attention)");
  EXPECT_EQ(program.ops[backward + 3].label.str(), "tp all-reduce h.0 attention grad input");
  expect_buffer(backward + 3, saved, residual_1);
  EXPECT_EQ(program.ops[backward + 4].label.str(), "h.0 backward (ln_1)");
  // The parts share the whole op's FLOPs: the MLP 2 GEMMs of 2·h·4h/t a token of the whole block's.
  const double mlp = program.ops[forward + 2].flops, whole = mlp + program.ops[forward].flops;
  EXPECT_NEAR(mlp, 2.0 * 2 * T::h * 4 * T::h / t * T::b * T::positions, 1e-6 * whole);

  const TensorId stats = ids.at("vocab-parallel cross-entropy statistics");
  EXPECT_EQ(program.tensors[static_cast<std::size_t>(stats)].bytes, 3 * T::b * T::positions * 4);
  const std::size_t loss = find("cross-entropy loss (row maxima)");
  ASSERT_GE(loss, 1u);
  EXPECT_EQ(program.ops[loss - 1].kind, OpKind::Alloc);
  EXPECT_EQ(program.ops[loss - 1].tensor, stats);
  const char* labels[] = {"tp all-reduce cross-entropy logits max", "cross-entropy loss (target logit, sum of exp)",
                          "tp all-reduce cross-entropy target logit", "tp all-reduce cross-entropy sum of exp",
                          "cross-entropy loss (log_probs, loss)"};
  for (std::size_t k = 0; k < 5; ++k) EXPECT_EQ(program.ops.at(loss + 1 + k).label.str(), labels[k]);
  for (const std::size_t k : {1u, 3u, 4u}) {
    const Op& reduce = program.ops.at(loss + k);
    EXPECT_EQ(reduce.payload, T::b * T::positions * 4) << reduce.label.str();
    ASSERT_EQ(reduce.args.size(), 1u);
    EXPECT_EQ(reduce.args[0].tensor, stats) << reduce.label.str();
  }
  EXPECT_EQ(program.ops.at(loss + 6).kind, OpKind::Free);
  EXPECT_EQ(program.ops.at(loss + 6).tensor, stats);
}

// A block under sequence parallelism all-gathers each tensor-parallel region's [s/t, b, h] input into Megatron-LM's
// global memory buffer (core/utils.py GlobalMemoryBuffer.get_tensor(..., "mpu"), from
// LinearWithGradAccumulationAndAsyncCommunication in core/tensor_parallel/layers.py): one [s, b, h] tensor of the
// activation dtype, torch.empty'd at the first region's forward (h.0's attention) and kept for the rest of the
// process, every later all-gather (h.0's MLP, h.1, the LM head's input, the backward's re-gathers) a view of it. By
// hand, at fp32 (e = 4 B): b·s·h·e = 2·32·64·4 = 16,384 B a rank (pp-1f1b with 2 micro-batches: b = 1, 8,192 B on
// each stage: stage 0 holds the embedding and both blocks, stage 1 the final norm and the LM head, whose input
// all-gather is its first use). It is alive from before its first use to the end, and every rank's peak comes later
// (in the backward), so the peak rises by exactly that many bytes against the same plan without it. Without
// sequence parallelism a region's input is whole on every rank: no buffer.
TEST(TensorParallelPlan, SequenceParallelBlockCountsMegatronsAllGatherBuffer) {
  TempConfigDir dir;
  using T = TinyGpt;
  const std::string config = dir.write("tiny.json", testing::gpt2_config_json(T::h, T::a, T::layers, T::vocab, T::positions));
  struct Case {
    StrategyKind kind;
    bool sp;
    Bytes buffer;  // by hand, above
  };
  for (const Case c : {Case{StrategyKind::Single, true, 2 * 32 * 64 * 4}, Case{StrategyKind::Single, false, 0},
                       Case{StrategyKind::Pipeline1F1B, true, 1 * 32 * 64 * 4}}) {
    SCOPED_TRACE(strategy_name(c.kind) + (c.sp ? " + sp" : ""));
    Scenario s = tiny_gpt(config, c.kind, 2, c.kind == StrategyKind::Single ? 2 : 4, c.sp);
    if (c.kind == StrategyKind::Pipeline1F1B) {
      s.strategy.stages = 2;
      s.strategy.micro_batches = 2;
    }
    const ResolvedScenario resolved = resolve_scenario(s);
    const Plan plan = lower_validated_plan(resolved);
    Plan without = plan;
    for (Program& program : without.programs)
      for (TensorInfo& tensor : program.tensors)
        if (tensor.name.find("all-gather buffer") != std::string::npos) tensor.bytes = 0;
    const MemoryReport report = account_memory(plan, AccountingMode::Exact, resolved.device.capacity);
    const MemoryReport reference = account_memory(without, AccountingMode::Exact, resolved.device.capacity);
    for (const Program& program : plan.programs) {
      SCOPED_TRACE("rank " + std::to_string(program.rank));
      int buffers = 0, frees = 0;
      std::ptrdiff_t alloc_at = -1, first_user = -1;
      for (std::size_t i = 0; i < program.ops.size(); ++i) {
        const Op& op = program.ops[i];
        const bool buffer = op.tensor >= 0 && program.tensors[static_cast<std::size_t>(op.tensor)].name.find(
                                                  "all-gather buffer") != std::string::npos;
        if (op.kind == OpKind::Alloc && buffer) {
          ++buffers;
          alloc_at = static_cast<std::ptrdiff_t>(i);
          const TensorInfo& tensor = program.tensors[static_cast<std::size_t>(op.tensor)];
          EXPECT_EQ(tensor.bytes, c.buffer);
          EXPECT_EQ(tensor.category, Category::CommunicationBuffers);
        }
        frees += op.kind == OpKind::Free && buffer;
        if (first_user < 0 && op.kind == OpKind::Compute && op.compute_kind == ComputeKind::Forward && op.layer >= 0) {
          const Layer& layer = resolved.model.layers.at(static_cast<std::size_t>(op.layer));
          if (layer.kind == LayerKind::TransformerBlock || layer.name == "lm_head") first_user = static_cast<std::ptrdiff_t>(i);
        }
      }
      EXPECT_EQ(buffers, c.sp ? 1 : 0);
      EXPECT_EQ(frees, 0);  // kept, as the module-level buffer is
      if (c.sp) {  // just before the first all-gathering forward: only a block's transient (an allocation) or the
                   // LM head's all-gather into the buffer between
        ASSERT_GT(first_user, alloc_at);
        EXPECT_LE(first_user - alloc_at, 2);
        for (std::ptrdiff_t k = alloc_at + 1; k < first_user; ++k) {
          const Op& between = program.ops[static_cast<std::size_t>(k)];
          EXPECT_TRUE(between.kind == OpKind::Alloc ||
                      (between.kind == OpKind::Collective && between.collective_kind == CollectiveKind::AllGather))
              << between.label.str();
        }
      }
      const auto r = static_cast<std::size_t>(program.rank);
      EXPECT_EQ(report.ranks[r].peak_allocated - reference.ranks[r].peak_allocated, c.buffer);
    }
  }
}

// Megatron-LM pads the vocabulary to a multiple of make_vocab_size_divisible_by × tp (_vocab_size_with_padding):
// 1001 tokens become 1024 at tp 2 with the default 128 (a multiple of 256), 1002 with 1 (a multiple of 2). The
// embedding's rows per rank are the padded vocabulary / t, and so are the logits' columns.
TEST(TensorParallelPlan, VocabularyPaddedAsMegatronLm) {
  TempConfigDir dir;
  using T = TinyGpt;
  constexpr std::int64_t given = 1001;
  const std::string config = dir.write("odd.json", testing::gpt2_config_json(T::h, T::a, T::layers, given, T::positions));
  for (const auto& [multiple, padded] : {std::pair{128, std::int64_t{1024}}, std::pair{1, std::int64_t{1002}}}) {
    SCOPED_TRACE("make_vocab_size_divisible_by " + std::to_string(multiple));
    Scenario s = tiny_gpt(config, StrategyKind::Single, 2, 2, false);
    s.model.make_vocab_size_divisible_by = multiple;
    const ResolvedScenario resolved = resolve_scenario(s);
    EXPECT_EQ(resolved.model.transformer->vocab, padded);
    const Plan plan = lower_validated_plan(resolved);
    const std::int64_t h = T::h, t = 2, i = 4 * h;
    const std::int64_t block = 2 * (2 * h) + (h * 3 * h + 3 * h) / t + (h * h / t + h) + (h * i + i) / t + (i * h / t + h);
    const MemoryReport report = account_memory(plan, AccountingMode::Exact, resolved.device.capacity);
    EXPECT_EQ(category_at(report, 0, "model_created", Category::Parameters),
              4 * (padded * h / t + T::positions * h + T::layers * block + 2 * h));
    EXPECT_EQ(tensor_parallel_shard(resolved.model, 2, false).output_numel, T::positions * padded / t);
    bool noted = false;
    for (const auto& note : resolved.model.notes)
      noted |= note.rfind("vocabulary padded from 1001 to " + std::to_string(padded), 0) == 0;
    EXPECT_TRUE(noted);
  }
  // tp 1: the config's vocabulary, as transformers builds the model.
  const ResolvedScenario whole = resolve_scenario(tiny_gpt(config, StrategyKind::Single, 1, 1, false));
  EXPECT_EQ(whole.model.transformer->vocab, given);
}

TEST(TensorParallelPlan, ThreeDimensionalPlanOrdersTensorParallelFastest) {
  TempConfigDir dir;
  using T = TinyGpt;
  const std::string config = dir.write("tiny.json", testing::gpt2_config_json(T::h, T::a, T::layers, T::vocab, T::positions));
  Scenario s = tiny_gpt(config, StrategyKind::Pipeline1F1B, 2, 8, false);
  s.strategy.stages = 2;
  s.strategy.dp = 2;
  s.strategy.micro_batches = 2;
  const Plan plan = lower_validated_plan(resolve_scenario(s));
  ASSERT_EQ(plan.programs.size(), 8u);
  for (int tp_set = 0; tp_set < 4; ++tp_set) EXPECT_GE(group_of(plan, {2 * tp_set, 2 * tp_set + 1}), 0) << tp_set;
  // Every send / recv stays between ranks of the same tensor-parallel index, and every collective's group either is
  // a tensor-parallel set or holds ranks of one tensor-parallel index.
  for (const auto& program : plan.programs)
    for (const Op& op : program.ops) {
      if (op.kind == OpKind::Send || op.kind == OpKind::Recv) {
        EXPECT_EQ(op.peer % 2, program.rank % 2);
      }
      if (op.kind != OpKind::Collective) continue;
      const auto& ranks = plan.groups.at(static_cast<std::size_t>(op.group));
      const bool tp_set = ranks.size() == 2 && ranks[0] / 2 == ranks[1] / 2 && ranks[0] != ranks[1];
      bool one_index = true;
      for (int r : ranks) one_index &= r % 2 == program.rank % 2;
      EXPECT_TRUE(tp_set || one_index) << op.label.str();
    }
  // Strategies that compose with tp lower to valid plans (lower_validated_plan throws otherwise).
  for (const StrategyKind kind : {StrategyKind::Zero1, StrategyKind::Zero2, StrategyKind::Zero3, StrategyKind::PipelineGPipe}) {
    Scenario other = tiny_gpt(config, kind, 2, 4, true);
    other.training.optimizer = OptimizerKind::Adam;
    EXPECT_NO_THROW(lower_validated_plan(resolve_scenario(other))) << strategy_name(kind);
  }
}

}  // namespace
}  // namespace shardscope
