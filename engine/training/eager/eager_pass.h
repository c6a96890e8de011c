// One training step's forward and backward through PyTorch's eager mode op by op (training/eager/): transformers'
// modules (--implementation hf) and MLPs under torch.autocast (--precision). The counterpart of ModelPass for those
// models; the same GradSink receives the parameter gradients, so single, DDP, ZeRO-1 and ZeRO-2 use it unchanged.
// Usage (per step):
//   EagerPass pass(builder, model, params, settings, workspaces, sink);
//   user.rebind_loss(builder, pass.forward_loss(x, y));   // inside `with torch.autocast(...)` when on
//   pass.exit_autocast();                                  // the region ends after the script's `loss = ...`
//   pass.backward(scale);                                  // loss.backward() / scaler.scale(loss).backward()
#pragma once
#include "scenario/scenario.h"
#include "training/eager/eager.h"

namespace shardscope {

struct EagerPassSettings {
  std::int64_t batch = 0;
  bool grad_enabled = true;  // false: model.eval() under torch.no_grad()
  LossKind loss = LossKind::Mse;
  Precision precision = Precision::None;
  bool gradient_checkpointing = false;  // transformers' gradient_checkpointing_enable() (hf/hf_modules.h)
  FrameworkBehaviour behaviour;
  eager::Dtype parameter_dtype = eager::Dtype::F32;  // 16-bit under --dtype's mixed precision
};

class EagerPass {
 public:
  EagerPass(ProgramBuilder& builder, const Model& model, LayerParams params, EagerPassSettings settings,
            CublasWorkspaces& workspaces, GradSink& sink);
  // The forward and the loss (a language model: model(input_ids=x, labels=x).loss; an MLP: loss_fn(model(x), y)),
  // inside the autocast region when one is on. Returns the loss with one reference for the caller.
  TensorId forward_loss(TensorId x, TensorId y);
  // What the loss's graph keeps alive until the loss is freed (Eager::graph_held), handed over as held storages in
  // the order PyTorch frees them (the graph is torn down from the loss: the last checkpointed block's first); the
  // caller releases them when it rebinds the loss.
  std::vector<TensorId> take_graph_held();
  // The autocast region's end (its cast cache freed).
  void exit_autocast() { e_.exit_autocast(); }
  // loss.backward(); with a GradScaler's `scale` tensor (not -1) scaler.scale(loss).backward(): the loss times the
  // scale first (a new 4-byte tensor, kept by the script's expression until backward returns).
  void backward(TensorId scale = -1);

 private:
  eager::Tensor mlp_forward_loss(const eager::Tensor& x, const eager::Tensor& y);

  eager::Eager e_;
  const Model& model_;
  LayerParams params_;
  EagerPassSettings settings_;
  eager::Tensor loss_;
};

// torch.amp.GradScaler's own tensors (torch/amp/grad_scaler.py, 2.x): _scale and _growth_tracker made at the first
// scale(), kept; unscale_'s inverse scale (via a double) and found_inf, and the per-device copies _unscale_grads_
// makes, freed as the measured 2.11 run frees them (the last at update()).
class GradScalerTensors {
 public:
  // scaler.scale(loss): the lazily made _scale (returned) and _growth_tracker
  TensorId scale(ProgramBuilder& builder);
  // scaler.step(optimizer) up to optimizer.step(): unscale_
  void unscale(ProgramBuilder& builder);
  // scaler.update(): the per-device found_inf goes
  void update(ProgramBuilder& builder);

 private:
  TensorId scale_ = -1, growth_tracker_ = -1, found_inf_per_device_ = -1;
};

}  // namespace shardscope
