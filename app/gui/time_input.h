// Mouse and keyboard habits shared by the time-based panels (Tracy and Perfetto style): wheel zooms around
// the cursor, drag pans, click sets the playhead, W/S zoom and A/D pan.
#pragma once
#include "gui/playback.h"
#include "gui/time_view.h"

namespace shardscope::gui {

// Call right after an ImGui::InvisibleButton covering the plot area [x0, x0 + width].
void handle_time_input(TimeView& view, Playback& playback, float x0, float width);

// Left margin of every time plot (labels live there), so the memory charts and the timeline share one x axis.
float time_axis_margin();

// A ruler with time ticks over [x0, x0 + width] at the cursor; advances the cursor by its height.
void draw_time_ruler(const TimeView& view, float x0, float width);

}  // namespace shardscope::gui
