// fsdp's own settings read as FSDP2 (torch.distributed.fsdp.fully_shard, PyTorch 2.11) takes them: which modules are
// units, what reshard_after_forward means for each, and the checks the strategy's rules row runs (a setting FSDP2
// would refuse, or one this model cannot express). The lowering (strategy/fsdp.cpp) reads the same functions.
#pragma once
#include <optional>
#include <string_view>

#include "model/model.h"
#include "scenario/scenario.h"

namespace shardscope {

// fully_shard(reshard_after_forward=): None (the default), True, False or an int.
struct ReshardAfterForward {
  enum class Kind { Default, Always, Never, Ranks };
  Kind kind = Kind::Default;
  int ranks = 0;  // Kind::Ranks: the size of the post-forward mesh
};
// "" -> Default, "true" / "false", a positive integer -> Ranks; nullopt for anything else.
std::optional<ReshardAfterForward> parse_reshard_after_forward(std::string_view text);

// Over how many ranks a unit's parameters are spread between its forward and its backward:
// - the world: resharded (True, and None for every unit but the root);
// - 0: not resharded, kept unsharded (False, None for the root: "the parameters would be freed and all-gathered
//   immediately");
// - k: a 1/k slice of the unsharded parameters, re-gathered within groups of k consecutive ranks.
// An int k == world is True and k == 1 is False (_fsdp_init.py _get_post_forward_mesh_info).
int post_forward_ranks(const ReshardAfterForward& setting, bool root, int world);

// The units asked for, or the default: block for a model with transformer blocks, else layer.
FsdpUnits resolved_fsdp_units(const Scenario& settings, const Model& model);

// fsdp's rules-row check: throws ScenarioError naming the field for what FSDP2 refuses (an int reshard_after_forward
// that does not divide the world) or what the plan cannot be (block units without blocks, no backward prefetch,
// 16-bit training.dtype in place of a MixedPrecisionPolicy, PyTorch 1.8 accounting: fully_shard is 2.x).
void check_fsdp(const Scenario& settings, const Model& model);

}  // namespace shardscope
