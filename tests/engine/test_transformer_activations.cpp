// Lowered transformer plans: activation memory of blocks against Korthikanti et al. 2022, Table 2 (no tensor
// parallelism) in each recomputation mode, the backward peak of full recomputation, and tied-embedding gradients.
// Plans are lowered for one device and accounted exactly (tensor bytes), so the figures are the formula's.
#include <gtest/gtest.h>

#include <algorithm>

#include "engine/hf_config_files.h"
#include "memory/accounting.h"
#include "model/transformer.h"
#include "strategy/lower.h"

namespace shardscope {
namespace {

using testing::TempConfigDir;

struct Shape {
  std::int64_t s, b, h, a;
};

// Lowers a single-device step of `spec` with the model built at `element_bytes` (resolve_scenario accepts only
// fp32 so far, so the 16-bit model is built here directly) and returns the exact accounting.
struct Lowered {
  Plan plan;
  MemoryReport report;
};

Lowered lower(const std::string& spec, const Shape& shape, std::int64_t element_bytes, CheckpointMode mode) {
  Scenario s;
  s.model.spec = spec;
  s.strategy.kind = StrategyKind::Single;
  s.cluster.world = 1;
  s.training.batch = static_cast<int>(shape.b);
  s.training.seq = static_cast<int>(shape.s);
  s.training.checkpoint = mode;
  s.training.loss = LossKind::CrossEntropy;
  s.accounting.mode = AccountingMode::Exact;
  ResolvedScenario resolved = resolve_scenario(s);
  ModelOptions options;
  options.seq = static_cast<int>(shape.s);
  options.activation_element_bytes = element_bytes;
  options.checkpoint = mode;
  resolved.model = parse_model_spec(spec, options);
  Lowered out;
  out.plan = lower_plan(resolved);
  out.report = account_memory(out.plan, AccountingMode::Exact, resolved.device.capacity);
  return out;
}

Bytes activations_at_forward(const Lowered& run) {
  for (const auto& phase : run.report.ranks.at(0).phases)
    if (phase.name == "forward") return phase.by_category[Category::Activations];
  throw std::runtime_error("no forward phase");
}

// The plan's activation bytes per block at the end of forward: the difference between L+1 and L blocks, all
// else equal (embedding, final norm, LM head and loss are the same in both).
Bytes per_block_activations(TempConfigDir& dir, const Shape& shape, std::int64_t element_bytes, CheckpointMode mode,
                            bool llama, std::int64_t intermediate = 0) {
  Bytes at[2];
  for (int extra = 0; extra < 2; ++extra) {
    const int layers = 2 + extra;
    const std::string json = llama ? testing::llama_config_json(static_cast<int>(shape.h), static_cast<int>(shape.a),
                                                               static_cast<int>(shape.a), static_cast<int>(intermediate),
                                                               layers, 128, 256)
                                   : testing::gpt2_config_json(static_cast<int>(shape.h), static_cast<int>(shape.a), layers, 128, 256);
    const std::string path = dir.write("model" + std::to_string(layers) + ".json", json);
    at[extra] = activations_at_forward(lower("hf:" + path, shape, element_bytes, mode));
  }
  return at[1] - at[0];
}

const Shape kShapes[] = {{32, 3, 64, 4}, {64, 2, 128, 8}, {16, 1, 96, 6}, {128, 4, 64, 2}};

// Table 2, 16-bit activations, no tensor parallelism, per layer:
//   no recomputation         sbh(34 + 5as/h) = 34sbh + 5as²b
//   selective recomputation  sbh·34
//   full recomputation       sbh·2
TEST(KorthikantiTable2, SixteenBitPerLayerBytes) {
  TempConfigDir dir;
  for (const Shape& x : kShapes) {
    const std::int64_t sbh = x.s * x.b * x.h;
    EXPECT_EQ(per_block_activations(dir, x, 2, CheckpointMode::None, false), sbh * 34 + 5 * x.a * x.s * x.s * x.b)
        << "s=" << x.s << " b=" << x.b << " h=" << x.h << " a=" << x.a;
    EXPECT_EQ(per_block_activations(dir, x, 2, CheckpointMode::Selective, false), sbh * 34);
    EXPECT_EQ(per_block_activations(dir, x, 2, CheckpointMode::Full, false), sbh * 2);
  }
}

// fp32 activations: the paper's 34 = 16 two-byte tensors of s·b·h (32) + 2 one-byte dropout masks (2), and its
// 5 = 2 two-byte tensors of a·s²·b (4) + 1 one-byte mask. At 4 bytes per element the masks stay 1 byte:
// 16·4 + 2 = 66 sbh and 2·4 + 1 = 9 as²b; full recomputation keeps the 4-byte input, 4sbh.
TEST(KorthikantiTable2, Fp32ScalesTensorsButNotMasks) {
  TempConfigDir dir;
  for (const Shape& x : kShapes) {
    const std::int64_t sbh = x.s * x.b * x.h;
    EXPECT_EQ(per_block_activations(dir, x, 4, CheckpointMode::None, false), sbh * 66 + 9 * x.a * x.s * x.s * x.b);
    EXPECT_EQ(per_block_activations(dir, x, 4, CheckpointMode::Selective, false), sbh * 66);
    EXPECT_EQ(per_block_activations(dir, x, 4, CheckpointMode::Full, false), sbh * 4);
  }
}

// Llama blocks counted the paper's way (no dropout; SwiGLU with width i; one a·s²·b softmax output):
// s·b·h tensors: norm input, q/k/v input, Q, K, V, o_proj input, second norm input, gate/up input = 8;
// s·b·i tensors: SiLU input, SiLU output, up output, down_proj input = 4. At 2 bytes: 16sbh + 8sbi + 2as²b.
TEST(KorthikantiTable2, LlamaBlockHandCount) {
  TempConfigDir dir;
  const Shape x{32, 2, 64, 4};
  const std::int64_t i = 176, sbh = x.s * x.b * x.h, sbi = x.s * x.b * i, scores = x.a * x.s * x.s * x.b;
  EXPECT_EQ(per_block_activations(dir, x, 2, CheckpointMode::None, true, i), 16 * sbh + 8 * sbi + 2 * scores);
  EXPECT_EQ(per_block_activations(dir, x, 2, CheckpointMode::Selective, true, i), 16 * sbh + 8 * sbi);
  EXPECT_EQ(per_block_activations(dir, x, 2, CheckpointMode::Full, true, i), 2 * sbh);
}

OpIndex find_op(const Program& program, const std::string& label) {
  for (std::size_t i = 0; i < program.ops.size(); ++i)
    if (program.ops[i].label == label) return static_cast<OpIndex>(i);
  return -1;
}

// Full recomputation, 16-bit, L = 4 blocks. Once the LM head and ln_f have run backward, the activations alive
// are: token ids x and targets y (b·s int64 each; the scalar loss is a temporary: no backward saves it),
// the embedding dropout mask (sbh, 1 byte), the L block inputs (2sbh each), and, while a block runs backward,
// its recomputed activations (34sbh + 5as²b − the 2sbh input it already holds). The largest such moment is the
// last block's backward: base + L·2sbh + 32sbh + 5as²b.
TEST(Recomputation, FullBackwardPeakIsInputsPlusOneBlock) {
  TempConfigDir dir;
  const Shape x{64, 2, 128, 8};
  const int layers = 4;
  const std::string path = dir.write("gpt.json", testing::gpt2_config_json(128, 8, layers, 128, 256));
  const Lowered run = lower("hf:" + path, x, 2, CheckpointMode::Full);
  const Program& program = run.plan.programs.at(0);
  const OpIndex ln_f_backward = find_op(program, "ln_f backward");
  ASSERT_GE(ln_f_backward, 0);
  Bytes peak = 0;
  for (const auto& sample : run.report.ranks.at(0).series)
    if (sample.op > ln_f_backward) peak = std::max(peak, sample.by_category[Category::Activations]);
  const std::int64_t sbh = x.s * x.b * x.h, scores = x.a * x.s * x.s * x.b;
  const std::int64_t base = 2 * (x.b * x.s * 8) + sbh;
  EXPECT_EQ(peak, base + layers * 2 * sbh + (34 * sbh + 5 * scores - 2 * sbh));
  // The recompute op re-runs the block's forward (24·s·h² + 4·s²·h per sample, Megatron) up to the last tensor the
  // backward reads, mlp.c_proj's input: all but c_proj's 2·s·4h·h = 8·s·h², as PyTorch's non-reentrant checkpoint
  // stops early; times b.
  const OpIndex recompute = find_op(program, "h.3 recompute");
  ASSERT_GE(recompute, 0);
  const double s = static_cast<double>(x.s), h = static_cast<double>(x.h);
  EXPECT_DOUBLE_EQ(program.ops[static_cast<std::size_t>(recompute)].flops, 2 * (16 * s * h * h + 4 * s * s * h));
  EXPECT_EQ(find_op(program, "h.3 attention recompute"), -1);
}

// Selective recomputation re-runs only the attention core before each block's backward, up to the last tensor the
// core's backward reads (the dropped probabilities, before the product with V): QKᵀ, 2·s²·h FLOPs per sample; its
// 5as²b bytes exist only during that block's backward.
TEST(Recomputation, SelectiveRecomputesTheAttentionCore) {
  TempConfigDir dir;
  const Shape x{64, 2, 128, 8};
  const std::string path = dir.write("gpt.json", testing::gpt2_config_json(128, 8, 2, 128, 256));
  const Lowered run = lower("hf:" + path, x, 2, CheckpointMode::Selective);
  const Program& program = run.plan.programs.at(0);
  const OpIndex recompute = find_op(program, "h.1 attention recompute");
  ASSERT_GE(recompute, 0);
  const double s = static_cast<double>(x.s), h = static_cast<double>(x.h);
  EXPECT_DOUBLE_EQ(program.ops[static_cast<std::size_t>(recompute)].flops, 2 * 2 * s * s * h);
  const OpIndex alloc = find_op(program, "alloc h.1 recomputed attention scores");
  const OpIndex free = find_op(program, "free h.1 recomputed attention scores");
  ASSERT_GE(alloc, 0);
  ASSERT_GT(free, find_op(program, "h.1 backward"));
  EXPECT_LT(alloc, recompute);
  EXPECT_EQ(program.tensors[static_cast<std::size_t>(program.ops[static_cast<std::size_t>(alloc)].tensor)].bytes,
            5 * x.a * x.s * x.s * x.b);
}

// GPT-2 ties lm_head to wte: one parameter, one .grad. The lm_head's contribution (V·h fp32) waits in autograd's
// input buffer from lm_head's backward until the embedding's backward adds its own; after backward the gradients
// are exactly one fp32 copy of the parameters: 4 · (V·h + P·h + L(12h² + 13h) + 2h) bytes.
TEST(TiedEmbeddings, OneGradientPerParameter) {
  TempConfigDir dir;
  const Shape x{16, 2, 64, 4};
  const std::string path = dir.write("gpt.json", testing::gpt2_config_json(64, 4, 2, 128, 256));
  const Lowered run = lower("hf:" + path, x, 4, CheckpointMode::None);
  const std::int64_t h = 64, parameters = 128 * h + 256 * h + 2 * (12 * h * h + 13 * h) + 2 * h;
  for (const auto& phase : run.report.ranks.at(0).phases)
    if (phase.name == "before_step") {
      EXPECT_EQ(phase.by_category[Category::Gradients], 4 * parameters);
    }
  const Program& program = run.plan.programs.at(0);
  const OpIndex held = find_op(program, "alloc lm_head tied weight grad");
  const OpIndex second = find_op(program, "free embeddings.wte.weight grad");
  ASSERT_GE(held, 0);
  EXPECT_GT(second, find_op(program, "embeddings backward"));
  EXPECT_EQ(program.tensors[static_cast<std::size_t>(program.ops[static_cast<std::size_t>(held)].tensor)].bytes, 4 * 128 * h);
}

}  // namespace
}  // namespace shardscope
