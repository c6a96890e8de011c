// Grouping identical ranks by the memory signature the store folds as samples arrive.
#include "gui/logic/rank_group.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "scenario/rank_coordinates.h"

namespace shardscope::gui {

namespace {

// The layout a tensor-parallel trace's ranks are named by (cluster.world, strategy.tp, strategy.stages of the header's
// resolved scenario); tp stays 1, so no coordinates, for any other trace or a header without a readable scenario.
Scenario rank_layout(const TraceHeader& header) {
  Scenario s;
  const auto json = nlohmann::json::parse(header.scenario_json, nullptr, /*allow_exceptions=*/false);
  const auto integer = [&](const char* section, const char* key, int fallback) {
    if (!json.is_object() || !json.contains(section) || !json[section].is_object()) return fallback;
    const auto& value = json[section].value(key, nlohmann::json());
    return value.is_number_integer() ? value.get<int>() : fallback;
  };
  s.cluster.world = integer("cluster", "world", 0);
  s.strategy.tp = integer("strategy", "tp", 1);
  s.strategy.stages = integer("strategy", "stages", 1);
  if (s.strategy.tp < 1 || s.cluster.world < 1 || s.strategy.stages < 1) s.strategy.tp = 1;
  return s;
}

// Identical (t, allocated) series: compared by the signature the store folds as samples arrive, not sample by sample.
bool same_series(const RankTimeline& a, const RankTimeline& b) {
  return a.memory.size() == b.memory.size() && a.peak.allocated == b.peak.allocated &&
         a.memory_signature == b.memory_signature;
}

// "rank 3", "ranks 0–63"; under tensor parallelism with the ranks' coordinates: "rank 3 (tp1·pp0·dp1)".
std::string ranks_label(const std::vector<int>& ranks, const Scenario& layout) {
  const bool contiguous = ranks.back() - ranks.front() + 1 == static_cast<int>(ranks.size());
  if (contiguous) return rank_range_label(layout, ranks.front(), ranks.back());
  return std::to_string(ranks.size()) + " ranks (" + std::to_string(ranks.front()) + ", " + std::to_string(ranks[1]) + ", …)";
}

}  // namespace

std::vector<RankGroup> group_identical_ranks(const TraceData& data) {
  std::vector<RankGroup> groups;
  for (const auto& rank : data.ranks) {
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const RankGroup& g) { return same_series(data.ranks[static_cast<std::size_t>(g.ranks[0])], rank); });
    if (it == groups.end()) groups.push_back({{rank.rank}, ""});
    else it->ranks.push_back(rank.rank);
  }
  const Scenario layout = rank_layout(data.header);
  for (auto& g : groups) g.label = ranks_label(g.ranks, layout);
  return groups;
}

}  // namespace shardscope::gui
