// Elementwise ops and reductions (see ops.h). Results are laid out as TensorIterator lays them out and typed by
// type promotion; saved tensors and gradient formulas follow derivatives.yaml (2.x). A formula's C++ temporaries
// die at the end of its full expression, newest first: pow's and rsqrt's gradients hold two of them briefly.
#include "training/eager/ops_internal.h"

namespace shardscope::eager::ops {

using detail::broadcast_sizes;
using detail::elementwise_result;

namespace {

double numel_flops(const Tensor& t) { return static_cast<double>(t.numel()); }

// An elementwise gradient term (grad ⊙ x) in the gradient's shape and the promoted type, which it computes in.
Tensor grad_term(Eager& e, const std::string& what, const Tensor& grad, const Tensor& other,
                 WorkKind kind = WorkKind::Binary) {
  Tensor out = elementwise_result(e, what, grad.sizes(), promote(grad.dtype(), other.dtype()), {&grad, &other},
                                  Category::Temporaries);
  e.compute(ComputeKind::Backward, what, numel_flops(out), grad.bytes() + other.bytes() + out.bytes(),
            elementwise_work(kind, out.dtype()));
  return out;
}

Tensor unary_result(Eager& e, const std::string& what, const Tensor& a, Dtype dtype, WorkKind kind = WorkKind::Unary) {
  Tensor out = elementwise_result(e, what, a.sizes(), dtype, {&a});
  e.compute(e.kind(), what, numel_flops(a), a.bytes() + out.bytes(), elementwise_work(kind, dtype));
  return out;
}

}  // namespace

Tensor add(Eager& e, const Tensor& a, const Tensor& b) {
  Tensor out = elementwise_result(e, "add", broadcast_sizes(a.sizes(), b.sizes()), promote(a.dtype(), b.dtype()), {&a, &b});
  e.compute(e.kind(), "add", numel_flops(out), a.bytes() + b.bytes() + out.bytes(), elementwise_work(WorkKind::Binary, out.dtype()));
  // AddBackward0: self: grad, other: grad (alpha 1); validate_outputs sums and casts each to its input
  const int n = e.record("AddBackward0", {&a, &b}, {}, [](Eager&, const Node&, std::vector<Tensor>& g) {
    return std::vector<Tensor>{g[0], g[0]};
  });
  e.connect(out, n);
  return out;
}

Tensor add_scalar(Eager& e, const Tensor& a, double) {
  Tensor out = unary_result(e, "add", a, a.dtype());
  const int n = e.record("AddBackward1", {&a}, {}, [](Eager&, const Node&, std::vector<Tensor>& g) { return std::vector<Tensor>{g[0]}; });
  e.connect(out, n);
  return out;
}

Tensor mul(Eager& e, const Tensor& a, const Tensor& b) {
  Tensor out = elementwise_result(e, "mul", broadcast_sizes(a.sizes(), b.sizes()), promote(a.dtype(), b.dtype()), {&a, &b});
  e.compute(e.kind(), "mul", numel_flops(out), a.bytes() + b.bytes() + out.bytes(), elementwise_work(WorkKind::Binary, out.dtype()));
  // MulBackward0 saves other for self's gradient and self for other's (only those needed), alphabetically
  std::vector<Tensor> saved;
  const bool keep_other = a.requires_grad(), keep_self = b.requires_grad();
  if (keep_other) saved.push_back(b);
  if (keep_self) saved.push_back(a);
  const int n = e.record("MulBackward0", {&a, &b}, std::move(saved), [keep_other, keep_self](Eager& eg, const Node& node, std::vector<Tensor>& g) {
    std::vector<Tensor> grads(2);
    if (!g[0].defined()) return grads;
    const Tensor* other = keep_other ? &node.saved[0] : nullptr;
    const Tensor* self = keep_self ? &node.saved[keep_other ? 1 : 0] : nullptr;
    if (node.next[1].valid() && self) grads[1] = grad_term(eg, "mul backward (other)", g[0], *self);
    if (node.next[0].valid() && other) grads[0] = grad_term(eg, "mul backward (self)", g[0], *other);
    return grads;
  });
  e.connect(out, n);
  return out;
}

Tensor mul_scalar(Eager& e, const Tensor& a, double) {
  Tensor out = unary_result(e, "mul", a, a.dtype());
  const int n = e.record("MulBackward0", {&a}, {}, [](Eager& eg, const Node&, std::vector<Tensor>& g) {
    return std::vector<Tensor>{g[0].defined() ? grad_term(eg, "mul backward", g[0], g[0]) : Tensor()};
  });
  e.connect(out, n);
  return out;
}

Tensor neg(Eager& e, const Tensor& a) {
  Tensor out = unary_result(e, "neg", a, a.dtype());
  const int n = e.record("NegBackward0", {&a}, {}, [](Eager& eg, const Node&, std::vector<Tensor>& g) {
    return std::vector<Tensor>{g[0].defined() ? grad_term(eg, "neg backward", g[0], g[0]) : Tensor()};
  });
  e.connect(out, n);
  return out;
}

Tensor pow_scalar(Eager& e, const Tensor& a_in, double) {
  const Tensor a = autocast_arg(e, a_in, Dtype::F32);  // pow is on autocast's fp32 list
  Tensor out = unary_result(e, "pow", a, a.dtype());
  // PowBackward0 saves self; pow_backward: grad * (exponent * self.pow(exponent - 1))
  const int n = e.record("PowBackward0", {&a}, {a}, [](Eager& eg, const Node& node, std::vector<Tensor>& g) {
    if (!g[0].defined()) return std::vector<Tensor>{Tensor()};
    const Tensor& self = node.saved[0];
    Tensor powered = grad_term(eg, "pow backward: self.pow(exponent - 1)", self, self);
    Tensor scaled = grad_term(eg, "pow backward: exponent * ...", powered, powered);
    Tensor grad = grad_term(eg, "pow backward: grad * ...", g[0], scaled);
    scaled.reset();
    powered.reset();
    return std::vector<Tensor>{std::move(grad)};
  });
  e.connect(out, n);
  return out;
}

Tensor tanh(Eager& e, const Tensor& a) {
  Tensor out = unary_result(e, "tanh", a, a.dtype());
  // TanhBackward0 saves result: tanh_backward(grad, result)
  const int n = e.record("TanhBackward0", {&a}, {out}, [](Eager& eg, const Node& node, std::vector<Tensor>& g) {
    return std::vector<Tensor>{g[0].defined() ? grad_term(eg, "tanh_backward", g[0], node.saved[0]) : Tensor()};
  });
  e.connect(out, n);
  return out;
}

Tensor rsqrt(Eager& e, const Tensor& a_in) {
  const Tensor a = autocast_arg(e, a_in, Dtype::F32);  // rsqrt is on autocast's fp32 list
  Tensor out = unary_result(e, "rsqrt", a, a.dtype());
  // RsqrtBackward0 saves result: -0.5 * grad * result.pow(3)
  const int n = e.record("RsqrtBackward0", {&a}, {out}, [](Eager& eg, const Node& node, std::vector<Tensor>& g) {
    if (!g[0].defined()) return std::vector<Tensor>{Tensor()};
    Tensor half = grad_term(eg, "rsqrt backward: -0.5 * grad", g[0], g[0]);
    Tensor cubed = grad_term(eg, "rsqrt backward: result.pow(3)", node.saved[0], node.saved[0]);
    Tensor grad = grad_term(eg, "rsqrt backward: product", half, cubed);
    cubed.reset();
    half.reset();
    return std::vector<Tensor>{std::move(grad)};
  });
  e.connect(out, n);
  return out;
}

Tensor silu(Eager& e, const Tensor& a) {
  Tensor out = unary_result(e, "silu", a, a.dtype());
  // SiluBackward0 saves self: silu_backward(grad, self)
  const int n = e.record("SiluBackward0", {&a}, {a}, [](Eager& eg, const Node& node, std::vector<Tensor>& g) {
    return std::vector<Tensor>{g[0].defined() ? grad_term(eg, "silu_backward", g[0], node.saved[0]) : Tensor()};
  });
  e.connect(out, n);
  return out;
}

Tensor relu(Eager& e, const Tensor& a, bool inplace) {
  // Not on an autocast list: relu runs in its input's type (16-bit after a 16-bit GEMM).
  Tensor out = inplace ? a : unary_result(e, "relu", a, a.dtype(), WorkKind::Relu);
  if (inplace) e.compute(e.kind(), "relu_", numel_flops(a), 2 * a.bytes(), elementwise_work(WorkKind::Relu, a.dtype()));
  // ReluBackward0 saves result: threshold_backward(grad, result, 0)
  const int n = e.record("ReluBackward0", {&a}, {out}, [](Eager& eg, const Node& node, std::vector<Tensor>& g) {
    return std::vector<Tensor>{g[0].defined() ? grad_term(eg, "threshold_backward", g[0], node.saved[0], WorkKind::ReluBackward) : Tensor()};
  });
  e.connect(out, n);
  return out;
}

Tensor mean_last(Eager& e, const Tensor& a) {
  Sizes sizes = a.sizes();
  sizes.back() = 1;
  Tensor out = e.empty("mean", sizes, a.dtype());
  e.compute(e.kind(), "mean", numel_flops(a), a.bytes() + out.bytes(), elementwise_work(WorkKind::Reduction, a.dtype()));
  Sizes in = a.sizes();
  // MeanBackward1: grad.expand(self.sizes()) / n — one input-sized tensor
  const int n = e.record("MeanBackward1", {&a}, {}, [in](Eager& eg, const Node&, std::vector<Tensor>& g) {
    if (!g[0].defined()) return std::vector<Tensor>{Tensor()};
    Tensor grad = eg.empty("mean backward", in, g[0].dtype(), Category::Temporaries);
    eg.compute(ComputeKind::Backward, "mean backward", static_cast<double>(grad.numel()), grad.bytes(),
               elementwise_work(WorkKind::Copy, grad.dtype()));
    return std::vector<Tensor>{std::move(grad)};
  });
  e.connect(out, n);
  return out;
}

namespace {

// at::softmax / at::log_softmax (SoftMax.cpp): a dtype= argument converts the input first (a fp32 copy of a
// 16-bit input, dropped after), except half to float on CUDA, which the kernel does itself (half_to_float).
// Autocast's fp32_set_opt_dtype supplies dtype=float32 when the caller gave none.
Tensor softmax_like(Eager& e, const Tensor& a, std::optional<Dtype> dtype, bool log) {
  if (!dtype && autocast_dtype(e)) dtype = Dtype::F32;
  const char* name = log ? "_log_softmax" : "_softmax";
  Tensor input = a;
  Dtype out_dtype = a.dtype();
  if (dtype && *dtype != a.dtype()) {
    if (a.dtype() == Dtype::F16 && *dtype == Dtype::F32) {
      out_dtype = Dtype::F32;  // half_to_float
    } else {
      input = to(e, a, *dtype);
      out_dtype = *dtype;
    }
  }
  Tensor out = e.empty(name, input.sizes(), out_dtype);
  e.compute(e.kind(), name, 5.0 * numel_flops(input), input.bytes() + out.bytes(), elementwise_work(WorkKind::Softmax, out_dtype));
  const Dtype in_dtype = input.dtype();
  BackwardFn fn = [log, in_dtype](Eager& eg, const Node& node, std::vector<Tensor>& g) {
    if (!g[0].defined()) return std::vector<Tensor>{Tensor()};
    Tensor grad = eg.empty(log ? "_log_softmax_backward_data" : "_softmax_backward_data", node.saved[0].sizes(), in_dtype,
                           Category::Temporaries);
    if (!log) {
      // Measured on PyTorch 2.11 (H200), every softmax backward of GPT-2's and Llama's eager attention: one more
      // gradient-sized buffer is allocated and freed inside _softmax_backward_data.
      Tensor scratch = eg.empty("_softmax_backward_data scratch", node.saved[0].sizes(), in_dtype, Category::Temporaries);
      eg.compute(ComputeKind::Backward, "_softmax_backward_data", 3.0 * static_cast<double>(grad.numel()), 3 * grad.bytes(),
                 elementwise_work(WorkKind::SoftmaxBackward, in_dtype));
    } else {
      eg.compute(ComputeKind::Backward, "_log_softmax_backward_data", 3.0 * static_cast<double>(grad.numel()), 3 * grad.bytes(),
                 elementwise_work(WorkKind::SoftmaxBackward, in_dtype));
    }
    return std::vector<Tensor>{std::move(grad)};
  };
  // SoftmaxBackward0 / LogSoftmaxBackward0 save result
  const int n = e.record(log ? "LogSoftmaxBackward0" : "SoftmaxBackward0", {&input}, {out}, std::move(fn));
  e.connect(out, n);
  return out;
}

}  // namespace

Tensor softmax(Eager& e, const Tensor& a, std::optional<Dtype> dtype) { return softmax_like(e, a, dtype, false); }
Tensor log_softmax(Eager& e, const Tensor& a, std::optional<Dtype> dtype) { return softmax_like(e, a, dtype, true); }

}  // namespace shardscope::eager::ops
