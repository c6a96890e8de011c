// The cost model's measured side (issue 40): how long an op of the plan runs according to a device profile
// (cluster/device_profile.h), by interpolating its curves (sim/profile_interpolation.h) instead of the roofline.
// A compute op is taken apart into the kernels that run it — a Linear backward into its input- and weight-gradient
// GEMMs and the bias reduction, a GPT-2 block into its GEMMs, attention core and elementwise kernels — each looked
// up on its own curve (GEMMs by layout, (m, n, k) and dtype; elementwise kernels by bytes; the optimizer by
// parameters; collectives by bytes and ranks). What runs inside an op depends on who runs it, so a profile made
// through PyTorch (source "pytorch") is taken apart as PyTorch's modules run (HF GPT-2's eager attention and its
// gelu_new as a chain of elementwise kernels), and one of our executor's kernels (source "shardscope") as ours do.
// An op the lowering describes itself (Op::work, plan/compute_work.h: the eager pass, which runs PyTorch's ops one by
// one) is one kernel, looked up on the curve of its kind in its own element type: under torch.autocast a GEMM on the
// 16-bit curves, a loss and its casts on fp32's, while the training dtype (--dtype) stays fp32.
// An op whose curves the profile lacks gets nullopt: the caller times it by the roofline and counts it.
// Usage:
//   ProfileCosts costs(profile, scenario);
//   std::optional<double> s = costs.compute_seconds(op);
#pragma once
#include "sim/sim_layer.h"
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cluster/device_profile.h"
#include "plan/plan.h"
#include "model/tensor_parallel_shard.h"
#include "scenario/scenario.h"

namespace shardscope {

// A GPT-2 block's tensor-parallel shard (model/tensor_parallel_shard.h: its heads, its MLP columns; under sequence
// parallelism its share of the tokens outside the regions). tp 1: the whole block.
struct Gpt2BlockShard {
  int tp = 1;
  bool sequence_parallel = false;
};

class ProfileCosts {
 public:
  ProfileCosts(std::shared_ptr<const DeviceProfile> profile, const ResolvedScenario& scenario);
  // Primitives only (no model: compute_seconds answers nullopt), as the calibration uses them on the profile it is
  // still making.
  ProfileCosts(std::shared_ptr<const DeviceProfile> profile, Dtype dtype);

  // Seconds of one compute op; nullopt where the profile lacks a curve it needs, or the op has no kernel this
  // model knows how to take apart (a VGG convolution).
  std::optional<double> compute_seconds(const Op& op) const;
  // A collective of `ranks` ranks on nccl-tests' size S; a point-to-point message. nullopt: the profile has no
  // collectives to go by (none measured, or PyTorch's gloo between processes sharing one GPU, which says nothing
  // of NCCL between GPUs), and the link model times it.
  std::optional<double> collective_seconds(CollectiveKind kind, int ranks, double bytes) const;
  std::optional<double> message_seconds(double bytes) const;
  // The executor's own host time for an op that the simulator treats as instant (an allocation with its zero fill,
  // a free, a phase) or around any op: overheads.executor_op_s, plus the fill for an allocation. 0 for PyTorch
  // profiles, which do not measure it.
  double host_seconds(const Program& program, const Op& op) const;

  // The primitives, for tests and the calibration's own check.
  std::optional<double> gemm_seconds(const std::string& layout, double m, double n, double k, double batch = 1) const;
  std::optional<double> elementwise_seconds(const std::string& op, double bytes) const;
  std::optional<double> optimizer_seconds(OptimizerKind kind, double parameters) const;
  std::optional<double> attention_seconds(double batch_heads, double seq, double head_dim, bool backward) const;
  using BlockShard = Gpt2BlockShard;
  // The pieces of a GPT-2 block an op runs: the whole block, or one of the parts strategy/tensor_parallel_split.h
  // cuts it into around its collectives; a full recomputation without the MLP's output projection and residual.
  enum BlockPiece : unsigned {
    kAttentionGemms = 1, kAttentionCore = 2, kMlpInputGemm = 4, kGelu = 8, kNorm1 = 16, kNorm2 = 32, kResidual1 = 64,
    kResidual2 = 128, kResidualCopy = 256, kMlpOutputGemm = 512, kMlpGemms = kMlpInputGemm | kMlpOutputGemm,
    kWholeBlock = 1023
  };
  // One GPT-2 block of `rows` samples (forward or backward) as its kernels run; without the attention core when
  // `with_attention` is false (what the calibration subtracts from a measured block to find our attention core).
  // A tensor-parallel shard's pieces at the shard's shapes.
  std::optional<double> gpt2_block_seconds(double rows, double seq, double hidden, double heads, double inner,
                                           bool backward, bool with_attention = true, BlockShard shard = {},
                                           unsigned pieces = kWholeBlock) const;

  const DeviceProfile& profile() const { return *profile_; }
  bool times_collectives() const { return collectives_usable_; }

 private:
  std::optional<double> work_seconds(const Op& op, const ComputeWork& work) const;
  std::optional<double> gemm_in(const std::string& dtype, const std::string& layout, double m, double n, double k,
                                double batch) const;
  std::optional<double> elementwise_in(const std::string& dtype, const std::string& op, double bytes) const;
  // An attention core's forward, its backward, or selective recomputation's part of its forward (up to the dropped
  // probabilities: no product with V).
  enum class CorePass { Forward, Backward, Recompute };
  std::optional<double> attention_in(const std::string& dtype, double batch_heads, double seq, double head_dim,
                                     CorePass pass) const;
  std::optional<double> attention_recompute_seconds(double b, double heads, double s, double d) const;
  std::optional<double> linear_seconds(const Op& op, const Layer& layer) const;
  std::optional<double> block_seconds(const Op& op, const Layer& layer) const;
  unsigned block_pieces(const Op& op) const;  // which pieces of its block a GPT-2 kernel (or part) runs
  unsigned block_pieces_of_kernel(const Op& op) const;  // the same for the kernel's own forward or backward
  static double element_bytes_of(Dtype dtype) { return dtype == Dtype::Fp32 ? 4 : 2; }
  double slowdown(const std::string& kind, double threads) const;
  std::optional<double> pytorch_attention_core(double b, double a, double s, double d, CorePass pass) const;
  std::optional<double> elementwise_kernel_seconds(const Op& op) const;

  std::shared_ptr<const DeviceProfile> profile_;
  const Model* model_ = nullptr;
  // Under tensor parallelism (strategy.tp > 1) a rank's Linear is its shard's (model/tensor_parallel_shard.h): the
  // GEMM is priced at the shard's shape, not the whole layer's with the shard's FLOPs.
  std::optional<Model> shard_;
  std::vector<TensorParallelRole> roles_;
  BlockShard block_shard_;   // the strategy's tp and sequence parallelism, for a GPT-2 block's shard
  double micro_batch_ = 1;   // samples an op holds under tensor parallelism (a pipeline's micro-batch)
  OptimizerKind optimizer_ = OptimizerKind::Adam;
  std::string dtype_;          // GEMMs and activations: "float32", "bfloat16", "float16"
  double element_bytes_ = 4;   // of activations
  bool pytorch_ = false;       // taken apart as PyTorch runs the modules (else as our executor's kernels)
  bool collectives_usable_ = false;
  std::vector<bool> input_needs_grad_;  // per layer: an earlier layer has parameters (autograd computes its dx)
  double gemm_slowdown_ = 1, elementwise_slowdown_ = 1;  // ranks computing at once on one host (concurrency)
};

}  // namespace shardscope
