// The tensors a training script's own names hold across a step: x, y (the batch) and loss. Rebinding a name
// frees the old tensor only after the new one exists, as Python does.
#pragma once
#include <vector>
#include <cstdint>

#include "model/model.h"
#include "plan/program_builder.h"
#include "scenario/scenario.h"

namespace shardscope {

// What the batch's tensors hold: an MLP's input and an MSE target are fp32 whatever the training dtype (the
// loader writes them so; the first Linear reads them as such); token ids and class ids are int64, opaque to the
// kernels that convert 16-bit operands.
inline ElementType input_element(const Model& model) {
  return model.input_element_bytes == 4 ? ElementType::Fp32 : ElementType::Opaque;
}
inline ElementType target_element(LossKind loss) { return loss == LossKind::Mse ? ElementType::Fp32 : ElementType::Opaque; }

// What the batch holds beyond the model's shapes: the MSE target's element type (fp32, or the output's dtype when
// the model computes in 16 bits, as mse_loss needs).
struct BatchShape {
  ElementType mse_target = ElementType::Fp32;
};

class UserTensors {
 public:
  // `x = ...; y = ...` (two statements): new x, old x freed, new y, old y freed. `data_group` (index into
  // Plan::groups) is the group whose members split each step's global batch, as DistributedSampler does; an
  // executor fills x and y with this rank's share (a one-member group: the whole batch).
  void next_batch(ProgramBuilder& builder, const Model& model, std::int64_t batch, LossKind loss, int data_group,
                  const BatchShape& shape = {});
  // `ids = next_batch()` of a script that passes labels=ids (a Hugging Face causal LM shifts them itself): the ids
  // only, y names the same tensor.
  void next_token_batch(ProgramBuilder& builder, const Model& model, std::int64_t batch, int data_group);
  // `loss = ...`: the new loss already exists; the old one is freed, then what its graph held (`graph_held`: storages
  // retained for the new loss's graph, released in order when the loss is next rebound).
  void rebind_loss(ProgramBuilder& builder, TensorId loss, std::vector<TensorId> graph_held = {});
  TensorId x() const { return x_; }
  TensorId y() const { return y_; }

 private:
  TensorId x_ = -1, y_ = -1, loss_ = -1;
  std::vector<TensorId> loss_graph_held_;  // what the loss's autograd graph keeps alive with it
};

}  // namespace shardscope
