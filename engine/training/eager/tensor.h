// A tensor as PyTorch's eager mode holds it, for lowering a model written op by op (the Hugging Face
// implementation): sizes and strides in elements over a storage the ProgramBuilder counts, a dtype, whether it is a
// view of another tensor's storage, and its autograd edge. A Tensor value is one Python reference: copying it retains
// the storage, destroying it releases it, so a C++ scope frees what a Python function's locals free when it returns.
// Layout rules follow c10/core/TensorImpl and aten/src/ATen/TensorUtils.cpp (computeStride), PyTorch 2.x.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "plan/program_builder.h"

namespace shardscope::eager {

using Sizes = std::vector<std::int64_t>;

// What the elements are: the float types autocast moves between, and the integer / boolean types of token ids,
// positions and masks (opaque bytes to the plan).
enum class Dtype : std::uint8_t { F32, BF16, F16, I64, I32, Bool };

Bytes dtype_size(Dtype dtype);
bool is_float(Dtype dtype);
std::string dtype_name(Dtype dtype);
ElementType plan_element(Dtype dtype);
// torch.result_type of two float tensors (the wider; bf16 with fp16 gives fp32), integer operands follow the float one.
Dtype promote(Dtype a, Dtype b);

// Where a tensor's gradient goes: input `slot` of autograd node `node` (-1: does not require grad).
struct Edge {
  int node = -1;
  int slot = 0;
  bool valid() const { return node >= 0; }
};

Sizes contiguous_strides(const Sizes& sizes);
std::int64_t numel_of(const Sizes& sizes);
// The strides a view of `sizes`/`strides` reshaped to `shape` has, when one exists (at::detail::computeStride).
std::optional<Sizes> view_strides(const Sizes& sizes, const Sizes& strides, const Sizes& shape);

class Tensor {
 public:
  Tensor() = default;
  // Adopts the one holder a fresh ProgramBuilder::alloc gives (`view` false), or retains `storage` (a view).
  Tensor(ProgramBuilder& builder, TensorId storage, Sizes sizes, Sizes strides, Dtype dtype, bool view);
  Tensor(const Tensor& other);
  Tensor(Tensor&& other) noexcept;
  Tensor& operator=(const Tensor& other);
  Tensor& operator=(Tensor&& other) noexcept;
  ~Tensor();

  bool defined() const { return builder_ != nullptr; }
  void reset();  // `del x`: drops this reference

  TensorId storage() const { return storage_; }
  const Sizes& sizes() const { return sizes_; }
  const Sizes& strides() const { return strides_; }
  std::int64_t size(int dim) const;  // negative dims count from the end
  int dim() const { return static_cast<int>(sizes_.size()); }
  Dtype dtype() const { return dtype_; }
  std::int64_t numel() const { return numel_of(sizes_); }
  Bytes bytes() const { return numel() * dtype_size(dtype_); }  // of this view's elements
  bool is_view() const { return view_; }
  bool is_contiguous() const;
  bool is_non_overlapping_and_dense() const;
  ProgramBuilder& builder() const { return *builder_; }

  // A view of the same storage with other sizes and strides (transpose, narrow, view): retains the storage.
  Tensor view_as(Sizes sizes, Sizes strides) const;
  // This reference with other sizes and strides, keeping whether it is a view: _unsafe_view of a fresh tensor, which
  // autograd does not track as a view (its base dies with the expression).
  Tensor with_layout(Sizes sizes, Sizes strides) &&;

  Edge grad_edge;          // autograd: where this tensor's gradient flows; invalid when it needs none
  int param_layer = -1;    // a model parameter (a leaf): its layer and index, else -1
  int param_index = -1;

  bool requires_grad() const { return grad_edge.valid(); }
  bool is_parameter() const { return param_layer >= 0; }

 private:
  ProgramBuilder* builder_ = nullptr;
  TensorId storage_ = -1;
  Sizes sizes_, strides_;
  Dtype dtype_ = Dtype::F32;
  bool view_ = false;
};

}  // namespace shardscope::eager
