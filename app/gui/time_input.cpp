// Zoom, pan and playhead clicks over a TimeView.
#include "gui/time_input.h"

#include <imgui.h>

#include <cmath>

namespace shardscope::gui {

void handle_time_input(TimeView& view, Playback& playback, float x0, float width) {
  ImGuiIO& io = ImGui::GetIO();
  if (!ImGui::IsItemHovered() && !ImGui::IsItemActive()) return;
  const TimeNs at_cursor = view.t_of(io.MousePos.x, x0, width);
  if (io.MouseWheel != 0) view.zoom(std::pow(0.8, io.MouseWheel), at_cursor);
  if (ImGui::IsItemActive() && ImGui::IsMouseDragging(ImGuiMouseButton_Left, 2.0f)) {
    view.pan(-io.MouseDelta.x / width * view.span_ns());
  } else if (ImGui::IsItemDeactivated() && io.MouseDragMaxDistanceSqr[0] < 4.0f) {  // a click, not the end of a drag
    playback.pause();
    playback.seek(at_cursor);
  }
  if (!io.WantTextInput) {
    if (ImGui::IsKeyDown('W')) view.zoom(0.97, at_cursor);
    if (ImGui::IsKeyDown('S')) view.zoom(1.03, at_cursor);
    if (ImGui::IsKeyDown('A')) view.pan(-view.span_ns() * 0.02);
    if (ImGui::IsKeyDown('D')) view.pan(view.span_ns() * 0.02);
  }
}

}  // namespace shardscope::gui
