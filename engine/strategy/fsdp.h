// FSDP2 (torch.distributed.fsdp.fully_shard, PyTorch 2.11) on one rank: every parameter sharded on dim 0 and padded
// to a multiple of N rows, each unit (one fully_shard call) all-gathered into per-parameter unsharded tensors before
// its forward and backward and freed after, gradients reduce-scattered per unit into padded 1/N shards, the optimizer
// stepping the unpadded local shards. What it allocates, when, and on which stream is in fsdp.cpp's header comment.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "plan/plan.h"
#include "strategy/local_training.h"

namespace shardscope {

// What is resident, what each all-gather briefly holds, where the backward peak comes from, and what is not modelled.
std::vector<std::string> fsdp_notes(const ResolvedScenario& scenario);

// Lowers every rank (strategy/registry.cpp): the plan's groups of k ranks first when reshard_after_forward is an
// int k between 1 and N (the post-forward mesh), then one FsdpTraining per rank.
void lower_fsdp(const LoweringContext& context, Plan& plan);

// Ops a step adds beyond estimate_plan_ops' 8 a parameter tensor: each tensor's unsharded copy allocated and freed
// for the forward and again for the backward, 6 more (strategy/registry.cpp).
std::int64_t fsdp_extra_ops_per_step(const ResolvedScenario& scenario);

// The streams FSDP2 allocates on (TensorInfo::alloc_stream): PyTorch's caching allocator keeps a pool per stream, so
// which one a buffer comes from decides what it can reuse (_fsdp_param_group.py FSDPCommContext.lazy_init).
namespace fsdp_stream {
inline constexpr std::uint8_t kDefault = 0;
inline constexpr std::uint8_t kAllGatherCopyIn = 1;  // the flat all-gather output, the 16-bit all-gather input
inline constexpr std::uint8_t kAllGather = 2;        // gloo's all-gather temporary
inline constexpr std::uint8_t kReduceScatter = 3;    // the reduce-scatter output, gloo's input clone, the fp32 cast
}  // namespace fsdp_stream

class FsdpTraining : public LocalTraining, public LayerHooks {
 public:
  // `post_forward_group`: this rank's group of k ranks (index into Plan::groups) under reshard_after_forward=k, else -1.
  FsdpTraining(const LoweringContext& context, ProgramBuilder& builder, int post_forward_group = -1);

  Category grad_category(int layer, int param) override;
  void take_grad(int layer, int param, TensorId grad) override;
  void before_layer_forward(int layer) override;
  void after_layer_forward(int layer) override;
  void before_layer_backward(int layer) override;
  void after_layer_backward(int layer) override;

 protected:
  void create_model() override;
  void wrap() override;
  BatchShape batch_shape() const override;
  TensorId forward_input(TensorId x) override;
  Bytes grad_element_bytes() const override { return compute_bytes_; }
  LayerParams pass_params() override { return handles_; }
  LayerHooks* layer_hooks() override { return this; }
  void set_model_pass(ModelPass* pass) override { pass_ = pass; }
  void after_backward() override;

 private:
  // One parameter as FSDPParam holds it (_fsdp_param.py _init_sharded_param): dim 0 chunked with torch.chunk, the
  // padded shard (S rows) allocated on every rank, this rank's real rows r ≤ S copied in.
  struct Param {
    int slot = 0;                    // index into slots_
    std::int64_t rows = 0, row_numel = 1;
    std::int64_t shard_rows = 0;     // S = ⌈rows / N⌉
    std::int64_t local_rows = 0;     // r = clamp(rows − rank·S, 0, S)
    std::int64_t offset = 0;         // elements of the unit's earlier padded shards: its place in each flat chunk
    TensorId shard = -1;             // the padded fp32 shard (the DTensor's local tensor is a view of its r rows)
    TensorId unsharded = -1;         // all_gather_outputs[0] while unsharded: N·S rows
    TensorId post_forward = -1;      // reshard_after_forward=k: the kept 1/k of the unsharded rows
    std::int64_t shard_numel() const { return shard_rows * row_numel; }
  };
  // One fully_shard call: an FSDPParamGroup.
  struct Unit {
    std::string name;
    std::vector<int> layers;          // its modules (a tied user joins its owner's unit)
    int first_layer = 0, last_layer = 0;  // where its forward starts and ends (the root: the whole model)
    bool root = false;
    std::vector<int> params;          // into params_, in the group's order (children's parameters first)
    std::int64_t shard_numel = 0;     // Σ S·row_numel: one rank's chunk of every flat buffer
    int post_forward_ranks = 0;       // post_forward_ranks(): world (reshard), 0 (keep unsharded), k (a 1/k slice)
    bool unsharded = false;
    bool all_gather_pending = false;  // unshard() issued, copy-out not yet run
    TensorId flat = -1;               // the pending all-gather output (N > 1)
    OpIndex all_gather = -1;
    bool post_backward_done = false;
    std::vector<std::pair<int, TensorId>> grads;  // (param, unsharded gradient), until the reduce-scatter
  };

  void form_units();
  std::int64_t rank_in(int ranks) const;  // this rank's place in its group of `ranks` consecutive ranks
  int group_of(int ranks) const;          // the process group of that many ranks (the world or the k-group)
  void unshard(int unit);                 // FSDPParamGroup.unshard -> foreach_all_gather
  void copy_out(int unit, bool forward);  // wait_for_unshard -> foreach_all_gather_copy_out
  void reshard(int unit, bool after_forward);  // free_unsharded_param; after the forward under k, keep a 1/k slice
  void pre_forward(int unit);
  void post_forward(int unit);
  void pre_backward(int unit);
  void post_backward(int unit);           // foreach_reduce
  void final_callback();                  // _root_post_backward_final_callback
  void bind_operands(int unit);
  void split_scratch(const Unit& unit, Bytes element);  // split_with_sizes_copy's metadata buffer

  const int world_;
  const int post_forward_group_;
  const Bytes compute_bytes_;   // c: param_dtype's bytes (4 without a MixedPrecisionPolicy)
  const Bytes reduce_bytes_;    // d: reduce_dtype's, c when unset or equal to c (FSDP2 clamps it)
  const ElementType compute_element_, reduce_element_;
  const bool gloo_;
  std::vector<Param> params_;
  std::vector<Unit> units_;
  // Per layer: the non-root units whose forward starts / ends there (a layer is in one unit at most).
  std::vector<std::vector<int>> first_layer_units_, last_layer_units_;
  std::vector<int> unit_of_param_;          // per params_ entry
  std::vector<int> param_of_slot_;          // per slots_ entry: its params_ entry
  std::vector<bool> input_requires_grad_;   // per layer, as ModelPass decides it
  int root_unit_ = -1;
  std::vector<int> post_forward_order_;
  bool pre_backward_started_ = false;
  TensorId all_gather_state_ = -1;      // comm_ctx.all_gather_state: the previous forward all-gather output
  TensorId reduce_scatter_state_ = -1;  // comm_ctx.reduce_scatter_state: the previous reduce-scatter input
  std::vector<OpIndex> reductions_;
  LayerParams handles_;  // nn.Parameter objects whose storage FSDP swaps in and out: what autograd saves (no bytes)
  ModelPass* pass_ = nullptr;
};

}  // namespace shardscope
