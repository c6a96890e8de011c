// The training loop of one process that owns one device (single device, DDP, ZeRO-1), as a user script runs it:
//
//   model = Net().to(dev)                          # phase model_created
//   model = wrap(model)                            # phase wrapped (DDP construction; nothing for single)
//   opt = Optimizer(model.parameters())            # fp16/bf16: fp32 master weights made here (mixed_precision.h)
//   for step in range(steps):
//       opt.zero_grad()                            # 1.8: zero in place; 2.x: set_to_none
//       x = torch.randn(...)                       # created on the device; the old x freed
//       y = torch.randn(...)                       # then the old y (tests/gpu/pytorch_reference.py)
//       loss = loss_fn(model(x), y)                # phase forward
//       loss.backward()                            # phase before_step
//       opt.step()                                 # phase after_step
//
// Strategies subclass it and fill in the hooks. Under --no-grad the loop is model.eval() + torch.no_grad():
// forward only.
#pragma once
#include <vector>

#include "plan/program_builder.h"
#include "strategy/lowering_context.h"
#include "training/eager/eager_pass.h"
#include "training/model_pass.h"
#include "training/optimizer_step.h"
#include "training/param_slot.h"
#include "training/user_tensors.h"

namespace shardscope {

class LocalTraining : public GradSink {
 public:
  LocalTraining(const LoweringContext& context, ProgramBuilder& builder);
  virtual ~LocalTraining() = default;
  void lower();

  Category grad_category(int layer, int param) override;
  void take_grad(int layer, int param, TensorId grad) override;

 protected:
  // model = Net().to(dev): slots_ and slot_of_ made, every parameter allocated whole (ZeRO-3 may create shards only).
  virtual void create_model();
  virtual void wrap() {}
  virtual void before_forward() {}
  // How the script makes x and y (user_tensors.h); the default is `x, y = next_batch()` with an fp32 target.
  virtual BatchShape batch_shape() const { return {}; }
  // What the model is called on: x itself, or a tensor the strategy makes from it (FSDP2's root casts a floating
  // input to its param_dtype). A tensor other than x is handed over with one reference, which the loop drops once
  // the forward has run (autograd's saved input keeps it after that).
  virtual TensorId forward_input(TensorId x) { return x; }
  // The element bytes of the gradients autograd makes (ModelPass): the model dtype's by default.
  virtual Bytes grad_element_bytes() const { return element_bytes_; }
  virtual LayerParams pass_params();      // default: each parameter's own tensor
  virtual LayerHooks* layer_hooks() { return nullptr; }
  // The step's ModelPass right after it is made, and nullptr when the step ends (ZeRO-3 points the kernels of a
  // gathered unit's layers at its buffer through ModelPass::bind_operands).
  virtual void set_model_pass(ModelPass*) {}
  virtual void before_backward() {}
  virtual void after_accumulate(ParamSlot&) {}
  virtual void after_backward() {}
  virtual std::vector<ParamSlot*> optimizer_params();  // default: every parameter
  // Mixed precision: (16-bit destination, fp32 master source) pairs for the optimizer parameters without a tensor
  // of their own (a ZeRO partition), which lower_update copies back after the step.
  virtual std::vector<TensorSlice> master_copy_back() { return {}; }
  virtual void after_optimizer_step() {}

  const LoweringContext& context_;
  ProgramBuilder& b_;
  const Model& model_;
  std::vector<ParamSlot> slots_;
  std::vector<std::vector<int>> slot_of_;  // [layer][param] -> index into slots_
  const bool mixed_precision_;
  const Bytes element_bytes_;              // of parameters and gradients: 4, or 2 under mixed precision

 private:
  void training_step();
  // The step through the op-by-op eager pass (--implementation hf, --precision autocast-*): the same loop, the
  // forward inside torch.autocast, and fp16's GradScaler around backward and the optimizer step.
  void eager_training_step();

  CublasWorkspaces workspaces_;
  UserTensors user_;
  GradScalerTensors scaler_;
};

}  // namespace shardscope
