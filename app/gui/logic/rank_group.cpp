// Grouping identical ranks by the memory signature the store folds as samples arrive.
#include "gui/logic/rank_group.h"

#include <algorithm>

namespace shardscope::gui {

namespace {

// Identical (t, allocated) series: compared by the signature the store folds as samples arrive, not sample by sample.
bool same_series(const RankTimeline& a, const RankTimeline& b) {
  return a.memory.size() == b.memory.size() && a.peak.allocated == b.peak.allocated &&
         a.memory_signature == b.memory_signature;
}

std::string ranks_label(const std::vector<int>& ranks) {
  if (ranks.size() == 1) return "rank " + std::to_string(ranks[0]);
  const bool contiguous = ranks.back() - ranks.front() + 1 == static_cast<int>(ranks.size());
  if (contiguous) return "ranks " + std::to_string(ranks.front()) + "–" + std::to_string(ranks.back());
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
  for (auto& g : groups) g.label = ranks_label(g.ranks);
  return groups;
}

}  // namespace shardscope::gui
