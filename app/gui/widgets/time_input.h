// Mouse and keyboard habits shared by the time-based panels (Tracy and Perfetto style): wheel zooms around
// the cursor, drag pans, click sets the playhead, W/S zoom and A/D pan; and what those panels draw alike on the
// time axis (the ruler, the end of a stopped run).
#pragma once
#include <optional>

#include "gui/logic/playback.h"
#include "gui/logic/time_view.h"
#include "trace/store/trace_store.h"

struct ImDrawList;

namespace shardscope::gui {

// Call right after an ImGui::InvisibleButton covering the plot area [x0, x0 + width].
void handle_time_input(TimeView& view, Playback& playback, float x0, float width);

// Left margin of every time plot (labels live there), so the memory charts and the timeline share one x axis.
float time_axis_margin();

// A ruler with time ticks over [x0, x0 + width] at the cursor; advances the cursor by its height.
void draw_time_ruler(const TimeView& view, float x0, float width);

// Where the run stopped (`stopped`, caption.h's run_stopped_at) on a rank's plot over [x0, x0 + width] × [y0, y1]:
// what follows is covered, since it never happened, and a line marks the stop, red on the rank whose allocation
// failed, grey on the others. Returns the line's x and whether the failure was this rank's; nullopt when the run did
// not stop or stopped after the view.
struct StopMark {
  float x = 0;
  bool own = false;
};
std::optional<StopMark> draw_run_stop(ImDrawList* draw, const TraceData& data, int rank, std::optional<TimeNs> stopped,
                                      const TimeView& view, float x0, float width, float y0, float y1);

}  // namespace shardscope::gui
