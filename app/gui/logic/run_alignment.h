// Lays a second run over the first by step and phase, not by absolute time: the phase markers both runs share (same
// name and step, in order) are matched, and a time of the second run maps linearly between its two neighbouring
// matched markers onto the first run's clock. So a faster run's step 2 lines up with the slower run's step 2.
// Before the first match and after the last, times shift by that match's offset. Aligned by time instead (a lesson
// about speed: a phase-aligned run's durations would be stretched onto the other's), times are taken as they are.
#pragma once
#include <utility>
#include <vector>

#include "trace/store/trace_store.h"

namespace shardscope::gui {

enum class Align { Phase, Time };

class PhaseAlignment {
 public:
  PhaseAlignment(const std::vector<TracePhaseMarker>& first, const std::vector<TracePhaseMarker>& second,
                 Align align = Align::Phase);
  // A time of the second run, on the first run's clock.
  TimeNs first_time_of(TimeNs second_t) const;
  std::size_t matched() const { return pairs_.size(); }

 private:
  std::vector<std::pair<TimeNs, TimeNs>> pairs_;  // (second's time, first's time), increasing in both
};

// Per rank of either run: each run's peak allocated and its breakdown at that peak; a rank one run lacks is null
// there. The window's comparison table (shardscope-cli compare prints the same figures).
struct RankComparison {
  int rank = 0;
  const TraceMemoryPeak* first = nullptr;
  const TraceMemoryPeak* second = nullptr;
};
std::vector<RankComparison> compare_ranks(const TraceData& first, const TraceData& second);

// Reads `store` and, when given, `compare` (each under its own lock), and calls fn(data, the compared data or null).
template <class Fn>
void read_with_compare(const TraceStore& store, const TraceStore* compare, Fn&& fn) {
  store.read([&](const TraceData& data) {
    if (compare) {
      compare->read([&](const TraceData& other) { fn(data, &other); });
    } else {
      fn(data, static_cast<const TraceData*>(nullptr));
    }
  });
}

}  // namespace shardscope::gui
