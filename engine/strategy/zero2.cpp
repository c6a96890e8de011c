// ZeRO-2 lowering after DeepSpeed stage_1_and_2.py (v0.14), overlap_comm=False (its stage-2 default),
// contiguous_gradients=True:
// - __init__: the parameters move to the CPU and come back as one flat 16-bit buffer padded to a multiple of N
//   (bit16_groups_flat; each parameter a view at its offset, the padding zero); the rank's slice is copied into an
//   fp32 partition (single_partition_of_fp32_groups) — also in fp32 training, where it is a second copy. Rank r's
//   partition is elements [r·P/N, (r+1)·P/N) of the padded flat buffer.
// - backward(): one ipg buffer of reduce_bucket_size elements in the model dtype is allocated before
//   loss.backward() and dropped after it. Each gradient autograd makes is copied into the buffer, divided by N
//   (average_tensor divides the bucket by the world size before reducing it), and .grad is re-pointed at the buffer,
//   so the autograd tensor dies; a parameter larger than the bucket is divided and reduced alone.
//   When the next gradient would not fit, the bucket is reduced (strategy.zero2_reduce, below), then the rank copies
//   the slices it owns (each bucketed parameter's flat range intersected with its partition) into its gradient
//   partition (grads_in_partition, made at the first reduction and kept). Gradients owned by others are dropped.
//   With overlap_comm off the reduction runs on the compute stream: the copy-out waits for it, and only then may the
//   bucket be refilled.
// - The reduction. reduce-scatter (reduce_scatter: true, the default): average_tensor reduces each owner's slices of
//   the bucket into that owner (rank_and_offsets), so a rank receives only what it owns: the ZeRO paper's
//   reduce-scatter, (N−1)/N of the bucket per rank instead of an all-reduce's 2(N−1)/N. It is timed as one
//   reduce-scatter of the bucket; its operands are plan/kernel.h's per-member form, as the owners' slices
//   interleave and differ in size. all-reduce (reduce_scatter: false): gradient_reduction_w_predivide all-reduces
//   the bucket. DeepSpeed up to v0.12.3 runs either in place on the ipg buffer (dist.reduce on its narrowed slices,
//   or dist.all_reduce on it), so the two options hold the same memory. Since v0.12.4 the reduce_scatter path
//   with use_multi_rank_bucket_allreduce (default true) instead flattens the bucket's slices into a copy and
//   all-reduces that (allreduce_and_scatter): all-reduce traffic plus a bucket-sized copy, which neither option
//   models.
// - step(): the partition's gradients cast to fp32 (a transient 4P/N under 16-bit), Adam on the fp32 partition,
//   copy back into the rank's slice of the flat buffer, then the flat buffer is all-gathered in place in
//   max(1, partition × N / allgather_bucket_size) chunks (all_gather_dp_groups), at least one element each; with
//   several chunks, chunk c of every partition is gathered at once (plan/kernel.h's list form). The padding stays
//   zero: its gradients are zero, so no optimizer moves it.
#include "strategy/zero2.h"

#include <algorithm>

#include "training/mixed_precision.h"
#include "strategy/zero_options.h"

namespace shardscope {

std::vector<std::string> zero2_notes(const ResolvedScenario& scenario) {
  const auto& strategy = scenario.settings.strategy;
  const Bytes element = dtype_bytes(scenario.settings.training.dtype);
  const std::int64_t bucket = mib_option_numel(strategy.reduce_bucket_mb, element, kDeepSpeedBucketNumel);
  const std::string reduction =
      strategy.zero2_reduce == Zero2Reduce::ReduceScatter
          ? "ZeRO-2 reduces each bucket by reduce-scatter (DeepSpeed reduce_scatter: true, the ZeRO paper's volume): each "
            "rank receives only the slices it owns, half an all-reduce's traffic; DeepSpeed since v0.12.4 runs it as a "
            "flattened all-reduce unless use_multi_rank_bucket_allreduce is false (--zero2-reduce all-reduce times that)"
          : "ZeRO-2 all-reduces each bucket (DeepSpeed reduce_scatter: false), twice the traffic of --zero2-reduce "
            "reduce-scatter";
  return {"ZeRO-2 follows DeepSpeed stage_1_and_2.py (v0.14, overlap_comm off): after step() each rank holds the whole "
          "parameters, 1/N of the gradients and an fp32 partition with Adam's state: 2P + 14P/N bytes under 16-bit Adam "
          "(the paper's 2Ψ + 14Ψ/N); step() adds a transient fp32 copy of the gradient partition (4P/N), the peak the "
          "code's estimate_zero2_model_states_mem_needs (2P + 18P/N) allows for",
          "ZeRO-2 reduce bucket: " + std::to_string(bucket) + " elements (" + format_bytes(bucket * element) +
              ") allocated for every backward whatever N is (reduce_bucket_size, --reduce-bucket-mb)",
          reduction};
}

std::int64_t zero2_allgather_chunks(std::int64_t partition_numel, std::int64_t world, std::int64_t allgather_bucket_numel) {
  return std::clamp<std::int64_t>(partition_numel * world / allgather_bucket_numel, 1, std::max<std::int64_t>(1, partition_numel));
}

std::int64_t zero2_extra_ops_per_step(const ResolvedScenario& scenario) {
  const auto& s = scenario.settings;
  const std::int64_t world = std::max(1, s.cluster.world);
  const std::int64_t partition = (scenario.model.parameter_count() + world - 1) / world;
  const std::int64_t bucket = mib_option_numel(s.strategy.allgather_bucket_mb, dtype_bytes(s.training.dtype), kDeepSpeedBucketNumel);
  return 3 * zero2_allgather_chunks(partition, world, bucket);  // the all-gather, its wait and its label's slices
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
  flat_ = b_.alloc("flat 16-bit parameters (bit16_groups_flat)", padded * element_bytes_, Category::Parameters, true);
  // Each parameter becomes a view into the flat buffer, which holds their values in registration order and zeros
  // in the padding (executors write the values at allocation).
  Bytes offset = 0;
  for (auto& slot : slots_) {
    slot.tensor = flat_;
    slot.offset = offset;
    b_.add_initial_values(flat_, parameter_init(model_, slot, offset, 0, slot.numel));
    offset += slot.bytes;
  }
  partition_numel_ = padded / world;
  partition_ = zero_partition(b_, partition_numel_, element_bytes_, "fp32 partition (single_partition_of_fp32_groups)");
  // single_partition_of_fp32_groups = bit16 partition .clone().float(): a cast under 16-bit, a copy in fp32.
  const OpIndex copy = b_.compute(ComputeKind::Copy, "copy the rank's slice of the flat parameters into the fp32 partition", 0,
                                  partition_.bytes + partition_numel_ * kFp32Bytes);
  b_.set_kernel(copy, Kernel::Copy, reversed_pairs(master_copy_back()));
}

TensorSlice Zero2Training::own_partition() const {
  return TensorSlice{flat_, b_.rank() * partition_.bytes, partition_.bytes};
}

Category Zero2Training::grad_category(int, int) { return Category::Temporaries; }

void Zero2Training::before_backward() {
  ipg_buffer_ = b_.alloc("ipg reduce bucket", bucket_numel_ * element_bytes_, Category::CommunicationBuffers);
  numel_in_bucket_ = 0;
  bucketed_.clear();
}

void Zero2Training::copy_owned_slices(OpIndex reduction, TensorId source, const std::vector<std::pair<int, std::int64_t>>& params,
                                      Bytes reduced_bytes, const std::string& label) {
  b_.wait(reduction);  // overlap_comm=False: the reduction ran on the current stream
  const OpIndex copy = b_.compute(ComputeKind::Copy, label, 0, 2 * reduced_bytes / context_.world());
  // This rank's partition is elements [begin, end) of the flat buffer; each parameter's gradient lands at its own
  // flat position, so the intersection of the two ranges is copied.
  const std::int64_t begin = b_.rank() * partition_numel_;
  const std::int64_t end = begin + partition_numel_;
  std::vector<TensorSlice> pairs;
  for (const auto& [index, at] : params) {
    const ParamSlot& slot = slots_[static_cast<std::size_t>(index)];
    const std::int64_t first = slot.offset / element_bytes_;
    const std::int64_t lo = std::max(first, begin);
    const std::int64_t hi = std::min(first + slot.numel, end);
    if (lo >= hi) continue;
    pairs.push_back(TensorSlice{partition_.grad, (lo - begin) * element_bytes_, (hi - lo) * element_bytes_});
    pairs.push_back(TensorSlice{source, (at + lo - first) * element_bytes_, (hi - lo) * element_bytes_});
  }
  if (!pairs.empty()) b_.set_kernel(copy, Kernel::Copy, std::move(pairs));  // nothing of this reduction is owned here
}

OpIndex Zero2Training::reduce(TensorId source, Bytes bytes, const std::vector<std::pair<int, std::int64_t>>& params,
                              const std::string& what) {
  const bool scatter = context_.scenario.settings.strategy.zero2_reduce == Zero2Reduce::ReduceScatter;
  // Payloads as plan/op.h counts them: the full buffer for both.
  const OpIndex reduction = b_.collective(scatter ? CollectiveKind::ReduceScatter : CollectiveKind::AllReduce,
                                          context_.world_group, bytes, (scatter ? "reduce-scatter " : "all-reduce ") + what,
                                          -1, {b_.last_compute()});
  b_.set_kernel(reduction, Kernel::None, scatter ? owner_parts(source, params) : std::vector{TensorSlice{source, 0, bytes}});
  reductions_.push_back(reduction);
  return reduction;
}

// DeepSpeed's rank_and_offsets: each bucketed parameter cut where partitions end, each piece listed under its owner
// (rank r owns flat elements [r·P/N, (r+1)·P/N)); pieces of one owner that follow each other in the bucket merged.
std::vector<TensorSlice> Zero2Training::owner_parts(TensorId source, const std::vector<std::pair<int, std::int64_t>>& params) const {
  std::vector<std::vector<TensorSlice>> parts(static_cast<std::size_t>(context_.world()));
  for (const auto& [index, at] : params) {
    const ParamSlot& slot = slots_[static_cast<std::size_t>(index)];
    const std::int64_t first = slot.offset / element_bytes_;
    for (std::int64_t lo = first; lo < first + slot.numel;) {
      const std::int64_t owner = lo / partition_numel_;
      const std::int64_t hi = std::min(first + slot.numel, (owner + 1) * partition_numel_);
      const TensorSlice piece{source, (at + lo - first) * element_bytes_, (hi - lo) * element_bytes_};
      auto& list = parts[static_cast<std::size_t>(owner)];
      if (!list.empty() && list.back().offset + list.back().bytes == piece.offset) {
        list.back().bytes += piece.bytes;
      } else {
        list.push_back(piece);
      }
      lo = hi;
    }
  }
  std::vector<TensorSlice> args;
  for (const auto& list : parts) {  // the world group lists the ranks in order
    args.push_back(TensorSlice{});
    args.insert(args.end(), list.begin(), list.end());
  }
  return args;
}

void Zero2Training::reduce_bucket() {
  if (numel_in_bucket_ == 0) return;
  const Bytes bytes = numel_in_bucket_ * element_bytes_;
  const OpIndex reduction = reduce(ipg_buffer_, bytes, bucketed_, "ZeRO-2 reduce bucket (" + format_bytes(bytes) + ")");
  if (partition_.grad < 0)
    partition_.grad = b_.alloc("gradient partition (grads_in_partition)", partition_.bytes, Category::Gradients, true);
  copy_owned_slices(reduction, ipg_buffer_, bucketed_, bytes, "copy the owned slices of the bucket into the gradient partition");
  bucketed_.clear();
  numel_in_bucket_ = 0;
}

// Gradients are averaged over the data-parallel world: DeepSpeed's average_tensor (stage_1_and_2.py) divides the
// bucket, or the extra-large parameter's gradient, by dist.get_world_size(dp_process_group) before reducing it
// (tensor.div_ then the reduces; gradient_reduction_w_predivide without reduce_scatter). The lowering divides while
// copying each gradient into the bucket, as DDP's Reducer does.
void Zero2Training::take_grad(int layer, int param, TensorId grad) {
  const int index = slot_of_[layer][param];
  const ParamSlot& slot = slots_[static_cast<std::size_t>(index)];
  const double average = 1.0 / static_cast<double>(context_.world());
  if (slot.numel > bucket_numel_) {  // extra_large_param_to_reduce: reduced from its own gradient
    reduce_bucket();
    const Bytes bytes = slot.bytes;
    const OpIndex divide = b_.compute(ComputeKind::Copy, "divide " + slot.name + " gradient by the world size", 0, 2 * bytes);
    b_.set_kernel(divide, Kernel::Scale, {whole(grad)});
    b_.set_scale(divide, average);
    const OpIndex reduction = reduce(grad, bytes, {{index, 0}}, slot.name + " gradient (larger than the bucket)");
    if (partition_.grad < 0)
      partition_.grad = b_.alloc("gradient partition (grads_in_partition)", partition_.bytes, Category::Gradients, true);
    copy_owned_slices(reduction, grad, {{index, 0}}, bytes, "copy the owned slice of " + slot.name + " gradient into the gradient partition");
    b_.release(grad);
    return;
  }
  if (numel_in_bucket_ + slot.numel > bucket_numel_) reduce_bucket();
  const OpIndex copy = b_.compute(ComputeKind::Copy, "copy " + slot.name + " gradient into the reduce bucket", 0, 2 * slot.bytes);
  b_.set_kernel(copy, Kernel::Copy, {TensorSlice{ipg_buffer_, numel_in_bucket_ * element_bytes_, slot.bytes}, whole(grad)});
  b_.set_scale(copy, average);
  bucketed_.emplace_back(index, numel_in_bucket_);
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
  if (!mixed_precision_) {  // under 16-bit, lower_update already cast the masters back
    // bit16_partitions[partition_id].data.copy_(single_partition_of_fp32_groups[i].data)
    const OpIndex copy = b_.compute(ComputeKind::Copy, "copy the updated fp32 partition into the rank's slice of the flat parameters",
                                    0, 2 * partition_.bytes);
    b_.set_kernel(copy, Kernel::Copy, master_copy_back());
  }
  // all_gather_dp_groups: chunk c of every partition gathered at once, each rank's updated slice in place; at least
  // one element per chunk.
  const std::int64_t chunks = zero2_allgather_chunks(partition_numel_, world, allgather_bucket_numel_);
  std::int64_t start = 0;
  for (std::int64_t c = 0; c < chunks; ++c) {
    const std::int64_t numel = partition_numel_ / chunks + (c < partition_numel_ % chunks ? 1 : 0);
    const Bytes bytes = numel * element_bytes_;
    const OpIndex gather = b_.collective(CollectiveKind::AllGather, context_.world_group, bytes,
                                         "all-gather updated 16-bit parameters, chunk " + std::to_string(c), -1, {b_.last_compute()});
    // One chunk: the whole flat buffer is the output (partition r at chunk r). Several: chunk c of each partition,
    // one output per rank (plan/kernel.h's list form), the rank's own being its input.
    std::vector<TensorSlice> args{TensorSlice{flat_, (b_.rank() * partition_numel_ + start) * element_bytes_, bytes}};
    if (chunks == 1) {
      args.push_back(whole(flat_));
    } else {
      for (std::int64_t r = 0; r < world; ++r) args.push_back(TensorSlice{flat_, (r * partition_numel_ + start) * element_bytes_, bytes});
    }
    b_.set_kernel(gather, Kernel::None, std::move(args));
    b_.wait(gather);
    start += numel;
  }
}

}  // namespace shardscope
