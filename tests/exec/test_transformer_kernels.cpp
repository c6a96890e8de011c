// GPT-2 kernels on the CPU: gradients against central differences of the forward (in double over the fp32
// forward), the dropout generator's statistics and determinism, and recomputation reproducing the saved tensors
// byte for byte. The exact agreement with PyTorch is tests/torch/check_gpt2_against_torch.py's.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <numeric>
#include <vector>

#include "exec/shared_kernels/dropout_mask.h"
#include "exec/cpu/embedding_kernels.h"
#include "exec/cpu/gpt_block_kernels.h"
#include "exec/cpu/layer_norm_kernels.h"
#include "exec/random_values.h"

namespace shardscope::exec::cpu {
namespace {

using test::random_values;

double weighted_sum(std::span<const float> y, std::span<const float> r) {
  double s = 0;
  for (std::size_t i = 0; i < y.size(); ++i) s += static_cast<double>(y[i]) * r[i];
  return s;
}

// Central difference of loss() with respect to x[i]; loss() reads x. Step 1e-2 over values of order 1: the fp32
// forward's rounding (~1e-7 of the loss) over 2h stays below 1e-4 of a gradient of order 1, and the truncation
// error (h² · third derivative) is ~1e-4 for these smooth functions: the tolerance below is 2e-3 relative plus 2e-3.
double numeric_gradient(std::vector<float>& x, std::size_t i, const std::function<double()>& loss) {
  const float h = 1e-2f, kept = x[i];
  x[i] = kept + h;
  const double up = loss();
  x[i] = kept - h;
  const double down = loss();
  x[i] = kept;
  return (up - down) / (2.0 * h);
}

void expect_gradient(std::vector<float>& x, std::span<const float> analytic, const std::function<double()>& loss,
                     const std::string& what, std::size_t samples = 12) {
  ASSERT_EQ(analytic.size(), x.size()) << what;
  const std::size_t stride = std::max<std::size_t>(1, x.size() / samples);
  for (std::size_t i = 0; i < x.size(); i += stride) {
    const double numeric = numeric_gradient(x, i, loss);
    EXPECT_NEAR(analytic[i], numeric, 2e-3 + 2e-3 * std::fabs(numeric)) << what << "[" << i << "]";
  }
}

TEST(LayerNormKernels, ForwardNormalisesEachRowThenScalesAndShifts) {
  // Row (1, 2, 3, 4): mean 2.5, biased variance 1.25; y = (x − 2.5)/sqrt(1.25 + eps)·w + b.
  const std::vector<float> x{1, 2, 3, 4}, w{1, 2, 1, 1}, b{0, 0, 0, 1};
  std::vector<float> y(4);
  layer_norm_forward({1, 4, 1e-5f}, x, w, b, y);
  const double rstd = 1.0 / std::sqrt(1.25 + 1e-5);
  EXPECT_NEAR(y[0], -1.5 * rstd, 1e-6);
  EXPECT_NEAR(y[1], -0.5 * rstd * 2, 1e-6);
  EXPECT_NEAR(y[3], 1.5 * rstd + 1, 1e-6);
}

TEST(LayerNormKernels, BackwardMatchesCentralDifferences) {
  const LayerNormShape shape{3, 8, 1e-5f};
  std::vector<float> x = random_values(24, 1), w = random_values(8, 2, 0.5f, 1.0f), b = random_values(8, 3);
  const std::vector<float> r = random_values(24, 4);
  std::vector<float> y(24), gx(24), gw(8), gb(8);
  auto loss = [&] {
    layer_norm_forward(shape, x, w, b, y);
    return weighted_sum(y, r);
  };
  layer_norm_backward(shape, r, x, w, gx, false, gw, gb);
  expect_gradient(x, gx, loss, "grad_input", 24);
  expect_gradient(w, gw, loss, "grad_weight", 8);
  expect_gradient(b, gb, loss, "grad_bias", 8);
  // accumulate: adds to what grad_input held
  std::vector<float> acc(24, 1.0f);
  layer_norm_backward(shape, r, x, w, acc, true, gw, gb);
  for (std::size_t i = 0; i < 24; ++i) EXPECT_FLOAT_EQ(acc[i], gx[i] + 1.0f);
}

TEST(GeluKernels, TanhApproximationAndItsDerivative) {
  // gelu_new(1) = 0.5·(1 + tanh(sqrt(2/π)·1.044715)) = 0.8411919906...
  std::vector<float> x{1.0f, -2.0f, 0.0f}, y(3);
  gelu_tanh_forward(x, y);
  EXPECT_NEAR(y[0], 0.8411919906, 1e-6);
  EXPECT_FLOAT_EQ(y[2], 0.0f);
  std::vector<float> g{1, 1, 1};
  gelu_tanh_backward(x, g);
  EXPECT_NEAR(g[2], 0.5, 1e-7);  // the derivative at 0 is 1/2
  std::vector<float> one(1);
  auto at = [&](float v) { std::vector<float> in{v}; gelu_tanh_forward(in, one); return static_cast<double>(one[0]); };
  EXPECT_NEAR(g[0], (at(1.0f + 1e-3f) - at(1.0f - 1e-3f)) / 2e-3, 1e-3);
  EXPECT_NEAR(g[1], (at(-2.0f + 1e-3f) - at(-2.0f - 1e-3f)) / 2e-3, 1e-3);
}

// gelu_new and its derivative against the tanh formula in double, from the negative tail (where 1 + tanh(u) in float
// cancels to nothing) to where it is the identity. The kernel evaluates v·σ(2u); float rounding of u (an ulp of
// |2u| ≤ 40 here moves exp(−2u) by ~5e-6 relative) bounds its error. Below v = −6 (u < −12.5) the formula in double
// loses its own digits (1 + tanh(u) < 3e-11), so there the values only have to be that small.
TEST(GeluKernels, MatchesTheTanhFormulaInDoubleEverywhere) {
  const double c = std::sqrt(2.0 / 3.14159265358979323846), a = 0.044715;
  std::vector<float> x;
  for (int k = -1200; k <= 1200; ++k) x.push_back(static_cast<float>(k) / 100.0f);
  for (const float tiny : {1e-30f, -1e-30f, 3e-8f, -3e-8f}) x.push_back(tiny);
  std::vector<float> y(x.size()), g(x.size(), 1.0f);
  gelu_tanh_forward(x, y);
  gelu_tanh_backward(x, g);
  for (std::size_t k = 0; k < x.size(); ++k) {
    const double v = x[k], t = std::tanh(c * (v + a * v * v * v));
    const double value = 0.5 * v * (1 + t), slope = 0.5 * (1 + t) + 0.5 * v * (1 - t * t) * c * (1 + 3 * a * v * v);
    const double tail = v < -6 ? 1e-9 : 0;
    EXPECT_NEAR(y[k], value, 2e-5 * std::abs(value) + tail + 1e-37) << "gelu_new(" << v << ")";
    EXPECT_NEAR(g[k], slope, 2e-5 * std::abs(slope) + tail + 1e-6) << "gelu_new'(" << v << ")";
  }
}

TEST(DropoutMask, KeepsAboutOneMinusPAndIsAPureFunctionOfItsKey) {
  std::vector<std::uint8_t> a(100000), b(100000), c(100000);
  fill_keep_mask(42, 1, 0.1, 0, a);
  fill_keep_mask(42, 1, 0.1, 0, b);
  fill_keep_mask(42, 2, 0.1, 0, c);
  const double kept = std::accumulate(a.begin(), a.end(), 0.0) / a.size();
  // Binomial(1e5, 0.9): standard deviation sqrt(0.09/1e5) ≈ 0.00095; 5 of them.
  EXPECT_NEAR(kept, 0.9, 0.005);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  std::vector<std::uint8_t> tail(1000);
  fill_keep_mask(42, 1, 0.1, 500, tail);  // any element can be drawn alone
  EXPECT_TRUE(std::equal(tail.begin(), tail.end(), a.begin() + 500));
  std::vector<std::uint8_t> all(1000);
  fill_keep_mask(42, 1, 0.0, 0, all);
  EXPECT_EQ(std::accumulate(all.begin(), all.end(), 0), 1000);
  EXPECT_NE(dropout_key(1, 1, 3), dropout_key(1, 2, 3));  // steps draw apart
  EXPECT_NE(dropout_key(1, 1, 3), dropout_key(1, 1, 4));  // and layers
  // A pass holding global samples 1 and 3 (rank 1 of 2, DistributedSampler's order), 5 elements a sample: its mask is
  // elements [5, 10) and [15, 20) of the site's whole-batch mask.
  EXPECT_EQ(whole_batch_element({1, 2}, 7, 5), 17);
  std::vector<std::uint8_t> whole(20), pass(10);
  fill_keep_mask(42, 1, 0.5, 0, whole);
  fill_pass_keep_mask(42, 1, 0.5, {1, 2}, 2, pass);
  EXPECT_TRUE(std::equal(pass.begin(), pass.begin() + 5, whole.begin() + 5));
  EXPECT_TRUE(std::equal(pass.begin() + 5, pass.end(), whole.begin() + 15));
  std::vector<float> x{2, 2}, kept_scale{2, 2};
  const std::vector<std::uint8_t> mask{1, 0};
  apply_keep_mask(x, mask, 0.5);
  EXPECT_FLOAT_EQ(x[0], 4.0f);  // kept elements scaled by 1/(1 − p)
  EXPECT_FLOAT_EQ(x[1], 0.0f);
}

// A dropped element is exactly 0 whatever it held (native_dropout's mask selects; an inf or NaN dropped does not
// become NaN as x · 0 would), a kept one x / (1 − p); random masks against the formula written here.
TEST(DropoutMask, DroppedElementsAreZeroKeptOnesScaled) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> x{inf, nan, -inf, 3.0f};
  apply_keep_mask(x, std::vector<std::uint8_t>{0, 0, 1, 1}, 0.25);
  EXPECT_TRUE(x[0] == 0.0f && x[1] == 0.0f);
  EXPECT_EQ(x[2], -inf);
  EXPECT_FLOAT_EQ(x[3], 4.0f);
  std::vector<std::uint8_t> mask(4099);
  fill_keep_mask(7, 2, 0.5, 0, mask);
  std::vector<float> values(mask.size()), out(mask.size());
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i % 13) - 6.0f;
  apply_keep_mask(values, mask.data(), 0.5, out.data());
  for (std::size_t i = 0; i < values.size(); ++i) ASSERT_EQ(out[i], mask[i] ? values[i] * 2.0f : 0.0f) << i;
}

TEST(EmbeddingKernels, ForwardAddsTokenAndPositionRowsAndBackwardScattersThem) {
  const EmbeddingShape shape{2, 3, 2, 4, 5, 0.0, 0};
  const std::vector<std::int64_t> ids{1, 3, 1, 0, 0, 2};
  std::vector<float> wte(8), wpe(10), out(12);
  std::iota(wte.begin(), wte.end(), 0.0f);
  std::iota(wpe.begin(), wpe.end(), 100.0f);
  embedding_forward(shape, ids, wte, wpe, {}, out);
  EXPECT_FLOAT_EQ(out[0], 2.0f + 100.0f);  // token 1 row (2, 3) + position 0 row (100, 101)
  EXPECT_FLOAT_EQ(out[5], 3.0f + 105.0f);  // sample 0, position 2: token 1 + position 2
  EXPECT_FLOAT_EQ(out[6], 0.0f + 100.0f);  // sample 1, position 0: token 0
  std::vector<float> g(12, 1.0f), gwte(8), gwpe(10);
  embedding_backward(shape, g, ids, {}, gwte, gwpe);
  EXPECT_FLOAT_EQ(gwte[2], 2.0f);   // token 1 used twice
  EXPECT_FLOAT_EQ(gwte[0], 2.0f);   // token 0 twice
  EXPECT_FLOAT_EQ(gwte[4], 1.0f);   // token 2 once
  EXPECT_FLOAT_EQ(gwpe[0], 2.0f);   // every position once per sample
  EXPECT_FLOAT_EQ(gwpe[8], 0.0f);   // position 4 unused
  const std::vector<std::int64_t> bad{1, 9, 1, 0, 0, 2};
  EXPECT_THROW(embedding_forward(shape, bad, wte, wpe, {}, out), std::invalid_argument);
}

// A small block: 2 samples × 3 tokens, hidden 8, 2 heads, MLP 32.
struct SmallBlock {
  GptBlockShape shape;
  std::vector<std::vector<float>> params;
  std::vector<float> input;
  GptBlockLayout layout;

  explicit SmallBlock(double dropout) {
    TransformerConfig c;
    c.hidden = 8;
    c.heads = 2;
    c.intermediate = 32;
    c.attn_pdrop = c.resid_pdrop = dropout;
    shape = gpt_block_shape(c, 2, 3, true, 99, {});
    layout = gpt_block_layout(c, 2, 3, 4);
    const std::size_t sizes[12] = {8, 8, 8 * 24, 24, 64, 8, 8, 8, 8 * 32, 32, 32 * 8, 8};
    for (int k = 0; k < 12; ++k) {
      const bool norm_weight = k == 0 || k == 6;
      params.push_back(random_values(sizes[k], 10 + k, norm_weight ? 0.2f : 0.4f, norm_weight ? 1.0f : 0.0f));
    }
    input = random_values(48, 5);
  }
  GptBlockParams views() const {
    GptBlockParams p;
    for (std::size_t k = 0; k < 12; ++k) p[k] = params[k];
    return p;
  }
  std::vector<std::byte> saved() const { return std::vector<std::byte>(static_cast<std::size_t>(layout.saved_bytes)); }
  std::vector<std::byte> attention() const { return std::vector<std::byte>(static_cast<std::size_t>(layout.attention_bytes)); }
};

void check_block_gradients(double dropout) {
  SmallBlock block(dropout);
  const std::vector<float> r = random_values(48, 7);
  std::vector<float> out(48);
  auto loss = [&] {
    auto saved = block.saved();
    auto attention = block.attention();
    gpt_block_forward(block.shape, block.input, block.views(), saved, attention, out);
    return weighted_sum(out, r);
  };
  auto saved = block.saved();
  auto attention = block.attention();
  gpt_block_forward(block.shape, block.input, block.views(), saved, attention, out);
  std::vector<float> grad_input(48);
  std::vector<std::vector<float>> grads;
  GptBlockGrads grad_views;
  for (std::size_t k = 0; k < 12; ++k) {
    grads.emplace_back(block.params[k].size());
    grad_views[k] = grads.back();
  }
  gpt_block_backward(block.shape, r, block.input, block.views(), saved, attention, grad_input, grad_views);
  expect_gradient(block.input, grad_input, loss, "grad_input", 48);
  const char* names[12] = {"ln_1.weight", "ln_1.bias", "c_attn.weight", "c_attn.bias", "attn.c_proj.weight",
                           "attn.c_proj.bias", "ln_2.weight", "ln_2.bias", "c_fc.weight", "c_fc.bias",
                           "mlp.c_proj.weight", "mlp.c_proj.bias"};
  for (std::size_t k = 0; k < 12; ++k) expect_gradient(block.params[k], grads[k], loss, names[k], 24);
}

TEST(GptBlockKernels, BackwardMatchesCentralDifferencesWithoutDropout) { check_block_gradients(0.0); }

// With dropout the masks are a pure function of the key, so the forward is a smooth function of its inputs for a
// fixed key and central differences still apply.
TEST(GptBlockKernels, BackwardMatchesCentralDifferencesWithDropout) { check_block_gradients(0.3); }

TEST(GptBlockKernels, CausalAttentionIgnoresLaterTokens) {
  // Changing the last token of a sample changes no earlier output of that sample (and nothing of the other sample).
  SmallBlock block(0.0);
  auto run = [&](const std::vector<float>& input) {
    std::vector<float> out(48);
    auto saved = block.saved();
    auto attention = block.attention();
    gpt_block_forward(block.shape, input, block.views(), saved, attention, out);
    return out;
  };
  const std::vector<float> before = run(block.input);
  std::vector<float> changed = block.input;
  for (int j = 16; j < 24; ++j) changed[static_cast<std::size_t>(j)] += 0.5f;  // sample 0, token 2
  const std::vector<float> after = run(changed);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(before[static_cast<std::size_t>(i)], after[static_cast<std::size_t>(i)]) << i;
  for (int i = 24; i < 48; ++i) EXPECT_EQ(before[static_cast<std::size_t>(i)], after[static_cast<std::size_t>(i)]) << i;
  EXPECT_NE(before[16], after[16]);
}

TEST(GptBlockKernels, RecomputationReproducesTheSavedTensorsByteForByte) {
  SmallBlock block(0.2);
  std::vector<float> out(48);
  auto saved = block.saved();
  auto attention = block.attention();
  gpt_block_forward(block.shape, block.input, block.views(), saved, attention, out);
  // Full recomputation: the forward again without an output.
  auto saved_again = block.saved();
  auto attention_again = block.attention();
  gpt_block_forward(block.shape, block.input, block.views(), saved_again, attention_again, {});
  EXPECT_EQ(saved, saved_again);
  EXPECT_EQ(attention, attention_again);
  // Selective: the attention core from the kept Q and K.
  auto attention_selective = block.attention();
  gpt_attention_recompute(block.shape, saved, attention_selective);
  EXPECT_EQ(attention, attention_selective);
}

// Dropout masks are drawn by global sample (exec/shared_kernels/dropout_mask.h): sample 1 run alone, told it is
// global sample 1, gets the masks it got as the second sample of a 2-sample pass, so its output is the same (up to
// the GEMMs' summation over 3 rows instead of 6: 1e-5); told it is sample 0, it gets sample 0's masks, which drop
// other elements (p = 0.3 of 24 outputs' inputs): far apart.
TEST(GptBlockKernels, DropoutMasksFollowTheGlobalSampleNotThePass) {
  SmallBlock both(0.3);
  std::vector<float> out(48);
  {
    auto saved = both.saved();
    auto attention = both.attention();
    gpt_block_forward(both.shape, both.input, both.views(), saved, attention, out);
  }
  TransformerConfig c;
  c.hidden = 8;
  c.heads = 2;
  c.intermediate = 32;
  c.attn_pdrop = c.resid_pdrop = 0.3;
  const GptBlockLayout one_layout = gpt_block_layout(c, 1, 3, 4);
  const std::vector<float> second(both.input.begin() + 24, both.input.end());
  auto run_alone = [&](std::int64_t global_sample) {
    const GptBlockShape one = gpt_block_shape(c, 1, 3, true, 99, {global_sample, 1});
    std::vector<std::byte> saved(static_cast<std::size_t>(one_layout.saved_bytes));
    std::vector<std::byte> attention(static_cast<std::size_t>(one_layout.attention_bytes));
    std::vector<float> alone(24);
    gpt_block_forward(one, second, both.views(), saved, attention, alone);
    return alone;
  };
  auto largest_difference = [&](const std::vector<float>& alone) {
    float largest = 0;
    for (std::size_t i = 0; i < alone.size(); ++i) largest = std::max(largest, std::fabs(alone[i] - out[24 + i]));
    return largest;
  };
  EXPECT_LT(largest_difference(run_alone(1)), 1e-5f);
  EXPECT_GT(largest_difference(run_alone(0)), 1e-2f);
}

TEST(GptBlockKernels, TheLayoutHoldsKorthikantisCountAtFp32) {
  // 66·s·h + 9·a·s² bytes a sample with n_inner = 4h (model/transformer_costs.h): s = 3, h = 8, a = 2.
  const SmallBlock block(0.0);
  EXPECT_EQ(block.layout.saved_bytes + 2 * 3 * 8 * 4, 2 * (66 * 3 * 8));  // + the block input, 2 samples
  EXPECT_EQ(block.layout.attention_bytes, 2 * (9 * 2 * 3 * 3));
}

}  // namespace
}  // namespace shardscope::exec::cpu
