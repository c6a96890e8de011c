// Zoom, pan and playhead clicks over a TimeView; the time ruler and the stop of a run that ran out of memory.
#include "gui/widgets/time_input.h"

#include <imgui.h>

#include <algorithm>
#include <cmath>

#include "gui/logic/caption.h"

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

// Wide enough for the longest group label and the longest peak label ("peak 1000.40 MiB": format_bytes keeps MiB
// below 1,024 MiB), with a little air before the chart.
float time_axis_margin() {
  return std::max(ImGui::CalcTextSize("ranks 0000–0000").x, ImGui::CalcTextSize("peak 1000.00 MiB").x) + ImGui::GetFontSize() * 0.4f;
}

namespace {

// "100.000 ms" → "100 ms", "1.500 s" → "1.5 s": a tick sits on a round value, so the zeros say nothing.
std::string ruler_label(TimeNs t) {
  std::string text = format_duration(t);
  const std::size_t space = text.find(' ');
  const std::size_t dot = text.find('.');
  if (space == std::string::npos || dot == std::string::npos || dot > space) return text;
  std::size_t end = space;
  while (end > dot + 1 && text[end - 1] == '0') --end;
  if (end == dot + 1) end = dot;
  return text.substr(0, end) + text.substr(space);
}

}  // namespace

void draw_time_ruler(const TimeView& view, float x0, float width) {
  const ImVec2 p0 = ImGui::GetCursorScreenPos();
  const float height = ImGui::GetFontSize() * 1.2f;
  ImGui::Dummy(ImVec2(width + (x0 - p0.x), height));
  ImDrawList* draw = ImGui::GetWindowDrawList();
  // A tick step of 1, 2 or 5 × 10^k ns leaving room for a label as wide as the widest one ("100.000 ms") between ticks.
  const float label_room = ImGui::CalcTextSize(format_duration(view.t1()).c_str()).x + ImGui::GetFontSize() * 1.5f;  // unshortened: the widest
  const double wanted = view.span_ns() / std::max(1.0, static_cast<double>(width / label_room));
  double step = std::pow(10.0, std::floor(std::log10(std::max(wanted, 1.0))));
  for (double factor : {2.0, 5.0, 10.0})
    if (step < wanted) step = std::pow(10.0, std::floor(std::log10(std::max(wanted, 1.0)))) * factor;
  const auto first = static_cast<long long>(std::ceil(static_cast<double>(view.t0()) / step));
  for (long long i = first; i * step <= static_cast<double>(view.t1()); ++i) {
    const auto t = static_cast<TimeNs>(i * step);
    const float x = static_cast<float>(view.x_of(t, x0, width));
    draw->AddLine(ImVec2(x, p0.y + height * 0.6f), ImVec2(x, p0.y + height), IM_COL32(120, 120, 120, 255));
    const std::string label = ruler_label(t);
    if (x + 2 + ImGui::CalcTextSize(label.c_str()).x <= x0 + width)  // a label cut at the edge reads as another number
      draw->AddText(ImVec2(x + 2, p0.y), IM_COL32(90, 90, 90, 255), label.c_str());
  }
}

std::optional<StopMark> draw_run_stop(ImDrawList* draw, const TraceData& data, int rank, std::optional<TimeNs> stopped,
                                      const TimeView& view, float x0, float width, float y0, float y1) {
  if (!stopped || *stopped > view.t1()) return std::nullopt;
  const float x = std::max(x0, static_cast<float>(view.x_of(*stopped, x0, width)));
  draw->AddRectFilled(ImVec2(x, y0), ImVec2(x0 + width, y1), IM_COL32(245, 245, 245, 255));
  const TraceRunError* oom = first_out_of_memory(data, rank);
  const bool own = oom && oom->t_ns == *stopped;
  draw->AddLine(ImVec2(x, y0), ImVec2(x, y1), own ? IM_COL32(210, 0, 0, 255) : IM_COL32(90, 90, 90, 255), 3.0f);
  return StopMark{x, own};
}

}  // namespace shardscope::gui
