// A GPT-2 block and cross-entropy run as Megatron-LM's tensor-parallel shards (issue 39): two ranks, each with its
// heads' columns of c_attn, its rows of attn.c_proj, its columns of c_fc and rows of mlp.c_proj (the norms and the
// c_proj biases whole), run the block's parts with the all-reduces between them done here by hand (a sum of the two
// ranks' buffers). The reference is the whole block's kernel, which tests/exec/test_transformer_kernels.cpp holds to
// central differences and test_executed_transformers to PyTorch. Tolerance: each all-reduced buffer is a sum over
// the hidden or inner width split in two halves (8 or 32 fp32 products), so it moves by at most 2(n − 1)·u of the
// products' absolute sum (Higham §4.2): with |values| ≲ 4 and 32 terms, under 1e-5 absolute; the outputs and
// gradients here are of order 1, so 1e-5 · max(1, |x|).
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "exec/cpu/gpt_block_kernels.h"
#include "exec/cpu/log_softmax_kernels.h"
#include "exec/cpu/vocab_parallel_loss_kernels.h"
#include "exec/random_values.h"
#include "model/gpt_block_layout.h"

namespace shardscope::exec::cpu {
namespace {

constexpr int kTp = 2;
constexpr int kHidden = 8, kHeads = 2, kInner = 32, kRows = 2, kSeq = 3;
constexpr std::size_t kTokens = kRows * kSeq;

using test::random_values;

void expect_close(const std::vector<float>& actual, const std::vector<float>& expected, const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (std::size_t i = 0; i < expected.size(); ++i)
    ASSERT_NEAR(actual[i], expected[i], 1e-5 * std::max(1.0f, std::fabs(expected[i]))) << what << "[" << i << "]";
}

// Columns [begin, begin + count) of every row of a rows × columns matrix.
std::vector<float> columns(const std::vector<float>& m, std::size_t cols, std::size_t begin, std::size_t count) {
  std::vector<float> out;
  for (std::size_t r = 0; r < m.size() / cols; ++r)
    out.insert(out.end(), m.begin() + static_cast<std::ptrdiff_t>(r * cols + begin),
               m.begin() + static_cast<std::ptrdiff_t>(r * cols + begin + count));
  return out;
}

// Rows [begin, begin + count) of a matrix with `cols` columns.
std::vector<float> rows(const std::vector<float>& m, std::size_t cols, std::size_t begin, std::size_t count) {
  return {m.begin() + static_cast<std::ptrdiff_t>(begin * cols), m.begin() + static_cast<std::ptrdiff_t>((begin + count) * cols)};
}

enum Param { Ln1W, Ln1B, AttnW, AttnB, ProjW, ProjB, Ln2W, Ln2B, FcW, FcB, MlpProjW, MlpProjB };

// Rank k's shard of the whole block's 12 parameters, as Megatron-LM splits them (c_attn: Q, K and V columns of its
// heads, side by side).
std::vector<std::vector<float>> shard_of(const std::vector<std::vector<float>>& whole, int k) {
  const std::size_t h = kHidden, w = kHidden / kTp, i = kInner / kTp;
  std::vector<std::vector<float>> s = whole;
  for (const Param p : {AttnW, AttnB}) {
    const std::size_t cols = p == AttnW ? 3 * h : 3 * h;
    std::vector<float> q = columns(whole[p], cols, 0 * h + k * w, w), kk = columns(whole[p], cols, h + k * w, w),
                       v = columns(whole[p], cols, 2 * h + k * w, w);
    std::vector<float>& out = s[p];
    out.clear();
    for (std::size_t r = 0; r < q.size() / w; ++r)
      for (const std::vector<float>* part : {&q, &kk, &v}) out.insert(out.end(), part->begin() + r * w, part->begin() + (r + 1) * w);
  }
  s[ProjW] = rows(whole[ProjW], h, k * w, w);
  s[FcW] = columns(whole[FcW], kInner, k * i, i);
  s[FcB] = columns(whole[FcB], kInner, k * i, i);
  s[MlpProjW] = rows(whole[MlpProjW], h, k * i, i);
  return s;
}

GptBlockParams views(const std::vector<std::vector<float>>& p) {
  GptBlockParams v;
  for (std::size_t k = 0; k < 12; ++k) v[k] = p[k];
  return v;
}

struct Buffers {
  std::vector<std::byte> saved, attention;
  explicit Buffers(const GptBlockLayout& l)
      : saved(static_cast<std::size_t>(l.saved_bytes)), attention(static_cast<std::size_t>(l.attention_bytes)) {}
  float* at(std::int64_t offset) { return reinterpret_cast<float*>(saved.data() + offset); }
};

// The all-reduce: every rank's `count` floats at `offset` of its saved buffer become their sum.
void all_reduce(std::vector<Buffers>& ranks, std::int64_t offset, std::size_t count) {
  std::vector<float> sum(count, 0.0f);
  for (Buffers& b : ranks)
    for (std::size_t j = 0; j < count; ++j) sum[j] += b.at(offset)[j];
  for (Buffers& b : ranks) std::copy(sum.begin(), sum.end(), b.at(offset));
}

void check_block_shards(double dropout) {
  TransformerConfig c;
  c.hidden = kHidden;
  c.heads = kHeads;
  c.intermediate = kInner;
  c.attn_pdrop = c.resid_pdrop = dropout;
  const std::size_t sizes[12] = {8, 8, 8 * 24, 24, 64, 8, 8, 8, 8 * 32, 32, 32 * 8, 8};
  std::vector<std::vector<float>> whole;
  for (int k = 0; k < 12; ++k) {
    const bool norm_weight = k == Ln1W || k == Ln2W;
    whole.push_back(random_values(sizes[k], 10 + k, norm_weight ? 0.2f : 0.4f, norm_weight ? 1.0f : 0.0f));
  }
  const std::vector<float> input = random_values(kTokens * kHidden, 5, 0.4f),
                           grad_out = random_values(kTokens * kHidden, 7, 0.4f);

  // The whole block.
  const GptBlockShape shape = gpt_block_shape(c, kRows, kSeq, true, 99, {});
  Buffers one(gpt_block_layout(c, kRows, kSeq, 4));
  std::vector<float> output(kTokens * kHidden), grad_input(kTokens * kHidden);
  std::vector<std::vector<float>> grads;
  GptBlockGrads grad_views;
  for (std::size_t k = 0; k < 12; ++k) grads.emplace_back(whole[k].size());
  for (std::size_t k = 0; k < 12; ++k) grad_views[k] = grads[k];
  gpt_block_forward(shape, input, views(whole), one.saved, one.attention, output);
  gpt_block_backward(shape, grad_out, input, views(whole), one.saved, one.attention, grad_input, grad_views);

  // Two tensor-parallel ranks.
  const GptBlockLayout layout = gpt_block_layout(c, kRows, kSeq, 4, kTp);
  const std::size_t nh = kTokens * kHidden;
  std::vector<Buffers> ranks(kTp, Buffers(layout));
  std::vector<std::vector<std::vector<float>>> params, shard_grads(kTp);
  std::vector<GptBlockShape> shapes;
  std::vector<std::vector<float>> outputs(kTp, std::vector<float>(nh)), grad_inputs(kTp, std::vector<float>(nh));
  std::vector<GptBlockGrads> shard_grad_views(kTp);
  for (int k = 0; k < kTp; ++k) {
    params.push_back(shard_of(whole, k));
    GptBlockShape s = shape;
    s.tp = kTp;
    s.tp_rank = k;
    shapes.push_back(s);
    for (std::size_t p = 0; p < 12; ++p) shard_grads[k].emplace_back(params[k][p].size());
    for (std::size_t p = 0; p < 12; ++p) shard_grad_views[k][p] = shard_grads[k][p];
  }
  for (int k = 0; k < kTp; ++k)
    gpt_block_attention_forward(shapes[k], input, views(params[k]), ranks[k].saved, ranks[k].attention, k == 0);
  all_reduce(ranks, layout.residual_1, nh);
  for (int k = 0; k < kTp; ++k)
    gpt_block_mlp_forward(shapes[k], views(params[k]), ranks[k].saved, ranks[k].attention, outputs[k], k == 0);
  std::vector<float> summed(nh, 0.0f);
  for (int k = 0; k < kTp; ++k)
    for (std::size_t j = 0; j < nh; ++j) summed[j] += outputs[k][j];
  expect_close(summed, output, "output");

  for (int k = 0; k < kTp; ++k)
    gpt_block_mlp_backward(shapes[k], grad_out, views(params[k]), ranks[k].saved, ranks[k].attention, grad_inputs[k],
                           shard_grad_views[k]);
  all_reduce(ranks, layout.ln_2_output, nh);
  for (int k = 0; k < kTp; ++k)
    gpt_block_attention_backward(shapes[k], grad_out, views(params[k]), ranks[k].saved, ranks[k].attention,
                                 grad_inputs[k], shard_grad_views[k]);
  all_reduce(ranks, layout.residual_1, nh);
  for (int k = 0; k < kTp; ++k) {
    gpt_block_input_norm_backward(shapes[k], input, views(params[k]), ranks[k].saved, ranks[k].attention,
                                  grad_inputs[k], shard_grad_views[k]);
    expect_close(grad_inputs[k], grad_input, "grad_input on rank " + std::to_string(k));
  }
  // Each rank's gradients are its shard of the whole block's; the replicated ones are whole on both.
  const char* names[12] = {"ln_1.weight", "ln_1.bias", "c_attn.weight", "c_attn.bias", "attn.c_proj.weight",
                           "attn.c_proj.bias", "ln_2.weight", "ln_2.bias", "c_fc.weight", "c_fc.bias",
                           "mlp.c_proj.weight", "mlp.c_proj.bias"};
  for (int k = 0; k < kTp; ++k) {
    const std::vector<std::vector<float>> expected = shard_of(grads, k);
    for (std::size_t p = 0; p < 12; ++p) expect_close(shard_grads[k][p], expected[p], names[p] + std::string(" on rank ") + std::to_string(k));
  }
}

TEST(GptBlockTensorParallel, TwoShardsWithTheirAllReducesAreTheWholeBlock) { check_block_shards(0.0); }

// Dropout: the attention masks of a rank's heads are drawn where those heads lie in the whole layer's mask, and the
// residual masks (whole on every rank) are applied to each partial product before the sum.
TEST(GptBlockTensorParallel, TwoShardsWithDropoutAreTheWholeBlock) { check_block_shards(0.3); }

// Vocabulary-parallel cross-entropy on 2 ranks (5 of 10 classes each), the collectives done by hand, against
// log_softmax + nll_loss on the whole logits; then the backward. The shift differs (the mean of the ranks' maxima
// against the row maximum), which softmax ignores up to rounding: fp32 Σ exp of 2 terms and logits below 3 in
// size, 1e-6 on the loss.
TEST(VocabParallelCrossEntropy, TwoShardsGiveTheWholeLossAndGradient) {
  constexpr int kRowsCe = 4, kClasses = 10, kLocal = kClasses / kTp;
  const std::vector<float> logits = random_values(kRowsCe * kClasses, 3, 3.0f);
  const std::vector<std::int64_t> targets = {0, 7, 4, 9};  // on rank 0, 1, 0, 1
  std::vector<float> log_probs(logits.size());
  log_softmax_forward(kRowsCe, kClasses, logits, log_probs);
  const float loss = nll_loss_forward(kRowsCe, kClasses, log_probs, targets);
  std::vector<float> grad(logits.size()), grad_logits(logits.size());
  nll_loss_backward(kRowsCe, kClasses, targets, grad, 0.5);
  log_softmax_backward(kRowsCe, kClasses, grad, log_probs, grad_logits);

  std::vector<std::vector<float>> stats(kTp, std::vector<float>(kRowsCe * 3, -7.0f));  // garbage, as reused memory
  std::vector<std::vector<float>> shard_logits;
  std::vector<VocabShard> shards;
  for (int k = 0; k < kTp; ++k) {
    shard_logits.push_back(columns(logits, kClasses, static_cast<std::size_t>(k * kLocal), kLocal));
    shards.push_back({kRowsCe, kLocal, kTp, k});
  }
  auto all_reduce_stats = [&](std::size_t first, std::size_t count) {
    for (std::size_t j = first; j < first + count; ++j) {
      float sum = 0;
      for (int k = 0; k < kTp; ++k) sum += stats[k][j];
      for (int k = 0; k < kTp; ++k) stats[k][j] = sum;
    }
  };
  for (int k = 0; k < kTp; ++k) vocab_parallel_loss_max(shards[k], shard_logits[k], stats[k]);
  all_reduce_stats(0, kRowsCe);
  for (int k = 0; k < kTp; ++k) vocab_parallel_loss_sums(shards[k], shard_logits[k], targets, stats[k]);
  all_reduce_stats(kRowsCe, 2 * kRowsCe);
  for (int k = 0; k < kTp; ++k) {
    std::vector<float> shard_log_probs(kRowsCe * kLocal), shard_grad(kRowsCe * kLocal), shard_grad_logits(kRowsCe * kLocal);
    EXPECT_NEAR(vocab_parallel_loss_finish(shards[k], shard_logits[k], stats[k], shard_log_probs), loss, 1e-6);
    expect_close(shard_log_probs, columns(log_probs, kClasses, static_cast<std::size_t>(k * kLocal), kLocal), "log_probs");
    vocab_parallel_nll_loss_backward(shards[k], targets, shard_grad, 0.5);
    expect_close(shard_grad, columns(grad, kClasses, static_cast<std::size_t>(k * kLocal), kLocal), "grad_log_probs");
    vocab_parallel_log_softmax_backward(shards[k], shard_grad, shard_log_probs, shard_grad_logits, 0.5);
    expect_close(shard_grad_logits, columns(grad_logits, kClasses, static_cast<std::size_t>(k * kLocal), kLocal),
                 "grad_logits");
  }
}

// A row whose maximum on one rank lies far above the ranks' mean maximum would overflow fp32's Σ exp: the kernel
// names the row and the gap (a gap of 200: 100 above the mean of 200 and 0).
TEST(VocabParallelCrossEntropy, LogitsTooFarApartAreRefusedByName) {
  const VocabShard rank0{1, 2, kTp, 0};
  std::vector<float> stats = {100.0f, 0.0f, 0.0f};  // the all-reduced mean of the maxima 200 and 0
  const std::vector<float> logits = {200.0f, 1.0f};
  const std::vector<std::int64_t> target = {1};
  try {
    vocab_parallel_loss_sums(rank0, logits, target, stats);
    FAIL() << "no error";
  } catch (const std::domain_error& e) {
    EXPECT_NE(std::string(e.what()).find("row 0's largest logit on tensor-parallel rank 0 lies 100"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace shardscope::exec::cpu
