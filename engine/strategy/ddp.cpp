// DDP lowering, following torch/nn/parallel/distributed.py and torch/csrc/distributed/c10d/{reducer,comm}.cpp:
// - __init__ broadcasts module states first (_sync_module_states: parameters in registration order, 250 MiB
//   buckets via broadcast_coalesced, at most two in flight; each bucket is flattened into a new tensor on every
//   rank except a one-tensor bucket, which is a view), then builds the Reducer.
// - Reducer buckets: compute_bucket_assignment_by_size over parameters in registration order with limits
//   [sys.maxsize] (2.x, find_unused_parameters=False: one bucket for the first iteration) or [1 MiB, cap] (1.8),
//   the list reversed; one flat at::empty per bucket, allocated in bucket order.
// - Backward: after AccumulateGrad, the gradient is copied (divided by world size) into its bucket view; with
//   gradient_as_bucket_view the .grad is re-pointed at the view and the autograd-made tensor dropped. Buckets are
//   all-reduced strictly in order, each as soon as it and all before it are ready.
// - Second forward: _rebuild_buckets reassigns buckets in gradient-ready order (no sort) with
//   [first_bucket_bytes_cap, cap]: 1 MiB first when bucket_cap_mb was left out, cap itself when it was passed (2.x;
//   1.x: always 1 MiB); the old buckets are dropped (buckets_.clear()) before the new ones are allocated; .grad
//   views of the old buckets are re-pointed one by one, so old storage lives until its last view moves.
// - Under gloo (strategy.process_group) a flat of broadcast_coalesced at least
//   FrameworkBehaviour::gloo_late_flat_free_min_bytes returns to the allocator's cache only after the constructor
//   (ProcessGroupGloo record_streams it; memory/late_frees.h).
#include "strategy/ddp.h"

#include <algorithm>
#include <cstdint>
#include <deque>
#include <limits>

#include "strategy/bucket_assignment.h"

namespace shardscope {

namespace {
constexpr Bytes kBroadcastBucketBytes = 250 * kMiB;  // DistributedDataParallel.broadcast_bucket_size
constexpr Bytes kFirstBucketBytes = 1 * kMiB;        // dist._DEFAULT_FIRST_BUCKET_BYTES
constexpr double kDefaultBucketCapMb = 25;           // DistributedDataParallel: bucket_cap_mb None -> 25
}  // namespace

DdpTraining::DdpTraining(const LoweringContext& context, ProgramBuilder& builder) : LocalTraining(context, builder) {}

Bytes DdpTraining::bucket_cap_bytes() const {
  // int(bucket_cap_mb * 1024 * 1024)
  return static_cast<Bytes>(context_.scenario.settings.strategy.bucket_cap_mb.value_or(kDefaultBucketCapMb) *
                            static_cast<double>(kMiB));
}

Bytes DdpTraining::first_rebuilt_bucket_bytes() const {
  const bool explicit_cap = context_.scenario.settings.strategy.bucket_cap_mb.has_value();
  return explicit_cap && context_.behaviour.ddp_explicit_cap_limits_first_rebuilt_bucket ? bucket_cap_bytes()
                                                                                         : kFirstBucketBytes;
}

bool DdpTraining::flat_free_completes_late(Bytes flat_bytes) const {
  const auto& threshold = context_.behaviour.gloo_late_flat_free_min_bytes;
  return context_.scenario.settings.strategy.process_group == ProcessGroupBackend::Gloo && threshold &&
         flat_bytes >= *threshold;
}

void DdpTraining::broadcast_module_states() {
  const std::vector<Bytes> sizes = param_bytes(slots_);
  const auto assignment = assign_buckets_by_size(sizes, {kBroadcastBucketBytes});
  std::deque<TensorId> in_flight;  // flat tensors of broadcasts not yet finished (-1: a view, nothing to free)
  int index = 0;
  for (const auto& bucket : assignment) {
    if (in_flight.size() >= 2) {
      if (in_flight.front() >= 0) b_.release(in_flight.front());
      in_flight.pop_front();
    }
    Bytes bytes = 0;
    for (int i : bucket) bytes += sizes[static_cast<std::size_t>(i)];
    const TensorId flat = bucket.size() == 1 ? -1
                                              : b_.alloc("broadcast_coalesced flat " + std::to_string(index), bytes,
                                                         Category::CommunicationBuffers);
    if (flat >= 0 && flat_free_completes_late(bytes)) b_.set_free_completes_late(flat);
    lower_cat_scratch(b_, context_.behaviour, bucket.size(), "broadcast_coalesced flat " + std::to_string(index));
    // _sync_module_states is synchronous: the constructor returns after the broadcasts.
    const OpIndex broadcast = b_.collective(CollectiveKind::Broadcast, context_.world_group, bytes,
                                            "broadcast module states, bucket " + std::to_string(index) + " (" + format_bytes(bytes) + ")", 0);
    std::vector<TensorSlice> params;
    for (int i : bucket) params.push_back(param_slice(slots_[static_cast<std::size_t>(i)]));
    b_.set_kernel(broadcast, Kernel::None, std::move(params));
    b_.wait(broadcast);
    in_flight.push_back(flat);
    ++index;
  }
  for (TensorId flat : in_flight)
    if (flat >= 0) b_.release(flat);
}

void DdpTraining::initialize_buckets(const std::vector<std::vector<int>>& assignment) {
  buckets_.clear();
  bucket_of_.assign(slots_.size(), -1);
  offset_in_bucket_.assign(slots_.size(), 0);
  for (std::size_t k = 0; k < assignment.size(); ++k) {
    Bucket bucket;
    bucket.params = assignment[k];
    Bytes bytes = 0;
    for (int i : bucket.params) bytes += slots_[static_cast<std::size_t>(i)].bytes;
    bucket.tensor = b_.alloc("DDP bucket " + std::to_string(k), bytes, Category::DdpBuckets, /*persistent=*/true);
    Bytes offset = 0;
    for (int i : bucket.params) {
      bucket_of_[static_cast<std::size_t>(i)] = static_cast<int>(k);
      offset_in_bucket_[static_cast<std::size_t>(i)] = offset;
      ParamSlot& slot = slots_[static_cast<std::size_t>(i)];
      if (slot.grad_is_view) {  // initialize_bucket_views: copy the old .grad in, re-point it
        const OpIndex copy = b_.compute(ComputeKind::Copy, "copy " + slot.name + " .grad into its new bucket", 0, 2 * slot.bytes);
        b_.set_kernel(copy, Kernel::Copy, {TensorSlice{bucket.tensor, offset, slot.bytes}, grad_slice(slot)});
        b_.retain(bucket.tensor);
        b_.release(slot.grad);
        slot.grad = bucket.tensor;
        slot.grad_offset = offset;
      }
      offset += slot.bytes;
    }
    buckets_.push_back(std::move(bucket));
  }
}

void DdpTraining::wrap() {
  broadcast_module_states();
  const std::vector<Bytes> limits = context_.behaviour.ddp_single_first_bucket
                                        ? std::vector<Bytes>{std::numeric_limits<Bytes>::max()}
                                        : std::vector<Bytes>{kFirstBucketBytes, bucket_cap_bytes()};
  auto assignment = assign_buckets_by_size(param_bytes(slots_), limits);
  std::reverse(assignment.begin(), assignment.end());  // gradients arrive in reverse registration order
  initialize_buckets(assignment);
}

void DdpTraining::before_forward() {
  if (rebuilt_ || ready_order_.empty()) return;
  rebuilt_ = true;
  std::vector<Bytes> sizes;
  for (int i : ready_order_) sizes.push_back(slots_[static_cast<std::size_t>(i)].bytes);
  auto positions = assign_buckets_by_size(sizes, {first_rebuilt_bucket_bytes(), bucket_cap_bytes()}, /*sort_by_first_index=*/false);
  for (auto& bucket : positions)
    for (int& position : bucket) position = ready_order_[static_cast<std::size_t>(position)];
  for (const auto& bucket : buckets_) b_.release(bucket.tensor);  // buckets_.clear()
  initialize_buckets(positions);
  b_.compute(ComputeKind::Copy, "DDP: rebuild buckets in gradient-ready order", 0, 0);
}

void DdpTraining::after_accumulate(ParamSlot& slot) {
  const auto index = static_cast<std::size_t>(&slot - slots_.data());
  if (!rebuilt_) ready_order_.push_back(static_cast<int>(index));
  Bucket& bucket = buckets_[static_cast<std::size_t>(bucket_of_[index])];
  const TensorSlice in_bucket{bucket.tensor, offset_in_bucket_[index], slot.bytes};
  if (!slot.grad_is_view) {
    // Reducer::mark_variable_ready: copy the gradient into its bucket view, divided by the world size (the
    // all-reduce then sums to the mean). With the .grad already a view, autograd wrote into the bucket itself.
    const OpIndex copy = b_.compute(ComputeKind::Copy, "copy " + slot.name + " gradient into DDP bucket", 0, 2 * slot.bytes);
    b_.set_kernel(copy, Kernel::Copy, {in_bucket, grad_slice(slot)});
    b_.set_scale(copy, 1.0 / context_.world());
  } else {
    const OpIndex scale = b_.compute(ComputeKind::Copy, "divide " + slot.name + " gradient by the world size", 0, 2 * slot.bytes);
    b_.set_kernel(scale, Kernel::Scale, {in_bucket});
    b_.set_scale(scale, 1.0 / context_.world());
  }
  if (context_.scenario.settings.strategy.gradient_as_bucket_view && !slot.grad_is_view) {
    b_.retain(bucket.tensor);
    b_.release(slot.grad);  // the autograd-made gradient, now copied into the bucket
    slot.grad = bucket.tensor;
    slot.grad_is_view = true;
    slot.grad_offset = in_bucket.offset;
  }
  ++bucket.ready;
  launch_ready_buckets();
}

void DdpTraining::launch_ready_buckets() {
  while (next_bucket_ < buckets_.size() && buckets_[next_bucket_].ready == static_cast<int>(buckets_[next_bucket_].params.size())) {
    const Bucket& bucket = buckets_[next_bucket_];
    const Bytes bytes = b_.tensor(bucket.tensor).bytes;
    all_reduces_.push_back(b_.collective(CollectiveKind::AllReduce, context_.world_group, bytes,
                                         "all-reduce DDP bucket " + std::to_string(next_bucket_) + " (" + format_bytes(bytes) + ")",
                                         -1, {b_.last_compute()}));
    b_.set_kernel(all_reduces_.back(), Kernel::None, {whole(bucket.tensor)});
    ++next_bucket_;
  }
}

void DdpTraining::after_backward() {
  const bool views = context_.scenario.settings.strategy.gradient_as_bucket_view;
  // Without bucket views, finalize_backward copies each bucket's averaged gradients back into .grad (reducer.cpp
  // copy_bucket_to_grad: grad.copy_(bucket_view)): every gradient read once and written once, 2·Ψ·4 bytes of
  // traffic the step pays after the last all-reduce.
  std::vector<TensorSlice> pairs;
  Bytes copied = 0;
  if (!views)
    for (std::size_t i = 0; i < slots_.size(); ++i) {
      const ParamSlot& slot = slots_[i];
      if (slot.grad < 0 || bucket_of_[i] < 0) continue;
      pairs.push_back(grad_slice(slot));
      pairs.push_back(TensorSlice{buckets_[static_cast<std::size_t>(bucket_of_[i])].tensor, offset_in_bucket_[i], slot.bytes});
      copied += slot.bytes;
    }
  const OpIndex finalize = b_.compute(ComputeKind::Copy,
                                      views ? "DDP: wait for bucket all-reduces (.grad are bucket views)"
                                            : "DDP: wait for bucket all-reduces, copy buckets into .grad",
                                      0, 2 * copied);
  for (OpIndex op : all_reduces_) b_.add_dep(finalize, op);
  if (!views) b_.set_kernel(finalize, Kernel::Copy, std::move(pairs));
  all_reduces_.clear();
  next_bucket_ = 0;
  for (auto& bucket : buckets_) bucket.ready = 0;
}

}  // namespace shardscope
