// ModelPass: per-layer allocation rules of PyTorch autograd (read from torch/csrc/autograd/engine.cpp,
// tools/autograd/derivatives.yaml and aten/src/ATen/native/Loss.cpp; the same in 1.8 and 2.x for these layers).
// - Linear runs as addmm(bias, x, W.t()) and saves its input; backward allocates grad_input (only if the input
//   requires grad), the weight gradient already in W's layout (mm_mat2_backward), and the bias gradient from
//   sum_to in validate_outputs; then the incoming gradient and the saved input are released.
// - AccumulateGrad has sequence number UINT64_MAX, so it runs right after its producer; for Linear the weight
//   gradient passes through TBackward first, so the bias is accumulated before the weight.
// - mse_loss allocates the elementwise loss, reduces it to a scalar, frees it (1.x); 2.x (measured on 2.11)
//   allocates an input-sized result first and the loss keeps it (FrameworkBehaviour). mse_loss_backward allocates a
//   gradient of the input's size. The loss itself is a temporary, not an activation: no backward saves it
//   (derivatives.yaml: mse_loss's backward takes self and target, nll_loss's self, target, weight and total_weight),
//   as the recorder sees (activations are what saved_tensors_hooks pack). cross_entropy = log_softmax (saves its result) + nll_loss (saves self,
//   total_weight); backward allocates one input-sized gradient in each.
// - Reductions spread over several thread blocks (a Linear's bias gradient, mse_loss's mean) allocate scratch for
//   the kernel's duration (training/reduction_scratch.h, 2.x profile).
// - Transformer blocks are one layer each; what they save is Korthikanti et al. 2022's count
//   (model/transformer_costs.h). Recomputation follows torch.utils.checkpoint: the checkpointed forward keeps the
//   block input only; before the block's backward the forward runs again (a "recompute" compute op) and its
//   activations exist until that backward is done. Selective recomputation (the paper's Section 5) keeps all but
//   the attention core and re-runs only QKᵀ, softmax, dropout and attention over V.
//   A block forward that keeps less than everything holds the rest as a transient working set while it runs
//   (model_pass_transformer.cpp says why that is an upper bound).
// - A tied weight (GPT-2's lm_head = wte) gets one gradient per use; autograd's InputBuffer holds the first
//   (from lm_head) until the owner's backward adds the second into it, then AccumulateGrad takes it
//   (torch/csrc/autograd/input_buffer.cpp).
#include "training/model_pass.h"

#include "plan/block_recompute.h"
#include "plan/cublas_workspace.h"
#include "training/reduction_scratch.h"

namespace shardscope {

namespace {

// A workspace a thread allocates at its first use and keeps: once per thread in `seen`.
void keep_once_per_thread(ProgramBuilder& builder, std::set<std::string>& seen, const std::string& thread,
                          const std::string& name, Bytes bytes) {
  if (bytes <= 0 || !seen.insert(thread).second) return;
  builder.alloc(name, bytes, Category::Temporaries, /*persistent=*/true, ElementType::Opaque);
}

// addmm(bias, x, W.t()): a Linear with its own bias (a tied Linear reuses another layer's weight and has none).
bool is_biased_linear(const Layer& layer) {
  return layer.kind == LayerKind::Linear && layer.tied_layer < 0 && layer.params.size() > 1;
}

}  // namespace

void CublasWorkspaces::touch(ProgramBuilder& builder, const std::string& thread) {
  keep_once_per_thread(builder, seen_, thread, cublas_workspace_tensor_name(thread), bytes_);
}

void CublasWorkspaces::touch_cublaslt(ProgramBuilder& builder, const std::string& thread) {
  keep_once_per_thread(builder, lt_seen_, thread, cublaslt_workspace_tensor_name(thread), lt_bytes_);
}

ModelPass::ModelPass(ProgramBuilder& builder, const Model& model, LayerParams params, PassSettings settings,
                     CublasWorkspaces& workspaces)
    : b_(builder), model_(model), params_(std::move(params)), settings_(std::move(settings)), workspaces_(workspaces) {
  operands_ = params_;
  saved_.resize(model_.layers.size());
  if (settings_.end_layer == 0) settings_.end_layer = model_.layers.size();
  init_sequence_parallel();
}

Bytes ModelPass::activation_bytes(std::int64_t numel_per_sample) const {
  return settings_.batch * numel_per_sample * model_.activation_element_bytes;
}

TensorSlice ModelPass::operand(TensorId tensor) const {
  if (input_view_.present() && tensor == input_view_.tensor) return input_view_;
  if (target_view_.present() && tensor == target_view_.tensor) return target_view_;
  if (grad_output_view_.present() && tensor == grad_output_view_.tensor) return grad_output_view_;
  return whole(tensor);
}

TensorSlice ModelPass::weight_of(std::size_t layer, const LayerParams& params) const {
  const Layer& spec = model_.layers[layer];
  if (spec.tied_layer >= 0) return params[static_cast<std::size_t>(spec.tied_layer)][static_cast<std::size_t>(spec.tied_param)];
  return params[layer][0];
}

void ModelPass::bind_operands(std::size_t layer, std::vector<TensorSlice> operands) {
  operands_.at(layer) = std::move(operands);
}

void ModelPass::save_block_activations(std::size_t l) {
  const Layer& layer = model_.layers[l];
  auto& saved = saved_[l];
  const CheckpointMode mode = model_.checkpoint;
  if (mode == CheckpointMode::Full) return;  // the input (saved by the caller) is all a checkpointed block keeps
  saved.push_back(b_.alloc(layer.name + " saved activations", settings_.batch * layer.extra_saved_bytes_per_sample,
                           Category::Activations));
  if (mode == CheckpointMode::None)
    saved.push_back(b_.alloc(layer.name + " saved attention scores",
                             settings_.batch * layer.attention_saved_bytes_per_sample, Category::Activations));
}

std::vector<TensorId> ModelPass::recompute_block(std::size_t l) {
  const Layer& layer = model_.layers[l];
  const CheckpointMode mode = model_.checkpoint;
  std::vector<TensorId> transient;
  if (layer.kind != LayerKind::TransformerBlock || mode == CheckpointMode::None) return transient;
  const double batch = static_cast<double>(settings_.batch);
  if (mode == CheckpointMode::Full) {
    transient.push_back(b_.alloc(layer.name + " recomputed activations",
                                 settings_.batch * layer.extra_saved_bytes_per_sample, Category::Activations));
  }
  transient.push_back(b_.alloc(layer.name + " recomputed attention scores",
                               settings_.batch * layer.attention_saved_bytes_per_sample, Category::Activations));
  workspaces_.touch_backward(b_, settings_.backward_thread);
  const OpIndex op =
      mode == CheckpointMode::Full
          ? b_.compute(ComputeKind::Forward, full_recompute_label(layer.name), layer.recompute_forward_flops_per_sample * batch,
                       2 * activation_bytes(layer.in_numel) + layer.param_numel() * settings_.param_element_bytes,
                       static_cast<int>(l))
          : b_.compute(ComputeKind::Forward, layer.name + std::string(kAttentionRecomputeSuffix),
                       layer.attention_recompute_flops_per_sample * batch,
                       settings_.batch * layer.attention_saved_bytes_per_sample + 3 * activation_bytes(layer.in_numel),
                       static_cast<int>(l));
  annotate_recompute(op, l, transient);
  return transient;
}

std::vector<TensorId> ModelPass::alloc_reduction_scratch(std::int64_t outputs, std::int64_t inputs_per_output,
                                                        bool along_rows, const std::string& what) {
  const FrameworkBehaviour& f = settings_.behaviour;
  const ReductionScratch scratch = cuda_reduction_scratch(outputs, inputs_per_output, along_rows,
                                                          f.reduction_multiprocessors,
                                                          f.reduction_max_threads_per_multiprocessor);
  std::vector<TensorId> tensors;
  if (scratch.staging > 0) tensors.push_back(b_.alloc(what + " reduction staging", scratch.staging, Category::Temporaries, false, ElementType::Opaque));
  if (scratch.semaphores > 0)
    tensors.push_back(b_.alloc(what + " reduction semaphores", scratch.semaphores, Category::Temporaries, false, ElementType::Opaque));
  return tensors;
}

void ModelPass::release_reduction_scratch(const std::vector<TensorId>& scratch) {
  for (auto it = scratch.rbegin(); it != scratch.rend(); ++it) b_.release(*it);
}

Bytes ModelPass::output_bytes() const {
  return activation_bytes(settings_.end_layer == model_.layers.size() ? model_.output_numel
                                                                      : model_.layers[settings_.end_layer - 1].out_numel);
}

bool ModelPass::input_requires_grad(std::size_t layer) const {
  for (std::size_t i = 0; i < layer; ++i)
    if (!model_.layers[i].params.empty()) return true;
  return false;
}

TensorId ModelPass::forward(TensorSlice input_view) {
  input_view_ = input_view;
  const TensorId input = input_view.tensor;
  b_.retain(input);  // the pass's own reference to the running tensor
  TensorId current = input;
  const bool grad = settings_.grad_enabled;
  for (std::size_t l = settings_.first_layer; l < settings_.end_layer; ++l) {
    const Layer& layer = model_.layers[l];
    if (settings_.hooks) settings_.hooks->before_layer_forward(static_cast<int>(l));
    if (sp_row(l)) {
      current = sp_row_forward(l, current);
      if (settings_.hooks) settings_.hooks->after_layer_forward(static_cast<int>(l));
      continue;
    }
    // Sequence parallelism: a column-parallel Linear computes on its input's rows from every rank (Megatron-LM's
    // gather_from_sequence_parallel_region before the GEMM), a buffer freed once the forward has run.
    const TensorId gathered =
        sp_column(l) ? sp_all_gather(operand(current), activation_bytes(layer.in_numel), l, "input") : -1;
    const bool alias = layer.is_view || layer.inplace || (layer.identity_in_eval && !grad);
    TensorId out = current;
    if (alias) {
      b_.retain(current);
    } else {
      out = b_.alloc(layer.name + " output", activation_bytes(layer.out_numel), Category::Activations, false,
                     activation_element());
    }
    const bool gemm = layer.kind == LayerKind::Linear || layer.kind == LayerKind::TransformerBlock;
    if (gemm) workspaces_.touch_forward(b_, settings_.forward_thread);
    if (grad) {
      auto& saved = saved_[l];
      if (layer.saves_input) { b_.retain(current); saved.push_back(current); }
      if (layer.saves_output) { b_.retain(out); saved.push_back(out); }
      if (layer.kind == LayerKind::TransformerBlock) {
        save_block_activations(l);
      } else if (layer.extra_saved_bytes_per_sample > 0) {
        const bool mask = layer.kind == LayerKind::Dropout || layer.kind == LayerKind::Embedding;
        saved.push_back(b_.alloc(layer.name + (mask ? " dropout mask" : " indices"),
                                 settings_.batch * layer.extra_saved_bytes_per_sample, Category::Activations, false,
                                 ElementType::Opaque));
      }
      if (layer.has_weight()) {
        const TensorId weight = weight_of(l, params_).tensor;
        b_.retain(weight);
        saved.push_back(weight);
      }
    }
    // addmm with a bias takes the cuBLASLt path, whose workspace the thread then keeps
    // (FrameworkBehaviour::cublaslt_workspace_bytes): at any batch, one row included, as measured on 2.11.
    // GPT-2 blocks' Conv1D layers are such addmms too.
    if (is_biased_linear(layer) || layer.kind == LayerKind::TransformerBlock)
      workspaces_.touch_cublaslt(b_, settings_.forward_thread);
    const TensorId working_set = block_forward_working_set(l);
    if (!layer.is_view) {
      const OpIndex op = b_.compute(ComputeKind::Forward, layer.name + " forward",
                                    layer.forward_flops_per_sample * static_cast<double>(settings_.batch),
                                    activation_bytes(layer.in_numel) + activation_bytes(layer.out_numel) +
                                        layer.param_numel() * settings_.param_element_bytes,
                                    static_cast<int>(l));
      annotate_forward(op, l, gathered >= 0 ? whole(gathered) : operand(current), out, working_set);
    }
    if (gathered >= 0) b_.release(gathered);
    if (working_set >= 0) b_.release(working_set);
    b_.release(current);
    current = out;
    if (settings_.hooks) settings_.hooks->after_layer_forward(static_cast<int>(l));
  }
  return current;
}

// Operands for executors (plan/kernel.h). Layers without a kernel keep Kernel::None: an executor refuses them.
void ModelPass::annotate_forward(OpIndex op, std::size_t l, TensorSlice input_slice, TensorId output, TensorId working_set) {
  const Layer& layer = model_.layers[l];
  const bool eval = !settings_.grad_enabled;
  const TensorId input = input_slice.tensor;
  if (executes_as_gpt2() && layer.kind != LayerKind::Linear) {
    annotate_transformer_forward(op, l, input, output, working_set);
  } else if (layer.kind == LayerKind::Linear) {
    const auto& params = operands_[l];  // a tied Linear (GPT-2's lm_head) owns no parameter: its weight is another layer's
    const TensorSlice bias = layer.tied_layer < 0 && params.size() > 1 ? params[1] : TensorSlice{};
    b_.set_kernel(op, Kernel::LinearForward, {input_slice, weight_of(l, operands_), bias, operand(output)});
  } else if (layer.kind == LayerKind::ReLU) {
    b_.set_kernel(op, Kernel::ReluForward, {input_slice, operand(output)});
  } else if (layer.kind == LayerKind::Dropout && eval) {
    b_.set_kernel(op, Kernel::Copy, {operand(output), input_slice});  // identity under model.eval()
  }
}

void ModelPass::annotate_backward(OpIndex op, std::size_t l, const BackwardTensors& t) {
  const Layer& layer = model_.layers[l];
  const auto& saved = saved_[l];
  const TensorId grad_output = t.grad_output, grad_input = t.grad_input;
  const auto& param_grads = t.param_grads;
  // A tied Linear (GPT-2's lm_head) writes its weight gradient into the buffer autograd holds for the owner.
  const TensorId weight_grad = layer.tied_layer >= 0 ? t.tied_grad : param_grads.empty() ? -1 : param_grads[0];
  if (executes_as_gpt2() && layer.kind != LayerKind::Linear) {
    annotate_transformer_backward(op, l, t);
  } else if (layer.kind == LayerKind::Linear && !saved.empty() && weight_grad >= 0) {
    const auto grad_in = grad_input >= 0 ? whole(grad_input) : TensorSlice{};
    const TensorSlice input = t.gathered_input >= 0 ? whole(t.gathered_input) : operand(saved[0]);
    b_.set_kernel(op, Kernel::LinearBackward,
                  {operand(grad_output), input, weight_of(l, operands_), grad_in, whole(weight_grad),
                   layer.tied_layer < 0 && param_grads.size() > 1 ? whole(param_grads[1]) : TensorSlice{}});
  } else if (layer.kind == LayerKind::ReLU && !saved.empty()) {
    b_.set_kernel(op, Kernel::ReluBackward, {operand(grad_output), operand(saved[0]),
                                             grad_input >= 0 ? whole(grad_input) : TensorSlice{}});
  }
}

TensorId ModelPass::loss_forward(TensorId output, TensorSlice target_slice) {
  target_view_ = target_slice;
  const TensorId target = target_slice.tensor;
  const Bytes scalar = kFp32Bytes;
  const bool grad = settings_.grad_enabled;
  TensorId loss = -1;
  if (settings_.loss == LossKind::Mse) {
    // 2.x: the result buffer comes first and is input-sized; the loss is that buffer resized to one element, so it
    // keeps all of it (FrameworkBehaviour::mse_loss_keeps_input_sized_result). 1.x: a fresh scalar after.
    const bool input_sized = settings_.behaviour.mse_loss_keeps_input_sized_result;
    if (input_sized)
      loss = b_.alloc("loss (mse_loss result, input-sized)", output_bytes(), Category::Temporaries, /*persistent=*/true,
                      ElementType::Fp32);  // the fp32 loss in its first 4 bytes
    const TensorId elementwise =
        b_.alloc("mse elementwise loss", output_bytes(), Category::Temporaries, false, activation_element());
    if (!input_sized) loss = b_.alloc("loss", scalar, Category::Temporaries, /*persistent=*/true, ElementType::Fp32);
    const std::vector<TensorId> scratch =
        alloc_reduction_scratch(1, settings_.batch * model_.output_numel, /*along_rows=*/false, "mse mean");
    const OpIndex op = b_.compute(ComputeKind::Loss, "mse loss", 3.0 * static_cast<double>(settings_.batch * model_.output_numel),
                                  3 * output_bytes(), -1);
    b_.set_kernel(op, Kernel::MseLoss, {operand(output), operand(target), whole(loss)});
    b_.set_scale(op, 1.0 / sp_ranks());
    release_reduction_scratch(scratch);
    b_.release(elementwise);
    if (grad) {
      b_.retain(output); loss_saved_.push_back(output);
      b_.retain(target); loss_saved_.push_back(target);
    }
  } else {
    const TensorId log_probs =
        b_.alloc("log_softmax output", output_bytes(), Category::Activations, false, activation_element());
    loss = b_.alloc("loss", scalar, Category::Temporaries, /*persistent=*/true, ElementType::Fp32);
    const TensorId total_weight = b_.alloc("nll total_weight", scalar, Category::Activations, false, ElementType::Fp32);
    const OpIndex op = b_.compute(ComputeKind::Loss, "cross-entropy loss",
                                  5.0 * static_cast<double>(settings_.batch * model_.output_numel), 2 * output_bytes(), -1);
    b_.set_kernel(op, Kernel::CrossEntropyLoss, {operand(output), operand(target), whole(log_probs), whole(loss)});
    b_.set_scale(op, 1.0 / sp_ranks());
    if (grad) {
      b_.retain(log_probs);  // saved by LogSoftmaxBackward and NllLossBackward: two holders
      loss_shared_ = log_probs;
      loss_saved_.push_back(total_weight);
      b_.retain(target); loss_saved_.push_back(target);
    } else {
      b_.release(log_probs);
      b_.release(total_weight);
    }
  }
  b_.release(output);
  return loss;
}

TensorId ModelPass::loss_backward() {
  seed_ = b_.alloc("grad of loss (ones)", kFp32Bytes, Category::Temporaries, false, ElementType::Fp32);
  TensorId grad = b_.alloc("loss grad input", output_bytes(), Category::Temporaries, false, activation_element());
  const OpIndex op = b_.compute(ComputeKind::LossBackward, "loss backward",
                                3.0 * static_cast<double>(settings_.batch * model_.output_numel), 2 * output_bytes(), -1);
  // MSE saved (output, target); cross-entropy's NLL saved (total_weight, target).
  if (loss_shared_ < 0 && loss_saved_.size() == 2)
    b_.set_kernel(op, Kernel::MseLossBackward, {operand(loss_saved_[0]), operand(loss_saved_[1]), whole(grad)});
  else if (loss_shared_ >= 0 && loss_saved_.size() == 2)
    b_.set_kernel(op, Kernel::NllLossBackward, {operand(loss_saved_[1]), whole(grad)});
  // Under sequence parallelism this rank's loss is its rows' share of the whole batch's mean (1/sp_ranks() of the
  // mean over its rows, model_pass_sequence_parallel.cpp), and so is its gradient.
  b_.set_scale(op, settings_.loss_scale / sp_ranks());
  for (TensorId t : loss_saved_) b_.release(t);
  loss_saved_.clear();
  if (loss_shared_ >= 0) {  // NllLossBackward done; now LogSoftmaxBackward
    b_.release(loss_shared_);
    const TensorId grad_logits =
        b_.alloc("log_softmax grad input", output_bytes(), Category::Temporaries, false, activation_element());
    const OpIndex softmax_op = b_.compute(ComputeKind::LossBackward, "log_softmax backward",
                                          3.0 * static_cast<double>(settings_.batch * model_.output_numel), 3 * output_bytes(), -1);
    b_.set_kernel(softmax_op, Kernel::LogSoftmaxBackward, {whole(grad), whole(loss_shared_), whole(grad_logits)});
    b_.release(grad);
    b_.release(loss_shared_);
    loss_shared_ = -1;
    grad = grad_logits;
  }
  return grad;
}

void ModelPass::release_seed() {
  if (seed_ >= 0) b_.release(seed_);
  seed_ = -1;
}

TensorId ModelPass::backward(TensorSlice grad_output_view, GradSink& sink) {
  const TensorId input_grad = backward_layers(grad_output_view, sink);
  release_seed();  // backward returns once the last AccumulateGrad has run
  return input_grad;
}

TensorId ModelPass::backward_layers(TensorSlice grad_output_view, GradSink& sink) {
  grad_output_view_ = grad_output_view;
  TensorId grad = grad_output_view.tensor;
  for (std::size_t i = settings_.end_layer; i-- > settings_.first_layer;) {
    const Layer& layer = model_.layers[i];
    const int l = static_cast<int>(i);
    const bool needs_input_grad = input_requires_grad(i);
    if (layer.is_view) continue;  // the gradient is a view of the incoming one
    if (settings_.hooks) settings_.hooks->before_layer_backward(l);
    if (sp_row(i)) {
      grad = sp_row_backward(i, grad, needs_input_grad, sink);
      if (settings_.hooks) settings_.hooks->after_layer_backward(l);
      if (!needs_input_grad) return -1;
      continue;
    }
    const std::vector<TensorId> recomputed = recompute_block(i);
    // Sequence parallelism (LinearWithGradAccumulationAndAsyncCommunication.backward): the saved input shard is
    // all-gathered again for the weight gradient, and the input gradient of all rows is reduce-scattered into this
    // rank's rows.
    const bool sp = sp_column(i) && !saved_[i].empty();
    const TensorId gathered = sp ? sp_all_gather(operand(saved_[i][0]), activation_bytes(layer.in_numel), i, "input again") : -1;
    TensorId grad_input = -1;
    if (needs_input_grad)
      grad_input = b_.alloc(layer.name + " grad input", activation_bytes(layer.in_numel), Category::Temporaries, false,
                            activation_element());
    const TensorId full_grad_input =
        sp && needs_input_grad
            ? b_.alloc(layer.name + " grad input (all rows)", sp_ranks() * activation_bytes(layer.in_numel),
                       Category::Temporaries, false, activation_element())
            : -1;
    if (layer.kind == LayerKind::Linear || layer.kind == LayerKind::TransformerBlock) workspaces_.touch_backward(b_, settings_.backward_thread);
    TensorId tied_grad = -1;
    if (layer.tied_layer >= 0) {
      const Category category = sink.grad_category(layer.tied_layer, layer.tied_param);
      const Bytes bytes = model_.layers[static_cast<std::size_t>(layer.tied_layer)].params[static_cast<std::size_t>(layer.tied_param)].numel * settings_.param_element_bytes;
      tied_grad = pending_tied_grads_[{layer.tied_layer, layer.tied_param}] =
          b_.alloc(layer.name + " tied weight grad", bytes, category, /*persistent=*/category == Category::Gradients);
    }
    std::vector<TensorId> param_grads;
    std::vector<TensorId> summed_into_pending;  // second uses of a tied weight: added into the buffer, then freed
    for (std::size_t p = 0; p < layer.params.size(); ++p) {
      const auto pending = pending_tied_grads_.find({l, static_cast<int>(p)});
      const bool tied = pending != pending_tied_grads_.end();
      const Category category = tied ? Category::Temporaries : sink.grad_category(l, static_cast<int>(p));
      // A gradient that becomes .grad may outlive the program; one accumulated into an existing .grad may not.
      const TensorId own = b_.alloc(layer.name + "." + layer.params[p].name + " grad", layer.params[p].numel * settings_.param_element_bytes,
                                    category, /*persistent=*/category == Category::Gradients);
      if (tied) {
        summed_into_pending.push_back(own);
        param_grads.push_back(pending->second);
        pending_tied_grads_.erase(pending);
      } else {
        param_grads.push_back(own);
      }
    }
    // A Linear's bias gradient is grad_output summed over its rows (sum_to in addmm's backward): a CUDA reduction.
    std::vector<TensorId> bias_scratch;
    if (is_biased_linear(layer)) {
      const std::int64_t outputs = layer.params[1].numel;
      bias_scratch = alloc_reduction_scratch(outputs, settings_.batch * (layer.out_numel / outputs), /*along_rows=*/true,
                                             layer.name + " bias grad");
    }
    const double flops = layer.forward_flops_per_sample * static_cast<double>(settings_.batch) *
                         (layer.has_weight() && needs_input_grad ? 2.0 : 1.0);
    const OpIndex op = b_.compute(ComputeKind::Backward, layer.name + " backward", flops,
                                  activation_bytes(layer.in_numel) + 2 * activation_bytes(layer.out_numel) +
                                      2 * layer.param_numel() * settings_.param_element_bytes,
                                  l);
    annotate_backward(op, i, {grad, full_grad_input >= 0 ? full_grad_input : grad_input, param_grads, summed_into_pending,
                              recomputed, tied_grad, gathered});
    release_reduction_scratch(bias_scratch);
    if (gathered >= 0) b_.release(gathered);
    if (full_grad_input >= 0) {
      sp_reduce_scatter(full_grad_input, grad_input, i, "grad input");
      b_.release(full_grad_input);
    }
    b_.release(grad);
    for (TensorId t : saved_[i]) b_.release(t);
    saved_[i].clear();
    for (TensorId t : recomputed) b_.release(t);
    for (TensorId t : summed_into_pending) b_.release(t);
    // AccumulateGrad order: Linear's weight gradient goes through TBackward first, so bias comes first; inside a
    // transformer block the parameters used last in forward get their gradients first.
    if (layer.kind == LayerKind::Linear || layer.kind == LayerKind::TransformerBlock) {
      for (std::size_t p = param_grads.size(); p-- > 0;) sink.take_grad(l, static_cast<int>(p), param_grads[p]);
    } else {
      for (std::size_t p = 0; p < param_grads.size(); ++p) sink.take_grad(l, static_cast<int>(p), param_grads[p]);
    }
    if (settings_.hooks) settings_.hooks->after_layer_backward(l);
    if (!needs_input_grad) return -1;
    grad = grad_input;
  }
  if (settings_.first_layer > 0) return grad;  // the stage input's gradient, sent to the previous stage
  b_.release(grad);  // only reached if the first layer is a view
  return -1;
}

}  // namespace shardscope
