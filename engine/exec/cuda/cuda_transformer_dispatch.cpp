// The GPT-2 kernels on CUDA: the block's forward and backward follow exec/cpu/gpt_block_kernels.cpp step for step
// (the same buffers reused as scratch in the same order), with cuBLAS for the GEMMs: Conv1D as bias rows then
// x·W with beta 1 (torch.addmm), attention one strided-batched GEMM over the heads of each sample, on views of
// the fused Q, K, V rows.
#include "exec/cuda/cuda_transformer_dispatch.h"

#include <array>
#include <cmath>
#include <stdexcept>
#include <string>

#include "exec/shared_kernels/dropout_mask.h"
#include "exec/shared_kernels/gpt_block_shape.h"
#include "exec/cuda/cublas_gemm.h"
#include "exec/cuda/cuda_check.h"
#include "exec/cuda/cuda_kernels.h"
#include "exec/cuda/device_flag.h"
#include "exec/cuda/device_operands.h"
#include "exec/cuda/transformer_kernels.h"
#include "model/gpt_block_layout.h"

namespace shardscope::exec::cuda {

namespace {

using exec::GptBlockDims;
using exec::GptBlockShape;
enum Param { Ln1W, Ln1B, AttnW, AttnB, ProjW, ProjB, Ln2W, Ln2B, FcW, FcB, MlpProjW, MlpProjB };

// The layout's tensors (fp32) inside the saved and attention operands, whose sizes must be the layout's.
struct Views {
  float *ln1, *qkv, *attn_out, *resid1, *ln2, *fc, *gelu, *probs, *dropped;
  std::uint8_t *attn_mask, *mlp_mask, *prob_mask;
};

Views views_of(const KernelLaunch& l, std::size_t saved_index, std::size_t attention_index) {
  const GptBlockLayout layout = gpt_block_layout(transformer_config(l), l.rows, l.seq, sizeof(float));
  const DeviceBuffer& saved = operand(l, saved_index, "saved");
  const DeviceBuffer& attention = operand(l, attention_index, "attention");
  if (saved.bytes != layout.saved_bytes || attention.bytes != layout.attention_bytes)
    throw std::invalid_argument(kernel_name(l.kernel) + ": saved buffers hold " + std::to_string(saved.bytes) + " and " +
                                std::to_string(attention.bytes) + " bytes, the layout needs " +
                                std::to_string(layout.saved_bytes) + " and " + std::to_string(layout.attention_bytes));
  auto f = [](const DeviceBuffer& b, std::int64_t at) { return reinterpret_cast<float*>(b.data + at); };
  auto u = [](const DeviceBuffer& b, std::int64_t at) { return reinterpret_cast<std::uint8_t*>(b.data + at); };
  return {f(saved, layout.ln_1_output), f(saved, layout.qkv), f(saved, layout.attention_output),
          f(saved, layout.residual_1), f(saved, layout.ln_2_output), f(saved, layout.fc_output),
          f(saved, layout.gelu_output), f(attention, layout.probabilities), f(attention, layout.dropped_probabilities),
          u(saved, layout.attention_mask), u(saved, layout.mlp_mask), u(attention, layout.probability_mask)};
}

// The block's 12 parameters (or gradients) from operand `first` on, each checked to hold its elements.
std::array<float*, 12> block_tensors(const KernelLaunch& l, std::size_t first, const GptBlockDims& d, const char* what) {
  const auto h = static_cast<std::size_t>(d.h), i = static_cast<std::size_t>(d.i);
  const std::size_t sizes[12] = {h, h, h * 3 * h, 3 * h, h * h, h, h, h, h * i, i, i * h, h};
  std::array<float*, 12> tensors{};
  for (std::size_t k = 0; k < 12; ++k) tensors[k] = floats(l, first + k, what, sizes[k]);
  return tensors;
}

struct Gpu {
  cublasHandle_t cublas;
  cudaStream_t stream;
};

// Conv1D: y[n×out] = bias + x[n×in]·W[in×out].
void conv1d(const Gpu& g, int n, int in, int out, const float* x, const float* w, const float* bias, float* y) {
  launch_bias_rows(y, bias, n, out, g.stream);
  gemm_row_major(g.cublas, false, false, n, out, in, 1.0f, x, w, 1.0f, y);
}

// dW[in×out] = xᵀ·dy, db = Σ rows dy (written).
void conv1d_param_grads(const Gpu& g, int n, int in, int out, const float* x, const float* dy, float* dw, float* db) {
  gemm_row_major(g.cublas, true, false, in, out, n, 1.0f, x, dy, 0.0f, dw);
  launch_bias_grad(dy, db, n, out, g.stream);
}

// A pass's mask of `rows` samples (n / rows elements each), every element drawn at its place in the whole batch's
// mask, as the CPU's fill_pass_keep_mask draws it.
void fill_mask(const Gpu& g, std::uint64_t key, int site, double p, exec::GlobalSamples samples, int rows,
               std::uint8_t* mask, std::size_t n) {
  if (rows <= 0 || n % static_cast<std::size_t>(rows) != 0)
    throw std::invalid_argument("dropout mask of " + std::to_string(n) + " elements is not " + std::to_string(rows) +
                                " samples' worth");
  launch_fill_keep_mask(exec::keep_mask_site_key(key, site), exec::keep_mask_threshold(p), mask, n,
                        n / static_cast<std::size_t>(rows), samples.first, samples.stride, g.stream);
}

void layer_norm(const Gpu& g, const float* x, const float* w, const float* b, float* y, int rows, int features, float eps) {
  launch_layer_norm_forward(x, w, b, y, rows, features, eps, g.stream);
}

void layer_norm_grads(const Gpu& g, const float* grad_y, const float* x, const float* w, float* grad_x, bool accumulate,
                      float* grad_w, float* grad_b, int rows, int features, float eps) {
  double* stats = nullptr;
  check_cuda(cudaMallocAsync(reinterpret_cast<void**>(&stats), 2 * sizeof(double) * static_cast<std::size_t>(rows), g.stream),
             "cudaMallocAsync (LayerNorm row statistics)");
  launch_layer_norm_backward(grad_y, x, w, grad_x, accumulate, grad_w, grad_b, rows, features, eps, stats, g.stream);
  check_cuda(cudaFreeAsync(stats, g.stream), "cudaFreeAsync (LayerNorm row statistics)");
}

// One sample's heads as a strided batch: head k's columns start k·d into each fused row.
StridedMatrix heads_of(const float* first, int ld, int d) { return {first, ld, d}; }
StridedMatrix square_blocks(const float* first, int s) { return {first, s, static_cast<long long>(s) * s}; }

// Scores, causal softmax, attn_dropout's mask and the dropped probabilities, every sample and head.
void attention_probabilities(const Gpu& g, const GptBlockShape& shape, const GptBlockDims& d, const Views& v) {
  const int ld = 3 * d.h;
  fill_mask(g, shape.dropout_key, exec::kAttentionDropoutSite, shape.attn_dropout, shape.samples, d.b, v.prob_mask,
            d.scores);
  for (int b = 0; b < d.b; ++b) {
    const float* q = v.qkv + cells(static_cast<std::size_t>(b) * d.s, ld);
    float* p = v.probs + cells(static_cast<std::size_t>(b) * d.a, cells(d.s, d.s));
    gemm_row_major_batched(g.cublas, false, true, d.s, d.s, d.d, 1.0f, heads_of(q, ld, d.d), heads_of(q + d.h, ld, d.d),
                           0.0f, p, d.s, static_cast<long long>(d.s) * d.s, d.a);
  }
  launch_causal_softmax(v.probs, v.dropped, d.b * d.a * d.s, d.s, std::sqrt(static_cast<float>(d.d)), g.stream);
  launch_apply_keep_mask(v.dropped, v.prob_mask, keep_scale(shape.attn_dropout), v.dropped, d.scores, g.stream);
}

void residual_dropout(const Gpu& g, const GptBlockShape& shape, int site, float* x, std::uint8_t* mask, std::size_t n) {
  fill_mask(g, shape.dropout_key, site, shape.resid_dropout, shape.samples, shape.rows, mask, n);
  launch_apply_keep_mask(x, mask, keep_scale(shape.resid_dropout), x, n, g.stream);
}

// From d(attention output) (tokens × h) to d(Q, K, V) (tokens × 3h at dqkv), every sample and head.
void attention_backward(const Gpu& g, const GptBlockShape& shape, const GptBlockDims& d, const Views& v, const float* d_out,
                        float* dqkv) {
  const int ld = 3 * d.h;
  const long long square = static_cast<long long>(d.s) * d.s;
  auto sample = [&](int b) {
    const std::size_t token0 = static_cast<std::size_t>(b) * d.s;
    return std::array<std::size_t, 2>{token0, cells(static_cast<std::size_t>(b) * d.a, static_cast<std::size_t>(square))};
  };
  for (int b = 0; b < d.b; ++b) {
    const auto [token0, at] = sample(b);
    const float* q = v.qkv + token0 * ld;
    const float* grad = d_out + token0 * d.h;
    float* dq = dqkv + token0 * ld;
    // dV = droppedᵀ·g, then d(dropped) = g·Vᵀ over the dropped probabilities (no longer needed).
    gemm_row_major_batched(g.cublas, true, false, d.s, d.d, d.s, 1.0f, square_blocks(v.dropped + at, d.s),
                           heads_of(grad, d.h, d.d), 0.0f, dq + 2 * d.h, ld, d.d, d.a);
    gemm_row_major_batched(g.cublas, false, true, d.s, d.s, d.d, 1.0f, heads_of(grad, d.h, d.d),
                           heads_of(q + 2 * d.h, ld, d.d), 0.0f, v.dropped + at, d.s, square, d.a);
  }
  launch_causal_softmax_backward(v.dropped, v.probs, v.prob_mask, keep_scale(shape.attn_dropout),
                                 1.0f / std::sqrt(static_cast<float>(d.d)), d.b * d.a * d.s, d.s, g.stream);
  for (int b = 0; b < d.b; ++b) {
    const auto [token0, at] = sample(b);
    const float* q = v.qkv + token0 * ld;
    float* dq = dqkv + token0 * ld;
    gemm_row_major_batched(g.cublas, false, false, d.s, d.d, d.s, 1.0f, square_blocks(v.dropped + at, d.s),
                           heads_of(q + d.h, ld, d.d), 0.0f, dq, ld, d.d, d.a);  // dQ = dS·K
    gemm_row_major_batched(g.cublas, true, false, d.s, d.d, d.s, 1.0f, square_blocks(v.dropped + at, d.s),
                           heads_of(q, ld, d.d), 0.0f, dq + d.h, ld, d.d, d.a);  // dK = dSᵀ·Q
  }
}

GptBlockShape block_shape(const KernelLaunch& l) {
  return gpt_block_shape(transformer_config(l), l.rows, l.seq, l.training, l.dropout_key, l.samples);
}

// Operands: input, 12 parameters, saved, attention, [output] (absent: a recomputation stops once backward's
// tensors are in place).
void block_forward(const KernelLaunch& l, const Gpu& g) {
  const GptBlockShape shape = block_shape(l);
  const GptBlockDims d = gpt_block_dims(shape);
  const float* input = floats(l, 0, "input", d.nh);
  const std::array<float*, 12> p = block_tensors(l, 1, d, "parameter");
  const Views v = views_of(l, 13, 14);
  const float eps = shape.eps;
  layer_norm(g, input, p[Ln1W], p[Ln1B], v.ln1, d.n, d.h, eps);
  conv1d(g, d.n, d.h, 3 * d.h, v.ln1, p[AttnW], p[AttnB], v.qkv);
  attention_probabilities(g, shape, d, v);
  for (int b = 0; b < d.b; ++b) {
    const std::size_t token0 = static_cast<std::size_t>(b) * d.s;
    const float* dropped = v.dropped + cells(static_cast<std::size_t>(b) * d.a, cells(d.s, d.s));
    gemm_row_major_batched(g.cublas, false, false, d.s, d.d, d.s, 1.0f, square_blocks(dropped, d.s),
                           heads_of(v.qkv + token0 * 3 * d.h + 2 * d.h, 3 * d.h, d.d), 0.0f, v.attn_out + token0 * d.h,
                           d.h, d.d, d.a);
  }
  conv1d(g, d.n, d.h, d.h, v.attn_out, p[ProjW], p[ProjB], v.resid1);
  residual_dropout(g, shape, exec::kResidualDropoutSite1, v.resid1, v.attn_mask, d.nh);
  launch_accumulate(v.resid1, input, d.nh, g.stream);
  layer_norm(g, v.resid1, p[Ln2W], p[Ln2B], v.ln2, d.n, d.h, eps);
  conv1d(g, d.n, d.h, d.i, v.ln2, p[FcW], p[FcB], v.fc);
  launch_gelu_forward(v.fc, v.gelu, d.ni, g.stream);
  if (!has_operand(l, 15)) {  // recomputation: only the mask is still missing from what backward reads
    fill_mask(g, shape.dropout_key, exec::kResidualDropoutSite2, shape.resid_dropout, shape.samples, shape.rows,
              v.mlp_mask, d.nh);
    return;
  }
  float* output = floats(l, 15, "output", d.nh);
  conv1d(g, d.n, d.i, d.h, v.gelu, p[MlpProjW], p[MlpProjB], output);
  residual_dropout(g, shape, exec::kResidualDropoutSite2, output, v.mlp_mask, d.nh);
  launch_accumulate(output, v.resid1, d.nh, g.stream);
}

// Operands: grad_out, input, 12 parameters, saved, attention, grad_input, 12 gradients (written). The saved
// tensors backward has finished with are its scratch, as on the CPU.
void block_backward(const KernelLaunch& l, const Gpu& g) {
  const GptBlockShape shape = block_shape(l);
  const GptBlockDims d = gpt_block_dims(shape);
  if (2 * d.i < 3 * d.h)
    throw std::invalid_argument("GptBlockBackward: the MLP width must be at least 1.5 × hidden (its two saved tensors "
                                "hold the Q, K, V gradient)");
  const float* grad_out = floats(l, 0, "grad_out", d.nh);
  const float* input = floats(l, 1, "input", d.nh);
  const std::array<float*, 12> p = block_tensors(l, 2, d, "parameter");
  const Views v = views_of(l, 14, 15);
  float* dx = floats(l, 16, "grad_input", d.nh);
  const std::array<float*, 12> grads = block_tensors(l, 17, d, "gradient");
  const float eps = shape.eps;
  const float resid_scale = keep_scale(shape.resid_dropout);
  launch_apply_keep_mask(grad_out, v.mlp_mask, resid_scale, dx, d.nh, g.stream);
  conv1d_param_grads(g, d.n, d.i, d.h, v.gelu, dx, grads[MlpProjW], grads[MlpProjB]);
  gemm_row_major(g.cublas, false, true, d.n, d.i, d.h, 1.0f, dx, p[MlpProjW], 0.0f, v.gelu);  // d(gelu) over gelu
  launch_gelu_backward(v.fc, v.gelu, d.ni, g.stream);                                       // d(fc) there too
  conv1d_param_grads(g, d.n, d.h, d.i, v.ln2, v.gelu, grads[FcW], grads[FcB]);
  gemm_row_major(g.cublas, false, true, d.n, d.h, d.i, 1.0f, v.gelu, p[FcW], 0.0f, v.ln2);  // d(ln_2 output)
  check_cuda(cudaMemcpyAsync(dx, grad_out, d.nh * sizeof(float), cudaMemcpyDeviceToDevice, g.stream),
             "cudaMemcpyAsync (residual gradient)");
  layer_norm_grads(g, v.ln2, v.resid1, p[Ln2W], dx, true, grads[Ln2W], grads[Ln2B], d.n, d.h, eps);
  launch_apply_keep_mask(dx, v.attn_mask, resid_scale, v.resid1, d.nh, g.stream);
  conv1d_param_grads(g, d.n, d.h, d.h, v.attn_out, v.resid1, grads[ProjW], grads[ProjB]);
  gemm_row_major(g.cublas, false, true, d.n, d.h, d.h, 1.0f, v.resid1, p[ProjW], 0.0f, v.ln2);
  float* dqkv = v.fc;  // fc and gelu outputs are adjacent: 2·inner ≥ 3·hidden columns a token
  attention_backward(g, shape, d, v, v.ln2, dqkv);
  conv1d_param_grads(g, d.n, d.h, 3 * d.h, v.ln1, dqkv, grads[AttnW], grads[AttnB]);
  gemm_row_major(g.cublas, false, true, d.n, d.h, 3 * d.h, 1.0f, dqkv, p[AttnW], 0.0f, v.resid1);  // d(ln_1 output)
  layer_norm_grads(g, v.resid1, input, p[Ln1W], dx, true, grads[Ln1W], grads[Ln1B], d.n, d.h, eps);
}

struct EmbeddingDims {
  int tokens, hidden;
  std::size_t wte, wpe;
};

EmbeddingDims embedding_dims(const KernelLaunch& l) {
  const TransformerConfig& c = transformer_config(l);
  if (l.rows <= 0 || l.seq <= 0 || l.seq > c.max_positions)
    throw std::invalid_argument(kernel_name(l.kernel) + ": " + std::to_string(l.rows) + " samples of " +
                                std::to_string(l.seq) + " tokens (at most " + std::to_string(c.max_positions) + ")");
  const auto h = static_cast<std::size_t>(c.hidden);
  return {l.rows * l.seq, static_cast<int>(c.hidden), cells(static_cast<std::size_t>(c.vocab), h),
          cells(static_cast<std::size_t>(c.max_positions), h)};
}

double embedding_dropout(const KernelLaunch& l) { return l.training ? transformer_config(l).embd_pdrop : 0.0; }

// Operands: ids, wte, wpe, [mask], output.
void embedding_forward(const KernelLaunch& l, const Gpu& g) {
  const EmbeddingDims e = embedding_dims(l);
  const std::size_t n = cells(static_cast<std::size_t>(e.tokens), static_cast<std::size_t>(e.hidden));
  float* out = floats(l, 4, "output", n);
  const DeviceFlag bad_id(g.stream);
  launch_embedding_gather(int64s(l, 0, "ids", static_cast<std::size_t>(e.tokens)), floats(l, 1, "wte", e.wte),
                          floats(l, 2, "wpe", e.wpe), out, e.tokens, l.seq, e.hidden, transformer_config(l).vocab, bad_id.get(),
                          g.stream);
  if (bad_id.is_set())
    throw std::invalid_argument("EmbeddingForward: a token id is outside the vocabulary [0, " +
                                std::to_string(transformer_config(l).vocab) + ")");
  const double p = embedding_dropout(l);
  if (!has_operand(l, 3)) {
    if (p > 0) throw std::invalid_argument("EmbeddingForward: dropout needs a mask operand");
    return;
  }
  const auto mask = reinterpret_cast<std::uint8_t*>(operand(l, 3, "mask").data);
  if (static_cast<std::size_t>(operand(l, 3, "mask").bytes) < n)
    throw std::invalid_argument("EmbeddingForward: the mask holds fewer bytes than the output has elements");
  fill_mask(g, l.dropout_key, exec::kEmbeddingDropoutSite, p, l.samples, l.rows, mask, n);
  launch_apply_keep_mask(out, mask, keep_scale(p), out, n, g.stream);
}

// Operands: grad_out, ids, [mask], grad_wte, grad_wpe, [tied: lm_head's gradient of wte, which grad_wte is added to].
void embedding_backward(const KernelLaunch& l, const Gpu& g) {
  const EmbeddingDims e = embedding_dims(l);
  const std::size_t n = cells(static_cast<std::size_t>(e.tokens), static_cast<std::size_t>(e.hidden));
  const std::uint8_t* mask = nullptr;
  if (has_operand(l, 2)) {
    if (static_cast<std::size_t>(l.operands[2].bytes) < n)
      throw std::invalid_argument("EmbeddingBackward: the mask holds fewer bytes than grad_out has elements");
    mask = reinterpret_cast<const std::uint8_t*>(l.operands[2].data);
  }
  float* grad_wte = floats(l, 3, "grad_wte", e.wte);
  // Ids were checked by the forward pass that produced this gradient.
  launch_embedding_scatter(floats(l, 0, "grad_out", n), int64s(l, 1, "ids", static_cast<std::size_t>(e.tokens)), mask,
                           keep_scale(embedding_dropout(l)), grad_wte, floats(l, 4, "grad_wpe", e.wpe), e.tokens,
                           l.seq, e.hidden, e.wte, e.wpe, g.stream);
  if (has_operand(l, 5)) launch_accumulate(floats(l, 5, "tied_grad", e.wte), grad_wte, e.wte, g.stream);
}

}  // namespace

void run_cuda_transformer_kernel(const KernelLaunch& l, cublasHandle_t cublas, cudaStream_t stream) {
  const Gpu g{cublas, stream};
  switch (l.kernel) {
    case Kernel::EmbeddingForward: return embedding_forward(l, g);
    case Kernel::EmbeddingBackward: return embedding_backward(l, g);
    case Kernel::LayerNormForward:
    case Kernel::LayerNormBackward: {
      const int h = static_cast<int>(transformer_config(l).hidden);
      const auto eps = static_cast<float>(transformer_config(l).layer_norm_epsilon);
      if (l.rows <= 0) throw std::invalid_argument(kernel_name(l.kernel) + ": rows must be positive");
      const std::size_t n = cells(static_cast<std::size_t>(l.rows), static_cast<std::size_t>(h));
      if (l.kernel == Kernel::LayerNormForward)
        return layer_norm(g, floats(l, 0, "input", n), floats(l, 1, "weight", h), floats(l, 2, "bias", h),
                          floats(l, 3, "output", n), l.rows, h, eps);
      return layer_norm_grads(g, floats(l, 0, "grad_out", n), floats(l, 1, "input", n), floats(l, 2, "weight", h),
                              has_operand(l, 3) ? floats(l, 3, "grad_input", n) : nullptr, false,
                              floats(l, 4, "grad_weight", h), floats(l, 5, "grad_bias", h), l.rows, h, eps);
    }
    case Kernel::GptBlockForward: return block_forward(l, g);
    case Kernel::GptAttentionRecompute: {
      const GptBlockShape shape = block_shape(l);
      return attention_probabilities(g, shape, gpt_block_dims(shape), views_of(l, 0, 1));
    }
    case Kernel::GptBlockBackward: return block_backward(l, g);
    default:
      throw std::invalid_argument(kernel_name(l.kernel) + " is not a transformer kernel");
  }
}

}  // namespace shardscope::exec::cuda
