// A model parameter as one rank's training loop sees it: its tensor, its .grad, and its optimizer state.
#pragma once
#include <string>
#include <vector>

#include "model/model.h"
#include "plan/program_builder.h"

namespace shardscope {

// A piece of what the optimizer steps as one parameter whose gradient is spread over several tensors (ZeRO-3: one
// flat fp32 partition, one sharded gradient per unit): bytes [offset, offset + bytes) of the updated tensor and of
// each state tensor, with the gradient read from `grad` (the same size).
struct OptimizerPiece {
  Bytes offset = 0;
  Bytes bytes = 0;
  TensorSlice grad;
};

struct ParamSlot {
  std::string name;  // "fc3.weight"
  int layer = 0;
  int index = 0;     // within the layer
  std::int64_t numel = 0;
  Bytes bytes = 0;               // numel × the model dtype's element size (4, or 2 under mixed precision)
  TensorId tensor = -1;
  Bytes offset = 0;              // where the parameter starts in `tensor` (a flat buffer holds several)
  TensorId master = -1;          // mixed precision: the fp32 master copy the optimizer updates (-1: none)
  TensorId grad = -1;           // -1: .grad is None
  bool grad_is_view = false;    // .grad is a view into a DDP bucket (gradient_as_bucket_view)
  Bytes grad_offset = 0;        // where that view starts in the bucket (0 when .grad is its own tensor)
  std::vector<TensorId> state;  // optimizer state, created lazily at the first step()
  // Empty: the optimizer step reads grad_slice(). Otherwise it steps these pieces, each with its own gradient (the
  // state is still allocated once, for the whole parameter).
  std::vector<OptimizerPiece> optimizer_pieces;
};

// model.to(device): every parameter allocated in registration order (Module._apply), `element_bytes` each
// (2 under mixed precision: model.half() before .to(device), as deepspeed.initialize does for a CPU-built model).
// Each tensor carries its initial values (ParameterInit) for executors.
std::vector<ParamSlot> allocate_parameters(ProgramBuilder& builder, const Model& model, Bytes element_bytes = 4);
// The same slots with nothing allocated (tensor -1): a model created as shards only (ZeRO-3's partitioned init).
std::vector<ParamSlot> describe_parameters(const Model& model, Bytes element_bytes);
// The initial values of `slot`'s elements [first_element, first_element + numel), placed at byte `offset`.
ParameterInit parameter_init(const Model& model, const ParamSlot& slot, Bytes offset, std::int64_t first_element,
                             std::int64_t numel);
// What a ZeRO optimizer steps: the rank's flat partition of `numel` elements (`element_bytes` each in the model dtype)
// with its fp32 copy `master_name` (DeepSpeed keeps one also in fp32 training), allocated now as optimizer state.
ParamSlot zero_partition(ProgramBuilder& builder, std::int64_t numel, Bytes element_bytes, const std::string& master_name);

// optimizer.zero_grad(): 2.x sets .grad to None (set_to_none=True, the default from 2.0), releasing it;
// 1.x zeroes it in place, so nothing is freed.
void zero_grad(ProgramBuilder& builder, std::vector<ParamSlot>& slots, bool sets_none);

// The parameter as an operand: its own tensor, or its slice of a flat buffer.
inline TensorSlice param_slice(const ParamSlot& slot) {
  return TensorSlice{slot.tensor, slot.offset, slot.bytes};
}

// The .grad as an operand: its own tensor, or its slice of a DDP bucket.
inline TensorSlice grad_slice(const ParamSlot& slot) {
  return slot.grad_is_view ? TensorSlice{slot.grad, slot.grad_offset, slot.bytes} : whole(slot.grad);
}

// Each parameter's bytes, in slot order (the input of every bucketing and partitioning rule).
std::vector<Bytes> param_bytes(const std::vector<ParamSlot>& slots);

// slots_by_layer(slots, n)[layer][param] = index into `slots`.
std::vector<std::vector<int>> slots_by_layer(const std::vector<ParamSlot>& slots, std::size_t layer_count);

}  // namespace shardscope
