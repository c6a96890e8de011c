// The window's first view of a run (initial_view.h).
#include "gui/logic/initial_view.h"

#include <algorithm>

namespace shardscope::gui {

TimeRange initial_view(TimeNs begin, TimeNs end, std::optional<TimeNs> first_phase) {
  end = std::max(end, begin + 1);
  if (!first_phase || *first_phase <= begin) return {begin, end};
  const TimeNs marker = std::min(*first_phase, end);
  const TimeNs lead = (end - marker) / 40;
  return {std::max(begin, marker - lead), end};
}

}  // namespace shardscope::gui
