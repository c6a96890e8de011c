// ComputeWork: what a compute op's kernel is, where the lowering knows it op by op (the eager pass,
// training/eager/, which runs PyTorch's ops one by one): the kind of kernel, the element type it computes in and,
// for a GEMM or fused attention, its shape. The simulator times such an op on the device profile's curve for that
// kind and element type (sim/profile_costs.cpp) and, without a profile, at that type's roofline peak; executors and
// the memory accounting ignore it. Under torch.autocast this is what makes a GEMM 16-bit and a loss fp32 in time as
// they already are in memory.
// An op holds a 3-byte handle (WorkId) into a process-wide pool of the distinct works, in the bytes its small
// fields left as padding: a 1,024-rank plan keeps 120-byte ops, and copies of an op keep their work.
// Usage:
//   builder.set_work(op, ComputeWork::gemm(GemmLayout::Forward, m, n, k, 1, ElementType::Bf16));
//   const ComputeWork& w = op.work.get();   // kind Unknown where the lowering said nothing
#pragma once
#include <array>
#include <cstdint>

#include "plan/element_type.h"

namespace shardscope {

enum class WorkKind : std::uint8_t {
  Unknown,            // not said: timed by Op::kernel (ModelPass's kernels) or the roofline
  Gemm,               // `batch` products of m×k by k×n, operands as `layout` says
  Attention,          // a fused scaled_dot_product_attention: batch = batch·heads, m = query length,
  AttentionBackward,  //   n = key length, k = head width
  Copy,               // copies, casts (.to), fills, gathers: bytes read and written
  Unary,              // elementwise of one tensor (pow, tanh, rsqrt, a tensor times a scalar)
  Binary,             // elementwise of two (add, mul, where, a gradient term, an in-place accumulation)
  Relu,
  ReluBackward,       // threshold_backward
  Reduction,          // a sum or mean (sum_to's bias gradient, nll_loss)
  Softmax,            // softmax / log_softmax
  SoftmaxBackward,
  LayerNorm,
  LayerNormBackward,
  MseLoss,
  MseLossBackward,
};

// A GEMM's operand layout, as the device profile's GEMM curves are measured (python/shardscope/calibrate.py):
// Forward a·bᵀ (nn.Linear's x·Wᵀ), InputGrad a·b (dy·W), WeightGrad aᵀ·b (dyᵀ·x), Batched a batched product.
enum class GemmLayout : std::uint8_t { Forward, InputGrad, WeightGrad, Batched };

struct ComputeWork {
  WorkKind kind = WorkKind::Unknown;
  ElementType element = ElementType::Opaque;  // what it computes in; Opaque: not said (the training dtype's)
  GemmLayout layout = GemmLayout::Forward;
  std::int64_t m = 0, n = 0, k = 0, batch = 1;

  static ComputeWork gemm(GemmLayout layout, std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch,
                          ElementType element) {
    return {WorkKind::Gemm, element, layout, m, n, k, batch};
  }
  static ComputeWork attention(bool backward, std::int64_t batch_heads, std::int64_t query, std::int64_t key,
                               std::int64_t head_dim, ElementType element) {
    return {backward ? WorkKind::AttentionBackward : WorkKind::Attention, element, GemmLayout::Forward, query, key,
            head_dim, batch_heads};
  }
  static ComputeWork elementwise(WorkKind kind, ElementType element) { return {kind, element}; }
  friend bool operator==(const ComputeWork&, const ComputeWork&) = default;
};

const char* work_kind_name(WorkKind kind);
const char* gemm_layout_name(GemmLayout layout);  // the profile's names: "forward", "input_grad", ...

// A handle to an interned ComputeWork: 3 bytes, 0 for "not said". The pool holds 2^24 distinct works; past that
// (never reached: a plan has tens of distinct shapes) a new work is dropped and its op timed as before (Unknown).
class WorkId {
 public:
  WorkId() = default;
  explicit WorkId(const ComputeWork& work);
  const ComputeWork& get() const;
  bool known() const { return index() != 0; }

 private:
  std::uint32_t index() const {
    return static_cast<std::uint32_t>(bytes_[0]) | static_cast<std::uint32_t>(bytes_[1]) << 8 |
           static_cast<std::uint32_t>(bytes_[2]) << 16;
  }
  std::array<std::uint8_t, 3> bytes_{};
};

}  // namespace shardscope
