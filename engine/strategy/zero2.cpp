// ZeRO-2 lowering after DeepSpeed stage_1_and_2.py (v0.14), overlap_comm=False (its stage-2 default),
// contiguous_gradients=True:
// - __init__: the parameters move to the CPU and come back as one flat 16-bit buffer padded to a multiple of N
//   (bit16_groups_flat); the rank's slice is copied into an fp32 partition (single_partition_of_fp32_groups) —
//   also in fp32 training, where it is a second copy.
// - backward(): one ipg buffer of reduce_bucket_size elements in the model dtype is allocated before
//   loss.backward() and dropped after it. Each gradient autograd makes is copied into the buffer and .grad is
//   re-pointed at the buffer, so the autograd tensor dies; a parameter larger than the bucket is reduced alone.
//   When the next gradient would not fit, the bucket is reduced: all-reduce (the reduction SHARDING_MEMORY.md
//   describes), then the rank copies the slices it owns into its gradient partition (grads_in_partition, made at
//   the first reduction and kept). Gradients owned by others are dropped.
// - step(): the partition's gradients cast to fp32 (a transient 4P/N under 16-bit), Adam on the fp32 partition,
//   copy back into the 16-bit slice, then the 16-bit parameters are all-gathered in place in
//   max(1, partition × N / allgather_bucket_size) chunks (all_gather_dp_groups).
#include "strategy/zero2.h"

#include <algorithm>

#include "strategy/mixed_precision.h"
#include "strategy/zero_options.h"

namespace shardscope {

std::vector<std::string> zero2_notes(const ResolvedScenario& scenario) {
  const auto& strategy = scenario.settings.strategy;
  const Bytes element = model_dtype_bytes(scenario.settings.training.dtype);
  const std::int64_t bucket = mib_option_numel(strategy.reduce_bucket_mb, element, kDeepSpeedBucketNumel);
  return {"ZeRO-2 follows DeepSpeed stage_1_and_2.py (v0.14, overlap_comm off): after step() each rank holds the whole "
          "parameters, 1/N of the gradients and an fp32 partition with Adam's state: 2P + 14P/N bytes under 16-bit Adam "
          "(the paper's 2Ψ + 14Ψ/N); step() adds a transient fp32 copy of the gradient partition (4P/N), the peak the "
          "code's estimate_zero2_model_states_mem_needs (2P + 18P/N) allows for",
          "ZeRO-2 reduce bucket: " + std::to_string(bucket) + " elements (" + format_bytes(bucket * element) +
              ") allocated for every backward whatever N is (reduce_bucket_size, --reduce-bucket-mb)"};
}

Zero2Training::Zero2Training(const LoweringContext& context, ProgramBuilder& builder) : LocalTraining(context, builder) {
  const auto& strategy = context.scenario.settings.strategy;
  bucket_numel_ = mib_option_numel(strategy.reduce_bucket_mb, element_bytes_, kDeepSpeedBucketNumel);
  allgather_bucket_numel_ = mib_option_numel(strategy.allgather_bucket_mb, element_bytes_, kDeepSpeedBucketNumel);
}

void Zero2Training::wrap() {
  const std::int64_t world = context_.world();
  std::int64_t total = 0;
  for (auto& slot : slots_) {
    total += slot.numel;
    b_.release(slot.tensor);  // move_to_cpu before flattening
  }
  const std::int64_t padded = (total + world - 1) / world * world;
  const TensorId flat = b_.alloc("flat 16-bit parameters (bit16_groups_flat)", padded * element_bytes_, Category::Parameters, true);
  for (auto& slot : slots_) slot.tensor = flat;  // views into the flat buffer, held by the flat tensor
  partition_numel_ = padded / world;
  partition_.name = "partition";
  partition_.numel = partition_numel_;
  partition_.bytes = partition_numel_ * element_bytes_;
  partition_.master = b_.alloc("fp32 partition (single_partition_of_fp32_groups)", partition_numel_ * kFp32Bytes,
                               Category::OptimizerState, true);
}

Category Zero2Training::grad_category(int, int) { return Category::Temporaries; }

void Zero2Training::before_backward() {
  ipg_buffer_ = b_.alloc("ipg reduce bucket", bucket_numel_ * element_bytes_, Category::CommunicationBuffers);
  numel_in_bucket_ = 0;
}

void Zero2Training::reduce_bucket() {
  if (numel_in_bucket_ == 0) return;
  const Bytes bytes = numel_in_bucket_ * element_bytes_;
  reductions_.push_back(b_.collective(CollectiveKind::AllReduce, context_.world_group, bytes,
                                      "all-reduce ZeRO-2 reduce bucket (" + format_bytes(bytes) + ")", -1, {b_.last_compute()}));
  if (partition_.grad < 0)
    partition_.grad = b_.alloc("gradient partition (grads_in_partition)", partition_.bytes, Category::Gradients, true);
  b_.compute(ComputeKind::Copy, "copy the owned slices of the bucket into the gradient partition", 0, 2 * bytes / context_.world());
  numel_in_bucket_ = 0;
}

void Zero2Training::take_grad(int layer, int param, TensorId grad) {
  const ParamSlot& slot = slots_[static_cast<std::size_t>(slot_of_[layer][param])];
  if (slot.numel > bucket_numel_) {  // extra_large_param_to_reduce: reduced from its own gradient
    reduce_bucket();
    const Bytes bytes = slot.bytes;
    reductions_.push_back(b_.collective(CollectiveKind::AllReduce, context_.world_group, bytes,
                                        "all-reduce " + slot.name + " gradient (larger than the bucket)", -1, {b_.last_compute()}));
    if (partition_.grad < 0)
      partition_.grad = b_.alloc("gradient partition (grads_in_partition)", partition_.bytes, Category::Gradients, true);
    b_.release(grad);
    return;
  }
  if (numel_in_bucket_ + slot.numel > bucket_numel_) reduce_bucket();
  b_.compute(ComputeKind::Copy, "copy " + slot.name + " gradient into the reduce bucket", 0, 2 * slot.bytes);
  b_.release(grad);  // .grad now views the bucket
  numel_in_bucket_ += slot.numel;
}

void Zero2Training::after_backward() {
  reduce_bucket();
  const OpIndex epilogue = b_.compute(ComputeKind::Copy, "ZeRO-2: wait for the bucket reductions", 0, 0);
  for (OpIndex op : reductions_) b_.add_dep(epilogue, op);
  reductions_.clear();
  b_.release(ipg_buffer_);  // overlapping_partition_gradients_reduce_epilogue: ipg_buffer = None
  ipg_buffer_ = -1;
}

std::vector<ParamSlot*> Zero2Training::optimizer_params() { return {&partition_}; }

void Zero2Training::after_optimizer_step() {
  const std::int64_t world = context_.world();
  const std::int64_t chunks = std::max<std::int64_t>(1, partition_numel_ * world / allgather_bucket_numel_);
  for (std::int64_t c = 0; c < chunks; ++c) {
    const std::int64_t numel = partition_numel_ / chunks + (c < partition_numel_ % chunks ? 1 : 0);
    b_.wait(b_.collective(CollectiveKind::AllGather, context_.world_group, numel * element_bytes_,
                          "all-gather updated 16-bit parameters, chunk " + std::to_string(c), -1, {b_.last_compute()}));
  }
}

}  // namespace shardscope
