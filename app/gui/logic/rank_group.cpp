// Grouping identical ranks by the memory signature the store folds as samples arrive.
#include "gui/logic/rank_group.h"

#include <algorithm>
#include <optional>
#include <string>

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

// "2", "0–7" or "5": a coordinate's span over a group.
std::string span(int low, int high) { return high == low ? std::to_string(low) : std::to_string(low) + "–" + std::to_string(high); }

// Under tensor parallelism the window's label column names a group by its coordinates, compactly enough for the
// projector's narrow column at font scale 2: "r5 tp1·pp1·dp0", "r0–7 tp0–7" (a dimension of size 1 left out: no
// pipeline, one replica), or nothing when the ranks are not a whole box of coordinates (the plain label then).
std::optional<std::string> coordinates_span(const std::vector<int>& ranks, const Scenario& layout) {
  RankCoordinates low{}, high{};
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    const auto c = rank_coordinates(layout, ranks[i]);
    if (!c) return std::nullopt;
    if (i == 0) low = high = *c;
    low = {std::min(low.tp, c->tp), std::min(low.pp, c->pp), std::min(low.dp, c->dp)};
    high = {std::max(high.tp, c->tp), std::max(high.pp, c->pp), std::max(high.dp, c->dp)};
  }
  const std::size_t box = static_cast<std::size_t>(high.tp - low.tp + 1) * static_cast<std::size_t>(high.pp - low.pp + 1) *
                          static_cast<std::size_t>(high.dp - low.dp + 1);
  if (box != ranks.size()) return std::nullopt;  // distinct ranks, so as many as the box holds means all of it
  const int stages = std::max(1, layout.strategy.stages);
  const int replicas = std::max(1, layout.cluster.world / layout.strategy.tp / stages);
  std::string label = "tp" + span(low.tp, high.tp);
  if (stages > 1) label += "·pp" + span(low.pp, high.pp);
  if (replicas > 1) label += "·dp" + span(low.dp, high.dp);
  return label;
}

// "rank 3", "ranks 0–63"; under tensor parallelism "r3 tp1·pp0·dp1", "r0–7 tp0–7".
std::string ranks_label(const std::vector<int>& ranks, const Scenario& layout) {
  const bool contiguous = ranks.back() - ranks.front() + 1 == static_cast<int>(ranks.size());
  if (contiguous) {
    if (const auto coordinates = coordinates_span(ranks, layout))
      return "r" + span(ranks.front(), ranks.back()) + " " + *coordinates;
    return ranks.size() == 1 ? "rank " + std::to_string(ranks[0])
                             : "ranks " + std::to_string(ranks.front()) + "–" + std::to_string(ranks.back());
  }
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
