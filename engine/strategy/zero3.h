// ZeRO stage 3 on one rank: parameters sharded per unit, each unit all-gathered just before its forward and
// again before its backward and freed after use, gradients reduce-scattered per unit (FSDP-like).
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "strategy/local_training.h"

namespace shardscope {

// Why real ZeRO-3 often holds more than ZeRO-2, and what this plan does and does not model.
std::vector<std::string> zero3_notes(const ResolvedScenario& scenario);

class Zero3Training : public LocalTraining, public LayerHooks {
 public:
  Zero3Training(const LoweringContext& context, ProgramBuilder& builder);

  Category grad_category(int layer, int param) override;
  void take_grad(int layer, int param, TensorId grad) override;
  void before_layer_forward(int layer) override;
  void after_layer_forward(int layer) override;
  void before_layer_backward(int layer) override;
  void after_layer_backward(int layer) override;

 protected:
  void create_model() override;
  void wrap() override;
  void before_forward() override;
  LayerParams pass_params() override;
  LayerHooks* layer_hooks() override { return this; }
  void set_model_pass(ModelPass* pass) override { pass_ = pass; }
  void after_backward() override;
  std::vector<ParamSlot*> optimizer_params() override;
  std::vector<TensorSlice> master_copy_back() override;
  void after_optimizer_step() override;

 private:
  struct Unit {
    int first_layer = 0, last_layer = 0;  // inclusive
    std::vector<int> slots;               // its parameters in the order of its flat concatenation
    std::int64_t padded_numel = 0;        // the unit's parameters padded to a multiple of N
    std::int64_t partition_offset = 0;    // where this rank's shard sits in the fp32 partition (elements)
    TensorId shard = -1;                  // resident 1/N of the 16-bit (or fp32) parameters
    TensorId gathered = -1;               // unsharded parameters while gathered
    OpIndex ready = -1;                   // the copy-out that makes them usable; compute waits for it
    TensorId sharded_grad = -1;           // the rank's 1/N of the reduced gradients
    std::vector<std::pair<int, TensorId>> grads;  // (slot, unsharded gradient autograd made), until the reduce-scatter
  };
  std::int64_t shard_numel(const Unit& unit) const { return unit.padded_numel / context_.world(); }
  TensorSlice partition_piece(const Unit& unit) const;  // the unit's shard's place in the fp32 partition
  void form_units();
  void allocate_shard(int unit);  // the rank's 1/N of the unit's parameters, with their initial values
  void gather(int unit, const std::string& why);
  void bind_operands(int unit);  // the pass's kernels read the unit's layers from its gathered buffer, or the handles
  void release_gathered(int unit);
  void reduce_scatter(int unit);

  std::vector<Unit> units_;
  std::vector<int> unit_of_layer_;  // -1 for layers without parameters
  std::vector<std::int64_t> offset_in_unit_;  // per slot: its first element in its unit's flat concatenation
  LayerParams handles_;             // nn.Parameter objects whose storage FSDP swaps in and out: no bytes of their own
  std::int64_t partition_numel_ = 0;  // the rank's shards of every unit, concatenated
  ParamSlot partition_;             // what the optimizer sees: the rank's flat fp32 partition
  TensorId previous_reduce_input_ = -1;
  int tied_owner_gathered_ = -1;  // the unit gathered again for a tied weight's second user (lm_head), until it is done

  // lm_head using wte: its owner's unit is gathered around that use too (DeepSpeed's pre-forward / pre-backward hooks
  // fetch every parameter the submodule uses, the shared one included). Returns whether `layer` is such a user.
  bool gather_tied_owner(int layer, const std::string& why);
  bool release_tied_owner(int layer);
  std::vector<OpIndex> reductions_;
  ModelPass* pass_ = nullptr;       // the current step's pass
};

}  // namespace shardscope
