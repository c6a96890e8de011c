// UserTensors: batch and loss lifetimes of the user script.
#include "training/user_tensors.h"

#include "training/model_pass.h"

namespace shardscope {

void UserTensors::next_batch(ProgramBuilder& b, const Model& model, std::int64_t batch, LossKind loss, int data_group,
                             const BatchShape& shape) {
  // `x = ...` then `y = ...`, one statement each, as tests/gpu/pytorch_reference.py and the FSDP2 jobs of
  // tests/gpu/pytorch_truth.py run them: the old x is freed before the new y exists (its block is already back in
  // the cache when y is placed).
  const TensorId x =
      b.alloc("input x", batch * model.input_numel * model.input_element_bytes, Category::Activations, true, input_element(model));
  if (x_ >= 0) b.release(x_);
  // MSE targets have the output's shape; cross-entropy targets are int64 class indices (one per token for an LM).
  const bool mse = loss == LossKind::Mse;
  const Bytes target_bytes =
      mse ? batch * model.output_numel * element_bytes(shape.mse_target) : batch * model.target_positions * 8;
  const TensorId y = b.alloc("target y", target_bytes, Category::Activations, true, mse ? shape.mse_target : target_element(loss));
  if (y_ >= 0) b.release(y_);
  x_ = x;
  y_ = y;
  // The host-to-device copy of the batch: no device compute worth timing, but executors load the data here.
  const OpIndex load = b.compute(ComputeKind::Copy, "load batch (x, y)", 0, 0);
  b.set_kernel(load, Kernel::LoadBatch, {whole(x), whole(y)});
  b.set_group(load, data_group);
}

void UserTensors::next_token_batch(ProgramBuilder& b, const Model& model, std::int64_t batch, int data_group) {
  const TensorId ids = b.alloc("input ids", batch * model.input_numel * model.input_element_bytes, Category::Activations, true,
                               ElementType::Opaque);
  const OpIndex load = b.compute(ComputeKind::Copy, "load batch (ids)", 0, 0);
  b.set_kernel(load, Kernel::LoadBatch, {whole(ids), whole(ids)});
  b.set_group(load, data_group);
  if (x_ >= 0) b.release(x_);
  if (y_ >= 0) b.release(y_);
  b.retain(ids);
  x_ = ids;
  y_ = ids;
}

void UserTensors::rebind_loss(ProgramBuilder& b, TensorId loss, std::vector<TensorId> graph_held) {
  if (loss_ >= 0) b.release(loss_);
  for (const TensorId t : loss_graph_held_) b.release(t);
  loss_ = loss;
  loss_graph_held_ = std::move(graph_held);
}

}  // namespace shardscope
