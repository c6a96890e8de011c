// Sequence parallelism on an MLP's Linear pairs, as Megatron-LM runs it for its MLP block (Korthikanti et al. 2022,
// §4.2.2; megatron/core/tensor_parallel/layers.py and mappings.py). Each sample is one token, so the batch rows are
// the sequence: outside the tensor-parallel regions a rank holds b/t rows (the pass's batch), inside a region all b
// rows of 1/t of the features (model/tensor_parallel_shard.h sizes both alike).
//   - A column-parallel Linear all-gathers its input's rows before the GEMM (g: gather_from_sequence_parallel_region)
//     into a buffer freed after it, and saves the shard, not the gathered rows; its backward gathers the shard again
//     for the weight gradient and reduce-scatters the input gradient of all rows into this rank's rows
//     (LinearWithGradAccumulationAndAsyncCommunication.forward / .backward with sequence_parallel).
//   - A row-parallel Linear's GEMM makes a partial sum of all b rows, reduce-scattered (ḡ:
//     reduce_scatter_to_sequence_parallel_region) into this rank's rows, then its bias is added to those rows
//     (RowParallelLinear.forward: `output = output_ + self.bias`, a new tensor; the add saves nothing). In backward
//     the add's bias gradient is the sum over this rank's rows only, a partial sum: Megatron marks the bias
//     `sequence_parallel` (RowParallelLinear.__init__: setattr(self.bias, 'sequence_parallel', ...)) and
//     all-reduces every such gradient over the tensor-parallel group after backward (core/distributed/
//     finalize_model_grads.py: _allreduce_layernorm_grads, renamed _allreduce_non_tensor_model_parallel_grads in
//     later releases; the same sum over the group). We all-reduce it as autograd makes it, before the strategy's
//     gradient sink takes it: the same sum, so DDP's buckets, ZeRO's reduce-scatters and a pipeline's accumulation
//     over micro-batches see the whole gradient as without sequence parallelism (a pipeline then all-reduces once a
//     micro-batch, where Megatron all-reduces the accumulated gradient once a step). The output gradient's rows
//     are then all-gathered (the reduce-scatter's backward) for the GEMM's weight and input gradients.
//   - The loss: each rank's own rows, normalised by the whole batch. With N the whole batch's loss elements (b·out
//     for MSE, b for cross-entropy), single's loss is (1/N)·Σ over all rows; a rank's mean over its rows divides by
//     N/t, so its share is that mean × 1/t (Op::scale on the loss forward), and the shares summed over the group are
//     single's loss. Its gradient, 1/N per element of its own rows (2(o − y)/N, or −1/b at the target), is the
//     whole loss's, since no other rank's loss reads these rows: the backward's scale is 1/t as well (times a
//     pipeline's 1/micro-batches). DDP keeps the same normalisation: each replica's mean over its own b samples,
//     the gradients averaged over the replicas (Reducer's division by the world size).
// Every collective is on the tensor-parallel group (group -1 here; strategy/tensor_parallel.cpp makes it the rank's
// group) and on the compute stream: Megatron waits for each before the GEMM that reads it. Payloads: what each member
// contributes, the shard for an all-gather, the whole buffer for a reduce-scatter and an all-reduce.
#include "model/tensor_parallel_shard.h"
#include "training/model_pass.h"

namespace shardscope {

namespace {

constexpr int kTensorParallelGroup = -1;  // set per rank by strategy/tensor_parallel.cpp

}  // namespace

void ModelPass::init_sequence_parallel() {
  if (sp_ranks() == 1) return;
  const auto roles = tensor_parallel_roles(model_);
  sp_split_.assign(model_.layers.size(), 0);
  for (std::size_t l = 0; l < roles.size(); ++l)
    if (model_.layers[l].kind == LayerKind::Linear)
      sp_split_[l] = roles[l] == TensorParallelRole::ColumnParallel ? 1 : roles[l] == TensorParallelRole::RowParallel ? 2 : 0;
}

bool ModelPass::sp_column(std::size_t layer) const { return !sp_split_.empty() && sp_split_[layer] == 1; }

bool ModelPass::sp_row(std::size_t layer) const { return !sp_split_.empty() && sp_split_[layer] == 2; }

TensorId ModelPass::sp_all_gather(TensorSlice shard, Bytes shard_bytes, std::size_t layer, const std::string& what) {
  const std::string name = model_.layers[layer].name;
  const TensorId gathered = b_.alloc(name + " " + what + " (all-gathered)", sp_ranks() * shard_bytes, Category::Temporaries,
                                     false, activation_element());
  b_.compute_stream_collective(CollectiveKind::AllGather, kTensorParallelGroup, shard_bytes,
                               "tp all-gather " + name + " " + what, static_cast<int>(layer), {shard, whole(gathered)});
  return gathered;
}

void ModelPass::sp_reduce_scatter(TensorId full, TensorId shard, std::size_t layer, const std::string& what) {
  const std::string name = model_.layers[layer].name;
  b_.compute_stream_collective(CollectiveKind::ReduceScatter, kTensorParallelGroup, b_.tensor(full).bytes,
                               "tp reduce-scatter " + name + " " + what, static_cast<int>(layer), {whole(full), whole(shard)});
}

TensorId ModelPass::sp_row_forward(std::size_t l, TensorId input) {
  const Layer& layer = model_.layers[l];
  const auto batch = static_cast<double>(settings_.batch);
  if (settings_.grad_enabled) {  // addmm's node saves the input and the weight, as any Linear
    b_.retain(input);
    saved_[l].push_back(input);
    const TensorId weight = weight_of(l, params_).tensor;
    b_.retain(weight);
    saved_[l].push_back(weight);
  }
  const Bytes rows_bytes = activation_bytes(layer.out_numel);  // this rank's rows of the output
  const TensorId partial = b_.alloc(layer.name + " output (partial sum, all rows)", sp_ranks() * rows_bytes,
                                    Category::Temporaries, false, activation_element());
  workspaces_.touch_forward(b_, settings_.forward_thread);  // a plain mm: no bias, so no cuBLASLt workspace
  const OpIndex op = b_.compute(ComputeKind::Forward, layer.name + " forward", layer.forward_flops_per_sample * batch,
                                activation_bytes(layer.in_numel) + sp_ranks() * rows_bytes +
                                    layer.param_numel() * settings_.param_element_bytes,
                                static_cast<int>(l));
  b_.set_kernel(op, Kernel::LinearForward, {operand(input), weight_of(l, operands_), TensorSlice{}, whole(partial)});
  const TensorId reduced =
      b_.alloc(layer.name + " output (reduce-scattered)", rows_bytes, Category::Activations, false, activation_element());
  sp_reduce_scatter(partial, reduced, l, "output");
  b_.release(partial);
  b_.release(input);
  const bool bias = layer.params.size() > 1;
  if (!bias) return reduced;
  const TensorId out = b_.alloc(layer.name + " output", rows_bytes, Category::Activations, false, activation_element());
  const OpIndex add = b_.compute(ComputeKind::Forward, layer.name + " bias add", batch * static_cast<double>(layer.out_numel),
                                 2 * rows_bytes, static_cast<int>(l));
  b_.set_kernel(add, Kernel::BiasAdd, {whole(reduced), operands_[l][1], whole(out)});
  b_.release(reduced);
  return out;
}

TensorId ModelPass::sp_row_backward(std::size_t l, TensorId grad, bool needs_input_grad, GradSink& sink) {
  const Layer& layer = model_.layers[l];
  const int index = static_cast<int>(l);
  const auto batch = static_cast<double>(settings_.batch);
  const Bytes rows_bytes = activation_bytes(layer.out_numel);
  if (layer.params.size() > 1) {  // AddBackward: the bias gradient from this rank's rows, then whole over the group
    const Category category = sink.grad_category(index, 1);
    const Bytes bytes = layer.params[1].numel * settings_.param_element_bytes;
    const TensorId bias_grad = b_.alloc(layer.name + "." + layer.params[1].name + " grad", bytes, category,
                                        /*persistent=*/category == Category::Gradients);
    const std::vector<TensorId> scratch =
        alloc_reduction_scratch(layer.params[1].numel, settings_.batch, /*along_rows=*/true, layer.name + " bias grad");
    const OpIndex op = b_.compute(ComputeKind::Backward, layer.name + " bias backward",
                                  batch * static_cast<double>(layer.out_numel), rows_bytes + bytes, index);
    b_.set_kernel(op, Kernel::BiasBackward, {operand(grad), whole(bias_grad)});
    release_reduction_scratch(scratch);
    b_.compute_stream_collective(CollectiveKind::AllReduce, kTensorParallelGroup, bytes,
                                 "tp all-reduce " + layer.name + " bias grad (sequence-parallel parameter)", index,
                                 {whole(bias_grad)});
    sink.take_grad(index, 1, bias_grad);
  }
  // The reduce-scatter's backward: the output gradient of every rank's rows.
  const TensorId full = sp_all_gather(operand(grad), rows_bytes, l, "grad output");
  b_.release(grad);
  TensorId grad_input = -1;
  if (needs_input_grad)
    grad_input = b_.alloc(layer.name + " grad input", activation_bytes(layer.in_numel), Category::Temporaries, false,
                          activation_element());
  workspaces_.touch_backward(b_, settings_.backward_thread);
  const Category category = sink.grad_category(index, 0);
  const TensorId weight_grad = b_.alloc(layer.name + "." + layer.params[0].name + " grad",
                                        layer.params[0].numel * settings_.param_element_bytes, category,
                                        /*persistent=*/category == Category::Gradients);
  const double flops = layer.forward_flops_per_sample * batch * (needs_input_grad ? 2.0 : 1.0);
  const OpIndex op = b_.compute(ComputeKind::Backward, layer.name + " backward", flops,
                                activation_bytes(layer.in_numel) + 2 * sp_ranks() * rows_bytes +
                                    2 * layer.params[0].numel * settings_.param_element_bytes,
                                index);
  b_.set_kernel(op, Kernel::LinearBackward,
                {whole(full), operand(saved_[l][0]), weight_of(l, operands_),
                 grad_input >= 0 ? whole(grad_input) : TensorSlice{}, whole(weight_grad), TensorSlice{}});
  b_.release(full);
  for (TensorId t : saved_[l]) b_.release(t);
  saved_[l].clear();
  sink.take_grad(index, 0, weight_grad);
  return grad_input;
}

}  // namespace shardscope
