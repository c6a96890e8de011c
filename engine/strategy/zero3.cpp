// ZeRO-3 lowering. What stays resident follows DeepSpeed stage3.py (v0.14): 1/N of the parameters in the model
// dtype, 1/N of the gradients, and an fp32 partition (fp32_partitioned_groups_flat, also in fp32 training) with
// Adam's state: 16P/N under mixed precision, the paper's stage 3. When and how units are gathered follows
// PyTorch FSDP2 (torch/distributed/_composable/fsdp, 2.4):
// - a unit is a run of consecutive layers with parameters (fully_shard on each, or size_based_auto_wrap_policy
//   with allgather_bucket_mb);
// - model creation (strategy.zero3_init): partitioned (the default) allocates only the rank's shard of each unit, with
//   the parameters' initial values, as FSDP2's fully_shard on a meta-device model followed by to_empty and
//   reset_parameters on the shards; nothing of the whole model is ever resident. (deepspeed.zero.Init and FSDP1's
//   param_init_fn get there one module or unit at a time, each briefly whole before it is partitioned: a peak of
//   one unit, not modelled.) materialize builds the whole model on the device (model_created holds it all) and
//   shards it at wrapping, unit by unit: each unit's shard allocated, then its whole parameters freed;
// - before a unit's forward and again before its backward: foreach_all_gather into a flat output buffer, then
//   foreach_all_gather_copy_out into the unsharded parameters, after which the flat buffer is dropped: twice the
//   unit's size while the copy-out runs. `prefetch` units ahead are gathered at the same time (BACKWARD_PRE /
//   forward_prefetch); after its forward each unit is resharded (reshard_after_forward=True), after its backward too;
// - after a unit's backward its gradients are copied into a reduce-scatter input (at least reduce_bucket_mb, as a
//   fixed DeepSpeed bucket, when set; divided by N, the average foreach_reduce takes), reduce-scattered into a shard
//   that becomes or is added to the sharded .grad (on the reduce-scatter stream);
//   the previous reduce-scatter input stays alive until the next one is issued (FSDP2's reduce_scatter_state).
// - what the optimizer steps is one fp32 partition (the rank's shards of every unit, concatenated), copied from the
//   shards at wrapping and back into them after each step; the step takes each unit's piece with that unit's
//   sharded gradient (the state is still one tensor per kind, as DeepSpeed's flat groups).
// Rank r's shard of a unit is elements [r·S, (r+1)·S) of the unit's flat concatenation of parameters (S = padded/N);
// the padding is zero and stays zero. Kernels of a gathered unit's layers read the unsharded buffer, while autograd
// saves the parameter handles (no bytes), as FSDP's parameters swap their storage in and out.
// Gathered units are gathered_parameters (as fsdp's unsharded parameters, so that compare sets the two side by side);
// all-gather outputs and reduce-scatter buffers are communication_buffers; the shards are parameters and gradients. Not modelled: the persistence threshold and reuse distance (small parameters that
// DeepSpeed keeps gathered), the root unit not being resharded after forward, fragmentation.
#include "strategy/zero3.h"

#include <algorithm>

#include "training/mixed_precision.h"
#include "strategy/zero_options.h"

namespace shardscope {

std::vector<std::string> zero3_notes(const ResolvedScenario& scenario) {
  const int prefetch = scenario.settings.strategy.prefetch;
  return {"ZeRO-3 keeps DeepSpeed stage3.py's resident state (16P/N under 16-bit Adam, the paper's stage 3) and gathers "
          "like FSDP2: each unit before its forward and again before its backward, freed after each",
          "Why ZeRO-3 often holds more than ZeRO-2 (DeepSpeed issues #3734, #5305): gathered units are whole whatever N "
          "is, and with prefetch " + std::to_string(prefetch) + " up to " + std::to_string(prefetch + 1) +
              " units are gathered at once; each gather briefly holds the all-gather output beside the copied-out "
              "parameters (twice the unit); a fixed reduce bucket (--reduce-bucket-mb) does not shrink with N; and at "
              "small N the parameter saving over ZeRO-2 is only 2P(1 - 1/N)",
          scenario.settings.strategy.zero3_init == Zero3Init::Materialize
              ? "ZeRO-3 --zero3-init materialize: the model is built whole on the device and then sharded (FSDP over a "
                "device-built model), so model_created shows the full parameters; partitioned (deepspeed.zero.Init, "
                "a meta-device model) avoids that peak"
              : "ZeRO-3 --zero3-init partitioned: each rank creates only its shards (deepspeed.zero.Init, FSDP from a "
                "meta-device model), so no whole parameter is ever resident; materialize shows the full model at "
                "model_created",
          "ZeRO-3 not modelled: parameters DeepSpeed keeps gathered (persistence threshold, reuse distance), the root "
          "unit kept unsharded after forward, allocator fragmentation"};
}

Zero3Training::Zero3Training(const LoweringContext& context, ProgramBuilder& builder) : LocalTraining(context, builder) {}

// Units, each unit's padded size and its shard's place in the fp32 partition.
void Zero3Training::form_units() {
  const auto& strategy = context_.scenario.settings.strategy;
  const std::int64_t min_unit_numel = mib_option_numel(strategy.allgather_bucket_mb, element_bytes_, 0);
  unit_of_layer_.assign(model_.layers.size(), -1);
  offset_in_unit_.assign(slots_.size(), 0);
  std::int64_t open_numel = 0;
  for (std::size_t l = 0; l < model_.layers.size(); ++l) {
    const std::int64_t numel = model_.layers[l].param_numel();
    if (numel == 0) continue;
    if (units_.empty() || open_numel >= min_unit_numel || min_unit_numel == 0) {
      units_.push_back({});
      units_.back().first_layer = static_cast<int>(l);
      open_numel = 0;
    }
    Unit& unit = units_.back();
    unit.last_layer = static_cast<int>(l);
    open_numel += numel;
    for (int s : slot_of_[l]) {  // the layer's parameters, in registration order, follow the unit's earlier ones
      offset_in_unit_[static_cast<std::size_t>(s)] = unit.padded_numel;
      unit.padded_numel += slots_[static_cast<std::size_t>(s)].numel;
      unit.slots.push_back(s);
    }
    unit_of_layer_[l] = static_cast<int>(units_.size()) - 1;
  }
  const std::int64_t world = context_.world();
  partition_numel_ = 0;
  for (auto& unit : units_) {
    unit.padded_numel = (unit.padded_numel + world - 1) / world * world;
    unit.partition_offset = partition_numel_;
    partition_numel_ += shard_numel(unit);
  }
}

TensorSlice Zero3Training::partition_piece(const Unit& unit) const {
  return TensorSlice{partition_.master, unit.partition_offset * kFp32Bytes, shard_numel(unit) * kFp32Bytes};
}

void Zero3Training::allocate_shard(int u) {
  Unit& unit = units_[static_cast<std::size_t>(u)];
  const std::int64_t shard = shard_numel(unit);
  unit.shard = b_.alloc("unit " + std::to_string(u) + " parameter shard", shard * element_bytes_, Category::Parameters, true);
  // Rank r holds elements [r·S, (r+1)·S) of the unit's flat concatenation: the pieces of the parameters that fall
  // there (copied from the whole parameters, or initialised in place; executors write the values at allocation).
  const std::int64_t begin = b_.rank() * shard;
  for (int s : unit.slots) {
    const ParamSlot& slot = slots_[static_cast<std::size_t>(s)];
    const std::int64_t first = offset_in_unit_[static_cast<std::size_t>(s)];
    const std::int64_t lo = std::max(first, begin), hi = std::min(first + slot.numel, begin + shard);
    if (lo < hi) b_.add_initial_values(unit.shard, parameter_init(model_, slot, (lo - begin) * element_bytes_, lo - first, hi - lo));
  }
}

void Zero3Training::create_model() {
  if (context_.scenario.settings.strategy.zero3_init == Zero3Init::Materialize) return LocalTraining::create_model();
  slots_ = describe_parameters(model_, element_bytes_);
  slot_of_ = slots_by_layer(slots_, model_.layers.size());
  form_units();
  for (std::size_t u = 0; u < units_.size(); ++u) allocate_shard(static_cast<int>(u));
}

void Zero3Training::wrap() {
  if (context_.scenario.settings.strategy.zero3_init == Zero3Init::Materialize) {
    form_units();
    for (std::size_t u = 0; u < units_.size(); ++u) {  // one unit at a time: the whole model plus one shard at most
      allocate_shard(static_cast<int>(u));
      const Unit& unit = units_[u];
      for (int l = unit.first_layer; l <= unit.last_layer; ++l)
        for (int s : slot_of_[static_cast<std::size_t>(l)]) b_.release(slots_[static_cast<std::size_t>(s)].tensor);
    }
  }
  handles_.assign(model_.layers.size(), {});
  for (std::size_t l = 0; l < model_.layers.size(); ++l)
    for (std::size_t p = 0; p < model_.layers[l].params.size(); ++p)
      handles_[l].push_back(whole(b_.alloc(model_.layers[l].name + "." + model_.layers[l].params[p].name + " (sharded handle)", 0,
                                           Category::Parameters, true)));
  partition_ = zero_partition(b_, partition_numel_, element_bytes_, "fp32 partition (fp32_partitioned_groups_flat)");
  // fp32_partitioned_groups_flat starts as a copy of the shards (a cast under 16-bit).
  const OpIndex copy = b_.compute(ComputeKind::Copy, "copy the parameter shards into the fp32 partition", 0,
                                  partition_.bytes + partition_numel_ * kFp32Bytes);
  std::vector<TensorSlice> pairs = reversed_pairs(master_copy_back());
  if (!pairs.empty()) b_.set_kernel(copy, Kernel::Copy, std::move(pairs));
}

LayerParams Zero3Training::pass_params() { return handles_; }

void Zero3Training::before_forward() {
  // optimizer.zero_grad(): 2.x set_to_none drops the sharded gradients; 1.x zeroes them in place.
  if (!context_.behaviour.zero_grad_sets_none) {
    std::vector<TensorSlice> grads;
    Bytes bytes = 0;
    for (const auto& unit : units_)
      if (unit.sharded_grad >= 0) {
        grads.push_back(whole(unit.sharded_grad));
        bytes += b_.tensor(unit.sharded_grad).bytes;
      }
    if (grads.empty()) return;
    const OpIndex op = b_.compute(ComputeKind::Copy, "zero_grad (in place)", 0, bytes);
    b_.set_kernel(op, Kernel::Zero, std::move(grads));
    return;
  }
  for (auto& unit : units_)
    if (unit.sharded_grad >= 0) {
      b_.release(unit.sharded_grad);
      unit.sharded_grad = -1;
    }
}

// A tied layer (GPT-2's lm_head) reads its owner's binding: gather_tied_owner gathers the owner's unit around its use.
void Zero3Training::bind_operands(int u) {
  if (!pass_) return;
  const Unit& unit = units_[static_cast<std::size_t>(u)];
  for (int l = unit.first_layer; l <= unit.last_layer; ++l) {
    const auto& slots = slot_of_[static_cast<std::size_t>(l)];
    if (slots.empty()) continue;
    std::vector<TensorSlice> operands;
    for (std::size_t p = 0; p < slots.size(); ++p) {
      const ParamSlot& slot = slots_[static_cast<std::size_t>(slots[p])];
      operands.push_back(unit.gathered >= 0
                             ? TensorSlice{unit.gathered, offset_in_unit_[static_cast<std::size_t>(slots[p])] * element_bytes_, slot.bytes}
                             : handles_[static_cast<std::size_t>(l)][p]);
    }
    pass_->bind_operands(static_cast<std::size_t>(l), std::move(operands));
  }
}

void Zero3Training::gather(int u, const std::string& why) {
  if (u < 0 || u >= static_cast<int>(units_.size())) return;
  Unit& unit = units_[static_cast<std::size_t>(u)];
  if (unit.gathered >= 0) return;
  const Bytes full = unit.padded_numel * element_bytes_;
  const std::string name = "unit " + std::to_string(u);
  const TensorId output = b_.alloc(name + " all-gather output", full, Category::CommunicationBuffers);
  const OpIndex all_gather = b_.collective(CollectiveKind::AllGather, context_.world_group, full / context_.world(),
                                           "all-gather " + name + " parameters (" + why + ")", -1);
  b_.set_kernel(all_gather, Kernel::None, {whole(unit.shard), whole(output)});
  unit.gathered = b_.alloc(name + " unsharded parameters", full, Category::GatheredParameters);
  // The copy-out runs on the communication stream, so a prefetch does not hold up the current unit's compute
  // (DeepSpeed's allgather stream). FSDP2 2.11 copies out on the default stream instead (strategy/fsdp.cpp).
  unit.ready = b_.communication_stream_copy("copy-out " + name + " parameters", 2 * full);
  b_.set_kernel(unit.ready, Kernel::Copy, {whole(unit.gathered), whole(output)});
  b_.release(output);
  bind_operands(u);
}

void Zero3Training::release_gathered(int u) {
  Unit& unit = units_[static_cast<std::size_t>(u)];
  if (unit.gathered < 0) return;
  b_.release(unit.gathered);
  unit.gathered = -1;
  bind_operands(u);  // back to the handles: no kernel may read the freed buffer
}

bool Zero3Training::gather_tied_owner(int layer, const std::string& why) {
  const Layer& spec = model_.layers[static_cast<std::size_t>(layer)];
  if (spec.tied_layer < 0) return false;
  const int owner = unit_of_layer_[static_cast<std::size_t>(spec.tied_layer)];
  if (owner < 0 || units_[static_cast<std::size_t>(owner)].gathered >= 0) return true;  // still gathered: nothing to do
  gather(owner, why + ", tied weight of layer '" + model_.layers[static_cast<std::size_t>(spec.tied_layer)].name + "'");
  b_.wait(units_[static_cast<std::size_t>(owner)].ready);
  tied_owner_gathered_ = owner;
  return true;
}

bool Zero3Training::release_tied_owner(int layer) {
  if (model_.layers[static_cast<std::size_t>(layer)].tied_layer < 0) return false;
  if (tied_owner_gathered_ >= 0) release_gathered(tied_owner_gathered_);
  tied_owner_gathered_ = -1;
  return true;
}

void Zero3Training::before_layer_forward(int layer) {
  if (gather_tied_owner(layer, "forward")) return;
  const int u = unit_of_layer_[static_cast<std::size_t>(layer)];
  if (u < 0 || units_[static_cast<std::size_t>(u)].first_layer != layer) return;
  gather(u, "forward");
  for (int ahead = 1; ahead <= context_.scenario.settings.strategy.prefetch; ++ahead) gather(u + ahead, "forward prefetch");
  b_.wait(units_[static_cast<std::size_t>(u)].ready);
}

void Zero3Training::after_layer_forward(int layer) {
  if (release_tied_owner(layer)) return;
  const int u = unit_of_layer_[static_cast<std::size_t>(layer)];
  if (u >= 0 && units_[static_cast<std::size_t>(u)].last_layer == layer) release_gathered(u);  // reshard_after_forward
}

void Zero3Training::before_layer_backward(int layer) {
  if (gather_tied_owner(layer, "backward")) return;
  const int u = unit_of_layer_[static_cast<std::size_t>(layer)];
  if (u < 0 || units_[static_cast<std::size_t>(u)].last_layer != layer) return;
  gather(u, "backward");
  for (int ahead = 1; ahead <= context_.scenario.settings.strategy.prefetch; ++ahead) gather(u - ahead, "backward prefetch");
  b_.wait(units_[static_cast<std::size_t>(u)].ready);
}

Category Zero3Training::grad_category(int, int) { return Category::Gradients; }

void Zero3Training::take_grad(int layer, int param, TensorId grad) {
  units_[static_cast<std::size_t>(unit_of_layer_[static_cast<std::size_t>(layer)])].grads.emplace_back(slot_of_[layer][param], grad);
}

// Gradients are averaged over the world: FSDP2's foreach_reduce reduce-scatters fp32 gradients with ReduceOp.AVG
// (DeepSpeed stage3.py divides by the world size around its reduce-scatter likewise); the lowering divides while
// copying each gradient into the reduce-scatter input, at the parameter's place in the unit's flat concatenation.
void Zero3Training::reduce_scatter(int u) {
  Unit& unit = units_[static_cast<std::size_t>(u)];
  const auto& strategy = context_.scenario.settings.strategy;
  const Bytes full = unit.padded_numel * element_bytes_;
  const Bytes buffer = std::max(full, mib_option_numel(strategy.reduce_bucket_mb, element_bytes_, 0) * element_bytes_);
  const std::string name = "unit " + std::to_string(u);
  const TensorId input = b_.alloc(name + " reduce-scatter input", buffer, Category::CommunicationBuffers);
  const OpIndex copy = b_.compute(ComputeKind::Copy, "copy " + name + " gradients into the reduce-scatter input", 0, 2 * full);
  std::vector<TensorSlice> pairs;
  for (const auto& [s, grad] : unit.grads) {
    const ParamSlot& slot = slots_[static_cast<std::size_t>(s)];
    pairs.push_back(TensorSlice{input, offset_in_unit_[static_cast<std::size_t>(s)] * element_bytes_, slot.bytes});
    pairs.push_back(whole(grad));
  }
  if (!pairs.empty()) {
    b_.set_kernel(copy, Kernel::Copy, std::move(pairs));
    b_.set_scale(copy, 1.0 / static_cast<double>(context_.world()));
  }
  for (const auto& [s, grad] : unit.grads) b_.release(grad);
  unit.grads.clear();
  if (previous_reduce_input_ >= 0) b_.release(previous_reduce_input_);  // the previous reduce-scatter has been waited on
  previous_reduce_input_ = input;
  const Bytes shard = full / context_.world();
  const bool first = unit.sharded_grad < 0;
  const TensorId output = b_.alloc(name + (first ? " sharded gradient" : " reduce-scatter output"), shard,
                                   first ? Category::Gradients : Category::CommunicationBuffers, first);
  const OpIndex reduction = b_.collective(CollectiveKind::ReduceScatter, context_.world_group, full,
                                          "reduce-scatter " + name + " gradients (" + format_bytes(full) + ")", -1, {b_.last_compute()});
  b_.set_kernel(reduction, Kernel::None, {TensorSlice{input, 0, full}, whole(output)});
  reductions_.push_back(reduction);
  if (first) {
    unit.sharded_grad = output;
  } else {
    // FSDP2 adds the new shard into the existing sharded .grad on the reduce-scatter stream, after the reduction.
    const OpIndex accumulate = b_.communication_stream_copy("accumulate " + name + " reduced gradients into the sharded .grad", 3 * shard);
    b_.set_kernel(accumulate, Kernel::Accumulate, {whole(unit.sharded_grad), whole(output)});
    reductions_.push_back(accumulate);
    b_.release(output);
  }
}

void Zero3Training::after_layer_backward(int layer) {
  if (release_tied_owner(layer)) return;
  const int u = unit_of_layer_[static_cast<std::size_t>(layer)];
  if (u < 0 || units_[static_cast<std::size_t>(u)].first_layer != layer) return;
  release_gathered(u);
  reduce_scatter(u);
}

void Zero3Training::after_backward() {
  const OpIndex wait = b_.compute(ComputeKind::Copy, "ZeRO-3: wait for the reduce-scatters", 0, 0);
  for (OpIndex op : reductions_) b_.add_dep(wait, op);
  reductions_.clear();
  if (previous_reduce_input_ >= 0) b_.release(previous_reduce_input_);
  previous_reduce_input_ = -1;
  for (std::size_t u = 0; u < units_.size(); ++u) release_gathered(static_cast<int>(u));  // prefetched beyond layer 0
  // The optimizer steps the fp32 partition unit by unit, each piece with that unit's sharded gradient.
  partition_.optimizer_pieces.clear();
  for (const Unit& unit : units_)
    partition_.optimizer_pieces.push_back({unit.partition_offset * kFp32Bytes, shard_numel(unit) * kFp32Bytes, whole(unit.sharded_grad)});
}

std::vector<ParamSlot*> Zero3Training::optimizer_params() { return {&partition_}; }

std::vector<TensorSlice> Zero3Training::master_copy_back() {
  std::vector<TensorSlice> pairs;
  for (const Unit& unit : units_) {
    pairs.push_back(whole(unit.shard));
    pairs.push_back(partition_piece(unit));
  }
  return pairs;
}

void Zero3Training::after_optimizer_step() {
  if (mixed_precision_) return;  // lower_update already cast the masters back into the 16-bit shards
  // The updated fp32 partition back into the parameter shards the next all-gathers read.
  const OpIndex copy = b_.compute(ComputeKind::Copy, "copy the updated fp32 partition into the parameter shards", 0, 2 * partition_.bytes);
  std::vector<TensorSlice> pairs = master_copy_back();
  if (!pairs.empty()) b_.set_kernel(copy, Kernel::Copy, std::move(pairs));
}

}  // namespace shardscope
