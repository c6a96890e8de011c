// Timeline: a row per group of identical devices (as the memory panel groups them), a lane per stream (compute, communication, copy when used); ops as labelled boxes
// coloured by kind; gaps are waiting. Culls to the visible range and folds sub-pixel ops into one mark with a
// count, so a million-event trace stays smooth. Hover shows the op; click sets the playhead.
#pragma once
#include <vector>

#include "gui/panels/memory_panel.h"
#include "gui/highlight.h"
#include "gui/playback.h"
#include "gui/time_view.h"
#include "trace/trace_store.h"

namespace shardscope::gui {

class TimelinePanel {
 public:
  // `groups`: ranks with identical memory series (group_identical_ranks); a group's row draws its first rank.
  // `compare`: a second run whose compute ops get a lane of their own under each row, their times mapped onto this
  // run's clock by step and phase (run_alignment.h).
  void draw(const TraceStore& store, const std::vector<RankGroup>& groups, TimeView& view, Playback& playback,
            const TraceStore* compare = nullptr);
  // Presenter mode: the device's row framed, the span shaded.
  Highlight highlight;

 private:
  void draw_rows(const TraceData& data, const std::vector<RankGroup>& groups, TimeView& view, Playback& playback,
                 const TraceData* compare);
};

}  // namespace shardscope::gui
