// Timeline: a row per group of identical devices (as the memory panel groups them), a lane per stream (compute, communication, copy when used); ops as labelled boxes
// coloured by kind; gaps are waiting. Culls to the visible range and folds sub-pixel ops into one mark with a
// count, so a million-event trace stays smooth. Hover shows the op; click sets the playhead.
#pragma once
#include <vector>

#include "gui/panels/memory_panel.h"
#include "gui/playback.h"
#include "gui/time_view.h"
#include "trace/trace_store.h"

namespace shardscope::gui {

class TimelinePanel {
 public:
  // `groups`: ranks with identical memory series (group_identical_ranks); a group's row draws its first rank.
  void draw(const TraceStore& store, const std::vector<RankGroup>& groups, TimeView& view, Playback& playback);
};

}  // namespace shardscope::gui
