// ZeRO stage 2 on one rank, following DeepSpeed's DeepSpeedZeroOptimizer (deepspeed/runtime/zero/stage_1_and_2.py,
// v0.14): whole 16-bit parameters in one flat buffer, gradients and optimizer state kept only for the rank's 1/N.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "strategy/local_training.h"

namespace shardscope {

// What the user should know about a ZeRO-2 plan (which formula its figures follow, the fixed bucket).
std::vector<std::string> zero2_notes(const ResolvedScenario& scenario);

// all_gather_dp_groups' chunk count after each step: partition × N / allgather_bucket_size, at least 1 and at most
// one element per chunk.
std::int64_t zero2_allgather_chunks(std::int64_t partition_numel, std::int64_t world, std::int64_t allgather_bucket_numel);

// Ops a ZeRO-2 step adds beyond estimate_plan_ops' per-layer and per-tensor counts: its all-gather chunks (three
// ops each), which a tiny --allgather-bucket-mb multiplies without bound.
std::int64_t zero2_extra_ops_per_step(const ResolvedScenario& scenario);

class Zero2Training : public LocalTraining {
 public:
  Zero2Training(const LoweringContext& context, ProgramBuilder& builder);

  Category grad_category(int layer, int param) override;
  void take_grad(int layer, int param, TensorId grad) override;

 protected:
  void wrap() override;
  void before_backward() override;
  void after_backward() override;
  std::vector<ParamSlot*> optimizer_params() override;
  std::vector<TensorSlice> master_copy_back() override { return {own_partition(), whole(partition_.master)}; }
  void after_optimizer_step() override;

 private:
  void reduce_bucket();
  // Reduces `bytes` of gradients in `source` (parameter slots_[i] at element offset `at` of it) as the zero2_reduce
  // option says; `what` names them in the op's label.
  OpIndex reduce(TensorId source, Bytes bytes, const std::vector<std::pair<int, std::int64_t>>& params,
                 const std::string& what);
  // The reduce-scatter's operands (plan/kernel.h's per-member form): each rank's slices of `source`.
  std::vector<TensorSlice> owner_parts(TensorId source, const std::vector<std::pair<int, std::int64_t>>& params) const;
  // After `reduction` (reduced gradients in `source`, parameter slots_[i] at element offset `at`): copies what
  // falls in this rank's partition into the gradient partition.
  void copy_owned_slices(OpIndex reduction, TensorId source, const std::vector<std::pair<int, std::int64_t>>& params,
                         Bytes reduced_bytes, const std::string& label);
  TensorSlice own_partition() const;  // this rank's slice of the flat buffer

  TensorId flat_ = -1;                    // bit16_groups_flat: every parameter, padded to a multiple of N
  std::int64_t partition_numel_ = 0;      // the rank's share of the padded flat buffer
  std::int64_t bucket_numel_ = 0;         // reduce_bucket_size
  std::int64_t allgather_bucket_numel_ = 0;
  ParamSlot partition_;                   // what the optimizer sees: the rank's flat fp32 partition
  TensorId ipg_buffer_ = -1;              // the reduce bucket of this backward
  std::int64_t numel_in_bucket_ = 0;
  std::vector<std::pair<int, std::int64_t>> bucketed_;  // (slot, element offset in the bucket) since the last reduction
  std::vector<OpIndex> reductions_;
};

}  // namespace shardscope
