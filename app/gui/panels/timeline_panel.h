// Timeline: a row per group of identical devices (as the memory panel groups them), a lane per stream (compute, communication, copy when used); ops as labelled boxes
// coloured by kind; gaps are waiting. Culls to the visible range and folds sub-pixel ops into one mark with a
// count, so a million-event trace stays smooth. Hover shows the op; click sets the playhead.
#pragma once
#include <vector>

#include "gui/panels/panel.h"
#include "gui/panels/window_facts.h"

namespace shardscope::gui {

class TimelinePanel final : public Panel {
 public:
  explicit TimelinePanel(const ViewOptions& options) : options_(options) {}
  // A row per group of identical ranks (logic/rank_group.h), drawing its first rank. A compared run's compute and
  // communication ops get lanes of their own under each row, their times mapped onto this run's clock by step and
  // phase, or as they ran (ViewOptions::align, run_alignment.h). The selection (presenter mode) frames its device's
  // row and shades its span.
  void draw(const PanelFrame& frame) override;

 private:
  const ViewOptions& options_;
  Highlight highlight;  // the frame's selection, read each frame
  void draw_rows(const TraceData& data, const std::vector<RankGroup>& groups, TimeView& view, Playback& playback,
                 const TraceData* compare);
};

}  // namespace shardscope::gui
