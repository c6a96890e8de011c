// Views, reshapes, casts, split and cat (see ops.h). A view allocates nothing and its node hands the gradient back
// through the inverse view (derivatives.yaml: view → grad.reshape(self.sizes()), transpose → grad.transpose,
// slice → slice_backward, which zero-fills a full-size gradient); a reshape that cannot be a view copies
// (at::reshape: _unsafe_view(clone(contiguous))).
#include "training/eager/ops_internal.h"

namespace shardscope::eager::ops {

using detail::reshape_grad;
using detail::transposed_view;
using detail::wrap_dim;

namespace {

// A view of `x` as a node of its own, whose gradient formula maps the view's gradient back.
Tensor record_view(Eager& e, const Tensor& x, Tensor out, const char* node, BackwardFn fn) {
  const int n = e.record(node, {&x}, {}, std::move(fn));
  e.connect(out, n);
  return out;
}

}  // namespace

Tensor view(Eager& e, const Tensor& x, Sizes shape) {
  auto strides = view_strides(x.sizes(), x.strides(), shape);
  if (!strides) throw std::logic_error("eager ops: view of a tensor whose strides do not allow it (" + e.scope + ")");
  Sizes in = x.sizes();
  return record_view(e, x, x.view_as(shape, *strides), "ViewBackward0",
                     [in](Eager& eg, const Node&, std::vector<Tensor>& g) { return std::vector<Tensor>{reshape_grad(eg, g[0], in)}; });
}

Tensor reshape(Eager& e, const Tensor& x, Sizes shape) {
  if (view_strides(x.sizes(), x.strides(), shape)) return view(e, x, std::move(shape));
  const Tensor copy = clone(e, x);
  Sizes in = copy.sizes();
  Sizes strides = contiguous_strides(shape);
  return record_view(e, copy, Tensor(copy).with_layout(shape, strides), "UnsafeViewBackward0",
                     [in](Eager& eg, const Node&, std::vector<Tensor>& g) { return std::vector<Tensor>{reshape_grad(eg, g[0], in)}; });
}

Tensor transpose(Eager& e, const Tensor& x, int d0, int d1) {
  d0 = wrap_dim(d0, x.dim());
  d1 = wrap_dim(d1, x.dim());
  return record_view(e, x, transposed_view(x, d0, d1), "TransposeBackward0",
                     [d0, d1](Eager&, const Node&, std::vector<Tensor>& g) { return std::vector<Tensor>{transposed_view(g[0], d0, d1)}; });
}

Tensor t(Eager& e, const Tensor& x) {
  return record_view(e, x, transposed_view(x, 0, 1), "TBackward0",
                     [](Eager&, const Node&, std::vector<Tensor>& g) { return std::vector<Tensor>{transposed_view(g[0], 0, 1)}; });
}

Tensor unsqueeze(Eager& e, const Tensor& x, int dim) {
  dim = wrap_dim(dim, x.dim() + 1);
  Sizes sizes = x.sizes(), strides = x.strides();
  const auto d = static_cast<std::size_t>(dim);
  const std::int64_t stride = d < sizes.size() ? sizes[d] * strides[d] : 1;
  sizes.insert(sizes.begin() + dim, 1);
  strides.insert(strides.begin() + dim, stride);
  return record_view(e, x, x.view_as(sizes, strides), "UnsqueezeBackward0", [d](Eager&, const Node&, std::vector<Tensor>& g) {
    Sizes s = g[0].sizes(), st = g[0].strides();
    s.erase(s.begin() + static_cast<std::ptrdiff_t>(d));
    st.erase(st.begin() + static_cast<std::ptrdiff_t>(d));
    return std::vector<Tensor>{g[0].view_as(s, st)};
  });
}

Tensor expand(Eager& e, const Tensor& x, Sizes shape) {
  const std::size_t lead = shape.size() - x.sizes().size();
  Sizes strides(shape.size(), 0);
  for (std::size_t i = 0; i < x.sizes().size(); ++i)
    strides[lead + i] = x.sizes()[i] == shape[lead + i] ? x.strides()[i] : 0;
  // ExpandBackward0: at::sum_to(grad, self.sizes()), which validate_outputs' sum_to performs here
  return record_view(e, x, x.view_as(shape, strides), "ExpandBackward0",
                     [](Eager&, const Node&, std::vector<Tensor>& g) { return std::vector<Tensor>{g[0]}; });
}

Tensor slice(Eager& e, const Tensor& x, int dim, std::int64_t start, std::int64_t end) {
  dim = wrap_dim(dim, x.dim());
  Sizes sizes = x.sizes();
  sizes[static_cast<std::size_t>(dim)] = end - start;
  Sizes in = x.sizes();
  return record_view(e, x, x.view_as(sizes, x.strides()), "SliceBackward0", [in](Eager& eg, const Node&, std::vector<Tensor>& g) {
    // slice_backward: zeros of the input's size, the gradient copied into its slice
    Tensor full = eg.empty("slice_backward zeros", in, g[0].dtype(), Category::Temporaries);
    eg.compute(ComputeKind::Backward, "slice_backward", 0, full.bytes() + g[0].bytes(), elementwise_work(WorkKind::Copy, g[0].dtype()));
    return std::vector<Tensor>{std::move(full)};
  });
}

Tensor clone(Eager& e, const Tensor& x) {
  Tensor out = e.empty("copy", x.sizes(), x.dtype());
  e.compute(e.kind(), "clone", 0, 2 * x.bytes(), elementwise_work(WorkKind::Copy, x.dtype()));
  const int n = e.record("CloneBackward0", {&x}, {}, [](Eager&, const Node&, std::vector<Tensor>& g) { return std::vector<Tensor>{g[0]}; });
  e.connect(out, n);
  return out;
}

Tensor contiguous(Eager& e, const Tensor& x) { return x.is_contiguous() ? x : clone(e, x); }

Tensor to(Eager& e, const Tensor& x, Dtype dtype) {
  if (x.dtype() == dtype) return x;
  Tensor out = e.empty_like("cast to " + dtype_name(dtype), x, dtype);
  // A cast is a copy kernel; timed on the copy curve of the type it reads, at the bytes it reads and writes.
  e.compute(e.kind(), "to(" + dtype_name(dtype) + ")", 0, x.bytes() + out.bytes(), elementwise_work(WorkKind::Copy, x.dtype()));
  const Dtype from = x.dtype();
  const int n = e.record("ToCopyBackward0", {&x}, {}, [from](Eager& eg, const Node& node, std::vector<Tensor>& g) {
    if (!g[0].defined()) return std::vector<Tensor>{Tensor()};
    // grad.to(self's dtype): the gradient in the input's type
    Tensor cast = eg.empty_like("gradient cast to " + dtype_name(from), g[0], from, eg.grad_category(node.next[0]));
    eg.compute(ComputeKind::Backward, "to(" + dtype_name(from) + ")", 0, g[0].bytes() + cast.bytes(),
               elementwise_work(WorkKind::Copy, g[0].dtype()));
    return std::vector<Tensor>{std::move(cast)};
  });
  e.connect(out, n);
  return out;
}

std::vector<Tensor> split(Eager& e, const Tensor& x, std::int64_t size, int dim) {
  dim = wrap_dim(dim, x.dim());
  const auto d = static_cast<std::size_t>(dim);
  const std::int64_t pieces = x.sizes()[d] / size;
  Sizes in = x.sizes();
  const Dtype dtype = x.dtype();
  // SplitBackward0 (split_backward): the pieces' gradients (zeros for a piece without one) concatenated
  Sizes piece_sizes = x.sizes();
  piece_sizes[d] = size;
  const int n = e.record("SplitBackward0", {&x}, {}, [in, dtype, piece_sizes](Eager& eg, const Node&, std::vector<Tensor>& g) {
    std::vector<Tensor> zeros;
    for (const Tensor& piece : g)
      if (!piece.defined()) zeros.push_back(eg.empty("split_backward zeros", piece_sizes, dtype, Category::Temporaries));
    Tensor whole = eg.empty("split_backward cat", in, g.front().defined() ? g.front().dtype() : dtype, Category::Temporaries);
    eg.compute(ComputeKind::Backward, "split_backward cat", 0, 2 * whole.bytes(), elementwise_work(WorkKind::Copy, whole.dtype()));
    return std::vector<Tensor>{std::move(whole)};
  }, static_cast<int>(pieces));
  std::vector<Tensor> out;
  for (std::int64_t i = 0; i < pieces; ++i) {
    Sizes sizes = x.sizes();
    sizes[d] = size;
    Tensor piece = x.view_as(sizes, x.strides());
    e.connect(piece, n, static_cast<int>(i));
    out.push_back(std::move(piece));
  }
  return out;
}

Tensor cat(Eager& e, const std::vector<const Tensor*>& xs, int dim, std::optional<Dtype> also) {
  dim = wrap_dim(dim, xs.front()->dim());
  const auto d = static_cast<std::size_t>(dim);
  Sizes sizes = xs.front()->sizes();
  sizes[d] = 0;
  Dtype dtype = also.value_or(xs.front()->dtype());
  for (const Tensor* x : xs) {
    sizes[d] += x->sizes()[d];
    dtype = promote(dtype, x->dtype());
  }
  Tensor out = e.empty("cat", sizes, dtype);
  e.compute(e.kind(), "cat", 0, 2 * out.bytes(), elementwise_work(WorkKind::Copy, out.dtype()));
  std::vector<std::int64_t> offsets;
  std::int64_t at = 0;
  for (const Tensor* x : xs) {
    offsets.push_back(at);
    at += x->sizes()[d];
  }
  std::vector<Sizes> piece_sizes;
  for (const Tensor* x : xs) piece_sizes.push_back(x->sizes());
  // CatBackward0: each input's gradient is a narrow view of the output's
  const int n = e.record("CatBackward0", xs, {}, [piece_sizes](Eager&, const Node& node, std::vector<Tensor>& g) {
    std::vector<Tensor> grads;
    for (std::size_t i = 0; i < piece_sizes.size(); ++i)
      grads.push_back(node.next[i].valid() ? g[0].view_as(piece_sizes[i], g[0].strides()) : Tensor());
    return grads;
  });
  e.connect(out, n);
  return out;
}

}  // namespace shardscope::eager::ops
