// Rank → (tp, pp, dp) for tensor-parallel layouts: strategy/tensor_parallel.h numbers ranks strategy rank × tp + tp
// index, and the pipelines number strategy ranks stage × dp + replica (strategy/pipeline_stage.cpp); the other
// strategies' ranks are replicas of one stage.
#include "scenario/rank_coordinates.h"

#include <algorithm>

namespace shardscope {

std::optional<RankCoordinates> rank_coordinates(const Scenario& s, int rank) {
  const int tp = s.strategy.tp;
  if (tp <= 1 || rank < 0 || rank >= s.cluster.world) return std::nullopt;
  const int stages = std::max(1, s.strategy.stages);
  const int replicas = std::max(1, s.cluster.world / tp / stages);
  const int strategy_rank = rank / tp;
  return RankCoordinates{rank % tp, strategy_rank / replicas, strategy_rank % replicas};
}

std::string coordinates_label(const RankCoordinates& c) {
  return "tp" + std::to_string(c.tp) + "·pp" + std::to_string(c.pp) + "·dp" + std::to_string(c.dp);
}

std::string rank_label(const Scenario& s, int rank) {
  const auto c = rank_coordinates(s, rank);
  return "rank " + std::to_string(rank) + (c ? " (" + coordinates_label(*c) + ")" : "");
}

std::string rank_range_label(const Scenario& s, int first, int last) {
  if (first == last) return rank_label(s, first);
  const auto a = rank_coordinates(s, first), b = rank_coordinates(s, last);
  return "ranks " + std::to_string(first) + "–" + std::to_string(last) +
         (a && b ? " (" + coordinates_label(*a) + " … " + coordinates_label(*b) + ")" : "");
}

}  // namespace shardscope
