// Timeline: a row per device, a lane per stream (compute, communication, copy when used); ops as labelled boxes
// coloured by kind; gaps are waiting. Culls to the visible range and folds sub-pixel ops into one mark with a
// count, so a million-event trace stays smooth. Hover shows the op; click sets the playhead.
#pragma once
#include "gui/playback.h"
#include "gui/time_view.h"
#include "trace/trace_store.h"

namespace shardscope::gui {

class TimelinePanel {
 public:
  void draw(const TraceStore& store, TimeView& view, Playback& playback);
};

}  // namespace shardscope::gui
