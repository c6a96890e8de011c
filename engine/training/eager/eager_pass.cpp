// EagerPass and GradScalerTensors (see eager_pass.h).
#include "training/eager/eager_pass.h"

#include "training/eager/ops.h"
#include "training/hf/hf_modules.h"

namespace shardscope {

using ED = eager::Dtype;
using eager::Tensor;

namespace {

eager::AutocastType autocast_of(Precision precision) {
  switch (precision) {
    case Precision::AutocastBf16: return eager::AutocastType::Bf16;
    case Precision::AutocastFp16: return eager::AutocastType::Fp16;
    case Precision::None: break;
  }
  return eager::AutocastType::Off;
}

eager::EagerSettings eager_settings(const EagerPassSettings& s, CublasWorkspaces& workspaces, GradSink& sink) {
  eager::EagerSettings e;
  e.behaviour = s.behaviour;
  e.workspaces = &workspaces;
  e.sink = &sink;
  e.autocast = autocast_of(s.precision);
  return e;
}

}  // namespace

EagerPass::EagerPass(ProgramBuilder& builder, const Model& model, LayerParams params, EagerPassSettings settings,
                     CublasWorkspaces& workspaces, GradSink& sink)
    : e_(builder, eager_settings(settings, workspaces, sink)), model_(model), params_(std::move(params)),
      settings_(settings) {
  e_.grad_enabled = settings_.grad_enabled;
}

TensorId EagerPass::forward_loss(TensorId x_id, TensorId y_id) {
  e_.enter_autocast();
  if (model_.transformer) {
    const eager::Sizes ids_shape{settings_.batch, model_.seq};
    const Tensor ids(e_.b, x_id, ids_shape, eager::contiguous_strides(ids_shape), ED::I64, /*view=*/true);
    const hf::CausalLm lm{e_, model_, params_, settings_.parameter_dtype, settings_.grad_enabled,
                          settings_.gradient_checkpointing};
    loss_ = hf::causal_lm_loss(lm, ids);
  } else {
    const eager::Sizes x_shape{settings_.batch, model_.input_numel};
    const Tensor x(e_.b, x_id, x_shape, eager::contiguous_strides(x_shape), ED::F32, true);
    const bool mse = settings_.loss == LossKind::Mse;
    const eager::Sizes y_shape = mse ? eager::Sizes{settings_.batch, model_.output_numel} : eager::Sizes{settings_.batch};
    const Tensor y(e_.b, y_id, y_shape, eager::contiguous_strides(y_shape), mse ? ED::F32 : ED::I64, true);
    loss_ = mlp_forward_loss(x, y);
  }
  e_.b.retain(loss_.storage());
  return loss_.storage();
}

std::vector<TensorId> EagerPass::take_graph_held() {
  std::vector<TensorId> held;
  for (auto group = e_.graph_held.rbegin(); group != e_.graph_held.rend(); ++group)
    for (const Tensor& t : *group) {
      // past the program's end too, as a loss the script still holds keeps its graph
      e_.b.recategorize(t.storage(), e_.b.tensor(t.storage()).category, true);
      e_.b.retain(t.storage());
      held.push_back(t.storage());
    }
  e_.graph_held.clear();
  return held;
}

// nn.Sequential of Linear and ReLU, then nn.MSELoss / nn.CrossEntropyLoss (mean)
Tensor EagerPass::mlp_forward_loss(const Tensor& x, const Tensor& y) {
  Tensor h = x;
  for (std::size_t l = 0; l < model_.layers.size(); ++l) {
    const Layer& layer = model_.layers[l];
    const int li = static_cast<int>(l);
    const eager::ModuleScope scope(e_, li, layer.name);
    if (layer.kind == LayerKind::Linear) {
      const Tensor w = e_.parameter(params_[l][0], {layer.out_numel, layer.in_numel}, li, 0, settings_.parameter_dtype);
      const Tensor b = e_.parameter(params_[l][1], {layer.out_numel}, li, 1, settings_.parameter_dtype);
      h = eager::ops::linear(e_, h, w, b);
    } else {
      h = eager::ops::relu(e_, h, layer.inplace);
    }
  }
  const eager::ModuleScope scope(e_, -1, "loss");
  return settings_.loss == LossKind::Mse ? eager::ops::mse_loss(e_, h, y) : eager::ops::cross_entropy(e_, h, y);
}

void EagerPass::backward(TensorId scale_id) {
  // torch.autograd.backward: grad_tensors = ones_like(loss), held until backward returns
  Tensor root = loss_;
  if (scale_id >= 0) {
    const Tensor scale(e_.b, scale_id, {}, {}, ED::F32, true);
    root = eager::ops::mul(e_, loss_, scale);
  }
  const Tensor seed = e_.empty("grad of loss (ones)", {}, ED::F32, Category::Temporaries);
  e_.run_backward(root, seed);
}

TensorId GradScalerTensors::scale(ProgramBuilder& b) {
  if (scale_ < 0) {
    scale_ = b.alloc("GradScaler _scale", 4, Category::OptimizerState, true, ElementType::Fp32);
    growth_tracker_ = b.alloc("GradScaler _growth_tracker", 4, Category::OptimizerState, true, ElementType::Opaque);
  }
  return scale_;
}

void GradScalerTensors::unscale(ProgramBuilder& b) {
  // inv_scale = self._scale.double().reciprocal().float(); found_inf = torch.full((), 0.0)
  const TensorId as_double = b.alloc("GradScaler _scale.double()", 8, Category::Temporaries, false, ElementType::Opaque);
  const TensorId reciprocal = b.alloc("GradScaler reciprocal", 8, Category::Temporaries, false, ElementType::Opaque);
  b.release(as_double);
  const TensorId inv_scale = b.alloc("GradScaler inv_scale", 4, Category::Temporaries, false, ElementType::Fp32);
  b.release(reciprocal);
  const TensorId found_inf = b.alloc("GradScaler found_inf", 4, Category::Temporaries, false, ElementType::Fp32);
  // _unscale_grads_: the per-device copies of found_inf (kept in the optimizer's state until update) and inv_scale
  if (found_inf_per_device_ >= 0) b.release(found_inf_per_device_);
  found_inf_per_device_ = b.alloc("GradScaler found_inf per device", 4, Category::Temporaries, false, ElementType::Fp32);
  const TensorId inv_per_device = b.alloc("GradScaler inv_scale per device", 4, Category::Temporaries, false, ElementType::Fp32);
  b.compute(ComputeKind::Optimizer, "GradScaler unscale_ (_amp_foreach_non_finite_check_and_unscale_)", 0, 0);
  b.release(inv_per_device);
  b.release(inv_scale);
  b.release(found_inf);
}

void GradScalerTensors::update(ProgramBuilder& b) {
  b.compute(ComputeKind::Optimizer, "GradScaler update (_amp_update_scale_)", 0, 0);
  if (found_inf_per_device_ >= 0) b.release(found_inf_per_device_);
  found_inf_per_device_ = -1;
}

}  // namespace shardscope
