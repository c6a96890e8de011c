// Pipeline stage lowering. Memory follows torch.distributed.pipelining (2.4, stage.py): a stage keeps each
// micro-batch's output (fwd_cache) and what its layers saved until that micro-batch's backward; micro-batch inputs
// on stage 0 and targets on the last stage are views (tensor_split) of the whole batch. Messages: one activation
// forward and one activation gradient backward per micro-batch and boundary, the size of the tensor sent.
// Ordering of the point-to-point messages follows Megatron-LM's schedules.py (core 0.8): after a backward, the next
// forward's activation is received before the gradient is sent (send_backward_recv_forward), so that neighbouring
// stages in steady 1F1B never both wait to send.
// Executors: micro-batch m reads rows [m·mb, (m+1)·mb) of x and y (slices of the whole tensors); each micro-batch's
// loss is divided by the micro-batch count (Megatron-LM megatron/core/pipeline_parallel/schedules.py,
// forward_step_calc_loss: `output_tensor /= num_microbatches`), so the gradients summed over micro-batches are those
// of the batch's mean loss. (Recent torch.distributed.pipelining schedules, scale_grads=True, divide the summed
// gradients by n_microbatches after the last backward instead, stage.scale_grads; the result is the same.)
// Tied word embeddings (GPT-2's lm_head = wte) split over the first and last stage follow Megatron-LM
// (core 0.8, LanguageModule.setup_embeddings_and_output_layer and finalize_model_grads): the last stage's copy
// starts at zero and an all-reduce over the two stages (the embedding group) makes it the first stage's values;
// each step the two copies' gradients are summed by an all-reduce in that group. Megatron runs that all-reduce
// after the data-parallel reduction; here it runs before it (sums commute, and under the distributed optimizer the
// whole gradient exists only before the reduce-scatter).
#include "strategy/pipeline_stage.h"
#include "strategy/pipeline_strategies.h"

#include <algorithm>
#include <stdexcept>

#include "strategy/megatron_grad_buffer.h"
#include "training/mixed_precision.h"
#include "training/user_tensors.h"
#include "training/optimizer_step.h"

namespace shardscope {

int untied_head_layer(const Model& model) {
  if (!model.transformer || !model.transformer->tie_word_embeddings) return -1;
  for (std::size_t l = 0; l < model.layers.size(); ++l)
    if (model.layers[l].name == "lm_head" && !model.layers[l].params.empty()) return static_cast<int>(l);
  return -1;
}

std::pair<std::size_t, std::size_t> stage_layers(std::size_t layer_count, int stages, int stage) {
  const std::size_t base = layer_count / static_cast<std::size_t>(stages);
  const std::size_t extra = layer_count % static_cast<std::size_t>(stages);
  const auto s = static_cast<std::size_t>(stage);
  const std::size_t first = s * base + std::min(s, extra);
  return {first, first + base + (s < extra ? 1 : 0)};
}

namespace {

class StageTraining : public GradSink {
 public:
  StageTraining(const LoweringContext& context, ProgramBuilder& builder, int stage, int replica, int dp_group,
                int embedding_group, StageGradients gradients)
      : context_(context), b_(builder), model_(context.scenario.model), settings_(context.scenario.settings),
        stage_(stage), stages_(settings_.strategy.stages), dp_(settings_.strategy.dp), replica_(replica),
        dp_group_(dp_group), embedding_group_(embedding_group), gradients_(gradients), mixed_(is_mixed_precision(settings_.training.dtype)),
        element_bytes_(dtype_bytes(settings_.training.dtype)), workspaces_(context.behaviour) {
    std::tie(first_, end_) = stage_layers(model_.layers.size(), stages_, stage_);
  }

  void lower(PipelineSchedule schedule) {
    b_.set_step(0);
    create_parameters();
    if (embedding_group_ >= 0) {
      const ParamSlot& s = word_embeddings();
      const OpIndex sync = b_.collective(CollectiveKind::AllReduce, embedding_group_, s.bytes,
                                         "all-reduce word embeddings: lm_head's copy on the last stage starts as wte", -1);
      b_.set_kernel(sync, Kernel::None, {param_slice(s)});
      b_.wait(sync);
    }
    b_.phase(phase::kModelCreated);
    if (gradients_ == StageGradients::MegatronBuffer && !slots_.empty() && !settings_.training.no_grad)
      create_grad_buffer();
    b_.phase(phase::kWrapped);
    if (!settings_.training.no_grad) construct_optimizer();
    auto actions = schedule(stage_, stages_, settings_.strategy.micro_batches);
    if (settings_.training.no_grad)
      actions.erase(std::remove_if(actions.begin(), actions.end(), [](const PipelineAction& a) { return !a.forward; }), actions.end());
    for (int step = 1; step <= settings_.training.steps; ++step) {
      b_.set_step(step);
      training_step(actions);
    }
  }

  Category grad_category(int layer, int param) override {
    if (gradients_ == StageGradients::MegatronBuffer) return Category::Temporaries;
    return slot(layer, param).grad < 0 ? Category::Gradients : Category::Temporaries;
  }

  void take_grad(int layer, int param, TensorId grad) override {
    ParamSlot& s = slot(layer, param);
    if (gradients_ == StageGradients::MegatronBuffer) {
      // Megatron's hook: param.main_grad.add_(param.grad) into the buffer zeroed at the step's start
      // (zero_grad_buffer). The step's first micro-batch writes instead of adding: the same values without a
      // zeroing op the plan does not time.
      const OpIndex op = b_.compute(ComputeKind::Copy, "add " + s.name + " gradient into main_grad", 0, 3 * s.bytes);
      b_.set_kernel(op, accumulating_ ? Kernel::Accumulate : Kernel::Copy, {grad_slice(s), whole(grad)});
      b_.release(grad);
    } else if (s.grad < 0) {
      s.grad = grad;  // AccumulateGrad steals the first micro-batch's gradient
    } else {
      // Later micro-batches (or a .grad zeroed in place by 1.x zero_grad) are accumulated into it, as LocalTraining.
      const OpIndex op = b_.compute(ComputeKind::Copy, "accumulate " + s.name + " gradient into .grad", 0, 3 * s.bytes);
      b_.set_kernel(op, Kernel::Accumulate, {grad_slice(s), whole(grad)});
      b_.release(grad);
    }
  }

 private:
  bool first_stage() const { return stage_ == 0; }
  bool last_stage() const { return stage_ == stages_ - 1; }
  int peer(int stage) const { return stage * dp_ + replica_; }
  std::int64_t micro_size() const { return settings_.training.batch / settings_.strategy.micro_batches; }
  ParamSlot& slot(int layer, int param) { return slots_[static_cast<std::size_t>(slot_of_[static_cast<std::size_t>(layer)][static_cast<std::size_t>(param)])]; }
  std::int64_t stage_numel() const {
    std::int64_t n = 0;
    for (const auto& s : slots_) n += s.numel;
    return n;
  }
  std::int64_t padded_numel() const { return (stage_numel() + dp_ - 1) / dp_ * dp_; }  // Megatron pads to the DP size
  bool distributed_optimizer() const { return settings_.strategy.dp_zero_stage == 1; }
  Bytes activation_bytes(std::int64_t numel) const { return micro_size() * numel * model_.activation_element_bytes; }  // as ModelPass
  Bytes x_row_bytes() const { return model_.input_numel * model_.input_element_bytes; }
  // MSE targets have the output's shape; cross-entropy targets are int64 class indices (one per position).
  Bytes y_row_bytes() const {
    return settings_.training.loss == LossKind::Mse ? model_.output_numel * kFp32Bytes : model_.target_positions * 8;
  }
  // Micro-batch m of a whole-batch tensor: rows [m·mb, (m+1)·mb) (torch.tensor_split's view).
  TensorSlice micro_rows(TensorId tensor, Bytes row_bytes, int micro) const {
    return TensorSlice{tensor, micro * micro_size() * row_bytes, micro_size() * row_bytes};
  }

  // wte's name: the parameter lm_head's weight on the last stage is a copy of.
  std::string word_embeddings_name() const { return model_.layers[0].name + "." + model_.layers[0].params[0].name; }

  // The tied embedding's copy this stage holds: wte on the first stage, lm_head's weight on the last.
  const ParamSlot& word_embeddings() {
    return stage_ == 0 ? slot(0, 0) : slot(untied_head_layer(model_), 0);
  }

  void create_parameters() {
    slot_of_.assign(model_.layers.size(), {});
    for (std::size_t l = first_; l < end_; ++l)
      for (std::size_t p = 0; p < model_.layers[l].params.size(); ++p) {
        ParamSlot s;
        s.name = model_.layers[l].name + "." + model_.layers[l].params[p].name;
        s.layer = static_cast<int>(l);
        s.index = static_cast<int>(p);
        s.numel = model_.layers[l].params[p].numel;
        s.bytes = s.numel * element_bytes_;
        s.tensor = b_.alloc(s.name, s.bytes, Category::Parameters, true);
        ParameterInit init = parameter_init(model_, s, 0, 0, s.numel);
        if (static_cast<int>(l) == untied_head_layer(model_) && p == 0) init.copy_of = word_embeddings_name();
        b_.add_initial_values(s.tensor, std::move(init));
        slot_of_[l].push_back(static_cast<int>(slots_.size()));
        slots_.push_back(s);
      }
  }

  // Every parameter's main_grad is a view of the buffer (megatron_grad_buffer.h has the layout); the optimizer
  // reads those views.
  void create_grad_buffer() {
    grad_buffer_ = b_.alloc("Megatron grad buffer (stage " + std::to_string(stage_) + ")", padded_numel() * element_bytes_,
                            Category::Gradients, true);
    grad_offsets_ = megatron_grad_offsets(slots_);
    for (std::size_t i = 0; i < slots_.size(); ++i) {
      slots_[i].grad = grad_buffer_;
      slots_[i].grad_is_view = true;
      slots_[i].grad_offset = grad_offsets_[i] * element_bytes_;
    }
  }

  // Megatron Float16OptimizerWithFloat16Params (fp32 masters of every stage parameter) or DistributedOptimizer
  // (masters and state only for this rank's 1/dp of the grad buffer); fp32 training steps the parameters themselves.
  void construct_optimizer() {
    if (slots_.empty()) return;
    if (distributed_optimizer()) {
      shard_.name = "stage " + std::to_string(stage_) + " optimizer shard";
      shard_.numel = padded_numel() / dp_;
      shard_.bytes = shard_.numel * element_bytes_;
      shard_.grad = grad_buffer_;  // its gradient: this rank's shard of the reduced buffer
      shard_.grad_is_view = true;
      shard_.grad_offset = shard_begin() * element_bytes_;
      optimizer_params_ = {&shard_};
    } else {
      for (auto& s : slots_) optimizer_params_.push_back(&s);
    }
    if (!mixed_) return;
    create_master_weights(b_, optimizer_params_);
    if (!distributed_optimizer()) return;
    // The shard's master starts as the model parameters' pieces inside the shard (shard_fp32_from_float16_groups).
    std::vector<TensorSlice> pairs = reversed_pairs(shard_master_pairs());
    if (!pairs.empty())
      b_.set_kernel(b_.compute(ComputeKind::Copy, "copy the shard's 16-bit parameters into its fp32 master", 0,
                               shard_.bytes + shard_.numel * kFp32Bytes),
                    Kernel::Copy, std::move(pairs));
  }

  // Distributed optimizer under mixed precision: (16-bit model parameter piece, fp32 master piece) for each piece
  // of a parameter inside this rank's shard.
  std::vector<TensorSlice> shard_master_pairs() const {
    std::vector<TensorSlice> pairs;
    for (const BufferPiece& piece : megatron_shard_pieces(slots_, grad_offsets_, shard_begin(), shard_.numel)) {
      const ParamSlot& s = slots_[piece.slot];
      pairs.push_back(TensorSlice{s.tensor, s.offset + piece.first_element * element_bytes_, piece.numel * element_bytes_});
      pairs.push_back(TensorSlice{shard_.master, (piece.buffer_element - shard_begin()) * kFp32Bytes, piece.numel * kFp32Bytes});
    }
    return pairs;
  }

  void new_batch() {
    // x, y = next_batch(): x where the first stage runs, y where the loss is; the old ones go after the new exist.
    TensorId x = -1, y = -1;
    if (first_stage())
      x = b_.alloc("input x", settings_.training.batch * x_row_bytes(), Category::Activations, true, input_element(model_));
    if (last_stage())
      y = b_.alloc("target y", settings_.training.batch * y_row_bytes(), Category::Activations, true,
                   target_element(settings_.training.loss));
    if (x >= 0 || y >= 0) {
      // Every stage of a replica loads the same samples (its data-parallel share, DistributedSampler over the
      // stage's DP group); the first keeps x, the last y.
      const OpIndex load = b_.compute(ComputeKind::Copy, std::string("load batch (") + (x >= 0 ? "x" : "") +
                                                             (x >= 0 && y >= 0 ? ", " : "") + (y >= 0 ? "y" : "") + ")",
                                      0, 0);
      b_.set_kernel(load, Kernel::LoadBatch, {x >= 0 ? whole(x) : TensorSlice{}, y >= 0 ? whole(y) : TensorSlice{}});
      b_.set_group(load, dp_group_);  // -1: one replica, the whole batch
    }
    if (x_ >= 0) b_.release(x_);
    if (y_ >= 0) b_.release(y_);
    x_ = x;
    y_ = y;
  }

  LayerParams pass_params() const {
    LayerParams params(model_.layers.size());
    for (std::size_t l = first_; l < end_; ++l)
      for (int s : slot_of_[l]) params[l].push_back(param_slice(slots_[static_cast<std::size_t>(s)]));
    return params;
  }

  void receive_activation(int micro) {
    if (first_stage() || received_[static_cast<std::size_t>(micro)] >= 0) return;
    const Bytes bytes = activation_bytes(model_.layers[first_].in_numel);
    const TensorId buffer = b_.alloc("stage input, micro-batch " + std::to_string(micro), bytes, Category::Activations,
                                     false, activation_element(model_, b_.compute_element()));
    recv_ops_[static_cast<std::size_t>(micro)] =
        b_.recv(peer(stage_ - 1), bytes, "receive activation of micro-batch " + std::to_string(micro) + " from stage " + std::to_string(stage_ - 1));
    b_.set_kernel(recv_ops_[static_cast<std::size_t>(micro)], Kernel::None, {whole(buffer)});
    received_[static_cast<std::size_t>(micro)] = buffer;
  }

  void forward(int micro) {
    const auto m = static_cast<std::size_t>(micro);
    b_.set_micro_batch(micro);
    receive_activation(micro);
    TensorId input = first_stage() ? x_ : received_[m];
    if (first_stage()) b_.retain(input);  // a view of x
    if (!first_stage()) {
      const OpIndex wait = b_.compute(ComputeKind::Copy, "wait for the activation of micro-batch " + std::to_string(micro), 0, 0);
      b_.add_dep(wait, recv_ops_[m]);
    }
    PassSettings pass;
    pass.batch = micro_size();
    pass.grad_enabled = !settings_.training.no_grad;
    pass.loss = settings_.training.loss;
    pass.behaviour = context_.behaviour;
    pass.param_element_bytes = element_bytes_;
    pass.first_layer = first_;
    pass.end_layer = end_;
    pass.loss_scale = 1.0 / settings_.strategy.micro_batches;
    passes_[m] = std::make_unique<ModelPass>(b_, model_, pass_params(), pass, workspaces_);
    const TensorId output = passes_[m]->forward(first_stage() ? micro_rows(input, x_row_bytes(), micro) : whole(input));
    b_.release(input);
    received_[m] = -1;
    if (last_stage()) {
      b_.retain(y_);  // a view of y
      losses_[m] = passes_[m]->loss_forward(output, micro_rows(y_, y_row_bytes(), micro));
      b_.release(y_);
    } else {
      const OpIndex send = b_.send(peer(stage_ + 1), b_.tensor(output).bytes,
                                   "send activation of micro-batch " + std::to_string(micro) + " to stage " + std::to_string(stage_ + 1),
                                   {b_.last_compute()});
      b_.set_kernel(send, Kernel::None, {whole(output)});
      outputs_[m] = output;  // fwd_cache: kept for this micro-batch's backward
    }
    if (settings_.training.no_grad) release_micro_batch(micro);
    b_.set_micro_batch(-1);
  }

  void release_micro_batch(int micro) {
    const auto m = static_cast<std::size_t>(micro);
    if (outputs_[m] >= 0) b_.release(outputs_[m]);
    if (losses_[m] >= 0) b_.release(losses_[m]);
    outputs_[m] = losses_[m] = -1;
    passes_[m].reset();
  }

  void backward(int micro, const PipelineAction* next) {
    const auto m = static_cast<std::size_t>(micro);
    b_.set_micro_batch(micro);
    TensorId grad = -1;
    if (last_stage()) {
      mark_forward_phase();
      grad = passes_[m]->loss_backward();
    } else {
      const Bytes bytes = b_.tensor(outputs_[m]).bytes;
      grad = b_.alloc("gradient of stage output, micro-batch " + std::to_string(micro), bytes, Category::Temporaries,
                      false, activation_element(model_, b_.compute_element()));
      const OpIndex recv = b_.recv(peer(stage_ + 1), bytes, "receive gradient of micro-batch " + std::to_string(micro) +
                                                                " from stage " + std::to_string(stage_ + 1));
      b_.set_kernel(recv, Kernel::None, {whole(grad)});  // the buffer the last layer's backward reads
      b_.add_dep(b_.compute(ComputeKind::Copy, "wait for the gradient of micro-batch " + std::to_string(micro), 0, 0), recv);
      mark_forward_phase();
    }
    // The received gradient is the caller's tensor (the buffer dist.recv filled, held by the Python name passed to
    // Tensor.backward; pipelining/stage.py keeps it in grad_recv_info): autograd's engine drops its own reference once
    // the last layer's backward has read it, the caller's lives until backward returns.
    if (!last_stage()) b_.retain(grad);
    const TensorId input_grad = passes_[m]->backward(grad, *this);
    if (!last_stage()) b_.release(grad);
    accumulating_ = true;  // later micro-batches of the step add into main_grad
    const OpIndex done = b_.last_compute();
    release_micro_batch(micro);
    if (next && next->forward) {  // send_backward_recv_forward: post the next receive first
      b_.set_micro_batch(next->micro_batch);
      receive_activation(next->micro_batch);
      b_.set_micro_batch(micro);
    }
    if (input_grad >= 0) {
      const OpIndex send = b_.send(peer(stage_ - 1), b_.tensor(input_grad).bytes,
                                   "send gradient of micro-batch " + std::to_string(micro) + " to stage " + std::to_string(stage_ - 1), {done});
      b_.set_kernel(send, Kernel::None, {whole(input_grad)});
      b_.release(input_grad);
    }
    b_.set_micro_batch(-1);
  }

  // Phase `forward` of the step where its first backward starts (Tensor.backward / torch.autograd.backward, where
  // the recorder marks it too: python/shardscope/record.py): on the last stage once the loss exists; on the others
  // once the gradient of the stage's output has been received, as torch.distributed.recv fills a tensor the caller
  // allocated (torch/distributed/distributed_c10d.py, recv: "tensor (Tensor): Tensor to fill with received data")
  // and the backward cannot start without it (pipelining/stage.py backward_one_chunk: the received grad buffers are
  // its output_grads).
  void mark_forward_phase() {
    if (forward_phase_marked_) return;
    b_.phase(phase::kForward);
    forward_phase_marked_ = true;
  }

  void reduce_and_step() {
    if (slots_.empty()) {  // a stage of parameter-free layers has nothing to reduce or step
      b_.phase(phase::kBeforeStep);
      return;
    }
    const Bytes buffer = padded_numel() * element_bytes_;
    if (embedding_group_ >= 0) {
      const ParamSlot& s = word_embeddings();
      const OpIndex sum = b_.collective(CollectiveKind::AllReduce, embedding_group_, s.bytes,
                                        "all-reduce the word embeddings' gradients (first and last stage)", -1,
                                        {b_.last_compute()});
      b_.set_kernel(sum, Kernel::None, {grad_slice(s)});
      b_.wait(sum);
    }
    if (dp_ > 1) {
      // Megatron core DistributedDataParallel (gradient_scaling_factor = 1/dp unless average_in_collective):
      // start_grad_sync scales grad_data, then sums it over the data-parallel group.
      const OpIndex scale = b_.compute(ComputeKind::Copy, "scale stage " + std::to_string(stage_) + " gradients by 1/" +
                                                              std::to_string(dp_), 0, 2 * buffer);
      b_.set_kernel(scale, Kernel::Scale, {whole(grad_buffer_)});
      b_.set_scale(scale, 1.0 / dp_);
      const CollectiveKind kind = distributed_optimizer() ? CollectiveKind::ReduceScatter : CollectiveKind::AllReduce;
      const OpIndex reduce = b_.collective(kind, dp_group_, buffer,
                    (distributed_optimizer() ? "reduce-scatter" : "all-reduce") + std::string(" stage ") +
                        std::to_string(stage_) + " gradients in its data-parallel group (" + format_bytes(buffer) + ")",
                    -1, {b_.last_compute()});
      // In place: the reduce-scatter leaves this rank's shard reduced in its own part of the buffer (core 0.8
      // reduce_scatter_tensor into a view of grad_data).
      b_.set_kernel(reduce, Kernel::None,
                    distributed_optimizer() ? std::vector<TensorSlice>{whole(grad_buffer_), shard_slice()}
                                            : std::vector<TensorSlice>{whole(grad_buffer_)});
      b_.wait(reduce);
    }
    b_.phase(phase::kBeforeStep);
    OptimizerConfig config{settings_.training.optimizer, context_.scenario.weight_decay};
    lower_update(b_, context_.behaviour, config, optimizer_params_, mixed_,
                 mixed_ && distributed_optimizer() ? shard_master_pairs() : std::vector<TensorSlice>{});
    if (distributed_optimizer()) gather_parameters();
  }

  // This rank's shard of the grad buffer: its index in the stage's DP group is its replica.
  std::int64_t shard_begin() const { return replica_ * shard_.numel; }
  TensorSlice shard_slice() const { return TensorSlice{grad_buffer_, shard_begin() * element_bytes_, shard_.bytes}; }

  // DistributedOptimizer (core 0.8): the optimizer's parameters are the pieces of the model parameters inside this
  // rank's shard (views: shard_model_param = model_param.view(-1)[start:end] for fp32), their gradients the same
  // range of the reduced buffer, their state the same range of the shard-sized state tensors. The step lowered
  // for the whole shard is given those pieces as operands (fp32 only: under mixed precision the masters are the
  // shard's own tensors).
  void annotate_shard_step(OpIndex step) {
    std::vector<TensorSlice> args;
    for (const BufferPiece& piece : megatron_shard_pieces(slots_, grad_offsets_, shard_begin(), shard_.numel)) {
      const ParamSlot& s = slots_[piece.slot];
      const Bytes bytes = piece.numel * element_bytes_;
      args.push_back(TensorSlice{s.tensor, s.offset + piece.first_element * element_bytes_, bytes});
      args.push_back(TensorSlice{grad_buffer_, piece.buffer_element * element_bytes_, bytes});
      for (TensorId state : shard_.state)
        args.push_back(TensorSlice{state, (piece.buffer_element - shard_begin()) * kFp32Bytes, piece.numel * kFp32Bytes});
    }
    b_.set_kernel(step, Kernel::OptimizerStep, std::move(args));
  }

  // After the step every rank holds its shard's updated parameters; Megatron all-gathers its contiguous param
  // buffer in place. The plan keeps each parameter in its own tensor, so the grad buffer (spent until the next
  // step's first micro-batch overwrites it) stands in for that buffer: this rank's pieces are copied into its
  // shard, the buffer is all-gathered, and every parameter copied out. The copies allocate nothing and, being an
  // executor's device rather than Megatron's work, take no time in the plan.
  void gather_parameters() {
    if (!mixed_) {  // under mixed precision lower_update stepped the master and copied it back into these pieces
      const OpIndex step = b_.last_compute();
      if (step < 0) throw std::logic_error("stage " + std::to_string(stage_) + ": no optimizer step to annotate");
      annotate_shard_step(step);
    }
    std::vector<TensorSlice> stage_in;
    for (const BufferPiece& piece : megatron_shard_pieces(slots_, grad_offsets_, shard_begin(), shard_.numel)) {
      const ParamSlot& s = slots_[piece.slot];
      const Bytes bytes = piece.numel * element_bytes_;
      stage_in.push_back(TensorSlice{grad_buffer_, piece.buffer_element * element_bytes_, bytes});
      stage_in.push_back(TensorSlice{s.tensor, s.offset + piece.first_element * element_bytes_, bytes});
    }
    if (!stage_in.empty())
      b_.set_kernel(b_.compute(ComputeKind::Copy, "stage updated parameter shard in the grad buffer", 0, 0), Kernel::Copy,
                    std::move(stage_in));
    const OpIndex gather = b_.collective(CollectiveKind::AllGather, dp_group_, shard_.bytes,
                                         "all-gather stage " + std::to_string(stage_) + " updated parameters", -1,
                                         {b_.last_compute()});
    b_.wait(gather);
    b_.set_kernel(gather, Kernel::None, {shard_slice(), whole(grad_buffer_)});
    std::vector<TensorSlice> copy_out;
    for (std::size_t i = 0; i < slots_.size(); ++i) {
      copy_out.push_back(param_slice(slots_[i]));
      copy_out.push_back(grad_slice(slots_[i]));
    }
    b_.set_kernel(b_.compute(ComputeKind::Copy, "copy gathered parameters out of the grad buffer", 0, 0), Kernel::Copy,
                  std::move(copy_out));
  }

  void training_step(const std::vector<PipelineAction>& actions) {
    const bool grad = !settings_.training.no_grad;
    // zero_grad: Megatron zeroes its grad buffer in place; plain PyTorch 2.x drops .grad.
    if (grad && gradients_ == StageGradients::AutogradGrad) zero_grad(b_, slots_, context_.behaviour.zero_grad_sets_none);
    new_batch();
    accumulating_ = false;
    const auto micro = static_cast<std::size_t>(settings_.strategy.micro_batches);
    passes_.clear();
    passes_.resize(micro);
    outputs_.assign(micro, -1);
    losses_.assign(micro, -1);
    received_.assign(micro, -1);
    recv_ops_.assign(micro, -1);
    forward_phase_marked_ = false;
    for (std::size_t i = 0; i < actions.size(); ++i) {
      const PipelineAction& action = actions[i];
      if (action.forward) forward(action.micro_batch);
      else backward(action.micro_batch, i + 1 < actions.size() ? &actions[i + 1] : nullptr);
    }
    if (!grad) {
      b_.phase(phase::kForward);
      return;
    }
    reduce_and_step();
    b_.phase(phase::kAfterStep);
  }

  const LoweringContext& context_;
  ProgramBuilder& b_;
  const Model& model_;
  const Scenario& settings_;
  const int stage_, stages_, dp_, replica_, dp_group_, embedding_group_;
  const StageGradients gradients_;
  const bool mixed_;
  const Bytes element_bytes_;
  CublasWorkspaces workspaces_;
  std::size_t first_ = 0, end_ = 0;
  std::vector<ParamSlot> slots_;
  std::vector<std::vector<int>> slot_of_;
  std::vector<ParamSlot*> optimizer_params_;
  ParamSlot shard_;
  TensorId grad_buffer_ = -1;
  std::vector<std::int64_t> grad_offsets_;  // element offset of each slot's main_grad in the grad buffer
  bool accumulating_ = false;               // a micro-batch of this step has reached main_grad / .grad already
  bool forward_phase_marked_ = false;       // this step's `forward` phase is in the program
  TensorId x_ = -1, y_ = -1;
  std::vector<std::unique_ptr<ModelPass>> passes_;
  std::vector<TensorId> outputs_, losses_, received_;
  std::vector<OpIndex> recv_ops_;
};

}  // namespace

void add_pipeline_notes(const LoweringContext& context, Plan& plan, const std::string& schedule, StageGradients gradients) {
  const auto& strategy = context.scenario.settings.strategy;
  const int p = strategy.stages, m = strategy.micro_batches;
  plan.notes.push_back(schedule + " (p = " + std::to_string(p) + ", m = " + std::to_string(m) + "); bubble (p - 1)/(m + p - 1) = " +
                       std::to_string(p - 1) + "/" + std::to_string(m + p - 1) + " of the step");
  plan.notes.push_back(std::string("pipeline memory follows torch.distributed.pipelining (stage outputs kept until their backward); ") +
                       (gradients == StageGradients::MegatronBuffer ? "gradients go into Megatron-LM's contiguous grad buffer in the model dtype"
                                    : "gradients are autograd's .grad of each stage's parameters, accumulated over the micro-batches"));
  if (strategy.dp > 1)
    plan.notes.push_back(std::to_string(strategy.dp) + " pipeline replicas; each stage's gradients are " +
                         (strategy.dp_zero_stage == 1 ? "reduce-scattered in its data-parallel group and the optimizer state "
                                                        "sharded over it (ZeRO-1: Megatron's distributed optimizer), then "
                                                        "the parameters all-gathered"
                                                      : "all-reduced in its data-parallel group"));
}

void lower_pipeline(const LoweringContext& context, Plan& plan, PipelineSchedule schedule, StageGradients gradients) {
  const auto& strategy = context.scenario.settings.strategy;
  const int stages = strategy.stages, dp = strategy.dp;
  std::vector<int> dp_group_of_stage(static_cast<std::size_t>(stages), -1);
  if (dp > 1)
    for (int s = 0; s < stages; ++s) {
      std::vector<int> group;
      for (int d = 0; d < dp; ++d) group.push_back(s * dp + d);
      dp_group_of_stage[static_cast<std::size_t>(s)] = static_cast<int>(plan.groups.size());
      plan.groups.push_back(std::move(group));
    }
  // One embedding group per replica: its first and last stage (Megatron's _EMBEDDING_GROUP).
  const int head = untied_head_layer(context.scenario.model);
  const int first_embedding_group = static_cast<int>(plan.groups.size());
  if (head >= 0 && stages > 1)
    for (int d = 0; d < dp; ++d) plan.groups.push_back({d, (stages - 1) * dp + d});
  plan.programs.reserve(static_cast<std::size_t>(context.world()));
  for (int rank = 0; rank < context.world(); ++rank) {
    const int stage = rank / dp;
    ProgramBuilder builder(rank, context.compute_element(), context.kernel_operands);
    // The replicas of a stage (ranks stage · dp ... stage · dp + dp - 1) have programs of the same length.
    if (rank % dp != 0) builder.reserve(plan.programs.back().ops.size(), plan.programs.back().tensors.size());
    const bool holds_embedding = head >= 0 && stages > 1 && (stage == 0 || stage == stages - 1);
    StageTraining training(context, builder, stage, rank % dp, dp_group_of_stage[static_cast<std::size_t>(stage)],
                           holds_embedding ? first_embedding_group + rank % dp : -1, gradients);
    training.lower(schedule);
    plan.programs.push_back(builder.finish());
    plan.programs.back().data = {rank % dp, dp};  // every stage of replica d loads replica d's samples
  }
}

}  // namespace shardscope
