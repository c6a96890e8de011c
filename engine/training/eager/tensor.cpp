// Tensor references and layouts (see tensor.h).
#include "training/eager/tensor.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace shardscope::eager {

Bytes dtype_size(Dtype dtype) {
  switch (dtype) {
    case Dtype::F32: case Dtype::I32: return 4;
    case Dtype::BF16: case Dtype::F16: return 2;
    case Dtype::I64: return 8;
    case Dtype::Bool: return 1;
  }
  return 4;
}

bool is_float(Dtype dtype) { return dtype == Dtype::F32 || dtype == Dtype::BF16 || dtype == Dtype::F16; }

std::string dtype_name(Dtype dtype) {
  switch (dtype) {
    case Dtype::F32: return "fp32";
    case Dtype::BF16: return "bf16";
    case Dtype::F16: return "fp16";
    case Dtype::I64: return "int64";
    case Dtype::I32: return "int32";
    case Dtype::Bool: return "bool";
  }
  return "?";
}

ElementType plan_element(Dtype dtype) {
  switch (dtype) {
    case Dtype::F32: return ElementType::Fp32;
    case Dtype::BF16: return ElementType::Bf16;
    case Dtype::F16: return ElementType::Fp16;
    default: return ElementType::Opaque;
  }
}

Dtype promote(Dtype a, Dtype b) {
  if (a == b) return a;
  if (!is_float(a)) return is_float(b) ? b : (dtype_size(a) >= dtype_size(b) ? a : b);
  if (!is_float(b)) return a;
  if (a == Dtype::F32 || b == Dtype::F32) return Dtype::F32;
  return Dtype::F32;  // bf16 with fp16 (c10::promoteTypes)
}

Sizes contiguous_strides(const Sizes& sizes) {
  Sizes strides(sizes.size(), 1);
  std::int64_t running = 1;
  for (std::size_t i = sizes.size(); i-- > 0;) {
    strides[i] = running;
    running *= std::max<std::int64_t>(sizes[i], 1);
  }
  return strides;
}

std::int64_t numel_of(const Sizes& sizes) {
  return std::accumulate(sizes.begin(), sizes.end(), std::int64_t{1}, std::multiplies<>());
}

// at::detail::computeStride_impl (aten/src/ATen/TensorUtils.cpp): walks the old dims from the last, in chunks of
// dims that are contiguous with each other, and fits the new dims into each chunk.
std::optional<Sizes> view_strides(const Sizes& oldshape, const Sizes& oldstride, const Sizes& newshape) {
  if (oldshape.empty()) return Sizes(newshape.size(), 1);
  const std::int64_t numel = numel_of(oldshape);
  if (numel == 0) return oldshape == newshape ? std::optional<Sizes>(oldstride) : std::optional<Sizes>(contiguous_strides(newshape));
  Sizes newstride(newshape.size());
  std::int64_t view_d = static_cast<std::int64_t>(newshape.size()) - 1;
  std::int64_t chunk_base_stride = oldstride.back();
  std::int64_t tensor_numel = 1, view_numel = 1;
  for (std::int64_t tensor_d = static_cast<std::int64_t>(oldshape.size()) - 1; tensor_d >= 0; --tensor_d) {
    tensor_numel *= oldshape[static_cast<std::size_t>(tensor_d)];
    if (tensor_d == 0 || (oldshape[static_cast<std::size_t>(tensor_d - 1)] != 1 &&
                          oldstride[static_cast<std::size_t>(tensor_d - 1)] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || newshape[static_cast<std::size_t>(view_d)] == 1)) {
        newstride[static_cast<std::size_t>(view_d)] = view_numel * chunk_base_stride;
        view_numel *= newshape[static_cast<std::size_t>(view_d)];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (tensor_d > 0) {
        chunk_base_stride = oldstride[static_cast<std::size_t>(tensor_d - 1)];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return newstride;
}

Tensor::Tensor(ProgramBuilder& builder, TensorId storage, Sizes sizes, Sizes strides, Dtype dtype, bool view)
    : builder_(&builder), storage_(storage), sizes_(std::move(sizes)), strides_(std::move(strides)), dtype_(dtype), view_(view) {
  if (view_) builder_->retain(storage_);
}

Tensor::Tensor(const Tensor& other)
    : grad_edge(other.grad_edge), param_layer(other.param_layer), param_index(other.param_index), builder_(other.builder_),
      storage_(other.storage_), sizes_(other.sizes_), strides_(other.strides_), dtype_(other.dtype_), view_(other.view_) {
  if (builder_) builder_->retain(storage_);
}

Tensor::Tensor(Tensor&& other) noexcept
    : grad_edge(other.grad_edge), param_layer(other.param_layer), param_index(other.param_index), builder_(other.builder_),
      storage_(other.storage_), sizes_(std::move(other.sizes_)), strides_(std::move(other.strides_)), dtype_(other.dtype_),
      view_(other.view_) {
  other.builder_ = nullptr;
  other.storage_ = -1;
}

Tensor& Tensor::operator=(const Tensor& other) {
  if (this == &other) return *this;
  Tensor copy(other);
  *this = std::move(copy);
  return *this;
}

Tensor& Tensor::operator=(Tensor&& other) noexcept {
  if (this == &other) return *this;
  // Python rebinds the name first, then drops the old object: the new value is already alive.
  ProgramBuilder* old_builder = builder_;
  const TensorId old_storage = storage_;
  builder_ = other.builder_;
  storage_ = other.storage_;
  sizes_ = std::move(other.sizes_);
  strides_ = std::move(other.strides_);
  dtype_ = other.dtype_;
  view_ = other.view_;
  grad_edge = other.grad_edge;
  param_layer = other.param_layer;
  param_index = other.param_index;
  other.builder_ = nullptr;
  other.storage_ = -1;
  if (old_builder) old_builder->release(old_storage);
  return *this;
}

Tensor::~Tensor() { reset(); }

void Tensor::reset() {
  if (builder_) builder_->release(storage_);
  builder_ = nullptr;
  storage_ = -1;
}

std::int64_t Tensor::size(int dim) const {
  const int d = dim < 0 ? dim + this->dim() : dim;
  if (d < 0 || d >= this->dim()) throw std::logic_error("eager tensor: dim out of range");
  return sizes_[static_cast<std::size_t>(d)];
}

bool Tensor::is_contiguous() const {
  std::int64_t expected = 1;
  for (std::size_t i = sizes_.size(); i-- > 0;) {
    if (sizes_[i] == 1) continue;
    if (strides_[i] != expected) return false;
    expected *= sizes_[i];
  }
  return true;
}

bool Tensor::is_non_overlapping_and_dense() const {
  std::vector<std::size_t> order(sizes_.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [this](std::size_t a, std::size_t b) { return strides_[a] < strides_[b]; });
  std::int64_t expected = 1;
  for (std::size_t i : order) {
    if (sizes_[i] == 1) continue;
    if (strides_[i] != expected) return false;
    expected *= sizes_[i];
  }
  return true;
}

Tensor Tensor::view_as(Sizes sizes, Sizes strides) const {
  Tensor v(*builder_, storage_, std::move(sizes), std::move(strides), dtype_, true);
  return v;
}

Tensor Tensor::with_layout(Sizes sizes, Sizes strides) && {
  Tensor out(std::move(*this));
  out.sizes_ = std::move(sizes);
  out.strides_ = std::move(strides);
  return out;
}

}  // namespace shardscope::eager
