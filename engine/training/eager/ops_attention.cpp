// F.scaled_dot_product_attention's three kernels as PyTorch 2.x runs them on CUDA (see ops.h), causal, on
// q [b, h, s, d] and k, v [b, h_kv, s, d]:
// - memory-efficient (aten/src/ATen/native/transformers/cuda/attention.cu, _efficient_attention_forward): the output
//   in [b, s, h, d] (returned transposed), logsumexp [b, h, ceil(s/32)·32] fp32; the philox seed and offset are CPU
//   tensors. Its node saves query, key, value, output, logsumexp. Backward (measured on 2.11, H200): gradients of q, k,
//   v contiguous in [b, s, h, d]; an output-gradient-sized copy and two logsumexp-sized buffers for the call; then a
//   workspace of (b·h·s·d + b·h·32) fp32.
// - flash / cuDNN (16-bit inputs; on sm90 PyTorch 2.11 picks cuDNN, whose memory matches flash's): the seed and offset
//   as 8-byte device tensors, the output in [b, s, h, d], logsumexp [b, h, s] fp32 and a 256-byte scratch. Backward
//   (measured): gradients laid out as their inputs (empty_like), then a workspace of b·h·s·d fp32 + b·h·s fp32 + 256 B.
// - math (_scaled_dot_product_attention_math, attention.cpp): what SDPA falls back to where no fused kernel takes the
//   inputs (fp32 with enable_gqa): q and kᵀ each scaled by √scale, the causal mask built as a fp32 [s, s] tensor,
//   k and v repeated per group (repeat_interleave), the scores materialised and _safe_softmax saved, as eager.
// Saved variables are released inputs first (key, query, value), then outputs (logsumexp, output, philox offset, seed),
// each group alphabetically (measured order of their frees).
#include <cmath>

#include "training/eager/ops_internal.h"

namespace shardscope::eager::ops {

namespace {

double attention_flops(const Tensor& q, std::int64_t kv_seq) {
  return 4.0 * static_cast<double>(q.numel()) * static_cast<double>(kv_seq);
}

// q [b, h, s, d], k [b, h_kv, s_kv, d]: b·h query rows of s against s_kv keys, in q's type.
ComputeWork attention_work(bool backward, const Tensor& q, const Tensor& k) {
  return ComputeWork::attention(backward, q.size(0) * q.size(1), q.size(2), k.size(2), q.size(3), plan_element(q.dtype()));
}

// [b, h, s, d] -> the [b, s, h, d]-contiguous layout the fused kernels write, viewed back as [b, h, s, d]
Tensor fresh_bshd(Eager& e, const std::string& what, const Sizes& bhsd, Dtype dtype, Category category) {
  Tensor t = e.empty(what, {bhsd[0], bhsd[2], bhsd[1], bhsd[3]}, dtype, category);
  return detail::transposed_view(t, 1, 2);
}

Tensor efficient(Eager& e, const Tensor& q, const Tensor& k, const Tensor& v) {
  const std::int64_t b = q.size(0), h = q.size(1), s = q.size(2);
  Tensor out = fresh_bshd(e, "scaled_dot_product_efficient_attention output", q.sizes(), q.dtype(), Category::Activations);
  Tensor lse = e.empty("scaled_dot_product_efficient_attention logsumexp", {b, h, (s + 31) / 32 * 32}, Dtype::F32);
  e.compute(e.kind(), "scaled_dot_product_efficient_attention", attention_flops(q, k.size(2)), q.bytes() + k.bytes() + v.bytes() + out.bytes(),
            attention_work(false, q, k));
  const Sizes qs = q.sizes(), ks = k.sizes(), vs = v.sizes(), lse_sizes = lse.sizes();
  const Dtype dtype = q.dtype();
  const int node = e.record("ScaledDotProductEfficientAttentionBackward0", {&q, &k, &v}, {k, q, v, lse, out},
                            [qs, ks, vs, lse_sizes, dtype](Eager& eg, const Node&, std::vector<Tensor>& g) {
    if (!g[0].defined()) return std::vector<Tensor>(3);
    const Category tmp = Category::Temporaries;
    Tensor gq = fresh_bshd(eg, "efficient attention backward (q)", qs, dtype, tmp);
    Tensor gk = fresh_bshd(eg, "efficient attention backward (k)", ks, dtype, tmp);
    Tensor gv = fresh_bshd(eg, "efficient attention backward (v)", vs, dtype, tmp);
    {
      Tensor grad_out = eg.empty("efficient attention backward: output gradient copy", qs, dtype, tmp);
      Tensor first = eg.empty("efficient attention backward: logsumexp-sized buffer", lse_sizes, Dtype::F32, tmp);
      Tensor delta = eg.empty("efficient attention backward: delta", lse_sizes, Dtype::F32, tmp);
      first.reset();
      grad_out.reset();
      const std::int64_t workspace = (qs[0] * qs[1] * qs[2] * qs[3] + qs[0] * qs[1] * 32) * 4;
      Tensor ws = eg.empty("efficient attention backward: workspace", {workspace}, Dtype::Bool, tmp);
      eg.compute(ComputeKind::Backward, "scaled_dot_product_efficient_attention backward",
                 2.5 * attention_flops(gq, ks[2]), 4 * gq.bytes() + gk.bytes() + gv.bytes(), attention_work(true, gq, gk));
      delta.reset();
      ws.reset();
    }
    return std::vector<Tensor>{std::move(gq), std::move(gk), std::move(gv)};
  });
  e.connect(out, node);
  return out;
}

Tensor flash(Eager& e, const Tensor& q, const Tensor& k, const Tensor& v) {
  const std::int64_t b = q.size(0), h = q.size(1), s = q.size(2);
  Tensor seed = e.empty("philox seed", {}, Dtype::I64);
  Tensor offset = e.empty("philox offset", {}, Dtype::I64);
  Tensor out = fresh_bshd(e, "scaled_dot_product_attention output", q.sizes(), q.dtype(), Category::Activations);
  Tensor lse = e.empty("scaled_dot_product_attention logsumexp", {b, h, s, 1}, Dtype::F32);
  {
    Tensor scratch = e.empty("scaled_dot_product_attention scratch", {256}, Dtype::Bool, Category::Temporaries);
    e.compute(e.kind(), "scaled_dot_product_cudnn_attention", attention_flops(q, k.size(2)), q.bytes() + k.bytes() + v.bytes() + out.bytes(),
              attention_work(false, q, k));
  }
  const Sizes qs = q.sizes();
  const int node = e.record("ScaledDotProductCudnnAttentionBackward0", {&q, &k, &v}, {k, q, v, lse, out, offset, seed},
                            [qs](Eager& eg, const Node& nd, std::vector<Tensor>& g) {
    if (!g[0].defined()) return std::vector<Tensor>(3);
    const Category tmp = Category::Temporaries;
    const Tensor& k_saved = nd.saved[0];
    const Tensor& q_saved = nd.saved[1];
    const Tensor& v_saved = nd.saved[2];
    Tensor gq = eg.empty_like("cudnn attention backward (q)", q_saved, q_saved.dtype(), tmp);
    Tensor gk = eg.empty_like("cudnn attention backward (k)", k_saved, k_saved.dtype(), tmp);
    Tensor gv = eg.empty_like("cudnn attention backward (v)", v_saved, v_saved.dtype(), tmp);
    {
      const std::int64_t workspace = qs[0] * qs[1] * qs[2] * qs[3] * 4 + qs[0] * qs[1] * qs[2] * 4 + 256;
      Tensor ws = eg.empty("cudnn attention backward: workspace", {workspace}, Dtype::Bool, tmp);
      eg.compute(ComputeKind::Backward, "scaled_dot_product_cudnn_attention backward", 2.5 * attention_flops(gq, gk.size(2)),
                 4 * gq.bytes() + gk.bytes() + gv.bytes(), attention_work(true, gq, gk));
    }
    return std::vector<Tensor>{std::move(gq), std::move(gk), std::move(gv)};
  });
  e.connect(out, node);
  return out;
}

// q [b, h, s, d] with h = g·h_kv: k, v repeated g times along the heads (repeat_interleave as unsqueeze, expand, and a
// reshape that copies).
Tensor repeat_heads(Eager& e, const Tensor& x, std::int64_t groups) {
  if (groups == 1) return x;
  const Sizes s = x.sizes();
  const Tensor expanded = expand(e, unsqueeze(e, x, 2), {s[0], s[1], groups, s[2], s[3]});
  return reshape(e, expanded, {s[0], s[1] * groups, s[2], s[3]});
}

// _safe_softmax (SoftMax.cpp): softmax, then rows that are all -inf set to zero in place: a bool mask of the scores'
// size, its per-row reduction and a zero scalar live for the call. SafeSoftmaxBackward0 saves result, as softmax.
Tensor safe_softmax(Eager& e, const Tensor& scores) {
  Tensor out = softmax(e, scores);
  Tensor masked = e.empty("_safe_softmax masked", scores.sizes(), Dtype::Bool, Category::Temporaries);
  Sizes rows = scores.sizes();
  rows.back() = 1;
  Tensor masked_rows = e.empty("_safe_softmax masked rows", rows, Dtype::Bool, Category::Temporaries);
  Tensor zero = e.empty("_safe_softmax zero", {}, out.dtype(), Category::Temporaries);
  e.compute(e.kind(), "_safe_softmax where", static_cast<double>(scores.numel()), 2 * scores.bytes(),
            elementwise_work(WorkKind::Binary, scores.dtype()));
  zero.reset();
  masked_rows.reset();
  masked.reset();
  return out;
}

Tensor math(Eager& e, const Tensor& q, const Tensor& k, const Tensor& v, double scale) {
  const double factor = std::sqrt(scale);
  const std::int64_t s = q.size(2), kv_s = k.size(2);
  Tensor q_scaled = mul_scalar(e, q, factor);
  Tensor mask;
  {
    // is_causal: at::ones({L, S}, kBool).tril(), then convert_boolean_attn_mask: where(mask, 0, -inf) in q's dtype
    const bool was = e.grad_enabled;
    e.grad_enabled = false;
    Tensor ones = e.empty("causal mask ones", {s, kv_s}, Dtype::Bool, Category::Temporaries);
    Tensor tril = e.empty("causal mask tril", {s, kv_s}, Dtype::Bool, Category::Temporaries);
    ones.reset();
    Tensor zero = e.empty("0.0", {}, q.dtype(), Category::Temporaries);
    Tensor minus_inf = e.empty("-inf", {}, q.dtype(), Category::Temporaries);
    mask = e.empty("causal mask", {s, kv_s}, q.dtype(), Category::Temporaries);
    e.compute(e.kind(), "causal mask", static_cast<double>(mask.numel()), mask.bytes(), elementwise_work(WorkKind::Copy, mask.dtype()));
    minus_inf.reset();
    zero.reset();
    tril.reset();
    e.grad_enabled = was;
  }
  const std::int64_t groups = q.size(1) / k.size(1);
  Tensor k_all = repeat_heads(e, k, groups);
  Tensor v_all = repeat_heads(e, v, groups);
  Tensor kt = mul_scalar(e, transpose(e, k_all, -2, -1), factor);
  Tensor scores = matmul(e, q_scaled, kt);  // then scores.add_(mask) in place: its node passes the gradient on
  kt.reset();
  scores = safe_softmax(e, scores);
  Tensor out = matmul(e, scores, v_all);
  // the function's locals, in the order its frees were measured
  k_all.reset();
  q_scaled.reset();
  mask.reset();
  return out;
}

}  // namespace

Tensor scaled_dot_product_attention(Eager& e, const Tensor& q_in, const Tensor& k_in, const Tensor& v_in, SdpaKernel kernel,
                                    double) {
  // scaled_dot_product_attention is on autocast's 16-bit list: v, k, q cast, last argument first
  Tensor v = v_in, k = k_in, q = q_in;
  if (auto low = autocast_dtype(e)) {
    v = autocast_arg(e, v_in, *low);
    k = autocast_arg(e, k_in, *low);
    q = autocast_arg(e, q_in, *low);
  }
  const bool was = e.autocast_active;
  e.autocast_active = false;
  Tensor out;
  switch (kernel) {
    case SdpaKernel::Efficient: out = efficient(e, q, k, v); break;
    case SdpaKernel::Flash: out = flash(e, q, k, v); break;
    case SdpaKernel::Math: out = math(e, q, k, v, 1.0 / std::sqrt(static_cast<double>(q.size(3)))); break;
  }
  e.autocast_active = was;
  return out;
}

}  // namespace shardscope::eager::ops
