// Parameter allocation at model creation.
#include "training/param_slot.h"

#include "training/model_pass.h"

namespace shardscope {

std::vector<ParamSlot> describe_parameters(const Model& model, Bytes element_bytes) {
  std::vector<ParamSlot> slots;
  for (std::size_t l = 0; l < model.layers.size(); ++l) {
    const Layer& layer = model.layers[l];
    for (std::size_t p = 0; p < layer.params.size(); ++p) {
      ParamSlot slot;
      slot.name = layer.name + "." + layer.params[p].name;
      slot.layer = static_cast<int>(l);
      slot.index = static_cast<int>(p);
      slot.numel = layer.params[p].numel;
      slot.bytes = slot.numel * element_bytes;
      slots.push_back(slot);
    }
  }
  return slots;
}

std::vector<ParamSlot> allocate_parameters(ProgramBuilder& builder, const Model& model, Bytes element_bytes) {
  std::vector<ParamSlot> slots = describe_parameters(model, element_bytes);
  const auto buffers_of = [&](std::size_t layer) {
    for (const auto& [name, bytes] : model.layers[layer].buffers)
      builder.alloc(model.layers[layer].name + "." + name, bytes, Category::Parameters, /*persistent=*/true, ElementType::Fp32);
  };
  for (std::size_t i = 0; i < slots.size(); ++i) {  // registration order, as Module._apply
    auto& slot = slots[i];
    slot.tensor = builder.alloc(slot.name, slot.bytes, Category::Parameters, /*persistent=*/true);
    builder.add_initial_values(slot.tensor, parameter_init(model, slot, 0, 0, slot.numel));
    if (i + 1 == slots.size() || slots[i + 1].layer != slot.layer) buffers_of(static_cast<std::size_t>(slot.layer));
  }
  return slots;
}

ParameterInit parameter_init(const Model& model, const ParamSlot& slot, Bytes offset, std::int64_t first_element,
                             std::int64_t numel) {
  const Layer& layer = model.layers.at(static_cast<std::size_t>(slot.layer));
  const ParamSpec& spec = layer.params.at(static_cast<std::size_t>(slot.index));
  return {slot.name, offset, first_element, numel, layer.in_numel, slot.numel, spec.init_bound, spec.init_constant,
          spec.init_value};
}

ParamSlot zero_partition(ProgramBuilder& builder, std::int64_t numel, Bytes element_bytes, const std::string& master_name) {
  ParamSlot partition;
  partition.name = "partition";
  partition.numel = numel;
  partition.bytes = numel * element_bytes;
  partition.master = builder.alloc(master_name, numel * kFp32Bytes, Category::OptimizerState, /*persistent=*/true,
                                   ElementType::Fp32);
  return partition;
}

void zero_grad(ProgramBuilder& builder, std::vector<ParamSlot>& slots, bool sets_none) {
  if (!sets_none) {  // 1.x: grad.zero_() on every existing .grad
    std::vector<TensorSlice> grads;
    Bytes bytes = 0;
    for (const auto& slot : slots)
      if (slot.grad >= 0) {
        grads.push_back(grad_slice(slot));
        bytes += slot.bytes;
      }
    if (grads.empty()) return;
    const OpIndex op = builder.compute(ComputeKind::Copy, "zero_grad (in place)", 0, bytes);
    builder.set_kernel(op, Kernel::Zero, std::move(grads));
    return;
  }
  for (auto& slot : slots) {
    if (slot.grad < 0) continue;
    builder.release(slot.grad);
    slot.grad = -1;
    slot.grad_is_view = false;
  }
}

std::vector<Bytes> param_bytes(const std::vector<ParamSlot>& slots) {
  std::vector<Bytes> bytes;
  bytes.reserve(slots.size());
  for (const auto& slot : slots) bytes.push_back(slot.bytes);
  return bytes;
}

std::vector<std::vector<int>> slots_by_layer(const std::vector<ParamSlot>& slots, std::size_t layer_count) {
  std::vector<std::vector<int>> index(layer_count);
  for (std::size_t i = 0; i < slots.size(); ++i) {
    auto& layer = index.at(static_cast<std::size_t>(slots[i].layer));
    if (layer.size() <= static_cast<std::size_t>(slots[i].index)) layer.resize(static_cast<std::size_t>(slots[i].index) + 1, -1);
    layer[static_cast<std::size_t>(slots[i].index)] = static_cast<int>(i);
  }
  return index;
}

}  // namespace shardscope
