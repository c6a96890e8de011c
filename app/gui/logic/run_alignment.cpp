// PhaseAlignment and the per-rank comparison of two traces.
#include "gui/logic/run_alignment.h"

#include <algorithm>

namespace shardscope::gui {

PhaseAlignment::PhaseAlignment(const std::vector<TracePhaseMarker>& first, const std::vector<TracePhaseMarker>& second,
                               Align align) {
  if (align == Align::Time) return;  // no pairs: every time maps to itself
  // Walk both in order; a marker of the second run matches the next marker of the first with its name and step.
  std::size_t next = 0;
  for (const TracePhaseMarker& b : second)
    for (std::size_t i = next; i < first.size(); ++i)
      if (first[i].name == b.name && first[i].step == b.step) {
        if (pairs_.empty() || (b.t_ns > pairs_.back().first && first[i].t_ns >= pairs_.back().second))
          pairs_.emplace_back(b.t_ns, first[i].t_ns);
        next = i + 1;
        break;
      }
}

TimeNs PhaseAlignment::first_time_of(TimeNs t) const {
  if (pairs_.empty()) return t;
  if (t <= pairs_.front().first) return t + (pairs_.front().second - pairs_.front().first);
  if (t >= pairs_.back().first) return t + (pairs_.back().second - pairs_.back().first);
  const auto after = std::upper_bound(pairs_.begin(), pairs_.end(), t,
                                      [](TimeNs value, const std::pair<TimeNs, TimeNs>& p) { return value < p.first; });
  const auto before = after - 1;
  const double fraction = static_cast<double>(t - before->first) / static_cast<double>(after->first - before->first);
  return before->second + static_cast<TimeNs>(fraction * static_cast<double>(after->second - before->second));
}

std::vector<RankComparison> compare_ranks(const TraceData& first, const TraceData& second) {
  std::vector<RankComparison> rows(std::max(first.ranks.size(), second.ranks.size()));
  for (std::size_t r = 0; r < rows.size(); ++r) {
    rows[r].rank = static_cast<int>(r);
    if (r < first.ranks.size()) rows[r].first = &first.ranks[r].peak;
    if (r < second.ranks.size()) rows[r].second = &second.ranks[r].peak;
  }
  return rows;
}

}  // namespace shardscope::gui
