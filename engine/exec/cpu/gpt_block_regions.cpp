// The GPT-2 block's regions on the CPU, fp32: GEMMs through OpenBLAS, attention per sample and head on strided views
// of the fused Q, K, V rows.
#include "exec/cpu/gpt_block_regions.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "exec/cpu/bias_kernels.h"
#include "exec/cpu/blas_gemm.h"
#include "exec/shared_kernels/dropout_mask.h"

namespace shardscope::exec::cpu::gpt_block {

void bias_grad_of(int rows, int width, const float* dy, std::span<float> grad_bias) {
  std::fill(grad_bias.begin(), grad_bias.end(), 0.0f);
  bias_backward({dy, static_cast<std::size_t>(rows) * static_cast<std::size_t>(width)}, grad_bias);
}

namespace {

// Conv1D: y[n×out] = x[n×in]·W[in×out] + bias (an empty bias: none).
void conv1d(int n, int in, int out, const float* x, std::span<const float> w, std::span<const float> bias, float* y) {
  gemm_f32(Transpose::No, Transpose::No, n, out, in, 1.0f, x, w.data(), 0.0f, y);
  if (bias.empty()) return;
  const std::span<float> rows(y, static_cast<std::size_t>(n) * static_cast<std::size_t>(out));
  bias_add(rows, bias, rows);
}

// Conv1D's weight and bias gradients (written): dW[in×out] = xᵀ·dy, db = Σ rows dy.
void conv1d_param_grads(int n, int in, int out, const float* x, const float* dy, std::span<float> dw, std::span<float> db) {
  gemm_f32(Transpose::Yes, Transpose::No, in, out, n, 1.0f, x, dy, 0.0f, dw.data());
  if (!db.empty()) bias_grad_of(n, out, dy, db);
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

}  // namespace

GptBlockLayout layout_of(const GptBlockShape& shape) {
  TransformerConfig c;
  c.hidden = shape.hidden;
  c.heads = shape.heads;
  c.intermediate = shape.inner;
  return gpt_block_layout(c, shape.rows, shape.seq, sizeof(float), shape.tp, shape.sequence_parallel);
}

Views views_of(const GptBlockShape& shape, std::span<const std::byte> saved, std::span<const std::byte> attention) {
  const GptBlockLayout l = layout_of(shape);
  if (static_cast<std::int64_t>(saved.size()) != l.saved_bytes || static_cast<std::int64_t>(attention.size()) != l.attention_bytes)
    throw std::invalid_argument("gpt_block: saved buffers hold " + std::to_string(saved.size()) + " and " +
                                std::to_string(attention.size()) + " bytes, the layout needs " +
                                std::to_string(l.saved_bytes) + " and " + std::to_string(l.attention_bytes));
  auto* base = const_cast<std::byte*>(saved.data());
  auto* att = const_cast<std::byte*>(attention.data());
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

void fill_residual_mask(const GptBlockShape& shape, int site, std::span<std::uint8_t> mask) {
  if (!shape.sequence_parallel)
    return fill_pass_keep_mask(shape.dropout_key, site, shape.resid_dropout, shape.samples, shape.rows, mask);
  // This rank's tokens are chunk tp_rank of the pass's rows × seq tokens (the reduce-scatter's share).
  const std::int64_t per_sample = static_cast<std::int64_t>(shape.seq) * shape.hidden;
  fill_pass_keep_mask_range(shape.dropout_key, site, shape.resid_dropout, shape.samples, per_sample,
                            static_cast<std::int64_t>(mask.size()) * shape.tp_rank, mask);
}

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

void attention_region_forward(const GptBlockShape& shape, const GptBlockDims& d, const Views& v, const float* x,
                              const GptBlockParams& p, float* partial, bool adds_bias) {
  conv1d(d.n, d.h, 3 * d.w, x, p[AttnW], p[AttnB], v.qkv);
  attention_probabilities(shape, d, v);
  for (int b = 0; b < d.b; ++b)
    for (int head = 0; head < d.a; ++head) {
      const std::size_t token0 = static_cast<std::size_t>(b) * d.s;
      const float* val = v.qkv + token0 * 3 * d.w + 2 * static_cast<std::size_t>(d.w) + static_cast<std::size_t>(head) * d.d;
      const float* dropped = v.dropped + (static_cast<std::size_t>(b) * d.a + head) * d.s * d.s;
      gemm_f32_strided(Transpose::No, Transpose::No, d.s, d.d, d.s, 1.0f, dropped, d.s, val, 3 * d.w, 0.0f,
                       v.attn_out + token0 * d.w + static_cast<std::size_t>(head) * d.d, d.w);
    }
  conv1d(d.n, d.w, d.h, v.attn_out, p[ProjW], adds_bias ? p[ProjB] : std::span<const float>{}, partial);
}

void mlp_region_forward(const GptBlockDims& d, const Views& v, const float* x, const GptBlockParams& p, float* partial,
                        bool adds_bias) {
  conv1d(d.n, d.h, d.i, x, p[FcW], p[FcB], v.fc);
  gelu_tanh_forward(span_of(v.fc, d.ni), span_of(v.gelu, d.ni));
  if (partial == nullptr) return;
  conv1d(d.n, d.i, d.h, v.gelu, p[MlpProjW], adds_bias ? p[MlpProjB] : std::span<const float>{}, partial);
}

void mlp_region_backward(const GptBlockDims& d, const Views& v, const GptBlockParams& p, const GptBlockGrads& g,
                         const float* d_out, const float* x, float* d_x, bool bias_grad) {
  conv1d_param_grads(d.n, d.i, d.h, v.gelu, d_out, g[MlpProjW], bias_grad ? g[MlpProjB] : std::span<float>{});
  gemm_f32(Transpose::No, Transpose::Yes, d.n, d.i, d.h, 1.0f, d_out, p[MlpProjW].data(), 0.0f, v.gelu);  // d(gelu) over gelu
  gelu_tanh_backward(span_of(v.fc, d.ni), span_of(v.gelu, d.ni));                                        // d(fc) there too
  conv1d_param_grads(d.n, d.h, d.i, x, v.gelu, g[FcW], g[FcB]);
  gemm_f32(Transpose::No, Transpose::Yes, d.n, d.h, d.i, 1.0f, v.gelu, p[FcW].data(), 0.0f, d_x);
}

void attention_region_backward(const GptBlockShape& shape, const GptBlockDims& d, const Views& v, const GptBlockParams& p,
                               const GptBlockGrads& g, const float* d_out, const float* x, float* d_x, bool bias_grad) {
  conv1d_param_grads(d.n, d.w, d.h, v.attn_out, d_out, g[ProjW], bias_grad ? g[ProjB] : std::span<float>{});
  float* d_attention = v.ln2;  // d(attention output), tokens × w: ln_2's output is no longer needed
  gemm_f32(Transpose::No, Transpose::Yes, d.n, d.w, d.h, 1.0f, d_out, p[ProjW].data(), 0.0f, d_attention);
  float* dqkv = v.fc;  // fc and gelu outputs are adjacent: 2·inner ≥ 3·hidden columns a token
  attention_backward(shape, d, v, d_attention, dqkv);
  conv1d_param_grads(d.n, d.h, 3 * d.w, x, dqkv, g[AttnW], g[AttnB]);
  gemm_f32(Transpose::No, Transpose::Yes, d.n, d.h, 3 * d.w, 1.0f, dqkv, p[AttnW].data(), 0.0f, d_x);
}

}  // namespace shardscope::exec::cpu::gpt_block
