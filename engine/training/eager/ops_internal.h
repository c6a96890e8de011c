// Helpers the op files share: views of a tensor's storage, the layout TensorIterator gives an elementwise result,
// a gradient reshaped as ViewBackward0 does, and bytes moved for the simulator's clock.
#pragma once
#include <algorithm>
#include <numeric>
#include <stdexcept>

#include "training/eager/ops.h"

namespace shardscope::eager::ops::detail {

inline int wrap_dim(int dim, int rank) { return dim < 0 ? dim + rank : dim; }

// Dense strides in the dim order of `ref` (its slowest dim first): what empty_like(preserve_format) and
// TensorIterator give a result shaped like a permuted operand.
inline Sizes strides_following(const Sizes& sizes, const Sizes& ref_strides) {
  std::vector<std::size_t> order(sizes.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return ref_strides[a] > ref_strides[b]; });
  Sizes strides(sizes.size(), 1);
  std::int64_t running = 1;
  for (std::size_t k = order.size(); k-- > 0;) {
    strides[order[k]] = running;
    running *= std::max<std::int64_t>(sizes[order[k]], 1);
  }
  return strides;
}

// A fresh tensor of `sizes` laid out as TensorIterator lays out an elementwise result: like the first operand of the
// same shape that is dense (a transposed q keeps its permuted layout through q * cos), else contiguous.
inline Tensor elementwise_result(Eager& e, const std::string& what, const Sizes& sizes, Dtype dtype,
                                 const std::vector<const Tensor*>& operands, Category category = Category::Activations) {
  for (const Tensor* t : operands) {
    if (!t || !t->defined() || t->sizes() != sizes || !t->is_non_overlapping_and_dense()) continue;
    if (t->is_contiguous()) break;
    Tensor like = t->view_as(sizes, strides_following(sizes, t->strides()));
    return e.empty_like(what, like, dtype, category);
  }
  return e.empty(what, sizes, dtype, category);
}

// The broadcast shape of two operands (numpy rules).
inline Sizes broadcast_sizes(const Sizes& a, const Sizes& b) {
  const std::size_t n = std::max(a.size(), b.size());
  Sizes out(n, 1);
  for (std::size_t i = 0; i < n; ++i) {
    const std::int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const std::int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1) throw std::logic_error("eager ops: shapes do not broadcast");
    out[i] = std::max(da, db);
  }
  return out;
}

// grad.reshape(sizes) in a backward formula: a view where the strides allow, else a contiguous copy.
inline Tensor reshape_grad(Eager& e, const Tensor& grad, const Sizes& sizes) {
  if (grad.sizes() == sizes) return grad;
  if (auto strides = view_strides(grad.sizes(), grad.strides(), sizes)) return grad.view_as(sizes, *strides);
  Tensor copy = e.empty("gradient reshaped (copy)", grad.sizes(), grad.dtype(), Category::Temporaries);
  e.compute(ComputeKind::Backward, "reshape copy", 0, 2 * grad.bytes(), elementwise_work(WorkKind::Copy, grad.dtype()));
  return std::move(copy).with_layout(sizes, contiguous_strides(sizes));
}

inline Tensor transposed_view(const Tensor& x, int d0, int d1) {
  Sizes sizes = x.sizes(), strides = x.strides();
  std::swap(sizes[static_cast<std::size_t>(d0)], sizes[static_cast<std::size_t>(d1)]);
  std::swap(strides[static_cast<std::size_t>(d0)], strides[static_cast<std::size_t>(d1)]);
  return x.view_as(sizes, strides);
}

}  // namespace shardscope::eager::ops::detail
