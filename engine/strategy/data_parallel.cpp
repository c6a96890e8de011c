// DataParallel lowering, following torch/nn/parallel/{data_parallel,replicate,_functions,comm}.py and
// torch/csrc/cuda/comm.cpp (same in 1.8 and 2.x unless noted). Every forward:
// 1. scatter: the batch (already whole on device 0) is chunked; device 0's chunk is a view, others get copies;
// 2. replicate: broadcast_coalesced in 10 MiB chunks (C++ take_tensors: close once the limit is reached); device 0
//    flattens each chunk into a temporary (a view for a one-tensor chunk), every other device gets a new flat
//    buffer whose views are the replica's parameters — alive while the replica's autograd graph holds them;
// 3. parallel_apply: each replica runs forward on its device (its own thread, so its own cuBLAS workspace);
// 4. gather: outputs concatenated into a new tensor on device 0; the loss is computed there.
// Backward: the output gradient is scattered (device 0's chunk a view), each replica's parameter gradients are
// held by BroadcastBackward until all replicas finish, then reduce_add_coalesced (Python _take_tensors, 10 MiB:
// close before overflowing) flattens each chunk on every device and reduces into a new flat on device 0 whose
// views become .grad; a grad for a replica that got no data is materialised as zeros. The optimizer runs on device 0.
// Worker devices run nothing of their own between these calls: device 0's thread scatters, replicates and reduces
// on their behalf, so each of those points is a Barrier (plan/op.h) over the devices it drives, and a worker's
// allocation for the next call never comes before device 0 reaches that call (its input chunk not before device 0's
// optimizer step and next batch; its output-gradient chunk not before device 0's loss backward).
// For executors every step carries its operands (plan/kernel.h): device 0's chunks are slices of x and of the output
// gradient, the broadcast lists each replica parameter, reduce_add flattens with Copy ops into the buffers it reduces.
#include "strategy/data_parallel.h"

#include <algorithm>
#include <map>
#include <memory>

#include "strategy/bucket_assignment.h"
#include "training/model_pass.h"
#include "training/mixed_precision.h"
#include "training/optimizer_step.h"
#include "training/param_slot.h"
#include "training/user_tensors.h"

namespace shardscope {

std::vector<std::int64_t> data_parallel_chunk_sizes(std::int64_t batch, int devices) {
  std::vector<std::int64_t> sizes;
  const std::int64_t chunk = ceil_div(batch, devices);
  for (std::int64_t left = batch; left > 0; left -= chunk) sizes.push_back(std::min(chunk, left));
  sizes.resize(static_cast<std::size_t>(devices), 0);
  return sizes;
}

std::vector<std::int64_t> balanced_chunk_sizes(std::int64_t batch, int devices, std::int64_t gpu0_batch) {
  const std::int64_t unit = (batch - gpu0_batch) / (devices - 1);
  if (gpu0_batch >= unit) return data_parallel_chunk_sizes(batch, devices);
  std::vector<std::int64_t> sizes(static_cast<std::size_t>(devices), unit);
  sizes[0] = gpu0_batch;
  std::int64_t delta = batch - gpu0_batch - unit * (devices - 1);
  for (std::int64_t i = 0; i < delta; ++i) sizes[static_cast<std::size_t>(i + 1)] += 1;
  return sizes;
}

namespace {

constexpr Bytes kCoalesceBytes = 10 * kMiB;  // comm.broadcast_coalesced / reduce_add_coalesced buffer_size

// Holds the replica gradients of one device until BroadcastBackward runs.
class ReplicaGradSink : public GradSink {
 public:
  explicit ReplicaGradSink(const std::vector<std::vector<int>>& slot_of) : slot_of_(slot_of) {}
  Category grad_category(int, int) override { return Category::Gradients; }
  void take_grad(int layer, int param, TensorId grad) override { grads[slot_of_[layer][param]] = grad; }
  std::map<int, TensorId> grads;  // slot -> gradient

 private:
  const std::vector<std::vector<int>>& slot_of_;
};

class DataParallelLowering {
 public:
  // balanced: BalancedDataParallel's chunks (device 0's batch given) and a replica on every device.
  DataParallelLowering(const LoweringContext& context, Plan& plan, bool balanced)
      : context_(context), plan_(plan), model_(context.scenario.model), devices_(context.world()) {
    for (int d = 0; d < devices_; ++d) {
      builders_.emplace_back(d, context.compute_element());
      workspaces_.emplace_back(context.behaviour);
    }
    const auto& settings = context.scenario.settings;
    const std::int64_t global = static_cast<std::int64_t>(settings.training.batch) * devices_;
    chunks_ = balanced
                  ? balanced_chunk_sizes(global, devices_, *settings.strategy.gpu0_batch)
                  : data_parallel_chunk_sizes(global, devices_);
    global_batch_ = global;
    for (int d = 0; d < devices_; ++d) {
      if (chunks_[static_cast<std::size_t>(d)] > 0) used_.push_back(d);
      // DataParallel replicates to device_ids[:len(inputs)]; BalancedDataParallel to every device.
      if (balanced || chunks_[static_cast<std::size_t>(d)] > 0)
        replicated_.push_back(d);
    }
    // Scatter and gather move rows between device 0 and the devices with a chunk; device 0 takes part even without a
    // chunk of its own (BalancedDataParallel with gpu0_bsz 0 scatters from and gathers to device 0, transformer-xl
    // utils/data_parallel.py), so executors have a root to copy from and to.
    transfer_ = used_;
    if (transfer_.empty() || transfer_.front() != 0) transfer_.insert(transfer_.begin(), 0);
    transfer_group_ = group_of(transfer_);
    replicated_group_ = group_of(replicated_);
    std::vector<int> driven = transfer_;
    for (int d : replicated_)
      if (std::find(driven.begin(), driven.end(), d) == driven.end()) driven.push_back(d);
    std::sort(driven.begin(), driven.end());
    driven_ = driven;
    driven_group_ = group_of(std::move(driven));
  }

  void lower() {
    for (auto& b : builders_) b.set_step(0);
    slots_ = allocate_parameters(device0(), model_, element_bytes());
    slot_of_ = slots_by_layer(slots_, model_.layers.size());
    all_phase(phase::kModelCreated);
    all_phase(phase::kWrapped);  // DataParallel.__init__ allocates nothing once the module is on device 0
    // Mixed precision: the optimizer on device 0 keeps fp32 masters of the 16-bit module (training/mixed_precision.h).
    if (mixed_precision() && !context_.scenario.settings.training.no_grad) create_master_weights(device0(), optimizer_params());
    for (int step = 1; step <= context_.scenario.settings.training.steps; ++step) {
      for (auto& b : builders_) b.set_step(step);
      training_step();
    }
    for (auto& b : builders_) plan_.programs.push_back(b.finish());
  }

 private:
  ProgramBuilder& device0() { return builders_[0]; }
  bool mixed_precision() const { return is_mixed_precision(context_.scenario.settings.training.dtype); }
  Bytes element_bytes() const { return dtype_bytes(context_.scenario.settings.training.dtype); }
  std::vector<ParamSlot*> optimizer_params() {
    std::vector<ParamSlot*> params;
    for (auto& slot : slots_) params.push_back(&slot);
    return params;
  }
  std::size_t chunk(int device) const { return static_cast<std::size_t>(chunks_[static_cast<std::size_t>(device)]); }

  int group_of(std::vector<int> ranks) {
    for (std::size_t g = 0; g < plan_.groups.size(); ++g)
      if (plan_.groups[g] == ranks) return static_cast<int>(g);
    plan_.groups.push_back(std::move(ranks));
    return static_cast<int>(plan_.groups.size() - 1);
  }

  // Every driven device waits here until device 0's thread gets here (what it does next, it does for them): the
  // barrier, then a zero-cost op on the compute stream that waits for it, so that the allocations that follow (on
  // that stream) come after it too.
  void device0_thread_reaches(const std::string& call) {
    for (int d : driven_) {
      ProgramBuilder& b = builders_[static_cast<std::size_t>(d)];
      const OpIndex barrier = b.collective(CollectiveKind::Barrier, driven_group_, 0, "device 0's thread reaches " + call, 0);
      b.add_dep(b.compute(ComputeKind::Copy, "wait for device 0's thread (" + call + ")", 0, 0), barrier);
    }
  }

  void all_phase(const char* name) {
    for (auto& b : builders_) b.phase(name);
  }

  // Replica parameters on every replicated device: device 0 uses the originals, the others flat chunk buffers.
  std::vector<LayerParams> replicate() {
    std::vector<LayerParams> params(static_cast<std::size_t>(devices_), LayerParams(model_.layers.size()));
    for (const auto& slot : slots_)
      for (int d : replicated_) params[static_cast<std::size_t>(d)][static_cast<std::size_t>(slot.layer)].resize(
          model_.layers[static_cast<std::size_t>(slot.layer)].params.size(), TensorSlice{});
    const std::vector<Bytes> sizes = param_bytes(slots_);
    int index = 0;
    for (const auto& chunk : assign_buckets_by_size(sizes, {kCoalesceBytes})) {
      Bytes bytes = 0;
      for (int i : chunk) bytes += sizes[static_cast<std::size_t>(i)];
      const std::string name = "replicate chunk " + std::to_string(index++);
      const TensorId temp = chunk.size() == 1 ? -1 : device0().alloc(name + " flat", bytes, Category::CommunicationBuffers);
      lower_cat_scratch(device0(), context_.behaviour, chunk.size(), name);
      for (int d : replicated_) {
        ProgramBuilder& b = builders_[static_cast<std::size_t>(d)];
        TensorId flat = -1;
        if (d != 0) flat = b.alloc(name + " (replica parameters)", bytes, Category::Parameters);
        Bytes offset = 0;
        std::vector<TensorSlice> buffers;
        for (int i : chunk) {
          const auto& slot = slots_[static_cast<std::size_t>(i)];
          const TensorSlice holder = d == 0 ? param_slice(slot) : TensorSlice{flat, offset, slot.bytes};
          offset += slot.bytes;
          b.retain(holder.tensor);  // the replica module's parameter (a view)
          params[static_cast<std::size_t>(d)][static_cast<std::size_t>(slot.layer)][static_cast<std::size_t>(slot.index)] = holder;
          buffers.push_back(holder);
        }
        // Executors: one coalesced call over the parameters on device 0 and their views in the flat chunk elsewhere
        // moves the same values as comm.cpp's flatten into `temp`, broadcast and unflatten into views.
        const OpIndex broadcast = b.collective(CollectiveKind::Broadcast, replicated_group_, bytes,
                                               "replicate: broadcast " + name + " (" + format_bytes(bytes) + ")", 0);
        b.set_kernel(broadcast, Kernel::None, std::move(buffers));
        b.wait(broadcast);
        if (flat >= 0) b.release(flat);  // only the views keep it now
      }
      if (temp >= 0) device0().release(temp);
    }
    return params;
  }

  void release_replica_modules(const std::vector<LayerParams>& params) {
    for (int d : replicated_)
      for (const auto& layer : params[static_cast<std::size_t>(d)])
        for (const TensorSlice& t : layer) builders_[static_cast<std::size_t>(d)].release(t.tensor);
  }

  void training_step() {
    const auto& training = context_.scenario.settings.training;
    const bool grad = !training.no_grad;
    ProgramBuilder& b0 = device0();
    if (grad) zero_grad(b0, slots_, context_.behaviour.zero_grad_sets_none);
    user_.next_batch(b0, model_, global_batch_, training.loss, group_of({0}));  // the whole batch, on device 0

    // scatter
    device0_thread_reaches("scatter (input)");
    std::vector<TensorSlice> inputs(static_cast<std::size_t>(devices_));
    for (int d : transfer_) {
      ProgramBuilder& b = builders_[static_cast<std::size_t>(d)];
      const Bytes bytes = static_cast<Bytes>(chunk(d)) * model_.input_numel * model_.input_element_bytes;
      std::vector<TensorSlice> buffers;  // plan/kernel.h: root [input, own output], others [output]
      if (d == 0) {
        buffers.push_back(whole(user_.x()));
        if (bytes > 0) {
          b.retain(user_.x());
          inputs[0] = TensorSlice{user_.x(), 0, bytes};  // the first rows of x (Tensor.chunk returns views)
        }
      } else {
        inputs[static_cast<std::size_t>(d)] =
            whole(b.alloc("input chunk", bytes, Category::Activations, false, input_element(model_)));
      }
      if (bytes > 0) buffers.push_back(inputs[static_cast<std::size_t>(d)]);
      const OpIndex scatter = b.collective(CollectiveKind::Scatter, transfer_group_, bytes,
                                           "scatter input (" + std::to_string(chunk(d)) + " samples)", 0);
      b.set_kernel(scatter, Kernel::None, std::move(buffers));
      b.wait(scatter);
    }
    const auto replica_params = replicate();

    // parallel_apply
    std::vector<std::unique_ptr<ModelPass>> passes(static_cast<std::size_t>(devices_));
    std::vector<TensorId> outputs(static_cast<std::size_t>(devices_), -1);
    for (int d : used_) {
      PassSettings settings;
      settings.batch = static_cast<std::int64_t>(chunk(d));
      settings.grad_enabled = grad;
      settings.loss = training.loss;
      settings.forward_thread = "parallel_apply worker";
      settings.behaviour = context_.behaviour;
      settings.param_element_bytes = element_bytes();
      auto& pass = passes[static_cast<std::size_t>(d)];
      pass = std::make_unique<ModelPass>(builders_[static_cast<std::size_t>(d)], model_, replica_params[static_cast<std::size_t>(d)],
                                         settings, workspaces_[static_cast<std::size_t>(d)]);
      const TensorSlice input = inputs[static_cast<std::size_t>(d)];
      outputs[static_cast<std::size_t>(d)] = pass->forward(input);
      builders_[static_cast<std::size_t>(d)].release(input.tensor);  // the scattered chunk's own reference
    }

    // gather on device 0, then the replicas go out of scope
    const Bytes out_bytes = global_batch_ * model_.output_numel * model_.activation_element_bytes;
    const TensorId gathered = b0.alloc("gathered output", out_bytes, Category::Activations, false,
                                       activation_element(model_, b0.compute_element()));
    for (int d : transfer_) {
      ProgramBuilder& b = builders_[static_cast<std::size_t>(d)];
      const OpIndex gather = b.collective(CollectiveKind::Gather, transfer_group_,
                                          static_cast<Bytes>(chunk(d)) * model_.output_numel * model_.activation_element_bytes,
                                          "gather outputs on device 0", 0);
      // plan/kernel.h: root [own input, output], others [input]; rows land in device order (Gather.forward, comm.gather)
      const TensorId output = outputs[static_cast<std::size_t>(d)];
      std::vector<TensorSlice> buffers{output >= 0 ? whole(output) : TensorSlice{}};
      if (d == 0) {
        buffers.push_back(whole(gathered));
        b.allocate_with(gathered, gather);  // the gathered output appears with the gather, not with device 0's forward
      }
      b.set_kernel(gather, Kernel::None, std::move(buffers));
      b.wait(gather);
      if (output >= 0) b.release(output);
    }
    release_replica_modules(replica_params);

    PassSettings loss_settings;
    loss_settings.batch = global_batch_;
    loss_settings.grad_enabled = grad;
    loss_settings.loss = training.loss;
    loss_settings.behaviour = context_.behaviour;
    loss_settings.param_element_bytes = element_bytes();
    ModelPass loss_pass(b0, model_, {}, loss_settings, workspaces_[0]);
    user_.rebind_loss(b0, loss_pass.loss_forward(gathered, user_.y()));
    all_phase(phase::kForward);
    if (!grad) return;

    // backward: scatter the output gradient, run each replica's backward
    const TensorId grad_out = loss_pass.loss_backward();
    device0_thread_reaches("scatter (output gradient)");
    std::vector<TensorSlice> grad_chunks(static_cast<std::size_t>(devices_));
    for (int d : transfer_) {
      ProgramBuilder& b = builders_[static_cast<std::size_t>(d)];
      const Bytes bytes = static_cast<Bytes>(chunk(d)) * model_.output_numel * model_.activation_element_bytes;
      std::vector<TensorSlice> buffers;
      if (d == 0) {
        buffers.push_back(whole(grad_out));
        if (bytes > 0) {
          b.retain(grad_out);
          grad_chunks[0] = TensorSlice{grad_out, 0, bytes};  // Gather.backward scatters; chunk 0 is a view
        }
      } else {
        grad_chunks[static_cast<std::size_t>(d)] = whole(b.alloc("output grad chunk", bytes, Category::Temporaries, false,
                                                                 activation_element(model_, b.compute_element())));
      }
      if (bytes > 0) buffers.push_back(grad_chunks[static_cast<std::size_t>(d)]);
      const OpIndex scatter = b.collective(CollectiveKind::Scatter, transfer_group_, bytes, "scatter output gradient", 0);
      b.set_kernel(scatter, Kernel::None, std::move(buffers));
      b.wait(scatter);
    }
    b0.release(grad_out);
    std::vector<ReplicaGradSink> sinks(static_cast<std::size_t>(devices_), ReplicaGradSink(slot_of_));
    for (int d : used_)
      passes[static_cast<std::size_t>(d)]->backward(grad_chunks[static_cast<std::size_t>(d)], sinks[static_cast<std::size_t>(d)]);
    // BroadcastBackward runs once every replica's gradients exist, on device 0's autograd thread.
    device0_thread_reaches("reduce_add_coalesced");
    for (int d : replicated_) {  // materialize_grads: zeros for a replica that produced none
      if (chunk(d) > 0) continue;
      for (std::size_t i = 0; i < slots_.size(); ++i)
        sinks[static_cast<std::size_t>(d)].grads[static_cast<int>(i)] =
            builders_[static_cast<std::size_t>(d)].alloc(slots_[i].name + " zero grad", slots_[i].bytes, Category::Gradients);
    }
    reduce_add_coalesced(sinks);
    loss_pass.release_seed();  // loss.backward() returns after reduce_add's AccumulateGrads
    all_phase(phase::kBeforeStep);

    lower_update(b0, context_.behaviour, {training.optimizer, context_.scenario.weight_decay}, optimizer_params(),
                 mixed_precision());
    all_phase(phase::kAfterStep);
  }

  // torch/nn/parallel/comm.py reduce_add_coalesced: per chunk, every device flattens its replica's gradients
  // (_flatten_dense_tensors) and reduce_add sums the flats into a new tensor on device 0 (nccl.reduce with
  // outputs=result, root 0), whose unflattened views go to AccumulateGrad of the original parameters. Executors:
  // each device copies its gradients into its flat (a one-tensor chunk reduces the gradient itself); device 0 copies
  // its own straight into the result, which the in-place reduce then turns into the sum over all devices. No
  // averaging: the loss is the mean over the gathered global batch, so the sum is the full-batch gradient.
  void reduce_add_coalesced(std::vector<ReplicaGradSink>& sinks) {
    ProgramBuilder& b0 = device0();
    const std::vector<Bytes> sizes = param_bytes(slots_);
    std::vector<std::pair<int, TensorId>> previous_flats;  // (device, flat) of the last chunk
    std::vector<std::pair<int, TensorSlice>> outputs;      // (slot, view of a result) in order
    int index = 0;
    for (const auto& chunk : take_tensors_python(sizes, kCoalesceBytes)) {
      Bytes bytes = 0;
      for (int i : chunk) bytes += sizes[static_cast<std::size_t>(i)];
      const std::string name = "reduce_add chunk " + std::to_string(index++);
      std::vector<std::pair<int, TensorId>> flats;
      for (int d : replicated_)
        if (chunk.size() > 1) {
          ProgramBuilder& b = builders_[static_cast<std::size_t>(d)];
          flats.emplace_back(d, b.alloc(name + " flat", bytes, Category::CommunicationBuffers));
          lower_cat_scratch(b, context_.behaviour, chunk.size(), name);
        }
      // Becomes .grad, unless a .grad already exists (1.8 keeps it), then it is added in and dropped.
      const bool becomes_grad = slots_[static_cast<std::size_t>(chunk.front())].grad < 0;
      const TensorId result =
          b0.alloc(name + " result", bytes, becomes_grad ? Category::Gradients : Category::Temporaries, becomes_grad);
      for (std::size_t k = 0; k < replicated_.size(); ++k) {
        const int d = replicated_[k];
        ProgramBuilder& b = builders_[static_cast<std::size_t>(d)];
        const auto& grads = sinks[static_cast<std::size_t>(d)].grads;
        const TensorId buffer = d == 0 ? result : chunk.size() > 1 ? flats[k].second : grads.at(chunk.front());
        if (buffer != grads.at(chunk.front())) {
          std::vector<TensorSlice> pairs;  // (dst, src): each gradient at its place in the flat
          Bytes offset = 0;
          for (int i : chunk) {
            pairs.push_back(TensorSlice{buffer, offset, sizes[static_cast<std::size_t>(i)]});
            pairs.push_back(whole(grads.at(i)));
            offset += sizes[static_cast<std::size_t>(i)];
          }
          const OpIndex flatten = b.compute(ComputeKind::Copy, "reduce_add: flatten gradients, " + name, 0, 2 * bytes);
          b.set_kernel(flatten, Kernel::Copy, std::move(pairs));
        }
        const OpIndex reduce = b.collective(CollectiveKind::Reduce, replicated_group_, bytes,
                                            "reduce_add gradients, " + name + " (" + format_bytes(bytes) + ")", 0);
        b.set_kernel(reduce, Kernel::None, {whole(buffer)});
        b.wait(reduce);
      }
      Bytes offset = 0;
      for (int i : chunk) {
        b0.retain(result);
        outputs.emplace_back(i, TensorSlice{result, offset, sizes[static_cast<std::size_t>(i)]});
        offset += sizes[static_cast<std::size_t>(i)];
      }
      b0.release(result);
      for (auto [d, flat] : previous_flats) builders_[static_cast<std::size_t>(d)].release(flat);  // name rebound
      previous_flats = std::move(flats);
    }
    for (auto [d, flat] : previous_flats) builders_[static_cast<std::size_t>(d)].release(flat);
    for (int d : replicated_)  // BroadcastBackward's input buffer released
      for (auto [slot, grad] : sinks[static_cast<std::size_t>(d)].grads) builders_[static_cast<std::size_t>(d)].release(grad);
    for (auto [i, view] : outputs) {  // AccumulateGrad on the original parameters
      ParamSlot& slot = slots_[static_cast<std::size_t>(i)];
      if (slot.grad < 0) {  // .grad becomes the view into the result
        slot.grad = view.tensor;
        slot.grad_is_view = true;
        slot.grad_offset = view.offset;
      } else {  // 1.8 with an existing .grad: grad += new_grad (torch/csrc/autograd/functions/accumulate_grad.h)
        const OpIndex add = b0.compute(ComputeKind::Copy, "AccumulateGrad " + slot.name, 0, 3 * slot.bytes);
        b0.set_kernel(add, Kernel::Accumulate, {grad_slice(slot), view});
        b0.release(view.tensor);
      }
    }
  }

  const LoweringContext& context_;
  Plan& plan_;
  const Model& model_;
  int devices_;
  std::vector<ProgramBuilder> builders_;
  std::vector<CublasWorkspaces> workspaces_;
  std::vector<std::int64_t> chunks_;
  std::int64_t global_batch_ = 0;
  std::vector<int> used_, replicated_, transfer_;  // with a chunk; holding a replica; used_ and device 0
  std::vector<int> driven_;                        // transfer_ and replicated_: every device DataParallel touches
  int transfer_group_ = -1, replicated_group_ = -1, driven_group_ = -1;
  std::vector<ParamSlot> slots_;
  std::vector<std::vector<int>> slot_of_;
  UserTensors user_;
};

}  // namespace

void lower_data_parallel(const LoweringContext& context, Plan& plan) {
  DataParallelLowering(context, plan, /*balanced=*/false).lower();
}

void lower_balanced_data_parallel(const LoweringContext& context, Plan& plan) {
  DataParallelLowering(context, plan, /*balanced=*/true).lower();
}

}  // namespace shardscope
