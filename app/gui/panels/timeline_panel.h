// Timeline: a row per group of identical devices (as the memory panel groups them), a lane per stream (compute, communication, copy when used); ops as labelled boxes
// coloured by kind; gaps are waiting. Culls to the visible range and folds sub-pixel ops into one mark with a
// count, so a million-event trace stays smooth. Hover shows the op; click sets the playhead.
#pragma once
#include <vector>

#include "gui/panels/panel.h"

namespace shardscope::gui {

class TimelinePanel final : public Panel {
 public:
  // A row per group of identical ranks (logic/rank_group.h), drawing its first rank. A compared run's compute ops get
  // a lane of their own under each row, their times mapped onto this run's clock by step and phase
  // (run_alignment.h). The selection (presenter mode) frames its device's row and shades its span.
  void draw(const PanelFrame& frame) override;

 private:
  Highlight highlight;  // the frame's selection, read each frame
  void draw_rows(const TraceData& data, const std::vector<RankGroup>& groups, TimeView& view, Playback& playback,
                 const TraceData* compare);
};

}  // namespace shardscope::gui
