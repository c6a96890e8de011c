// GPT-2 block forward and backward over the saved-buffer layout; GEMMs through OpenBLAS, attention per sample and
// head on strided views of the fused Q, K, V rows.
#include "exec/cpu/gpt_block_kernels.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "exec/cpu/blas_gemm.h"
#include "exec/shared_kernels/dropout_mask.h"
#include "exec/cpu/layer_norm_kernels.h"
#include "exec/cpu/span_checks.h"

namespace shardscope::exec::cpu {

namespace {

enum Param { Ln1W, Ln1B, AttnW, AttnB, ProjW, ProjB, Ln2W, Ln2B, FcW, FcB, MlpProjW, MlpProjB };

// Typed views of the layout's tensors.
struct Views {
  float *ln1 = nullptr, *qkv = nullptr, *attn_out = nullptr, *resid1 = nullptr, *ln2 = nullptr, *fc = nullptr,
        *gelu = nullptr, *probs = nullptr, *dropped = nullptr;
  std::uint8_t *attn_mask = nullptr, *mlp_mask = nullptr, *prob_mask = nullptr;
};

GptBlockLayout layout_of(const GptBlockShape& shape) {
  TransformerConfig c;
  c.hidden = shape.hidden;
  c.heads = shape.heads;
  c.intermediate = shape.inner;
  return gpt_block_layout(c, shape.rows, shape.seq, sizeof(float), shape.tp);
}

template <typename Byte>
Views views_of(const GptBlockShape& shape, std::span<Byte> saved, std::span<Byte> attention) {
  const GptBlockLayout l = layout_of(shape);
  if (static_cast<std::int64_t>(saved.size()) != l.saved_bytes || static_cast<std::int64_t>(attention.size()) != l.attention_bytes)
    throw std::invalid_argument("gpt_block: saved buffers hold " + std::to_string(saved.size()) + " and " +
                                std::to_string(attention.size()) + " bytes, the layout needs " +
                                std::to_string(l.saved_bytes) + " and " + std::to_string(l.attention_bytes));
  auto* base = const_cast<std::byte*>(reinterpret_cast<const std::byte*>(saved.data()));
  auto* att = const_cast<std::byte*>(reinterpret_cast<const std::byte*>(attention.data()));
  auto f = [](std::byte* p, std::int64_t at) { return reinterpret_cast<float*>(p + at); };
  auto u = [](std::byte* p, std::int64_t at) { return reinterpret_cast<std::uint8_t*>(p + at); };
  return {f(base, l.ln_1_output), f(base, l.qkv), f(base, l.attention_output), f(base, l.residual_1),
          f(base, l.ln_2_output), f(base, l.fc_output), f(base, l.gelu_output), f(att, l.probabilities),
          f(att, l.dropped_probabilities), u(base, l.attention_mask), u(base, l.mlp_mask), u(att, l.probability_mask)};
}

// Under tensor parallelism the rank's shard: c_attn's columns of its heads (Q, K, V, w each), attn.c_proj's rows of
// them, mlp.c_fc's columns and mlp.c_proj's rows of its i; norms and the two c_proj biases whole.
void check_params(const GptBlockDims& d, const GptBlockParams& p) {
  const auto h = static_cast<std::size_t>(d.h), i = static_cast<std::size_t>(d.i), w = static_cast<std::size_t>(d.w);
  const std::size_t expected[12] = {h, h, h * 3 * w, 3 * w, w * h, h, h, h, h * i, i, i * h, h};
  for (int k = 0; k < 12; ++k)
    if (p[static_cast<std::size_t>(k)].size() != expected[k])
      throw std::invalid_argument("gpt_block: parameter " + std::to_string(k) + " has " +
                                  std::to_string(p[static_cast<std::size_t>(k)].size()) + " elements, expected " +
                                  std::to_string(expected[k]));
}

// Conv1D: y[n×out] = x[n×in]·W[in×out] + bias (an empty bias: none).
void conv1d(int n, int in, int out, const float* x, std::span<const float> w, std::span<const float> bias, float* y) {
  gemm_f32(Transpose::No, Transpose::No, n, out, in, 1.0f, x, w.data(), 0.0f, y);
  if (bias.empty()) return;
  for (int r = 0; r < n; ++r) {
    float* row = y + static_cast<std::size_t>(r) * out;
    for (int j = 0; j < out; ++j) row[j] += bias[static_cast<std::size_t>(j)];
  }
}

// Conv1D's weight and bias gradients (written): dW[in×out] = xᵀ·dy, db = Σ rows dy.
void conv1d_param_grads(int n, int in, int out, const float* x, const float* dy, std::span<float> dw, std::span<float> db) {
  gemm_f32(Transpose::Yes, Transpose::No, in, out, n, 1.0f, x, dy, 0.0f, dw.data());
  std::fill(db.begin(), db.end(), 0.0f);
  for (int r = 0; r < n; ++r) {
    const float* row = dy + static_cast<std::size_t>(r) * out;
    for (int j = 0; j < out; ++j) db[static_cast<std::size_t>(j)] += row[j];
  }
}

std::span<float> span_of(float* p, std::size_t n) { return {p, n}; }
std::span<std::uint8_t> span_of(std::uint8_t* p, std::size_t n) { return {p, n}; }

// Scores, causal softmax, attn_dropout's mask and the dropped probabilities, for every sample and head.
void attention_probabilities(const GptBlockShape& shape, const GptBlockDims& d, const Views& v) {
  const int ld = 3 * d.w;
  const float scale = std::sqrt(static_cast<float>(d.d));
  fill_pass_keep_mask(shape.dropout_key, kAttentionDropoutSite, shape.attn_dropout, shape.samples, d.b,
                      span_of(v.prob_mask, d.scores), shape.tp_rank, shape.tp);
  for (int b = 0; b < d.b; ++b)
    for (int head = 0; head < d.a; ++head) {
      const float* q = v.qkv + static_cast<std::size_t>(b) * d.s * ld + static_cast<std::size_t>(head) * d.d;
      const std::size_t at = (static_cast<std::size_t>(b) * d.a + head) * d.s * d.s;
      float* p = v.probs + at;
      gemm_f32_strided(Transpose::No, Transpose::Yes, d.s, d.s, d.d, 1.0f, q, ld, q + d.w, ld, 0.0f, p, d.s);
      for (int t = 0; t < d.s; ++t) {  // matmul, then / sqrt(head width) and the causal mask, as GPT2Attention
        float* row = p + static_cast<std::size_t>(t) * d.s;
        float max = -INFINITY;
        for (int j = 0; j <= t; ++j) max = std::max(max, row[j] /= scale);
        double sum = 0;
        for (int j = 0; j <= t; ++j) sum += row[j] = std::exp(row[j] - max);
        const auto inverse = static_cast<float>(1.0 / sum);
        for (int j = 0; j <= t; ++j) row[j] *= inverse;
        std::fill(row + t + 1, row + d.s, 0.0f);
      }
      std::copy(p, p + static_cast<std::size_t>(d.s) * d.s, v.dropped + at);
    }
  apply_keep_mask(span_of(v.dropped, d.scores), span_of(v.prob_mask, d.scores), shape.attn_dropout);
}

void residual_dropout(const GptBlockShape& shape, int site, std::span<float> x, std::span<std::uint8_t> mask) {
  fill_pass_keep_mask(shape.dropout_key, site, shape.resid_dropout, shape.samples, shape.rows, mask);
  apply_keep_mask(x, mask, shape.resid_dropout);
}

// Attention backward for every sample and head: from d(attention output) (tokens × w) to d(Q, K, V) (tokens × 3w
// at dqkv).
void attention_backward(const GptBlockShape& shape, const GptBlockDims& d, const Views& v, const float* d_out, float* dqkv) {
  const int ld = 3 * d.w;
  const float inverse_scale = 1.0f / std::sqrt(static_cast<float>(d.d));
  const float kept_scale = keep_scale(shape.attn_dropout);
  for (int b = 0; b < d.b; ++b)
    for (int head = 0; head < d.a; ++head) {
      const std::size_t token0 = static_cast<std::size_t>(b) * d.s;
      const float* q = v.qkv + token0 * ld + static_cast<std::size_t>(head) * d.d;
      const float* k = q + d.w;
      const float* val = q + 2 * d.w;
      const float* g = d_out + token0 * d.w + static_cast<std::size_t>(head) * d.d;
      float* dq = dqkv + token0 * ld + static_cast<std::size_t>(head) * d.d;
      const std::size_t at = (static_cast<std::size_t>(b) * d.a + head) * d.s * d.s;
      float* dropped = v.dropped + at;
      const float* p = v.probs + at;
      const std::uint8_t* mask = v.prob_mask + at;
      gemm_f32_strided(Transpose::Yes, Transpose::No, d.s, d.d, d.s, 1.0f, dropped, d.s, g, d.w, 0.0f, dq + 2 * d.w, ld);
      gemm_f32_strided(Transpose::No, Transpose::Yes, d.s, d.s, d.d, 1.0f, g, d.w, val, ld, 0.0f, dropped, d.s);
      for (int t = 0; t < d.s; ++t) {  // dropout, then softmax backward, then the 1/sqrt(head width), in place
        float* row = dropped + static_cast<std::size_t>(t) * d.s;
        const float* prow = p + static_cast<std::size_t>(t) * d.s;
        const std::uint8_t* mrow = mask + static_cast<std::size_t>(t) * d.s;
        double dot = 0;
        for (int j = 0; j <= t; ++j) {
          row[j] = mrow[j] ? row[j] * kept_scale : 0.0f;
          dot += static_cast<double>(row[j]) * prow[j];
        }
        const auto dotf = static_cast<float>(dot);
        for (int j = 0; j <= t; ++j) row[j] = prow[j] * (row[j] - dotf) * inverse_scale;
        std::fill(row + t + 1, row + d.s, 0.0f);
      }
      gemm_f32_strided(Transpose::No, Transpose::No, d.s, d.d, d.s, 1.0f, dropped, d.s, k, ld, 0.0f, dq, ld);
      gemm_f32_strided(Transpose::Yes, Transpose::No, d.s, d.d, d.s, 1.0f, dropped, d.s, q, ld, 0.0f, dq + d.w, ld);
    }
}

constexpr float kGeluC = 0.7978845608028654f;  // sqrt(2/π)
constexpr float kGeluA = 0.044715f;

}  // namespace

void gelu_tanh_forward(std::span<const float> x, std::span<float> y) {
  for (std::size_t k = 0; k < x.size(); ++k) {
    const float v = x[k];
    y[k] = 0.5f * v * (1.0f + std::tanh(kGeluC * (v + kGeluA * v * v * v)));
  }
}

void gelu_tanh_backward(std::span<const float> x, std::span<float> grad) {
  for (std::size_t k = 0; k < x.size(); ++k) {
    const float v = x[k];
    const float t = std::tanh(kGeluC * (v + kGeluA * v * v * v));
    const float dinner = kGeluC * (1.0f + 3.0f * kGeluA * v * v);
    grad[k] *= 0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * dinner;
  }
}

void gpt_block_attention_forward(const GptBlockShape& shape, std::span<const float> input, const GptBlockParams& p,
                                 std::span<std::byte> saved, std::span<std::byte> attention, bool adds_replicated) {
  const GptBlockDims d = gpt_block_dims(shape);
  check_params(d, p);
  const std::size_t nh = d.nh;
  require_size(input, nh, "gpt_block_forward", "input");
  const Views v = views_of(shape, saved, attention);
  const LayerNormShape norm{d.n, d.h, shape.eps};
  layer_norm_forward(norm, input, p[Ln1W], p[Ln1B], span_of(v.ln1, nh));
  conv1d(d.n, d.h, 3 * d.w, v.ln1, p[AttnW], p[AttnB], v.qkv);
  attention_probabilities(shape, d, v);
  for (int b = 0; b < d.b; ++b)
    for (int head = 0; head < d.a; ++head) {
      const std::size_t token0 = static_cast<std::size_t>(b) * d.s;
      const float* val = v.qkv + token0 * 3 * d.w + 2 * static_cast<std::size_t>(d.w) + static_cast<std::size_t>(head) * d.d;
      const float* dropped = v.dropped + (static_cast<std::size_t>(b) * d.a + head) * d.s * d.s;
      gemm_f32_strided(Transpose::No, Transpose::No, d.s, d.d, d.s, 1.0f, dropped, d.s, val, 3 * d.w, 0.0f,
                       v.attn_out + token0 * d.w + static_cast<std::size_t>(head) * d.d, d.w);
    }
  conv1d(d.n, d.w, d.h, v.attn_out, p[ProjW], adds_replicated ? p[ProjB] : std::span<const float>{}, v.resid1);
  residual_dropout(shape, kResidualDropoutSite1, span_of(v.resid1, nh), span_of(v.attn_mask, nh));
  if (adds_replicated)
    for (std::size_t k = 0; k < nh; ++k) v.resid1[k] += input[k];
}

void gpt_block_mlp_forward(const GptBlockShape& shape, const GptBlockParams& p, std::span<std::byte> saved,
                           std::span<std::byte> attention, std::span<float> output, bool adds_replicated) {
  const GptBlockDims d = gpt_block_dims(shape);
  check_params(d, p);
  const std::size_t nh = d.nh, ni = d.ni;
  if (!output.empty()) require_size(output, nh, "gpt_block_forward", "output");
  const Views v = views_of(shape, saved, attention);
  const LayerNormShape norm{d.n, d.h, shape.eps};
  layer_norm_forward(norm, span_of(v.resid1, nh), p[Ln2W], p[Ln2B], span_of(v.ln2, nh));
  conv1d(d.n, d.h, d.i, v.ln2, p[FcW], p[FcB], v.fc);
  gelu_tanh_forward(span_of(v.fc, ni), span_of(v.gelu, ni));
  if (output.empty()) {  // recomputation: only the mask is still missing from what backward reads
    fill_pass_keep_mask(shape.dropout_key, kResidualDropoutSite2, shape.resid_dropout, shape.samples, shape.rows,
                        span_of(v.mlp_mask, nh));
    return;
  }
  conv1d(d.n, d.i, d.h, v.gelu, p[MlpProjW], adds_replicated ? p[MlpProjB] : std::span<const float>{}, output.data());
  residual_dropout(shape, kResidualDropoutSite2, output, span_of(v.mlp_mask, nh));
  if (adds_replicated)
    for (std::size_t k = 0; k < nh; ++k) output[k] += v.resid1[k];
}

void gpt_block_forward(const GptBlockShape& shape, std::span<const float> input, const GptBlockParams& p,
                       std::span<std::byte> saved, std::span<std::byte> attention, std::span<float> output) {
  if (shape.tp != 1) throw std::invalid_argument("gpt_block_forward: a tensor-parallel shard runs in two parts");
  gpt_block_attention_forward(shape, input, p, saved, attention, true);
  gpt_block_mlp_forward(shape, p, saved, attention, output, true);
}

void gpt_attention_recompute(const GptBlockShape& shape, std::span<const std::byte> saved, std::span<std::byte> attention) {
  const GptBlockDims d = gpt_block_dims(shape);
  // Only the attention buffer is written; the saved one is read (Q and K).
  attention_probabilities(shape, d, views_of(shape, saved, std::span<const std::byte>(attention)));
}

namespace {

struct BackwardPass {
  GptBlockDims d;
  Views v;
  LayerNormShape norm;
};

BackwardPass backward_pass(const GptBlockShape& shape, const GptBlockParams& p, std::span<std::byte> saved,
                           std::span<std::byte> attention, std::span<float> grad_input, const GptBlockGrads& g) {
  const GptBlockDims d = gpt_block_dims(shape);
  check_params(d, p);
  for (int k = 0; k < 12; ++k)
    require_size(g[static_cast<std::size_t>(k)], p[static_cast<std::size_t>(k)].size(), "gpt_block_backward", "gradient");
  require_size(grad_input, d.nh, "gpt_block_backward", "grad_input");
  if (2 * d.i < 3 * d.w)
    throw std::invalid_argument("gpt_block_backward: the MLP width must be at least 1.5 × hidden (its two saved "
                                "tensors hold the Q, K, V gradient)");
  return {d, views_of(shape, saved, attention), LayerNormShape{d.n, d.h, shape.eps}};
}

}  // namespace

void gpt_block_mlp_backward(const GptBlockShape& shape, std::span<const float> grad_out, const GptBlockParams& p,
                            std::span<std::byte> saved, std::span<std::byte> attention, std::span<float> grad_input,
                            const GptBlockGrads& g) {
  const auto [d, v, norm] = backward_pass(shape, p, saved, attention, grad_input, g);
  require_size(grad_out, d.nh, "gpt_block_backward", "grad_out");
  float* dx = grad_input.data();
  // d(mlp.c_proj output) through resid_dropout, kept in grad_input until the attention part's residual path.
  apply_keep_mask(grad_out, v.mlp_mask, shape.resid_dropout, dx);
  conv1d_param_grads(d.n, d.i, d.h, v.gelu, dx, g[MlpProjW], g[MlpProjB]);
  gemm_f32(Transpose::No, Transpose::Yes, d.n, d.i, d.h, 1.0f, dx, p[MlpProjW].data(), 0.0f, v.gelu);  // d(gelu) over gelu
  gelu_tanh_backward(span_of(v.fc, d.ni), span_of(v.gelu, d.ni));                                     // d(fc) there too
  conv1d_param_grads(d.n, d.h, d.i, v.ln2, v.gelu, g[FcW], g[FcB]);
  gemm_f32(Transpose::No, Transpose::Yes, d.n, d.h, d.i, 1.0f, v.gelu, p[FcW].data(), 0.0f, v.ln2);    // d(ln_2 output)
}

void gpt_block_attention_backward(const GptBlockShape& shape, std::span<const float> grad_out, const GptBlockParams& p,
                                  std::span<std::byte> saved, std::span<std::byte> attention,
                                  std::span<float> grad_input, const GptBlockGrads& g) {
  const auto [d, v, norm] = backward_pass(shape, p, saved, attention, grad_input, g);
  require_size(grad_out, d.nh, "gpt_block_backward", "grad_out");
  const std::size_t nh = d.nh;
  std::copy(grad_out.begin(), grad_out.end(), grad_input.begin());  // the residual path, then ln_2's share added
  layer_norm_backward(norm, span_of(v.ln2, nh), span_of(v.resid1, nh), p[Ln2W], grad_input, true, g[Ln2W], g[Ln2B]);
  // d(attn.c_proj output) through resid_dropout, over residual_1; d(attention output) over ln_2's.
  apply_keep_mask(grad_input, v.attn_mask, shape.resid_dropout, v.resid1);
  conv1d_param_grads(d.n, d.w, d.h, v.attn_out, v.resid1, g[ProjW], g[ProjB]);
  gemm_f32(Transpose::No, Transpose::Yes, d.n, d.w, d.h, 1.0f, v.resid1, p[ProjW].data(), 0.0f, v.ln2);
  float* dqkv = v.fc;  // fc and gelu outputs are adjacent: 2·inner ≥ 3·hidden columns a token
  attention_backward(shape, d, v, v.ln2, dqkv);
  conv1d_param_grads(d.n, d.h, 3 * d.w, v.ln1, dqkv, g[AttnW], g[AttnB]);
  gemm_f32(Transpose::No, Transpose::Yes, d.n, d.h, 3 * d.w, 1.0f, dqkv, p[AttnW].data(), 0.0f, v.resid1);  // d(ln_1 output)
}

void gpt_block_input_norm_backward(const GptBlockShape& shape, std::span<const float> input, const GptBlockParams& p,
                                   std::span<std::byte> saved, std::span<std::byte> attention,
                                   std::span<float> grad_input, const GptBlockGrads& g) {
  const auto [d, v, norm] = backward_pass(shape, p, saved, attention, grad_input, g);
  require_size(input, d.nh, "gpt_block_backward", "input");
  layer_norm_backward(norm, span_of(v.resid1, d.nh), input, p[Ln1W], grad_input, true, g[Ln1W], g[Ln1B]);
}

void gpt_block_backward(const GptBlockShape& shape, std::span<const float> grad_out, std::span<const float> input,
                        const GptBlockParams& p, std::span<std::byte> saved, std::span<std::byte> attention,
                        std::span<float> grad_input, const GptBlockGrads& g) {
  if (shape.tp != 1) throw std::invalid_argument("gpt_block_backward: a tensor-parallel shard runs in three parts");
  gpt_block_mlp_backward(shape, grad_out, p, saved, attention, grad_input, g);
  gpt_block_attention_backward(shape, grad_out, p, saved, attention, grad_input, g);
  gpt_block_input_norm_backward(shape, input, p, saved, attention, grad_input, g);
}

}  // namespace shardscope::exec::cpu
