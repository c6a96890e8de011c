// LocalTraining: the per-rank user loop shared by single, ddp and zero1.
#include "strategy/local_training.h"

#include "scenario/implementation_rules.h"
#include "training/mixed_precision.h"

namespace shardscope {

LocalTraining::LocalTraining(const LoweringContext& context, ProgramBuilder& builder)
    : context_(context),
      b_(builder),
      model_(context.scenario.model),
      mixed_precision_(is_mixed_precision(context.scenario.settings.training.dtype)),
      element_bytes_(dtype_bytes(context.scenario.settings.training.dtype)),
      workspaces_(context.behaviour) {}

std::vector<ParamSlot*> LocalTraining::optimizer_params() {
  std::vector<ParamSlot*> all;
  for (auto& slot : slots_) all.push_back(&slot);
  return all;
}

LayerParams LocalTraining::pass_params() {
  LayerParams params(model_.layers.size());
  for (std::size_t l = 0; l < slot_of_.size(); ++l)
    for (int slot : slot_of_[l]) params[l].push_back(param_slice(slots_[static_cast<std::size_t>(slot)]));
  return params;
}

Category LocalTraining::grad_category(int layer, int param) {
  const ParamSlot& slot = slots_[static_cast<std::size_t>(slot_of_[layer][param])];
  return slot.grad < 0 ? Category::Gradients : Category::Temporaries;
}

void LocalTraining::take_grad(int layer, int param, TensorId grad) {
  ParamSlot& slot = slots_[static_cast<std::size_t>(slot_of_[layer][param])];
  if (slot.grad < 0) {
    slot.grad = grad;  // AccumulateGrad steals the fresh gradient: no copy
  } else {
    const OpIndex op = b_.compute(ComputeKind::Copy, "accumulate " + slot.name + " gradient into .grad", 0, 3 * slot.bytes);
    b_.set_kernel(op, Kernel::Accumulate, {grad_slice(slot), whole(grad)});
    b_.release(grad);  // accumulated in place into the existing .grad
  }
  after_accumulate(slot);
}

void LocalTraining::training_step() {
  if (uses_eager_pass(context_.scenario)) return eager_training_step();
  const auto& training = context_.scenario.settings.training;
  const bool grad = !training.no_grad;
  if (grad) zero_grad(b_, slots_, context_.behaviour.zero_grad_sets_none);
  const std::int64_t batch = training.batch;
  user_.next_batch(b_, model_, batch, training.loss, context_.world_group, batch_shape());

  before_forward();
  PassSettings settings;
  settings.batch = batch;
  settings.grad_enabled = grad;
  settings.loss = training.loss;
  settings.behaviour = context_.behaviour;
  settings.param_element_bytes = grad_element_bytes();
  settings.hooks = layer_hooks();
  ModelPass pass(b_, model_, pass_params(), settings, workspaces_);
  struct PassScope {  // the pass dies with this step
    LocalTraining& training;
    ~PassScope() { training.set_model_pass(nullptr); }
  } scope{*this};
  set_model_pass(&pass);
  const TensorId input = forward_input(user_.x());
  const TensorId output = pass.forward(input);
  if (input != user_.x()) b_.release(input);
  user_.rebind_loss(b_, pass.loss_forward(output, user_.y()));
  b_.phase(phase::kForward);
  if (!grad) return;

  before_backward();
  pass.backward(pass.loss_backward(), *this);
  after_backward();
  b_.phase(phase::kBeforeStep);

  OptimizerConfig config{training.optimizer, context_.scenario.weight_decay};
  lower_update(b_, context_.behaviour, config, optimizer_params(), mixed_precision_, master_copy_back());
  after_optimizer_step();
  b_.phase(phase::kAfterStep);
}

void LocalTraining::eager_training_step() {
  const auto& training = context_.scenario.settings.training;
  const bool grad = !training.no_grad;
  if (grad) zero_grad(b_, slots_, context_.behaviour.zero_grad_sets_none);
  const std::int64_t batch = training.batch;
  if (model_.language_model) user_.next_token_batch(b_, model_, batch, context_.world_group);
  else user_.next_batch(b_, model_, batch, training.loss, context_.world_group);

  before_forward();
  EagerPassSettings settings;
  settings.batch = batch;
  settings.grad_enabled = grad;
  settings.loss = training.loss;
  settings.precision = training.precision;
  settings.gradient_checkpointing = training.checkpoint == CheckpointMode::Full;
  settings.behaviour = context_.behaviour;
  settings.parameter_dtype = element_bytes_ == 2 ? (training.dtype == Dtype::Fp16 ? eager::Dtype::F16 : eager::Dtype::BF16)
                                                 : eager::Dtype::F32;
  EagerPass pass(b_, model_, pass_params(), settings, workspaces_, *this);
  const TensorId loss = pass.forward_loss(user_.x(), user_.y());
  user_.rebind_loss(b_, loss, pass.take_graph_held());
  pass.exit_autocast();
  b_.phase(phase::kForward);
  if (!grad) return;

  const bool scaled = training.precision == Precision::AutocastFp16;
  before_backward();
  pass.backward(scaled ? scaler_.scale(b_) : -1);
  after_backward();
  b_.phase(phase::kBeforeStep);

  if (scaled) scaler_.unscale(b_);
  OptimizerConfig config{training.optimizer, context_.scenario.weight_decay};
  lower_update(b_, context_.behaviour, config, optimizer_params(), mixed_precision_, master_copy_back());
  if (scaled) scaler_.update(b_);
  after_optimizer_step();
  b_.phase(phase::kAfterStep);
}

void LocalTraining::create_model() {
  slots_ = allocate_parameters(b_, model_, element_bytes_);
  slot_of_ = slots_by_layer(slots_, model_.layers.size());
}

void LocalTraining::lower() {
  b_.set_step(0);
  create_model();
  b_.phase(phase::kModelCreated);
  wrap();
  b_.phase(phase::kWrapped);
  if (mixed_precision_ && !context_.scenario.settings.training.no_grad) create_master_weights(b_, optimizer_params());
  for (int step = 1; step <= context_.scenario.settings.training.steps; ++step) {
    b_.set_step(step);
    training_step();
  }
}

}  // namespace shardscope
