// Layers: embedding, layer_norm, the GEMMs (addmm, mm, bmm and the matmul / linear that fold into them), dropout,
// cross-entropy and autocast's argument casts (see ops.h). Saved tensors and gradient formulas: derivatives.yaml and
// FunctionsManual.cpp (mm_mat1_backward, mm_mat2_backward), PyTorch 2.x; CUDA kernels' own buffers: the files named.
#include "training/eager/ops_internal.h"

namespace shardscope::eager::ops {

using detail::transposed_view;

std::optional<Dtype> autocast_dtype(const Eager& e) {
  if (!e.autocast_active) return std::nullopt;
  return e.settings.autocast == AutocastType::Fp16 ? Dtype::F16 : Dtype::BF16;
}

Tensor autocast_arg(Eager& e, const Tensor& x, Dtype dtype) {
  if (!e.autocast_active || !x.defined() || !is_float(x.dtype()) || x.dtype() == dtype) return x;
  // cached_cast: a leaf fp32 parameter cast to the 16-bit type is cached for the region (is_leaf, !is_view)
  if (dtype != Dtype::F32 && x.is_parameter() && x.dtype() == Dtype::F32) {
    const auto key = std::make_pair(x.param_layer, x.param_index);
    const auto it = e.autocast_cache.find(key);
    if (it != e.autocast_cache.end()) return it->second;
    Tensor cast = to(e, x, dtype);
    e.autocast_cache.emplace(key, cast);
    return cast;
  }
  return to(e, x, dtype);
}

namespace {

double gemm_flops(std::int64_t m, std::int64_t n, std::int64_t k) {
  return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
}

// The argument order autocast casts in: the wrapper's cached_cast(args)... are evaluated right to left (GCC), so an
// op's last argument is cast first (measured on 2.11: Conv1D's weight, then its input, then its bias).
struct LowPrecision {
  std::optional<Dtype> dtype;
  Tensor cast(Eager& e, const Tensor& x) const { return dtype ? autocast_arg(e, x, *dtype) : x; }
};

// A column-major 2-D tensor (a transposed contiguous one), which mm_mat1/mat2_backward treat apart.
bool column_major(const Tensor& m) { return m.strides()[0] == 1 && m.strides()[1] == m.sizes()[0]; }

// The GEMM a·b of a row-major `a` [m, k] computing in `dtype`, timed on the device profile's curve of its operand
// layout: b a transposed view (nn.Linear's weight.t()) makes a·Wᵀ, the profile's "forward"; b row-major (Conv1D's
// weight, a Linear's weight in its input gradient) a·b, "input_grad".
ComputeWork product_work(std::int64_t m, std::int64_t n, std::int64_t k, bool b_transposed, Dtype dtype) {
  return ComputeWork::gemm(b_transposed ? GemmLayout::Forward : GemmLayout::InputGrad, m, n, k, 1, plan_element(dtype));
}

// mm_mat2_backward(grad, mat1, ...): the gradient in mat2's layout, (grad.t() @ mat1).t() for a column-major mat2,
// else mat1.t() @ grad.
Tensor mat2_gradient(Eager& e, const Tensor& grad, const Tensor& mat1, const Sizes& mat2_sizes, bool mat2_column_major,
                     Category category) {
  const std::int64_t k = mat2_sizes[0], n = mat2_sizes[1], m = mat1.sizes()[0];
  if (mat2_column_major) {
    Tensor r = e.empty("mm backward (mat2)", {n, k}, grad.dtype(), category);
    e.gemm(false);
    // grad.t() @ mat1: aᵀ·b, the profile's "weight_grad"
    e.compute(ComputeKind::Backward, "mm backward (mat2)", gemm_flops(n, k, m), grad.bytes() + mat1.bytes() + r.bytes(),
              ComputeWork::gemm(GemmLayout::WeightGrad, n, k, m, 1, plan_element(grad.dtype())));
    return transposed_view(r, 0, 1);
  }
  Tensor r = e.empty("mm backward (mat2)", {k, n}, grad.dtype(), category);
  e.gemm(false);
  // mat1.t() @ grad: aᵀ·b
  e.compute(ComputeKind::Backward, "mm backward (mat2)", gemm_flops(k, n, m), grad.bytes() + mat1.bytes() + r.bytes(),
            ComputeWork::gemm(GemmLayout::WeightGrad, k, n, m, 1, plan_element(grad.dtype())));
  return r;
}

// mm_mat1_backward(grad, mat2, ...): grad @ mat2.t() (a row-major mat1 here)
Tensor mat1_gradient(Eager& e, const Tensor& grad, const Sizes& mat1_sizes, const Tensor& mat2, Category category) {
  Tensor r = e.empty("mm backward (mat1)", mat1_sizes, grad.dtype(), category);
  e.gemm(false);
  // mat2.t() is row-major where mat2 is column-major (a Linear's weight.t()), else a transposed view
  e.compute(ComputeKind::Backward, "mm backward (mat1)", gemm_flops(mat1_sizes[0], mat1_sizes[1], mat2.sizes()[1]),
            grad.bytes() + mat2.bytes() + r.bytes(),
            product_work(mat1_sizes[0], mat1_sizes[1], mat2.sizes()[1], !column_major(mat2), grad.dtype()));
  return r;
}

Tensor mm_op(Eager& e, const Tensor& a, const Tensor& w) {
  const std::int64_t m = a.sizes()[0], k = a.sizes()[1], n = w.sizes()[1];
  Tensor out = e.empty("mm", {m, n}, a.dtype());
  e.gemm(false);
  e.compute(e.kind(), "mm", gemm_flops(m, n, k), a.bytes() + w.bytes() + out.bytes(), product_work(m, n, k, column_major(w), a.dtype()));
  // MmBackward0 saves mat2 (for self's gradient) and self (for mat2's), alphabetically; computes mat2's first
  std::vector<Tensor> saved;
  const bool keep_mat2 = a.requires_grad(), keep_self = w.requires_grad();
  if (keep_mat2) saved.push_back(w);
  if (keep_self) saved.push_back(a);
  const Sizes a_sizes = a.sizes(), w_sizes = w.sizes();
  const bool w_column_major = column_major(w);
  const int node = e.record("MmBackward0", {&a, &w}, std::move(saved),
                            [keep_mat2, keep_self, a_sizes, w_sizes, w_column_major](Eager& eg, const Node& nd, std::vector<Tensor>& g) {
    std::vector<Tensor> grads(2);
    if (!g[0].defined()) return grads;
    const Tensor* mat2 = keep_mat2 ? &nd.saved[0] : nullptr;
    const Tensor* self = keep_self ? &nd.saved[keep_mat2 ? 1 : 0] : nullptr;
    if (nd.next[1].valid() && self) grads[1] = mat2_gradient(eg, g[0], *self, w_sizes, w_column_major, eg.grad_category(nd.next[1]));
    if (nd.next[0].valid() && mat2) grads[0] = mat1_gradient(eg, g[0], a_sizes, *mat2, eg.grad_category(nd.next[0]));
    return grads;
  });
  e.connect(out, node);
  return out;
}

Tensor bmm_op(Eager& e, const Tensor& a, const Tensor& bm) {
  const std::int64_t batch = a.sizes()[0], m = a.sizes()[1], k = a.sizes()[2], n = bm.sizes()[2];
  Tensor out = e.empty("bmm", {batch, m, n}, a.dtype());
  e.gemm(false);
  e.compute(e.kind(), "bmm", static_cast<double>(batch) * gemm_flops(m, n, k), a.bytes() + bm.bytes() + out.bytes(),
            ComputeWork::gemm(GemmLayout::Batched, m, n, k, batch, plan_element(a.dtype())));
  std::vector<Tensor> saved;
  const bool keep_mat2 = a.requires_grad(), keep_self = bm.requires_grad();
  if (keep_mat2) saved.push_back(bm);
  if (keep_self) saved.push_back(a);
  const Sizes a_sizes = a.sizes(), b_sizes = bm.sizes();
  // BmmBackward0: mat2: self.transpose(1, 2).bmm(grad); self: grad.bmm(mat2.transpose(1, 2)), mat2's first
  const int node = e.record("BmmBackward0", {&a, &bm}, std::move(saved), [a_sizes, b_sizes](Eager& eg, const Node& nd, std::vector<Tensor>& g) {
    std::vector<Tensor> grads(2);
    if (!g[0].defined()) return grads;
    const double flops = static_cast<double>(a_sizes[0]) * gemm_flops(a_sizes[1], b_sizes[2], a_sizes[2]);
    if (nd.next[1].valid()) {
      grads[1] = eg.empty("bmm backward (mat2)", b_sizes, g[0].dtype(), Category::Temporaries);
      eg.gemm(false);
      // self.transpose(1, 2).bmm(grad): [k, m]·[m, n] per batch
      eg.compute(ComputeKind::Backward, "bmm backward (mat2)", flops, 2 * grads[1].bytes() + g[0].bytes(),
                 ComputeWork::gemm(GemmLayout::Batched, a_sizes[2], b_sizes[2], a_sizes[1], a_sizes[0], plan_element(g[0].dtype())));
    }
    if (nd.next[0].valid()) {
      grads[0] = eg.empty("bmm backward (self)", a_sizes, g[0].dtype(), Category::Temporaries);
      eg.gemm(false);
      // grad.bmm(mat2.transpose(1, 2)): [m, n]·[n, k] per batch
      eg.compute(ComputeKind::Backward, "bmm backward (self)", flops, 2 * grads[0].bytes() + g[0].bytes(),
                 ComputeWork::gemm(GemmLayout::Batched, a_sizes[1], a_sizes[2], b_sizes[2], a_sizes[0], plan_element(g[0].dtype())));
    }
    return grads;
  });
  e.connect(out, node);
  return out;
}

// _unsafe_view of a fresh result: a reshape autograd does not track as a view (UnsafeViewBackward0).
Tensor unsafe_view(Eager& e, const Tensor& x, Sizes shape) {
  const Sizes in = x.sizes();
  Tensor out = Tensor(x).with_layout(shape, contiguous_strides(shape));
  const int node = e.record("UnsafeViewBackward0", {&x}, {}, [in](Eager& eg, const Node&, std::vector<Tensor>& g) {
    return std::vector<Tensor>{detail::reshape_grad(eg, g[0], in)};
  });
  out.grad_edge = Edge{};
  e.connect(out, node);
  return out;
}

}  // namespace

Tensor embedding(Eager& e, const Tensor& weight, const Tensor& ids) {
  Sizes sizes = ids.sizes();
  const std::int64_t width = weight.sizes()[1];
  sizes.push_back(width);
  Tensor out = e.empty("embedding", sizes, weight.dtype());
  e.compute(e.kind(), "embedding", static_cast<double>(out.numel()), 2 * out.bytes(), elementwise_work(WorkKind::Copy, out.dtype()));
  const std::int64_t rows = weight.sizes()[0], indices = ids.numel();
  const Dtype dtype = weight.dtype();
  // EmbeddingBackward0 saves the indices; embedding_dense_backward_cuda (Embedding.cu, EmbeddingBackwardKernel.cu):
  // up to 3072 indices a direct kernel into zeros of the weight's size; more are sorted first (radix_sort_pairs into
  // sorted and original indices, over an arange) and summed per segment through index buffers and partial sums of
  // (indices / NROWS_PER_THREAD + segments) rows of the width rounded to a warp. cub's own temporary storage (under
  // 100 KB) is left out.
  const int node = e.record("EmbeddingBackward0", {&weight}, {ids}, [rows, width, indices, dtype](Eager& eg, const Node& nd, std::vector<Tensor>& g) {
    if (!g[0].defined() || !nd.next[0].valid()) return std::vector<Tensor>{Tensor()};
    const Category category = eg.grad_category(nd.next[0]);
    if (indices <= 3072) {
      Tensor grad = eg.empty("embedding backward", {rows, width}, dtype, category);
      eg.compute(ComputeKind::Backward, "embedding backward", static_cast<double>(g[0].numel()), g[0].bytes() + grad.bytes(),
                 elementwise_work(WorkKind::Copy, g[0].dtype()));
      return std::vector<Tensor>{std::move(grad)};
    }
    const Category tmp = Category::Temporaries;
    Tensor sorted = eg.empty("embedding backward: sorted indices", {indices}, Dtype::I64, tmp);
    Tensor original = eg.empty("embedding backward: original indices", {indices}, Dtype::I64, tmp);
    {
      Tensor range = eg.empty("embedding backward: arange", {indices}, Dtype::I64, tmp);
      eg.compute(ComputeKind::Backward, "radix_sort_pairs", static_cast<double>(indices), 4 * range.bytes(),
                 elementwise_work(WorkKind::Copy, range.dtype()));
    }
    Tensor grad = eg.empty("embedding backward", {rows, width}, dtype, category);
    {
      const std::int64_t segments = std::min(indices, rows);
      const std::int64_t partial_segments = indices / 10 + segments;
      const std::int64_t warped = (width + 31) / 32 * 32;
      Tensor segment_offsets = eg.empty("embedding backward: segment offsets", {indices}, Dtype::I64, tmp);
      Tensor segment_count = eg.empty("embedding backward: segment count", {}, Dtype::I64, tmp);
      { Tensor dummy = eg.empty("embedding backward: unique keys", {indices}, Dtype::I64, tmp); }
      Tensor partials = eg.empty("embedding backward: partials per segment", {segments}, Dtype::I64, tmp);
      Tensor partial_offsets = eg.empty("embedding backward: partials offsets", {segments}, Dtype::I64, tmp);
      Tensor partial_count = eg.empty("embedding backward: partial count", {}, Dtype::I64, tmp);
      Tensor partial_segment_offset = eg.empty("embedding backward: partial segment offsets", {partial_segments}, Dtype::I64, tmp);
      Tensor per_segment = eg.empty("embedding backward: per-segment sums", {partial_segments, warped}, dtype, tmp);
      eg.compute(ComputeKind::Backward, "embedding backward", static_cast<double>(g[0].numel()), g[0].bytes() + per_segment.bytes() + grad.bytes(),
                 elementwise_work(WorkKind::Copy, g[0].dtype()));
      // destroyed newest first when embedding_backward_cuda_kernel returns
      per_segment.reset();
      partial_segment_offset.reset();
      partial_count.reset();
      partial_offsets.reset();
      partials.reset();
      segment_count.reset();
      segment_offsets.reset();
    }
    original.reset();
    sorted.reset();
    return std::vector<Tensor>{std::move(grad)};
  });
  e.connect(out, node);
  return out;
}

Tensor layer_norm(Eager& e, const Tensor& x_in, const Tensor& weight, const Tensor& bias) {
  const Tensor x = autocast_arg(e, x_in, Dtype::F32);  // layer_norm is on autocast's fp32 list
  // layer_norm_cuda: Y (contiguous), mean and rstd (one per row, in the accumulate type: fp32)
  Tensor out = e.empty("layer_norm", x.sizes(), x.dtype());
  Sizes stat = x.sizes();
  stat.back() = 1;
  Tensor mean = e.empty("layer_norm mean", stat, Dtype::F32);
  Tensor rstd = e.empty("layer_norm rstd", stat, Dtype::F32);
  e.compute(e.kind(), "layer_norm", 8.0 * static_cast<double>(x.numel()), x.bytes() + out.bytes(), elementwise_work(WorkKind::LayerNorm, x.dtype()));
  // NativeLayerNormBackward0 saves bias, input, weight, result1 (mean), result2 (rstd)
  const Sizes x_sizes = x.sizes(), w_sizes = weight.sizes();
  const Dtype x_dtype = x.dtype(), w_dtype = weight.dtype();
  const int node = e.record("NativeLayerNormBackward0", {&x, &weight, &bias}, {bias, x, weight, mean, rstd},
                            [x_sizes, w_sizes, x_dtype, w_dtype](Eager& eg, const Node& nd, std::vector<Tensor>& g) {
    std::vector<Tensor> grads(3);
    if (!g[0].defined()) return grads;
    // layer_norm_backward_cuda: dX, dgamma, dbeta, in that order
    if (nd.next[0].valid()) grads[0] = eg.empty("layer_norm backward (input)", x_sizes, x_dtype, eg.grad_category(nd.next[0]));
    if (nd.next[1].valid()) grads[1] = eg.empty("layer_norm backward (weight)", w_sizes, w_dtype, eg.grad_category(nd.next[1]));
    if (nd.next[2].valid()) grads[2] = eg.empty("layer_norm backward (bias)", w_sizes, w_dtype, eg.grad_category(nd.next[2]));
    eg.compute(ComputeKind::Backward, "native_layer_norm_backward", 10.0 * static_cast<double>(g[0].numel()), 3 * g[0].bytes(),
               elementwise_work(WorkKind::LayerNormBackward, x_dtype));
    return grads;
  });
  e.connect(out, node);
  return out;
}

Tensor addmm(Eager& e, const Tensor& bias_in, const Tensor& x_in, const Tensor& w_in) {
  const LowPrecision low{autocast_dtype(e)};
  const Tensor w = low.cast(e, w_in);
  const Tensor x = low.cast(e, x_in);
  const Tensor bias = low.cast(e, bias_in);
  const std::int64_t rows = x.sizes()[0], in = x.sizes()[1], outf = w.sizes()[1];
  Tensor out = e.empty("addmm", {rows, outf}, x.dtype());
  e.gemm(/*biased_addmm_rows=*/rows > 1);
  e.compute(e.kind(), "addmm", gemm_flops(rows, outf, in), x.bytes() + w.bytes() + out.bytes(),
            product_work(rows, outf, in, column_major(w), x.dtype()));
  // AddmmBackward0 saves mat1 (for mat2's gradient) and mat2 (for mat1's); gradients mat1, mat2, then self (grad,
  // which validate_outputs sums over the rows into the bias's shape: a CUDA reduction)
  std::vector<Tensor> saved;
  const bool keep_mat1 = w.requires_grad(), keep_mat2 = x.requires_grad();
  if (keep_mat1) saved.push_back(x);
  if (keep_mat2) saved.push_back(w);
  const Sizes x_sizes = x.sizes(), w_sizes = w.sizes();
  const bool w_column_major = column_major(w);
  const int node = e.record("AddmmBackward0", {&bias, &x, &w}, std::move(saved),
                            [keep_mat1, keep_mat2, x_sizes, w_sizes, w_column_major](Eager& eg, const Node& nd, std::vector<Tensor>& g) {
    std::vector<Tensor> grads(3);
    if (!g[0].defined()) return grads;
    const Tensor* mat1 = keep_mat1 ? &nd.saved[0] : nullptr;
    const Tensor* mat2 = keep_mat2 ? &nd.saved[keep_mat1 ? 1 : 0] : nullptr;
    if (nd.next[1].valid() && mat2) grads[1] = mat1_gradient(eg, g[0], x_sizes, *mat2, eg.grad_category(nd.next[1]));
    if (nd.next[2].valid() && mat1) grads[2] = mat2_gradient(eg, g[0], *mat1, w_sizes, w_column_major, eg.grad_category(nd.next[2]));
    if (nd.next[0].valid()) grads[0] = g[0];
    return grads;
  });
  e.connect(out, node);
  return out;
}

Tensor linear(Eager& e, const Tensor& x_in, const Tensor& w_in, const Tensor& bias_in) {
  const LowPrecision low{autocast_dtype(e)};
  const Tensor bias = bias_in.defined() ? low.cast(e, bias_in) : Tensor();
  const Tensor w = low.cast(e, w_in);
  const Tensor x = low.cast(e, x_in);
  const bool was = e.autocast_active;
  e.autocast_active = false;  // the wrapper excludes autocast for what linear calls
  // at::linear: a 2-D input with a bias is addmm(bias, input, weight.t()); without a bias matmul(input, weight.t()),
  // a rank > 2 input folded to 2-D for one mm (_matmul_impl: t1.reshape({rows, in}).mm(t2), then _unsafe_view)
  const Tensor wt = t(e, w);
  Tensor out;
  if (bias.defined()) {
    out = addmm(e, bias, x, wt);
  } else if (x.dim() == 2) {
    out = mm_op(e, x, wt);
  } else {
    const std::int64_t in = x.sizes().back();
    const Tensor x2 = reshape(e, x, {x.numel() / in, in});
    const Tensor y2 = mm_op(e, x2, wt);
    Sizes shape = x.sizes();
    shape.back() = wt.sizes()[1];
    out = unsafe_view(e, y2, shape);
  }
  e.autocast_active = was;
  return out;
}

Tensor matmul(Eager& e, const Tensor& a_in, const Tensor& b_in) {
  const LowPrecision low{autocast_dtype(e)};
  const Tensor bm = low.cast(e, b_in);
  const Tensor a = low.cast(e, a_in);
  const bool was = e.autocast_active;
  e.autocast_active = false;
  // _matmul_impl, both of rank ≥ 3: each operand expanded to the batch shape and reshaped to 3-D (a copy where
  // its strides do not allow a view), bmm, then _unsafe_view to the output shape
  Sizes batch(a.sizes().begin(), a.sizes().end() - 2);
  const std::int64_t batch_product = numel_of(batch);
  const std::int64_t m = a.sizes()[a.sizes().size() - 2], k = a.sizes().back(), n = bm.sizes().back();
  Sizes a_shape = batch, b_shape = batch;
  a_shape.insert(a_shape.end(), {m, k});
  b_shape.insert(b_shape.end(), {k, n});
  const Tensor a3 = reshape(e, expand(e, a, a_shape), {batch_product, m, k});
  const Tensor b3 = reshape(e, expand(e, bm, b_shape), {batch_product, k, n});
  const Tensor out3 = bmm_op(e, a3, b3);
  Sizes out_shape = batch;
  out_shape.insert(out_shape.end(), {m, n});
  Tensor out = unsafe_view(e, out3, out_shape);
  e.autocast_active = was;
  return out;
}

Tensor dropout(Eager& e, const Tensor& x, double p, bool training) {
  if (!training || p <= 0) return x;  // at::dropout returns its input at p = 0 or in eval
  // native_dropout: the output and a bool keep mask; NativeDropoutBackward0 saves the mask
  Tensor out = e.empty_like("dropout", x, x.dtype());
  Tensor mask = e.empty_like("dropout mask", x, Dtype::Bool);
  e.compute(e.kind(), "native_dropout", static_cast<double>(x.numel()), 2 * x.bytes() + mask.bytes(), elementwise_work(WorkKind::Binary, x.dtype()));
  const int node = e.record("NativeDropoutBackward0", {&x}, {mask}, [](Eager& eg, const Node&, std::vector<Tensor>& g) {
    if (!g[0].defined()) return std::vector<Tensor>{Tensor()};
    Tensor grad = eg.empty_like("native_dropout_backward", g[0], g[0].dtype(), Category::Temporaries);
    eg.compute(ComputeKind::Backward, "native_dropout_backward", static_cast<double>(grad.numel()), 3 * grad.bytes(),
               elementwise_work(WorkKind::Binary, grad.dtype()));
    return std::vector<Tensor>{std::move(grad)};
  });
  e.connect(out, node);
  return out;
}

Tensor mse_loss(Eager& e, const Tensor& x_in, const Tensor& y_in) {
  const Tensor y = autocast_arg(e, y_in, Dtype::F32);  // mse_loss is on autocast's fp32 list
  const Tensor x = autocast_arg(e, x_in, Dtype::F32);
  const bool input_sized = e.settings.behaviour.mse_loss_keeps_input_sized_result;
  Tensor loss;
  if (input_sized) loss = e.empty_bytes("mse_loss result (input-sized)", x.bytes(), {}, Dtype::F32, Category::Activations, true);
  {
    Tensor elementwise = e.empty("mse_loss elementwise", x.sizes(), x.dtype(), Category::Temporaries);
    if (!input_sized) loss = e.empty("mse_loss", {}, Dtype::F32, Category::Activations, true);
    const auto scratch = e.reduction_scratch(1, x.numel(), /*along_rows=*/false);
    e.compute(ComputeKind::Loss, "mse_loss", 3.0 * static_cast<double>(x.numel()), 3 * x.bytes(), elementwise_work(WorkKind::MseLoss, x.dtype()));
    e.release_scratch(scratch);
  }
  // MseLossBackward0 saves self and target; mse_loss_backward: an input-sized gradient
  const Sizes in = x.sizes();
  const Dtype dtype = x.dtype();
  const int node = e.record("MseLossBackward0", {&x, &y}, {x, y}, [in, dtype](Eager& eg, const Node&, std::vector<Tensor>& g) {
    if (!g[0].defined()) return std::vector<Tensor>(2);
    Tensor grad = eg.empty("mse_loss_backward", in, dtype, Category::Temporaries);
    eg.compute(ComputeKind::LossBackward, "mse_loss_backward", 3.0 * static_cast<double>(grad.numel()), 3 * grad.bytes(),
               elementwise_work(WorkKind::MseLossBackward, dtype));
    return std::vector<Tensor>{std::move(grad), Tensor()};
  });
  e.connect(loss, node);
  return loss;
}

Tensor cross_entropy(Eager& e, const Tensor& logits, const Tensor& target) {
  // cross_entropy_loss: log_softmax then nll_loss (both on autocast's fp32 lists)
  const Tensor log_probs = log_softmax(e, logits);
  const Tensor input = autocast_arg(e, log_probs, Dtype::F32);
  Tensor loss = e.empty("nll_loss", {}, input.dtype(), Category::Activations, /*persistent=*/true);
  Tensor total_weight = e.empty("nll_loss total_weight", {}, input.dtype());
  e.compute(ComputeKind::Loss, "nll_loss", static_cast<double>(target.numel()), input.bytes() / 64 + target.bytes(),
            elementwise_work(WorkKind::Reduction, input.dtype()));
  // NllLossBackward0 saves self, target, total_weight; nll_loss_backward: zeros of the input's size
  const Sizes in = input.sizes();
  const Dtype dtype = input.dtype();
  const int node = e.record("NllLossBackward0", {&input}, {input, target, total_weight}, [in, dtype](Eager& eg, const Node&, std::vector<Tensor>& g) {
    if (!g[0].defined()) return std::vector<Tensor>{Tensor()};
    Tensor grad = eg.empty("nll_loss_backward", in, dtype, Category::Temporaries);
    eg.compute(ComputeKind::LossBackward, "nll_loss_backward", static_cast<double>(numel_of(in)), grad.bytes(),
               elementwise_work(WorkKind::Copy, dtype));
    return std::vector<Tensor>{std::move(grad)};
  });
  e.connect(loss, node);
  return loss;
}

}  // namespace shardscope::eager::ops
