// fsdp's settings as FSDP2 reads them (torch/distributed/fsdp/_fully_shard/_fsdp_init.py, _fully_shard.py; v2.11.0).
#include "scenario/fsdp_settings.h"

#include <charconv>
#include <string>

#include "scenario/tensor_parallel.h"

namespace shardscope {

std::optional<ReshardAfterForward> parse_reshard_after_forward(std::string_view text) {
  using Kind = ReshardAfterForward::Kind;
  if (text.empty()) return ReshardAfterForward{Kind::Default, 0};
  if (text == "true") return ReshardAfterForward{Kind::Always, 0};
  if (text == "false") return ReshardAfterForward{Kind::Never, 0};
  int ranks = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), ranks);
  if (error != std::errc{} || end != text.data() + text.size() || ranks < 1) return std::nullopt;
  return ReshardAfterForward{Kind::Ranks, ranks};
}

int post_forward_ranks(const ReshardAfterForward& setting, bool root, int world) {
  using Kind = ReshardAfterForward::Kind;
  switch (setting.kind) {
    // _fully_shard.py: None is True but for the root (FSDPState._lazy_init sets the root's post-forward mesh to
    // None only when reshard_after_forward was left to its default); an explicit True applies to the root too.
    case Kind::Default: return root ? 0 : world;
    case Kind::Always: return world;
    case Kind::Never: return 0;
    case Kind::Ranks: return setting.ranks == 1 ? 0 : setting.ranks;  // k == 1: False, k == world: True
  }
  return world;
}

FsdpUnits resolved_fsdp_units(const Scenario& settings, const Model& model) {
  if (settings.strategy.fsdp_units) return *settings.strategy.fsdp_units;
  return model.transformer_block_count() > 0 ? FsdpUnits::Block : FsdpUnits::Layer;
}

void check_fsdp(const Scenario& settings, const Model& model) {
  const auto& strategy = settings.strategy;
  // The ranks fully_shard shards over: with tp > 1 each tensor-parallel index's data-parallel group (the FSDP
  // mesh dimension of a 2-D mesh, as torchtitan applies fully_shard to the "dp_shard" dimension beside "tp").
  const int world = strategy_world(settings);
  if (settings.accounting.mode == AccountingMode::PyTorch18)
    throw ScenarioError("accounting.mode", "fsdp is PyTorch 2.x's fully_shard (FSDP2), which 1.8 does not have; use "
                                           "pytorch-2 or exact");
  if (settings.training.dtype != Dtype::Fp32)
    throw ScenarioError("training.dtype", "fsdp keeps fp32 parameters and casts them for compute; use "
                                          "--fsdp-param-dtype " + dtype_name(settings.training.dtype) +
                                              " (MixedPrecisionPolicy) with training.dtype fp32");
  if (strategy.prefetch < 1)
    throw ScenarioError("strategy.prefetch", "fsdp always all-gathers the previous unit during a unit's backward "
                                             "(FSDP2's implicit prefetch); use 1 or more");
  const auto reshard = parse_reshard_after_forward(strategy.reshard_after_forward);
  if (!reshard)
    throw ScenarioError("strategy.reshard_after_forward", "must be true, false or a number of ranks (got '" +
                                                              strategy.reshard_after_forward + "')");
  if (reshard->kind == ReshardAfterForward::Kind::Ranks && world % reshard->ranks != 0)
    throw ScenarioError("strategy.reshard_after_forward",
                        std::to_string(reshard->ranks) + " must divide the world (" + std::to_string(world) +
                            (settings.strategy.tp > 1 ? " per tensor-parallel index: world / tp" : "") +
                            "): fully_shard regathers within groups of that many consecutive ranks");
  if (strategy.fsdp_units == FsdpUnits::Block && model.transformer_block_count() == 0)
    throw ScenarioError("strategy.fsdp_units", "'" + settings.model.spec + "' has no transformer blocks; use layer or model");
}

}  // namespace shardscope
