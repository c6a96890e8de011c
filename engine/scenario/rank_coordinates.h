// Where a rank sits in a tensor-parallel layout: its tensor-parallel index, pipeline stage and data-parallel replica,
// as Megatron-LM orders them (tp fastest, then dp, then pp: rank = (stage · dp + replica) · tp + tp index), and the
// label reports and the window name it by ("tp1·pp0·dp2"). Only plans with tp > 1 carry coordinates: every other
// plan keeps its ranks' plain numbers.
#pragma once
#include <optional>
#include <string>

#include "scenario/scenario.h"

namespace shardscope {

struct RankCoordinates {
  int tp = 0, pp = 0, dp = 0;
};

// `settings` resolved (world, stages filled in; a scenario read back from a trace header may leave stages out: 1).
// Unset when strategy.tp is 1 or the rank is outside the world.
std::optional<RankCoordinates> rank_coordinates(const Scenario& settings, int rank);
std::string coordinates_label(const RankCoordinates& coordinates);  // "tp1·pp0·dp2"
// "rank 5", or "rank 5 (tp1·pp0·dp2)" under tensor parallelism.
std::string rank_label(const Scenario& settings, int rank);
// A run of ranks first..last: "ranks 0–3", or "ranks 0–3 (tp0·pp0·dp0 … tp1·pp0·dp1)" under tensor parallelism.
std::string rank_range_label(const Scenario& settings, int first, int last);

}  // namespace shardscope
