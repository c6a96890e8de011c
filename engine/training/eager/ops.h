// ATen ops as PyTorch 2.x runs them on CUDA, for memory: what each forward allocates, what its autograd node saves
// (tools/autograd/derivatives.yaml) and what its gradient formula allocates when the engine runs it; torch.autocast's
// casts where an op is on one of its lists (aten/src/ATen/autocast_mode.h, CUDA). Where a rule was measured rather
// than read (a kernel's temporaries), the op says so. Names follow PyTorch's ("addmm", "_softmax").
// Usage: Tensor h = ops::layer_norm(e, x, weight, bias);   // inside a module's forward, e an Eager
#pragma once
#include <vector>

#include "training/eager/eager.h"

namespace shardscope::eager::ops {

// --- views and copies (ops_view.cpp) ---
Tensor view(Eager& e, const Tensor& x, Sizes shape);          // x.view(shape): must be viewable
Tensor reshape(Eager& e, const Tensor& x, Sizes shape);       // a view where one exists, else a contiguous copy
Tensor transpose(Eager& e, const Tensor& x, int d0, int d1);
Tensor t(Eager& e, const Tensor& x);                          // 2-D transpose
Tensor unsqueeze(Eager& e, const Tensor& x, int dim);
Tensor expand(Eager& e, const Tensor& x, Sizes shape);        // broadcast view; its gradient is summed back
Tensor slice(Eager& e, const Tensor& x, int dim, std::int64_t start, std::int64_t end);  // x[..., start:end]
Tensor contiguous(Eager& e, const Tensor& x);
Tensor clone(Eager& e, const Tensor& x);                      // a contiguous copy (CloneBackward0)
Tensor to(Eager& e, const Tensor& x, Dtype dtype);            // _to_copy; x itself when already that dtype
std::vector<Tensor> split(Eager& e, const Tensor& x, std::int64_t size, int dim);  // equal pieces (views)
// torch.cat; `also` is the dtype of further inputs without elements that join the type promotion (the empty tensor
// a DynamicCache layer starts from)
Tensor cat(Eager& e, const std::vector<const Tensor*>& xs, int dim, std::optional<Dtype> also = std::nullopt);

// --- elementwise and reductions (ops_math.cpp) ---
Tensor add(Eager& e, const Tensor& a, const Tensor& b);      // broadcasting, type-promoting
Tensor add_scalar(Eager& e, const Tensor& a, double s);
Tensor mul(Eager& e, const Tensor& a, const Tensor& b);
Tensor mul_scalar(Eager& e, const Tensor& a, double s);
Tensor neg(Eager& e, const Tensor& a);
Tensor pow_scalar(Eager& e, const Tensor& a, double exponent);  // autocast: fp32
Tensor tanh(Eager& e, const Tensor& a);
Tensor rsqrt(Eager& e, const Tensor& a);                        // autocast: fp32
Tensor silu(Eager& e, const Tensor& a);
Tensor relu(Eager& e, const Tensor& a, bool inplace);
Tensor mean_last(Eager& e, const Tensor& a);                    // a.mean(-1, keepdim=True)
// softmax / log_softmax over the last dim; `dtype` as their dtype= argument (autocast sets fp32 when absent)
Tensor softmax(Eager& e, const Tensor& a, std::optional<Dtype> dtype = std::nullopt);
Tensor log_softmax(Eager& e, const Tensor& a, std::optional<Dtype> dtype = std::nullopt);

// --- layers (ops_nn.cpp) ---
Tensor embedding(Eager& e, const Tensor& weight, const Tensor& ids);
// F.layer_norm over the last dim (native_layer_norm: output, mean, rstd); autocast: fp32
Tensor layer_norm(Eager& e, const Tensor& x, const Tensor& weight, const Tensor& bias);
// torch.addmm(bias, x, w) on 2-D x: transformers' Conv1D; autocast: 16-bit
Tensor addmm(Eager& e, const Tensor& bias, const Tensor& x, const Tensor& w);
// F.linear(x, w, bias): without a bias (x of any rank) matmul(x, w.t()) folded to one mm; with one (2-D x)
// addmm(bias, x, w.t()); autocast: 16-bit
Tensor linear(Eager& e, const Tensor& x, const Tensor& w, const Tensor& bias = Tensor());
// torch.matmul of two tensors of rank ≥ 3 (batched), as _matmul_impl folds it into bmm; autocast: 16-bit
Tensor matmul(Eager& e, const Tensor& a, const Tensor& b);
// F.dropout in training: the identity at p = 0 (at::dropout returns its input), else native_dropout
Tensor dropout(Eager& e, const Tensor& x, double p, bool training);

// F.scaled_dot_product_attention on q, k, v [b, heads, s, d] (k, v may have fewer heads: enable_gqa), causal, as
// the kernel SDPA picks runs it (the caller picks: attention_backend.h).
enum class SdpaKernel { Efficient, Flash, Math };
Tensor scaled_dot_product_attention(Eager& e, const Tensor& q, const Tensor& k, const Tensor& v, SdpaKernel kernel,
                                    double dropout_p);

// F.cross_entropy(logits [N, V], target [N]) with mean reduction: log_softmax then nll_loss (autocast: fp32)
Tensor cross_entropy(Eager& e, const Tensor& logits, const Tensor& target);
// F.mse_loss(x, y) with mean reduction (autocast: fp32); `keeps_input_sized_result`: PyTorch 2.x's loss is an
// input-sized buffer resized to one element (FrameworkBehaviour::mse_loss_keeps_input_sized_result)
Tensor mse_loss(Eager& e, const Tensor& x, const Tensor& y);

// The autocast cast of one argument of an op on a list (autocast_mode.cpp cached_cast): to `dtype` when autocast is
// on and the argument is another float type; fp32 parameters' 16-bit casts are cached until the region exits.
Tensor autocast_arg(Eager& e, const Tensor& x, Dtype dtype);
// The 16-bit type of the active autocast region, or nothing outside one.
std::optional<Dtype> autocast_dtype(const Eager& e);

}  // namespace shardscope::eager::ops
