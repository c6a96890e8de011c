// Stacked-area memory charts drawn with ImDrawList, one per group of identical ranks.
#include "gui/panels/memory_panel.h"
#include "gui/logic/drawable_text.h"

#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "gui/logic/caption.h"
#include "gui/logic/axis_ticks.h"
#include "gui/logic/memory_scale.h"
#include "gui/logic/palette.h"
#include "gui/logic/run_alignment.h"
#include "gui/logic/setting_differences.h"
#include "gui/widgets/time_input.h"

namespace shardscope::gui {

namespace {

// Index one past the last sample at or before t, searching on from `from` (at or before the answer): the series'
// checkpoint times take the search to within 64 samples from a compact array (TraceMemorySeries::first_after).
std::size_t samples_up_to(const TraceMemorySeries& m, std::size_t from, TimeNs t) { return m.first_after(from, m.size(), t); }

// What a column ending at t shows of the samples [from, to) that fall in it: the one with the highest allocated
// bytes (the first of equals; the store's index finds it in O(log n)), so a short peak inside one pixel column stays
// visible, exactly; with none in it, the state at t.
TraceMemorySample column_sample(const RankTimeline& rank, std::size_t from, std::size_t to, TimeNs t) {
  if (from < to) return rank.memory[rank.highest_allocated(from, to)];
  if (to > 0) return rank.memory[to - 1];
  return rank.memory_at(t);
}

// The second run's total allocated as a dark outline over the first run's stack, its times mapped onto the first
// run's clock by phase (or taken as they are); per pixel column the highest value, so a short peak stays visible. A
// second run that ran out of memory ends where it stopped, marked, instead of climbing on through the capacity.
template <class YOf>
void draw_compare_outline(ImDrawList* draw, const RankTimeline& rank, const RankTimeline& other, std::optional<TimeNs> other_stop,
                          Align align, const TimeView& view, float x0, float width, float data_top, YOf y_of) {
  const PhaseAlignment alignment(rank.phases, other.phases, align);
  std::vector<ImVec2> points;  // at most three per pixel column: enter, column maximum, leave
  float column = std::numeric_limits<float>::lowest();
  Bytes level = 0, column_max = 0;
  auto close_column = [&] {
    if (column == std::numeric_limits<float>::lowest()) return;
    points.emplace_back(column, y_of(column_max));
    points.emplace_back(column + 1, y_of(level));
  };
  float stop_x = -1;
  for (const TraceMemorySample& s : other.memory) {
    if (other_stop && s.t_ns > *other_stop) break;
    const float x = static_cast<float>(view.x_of(alignment.first_time_of(s.t_ns), x0, width));
    if (x < x0) {
      level = s.allocated;
      continue;
    }
    if (x > x0 + width) break;
    if (std::floor(x) != column) {
      close_column();
      column = std::floor(x);
      points.emplace_back(column, y_of(level));
      column_max = level;
    }
    level = s.allocated;
    column_max = std::max(column_max, level);
  }
  close_column();
  if (points.empty()) points.emplace_back(x0, y_of(level));
  if (other_stop) {
    stop_x = std::clamp(static_cast<float>(view.x_of(alignment.first_time_of(*other_stop), x0, width)), x0, x0 + width);
    points.emplace_back(stop_x, y_of(level));
  } else {
    points.emplace_back(x0 + width, y_of(level));
  }
  if (points.size() > 1) draw->AddPolyline(points.data(), static_cast<int>(points.size()), IM_COL32(15, 15, 15, 255), 0, 2.0f);
  if (stop_x >= 0) {  // a cross where the compared run stopped, and what stopped it
    const float y = y_of(level), r = ImGui::GetFontSize() * 0.3f;
    draw->AddLine(ImVec2(stop_x - r, y - r), ImVec2(stop_x + r, y + r), IM_COL32(210, 0, 0, 255), 2.5f);
    draw->AddLine(ImVec2(stop_x - r, y + r), ImVec2(stop_x + r, y - r), IM_COL32(210, 0, 0, 255), 2.5f);
    const char* label = "b: out of memory";
    const float label_width = ImGui::CalcTextSize(label).x;
    const float label_x = stop_x + r + label_width <= x0 + width ? stop_x + r + 2 : std::max(x0, stop_x - r - 2 - label_width);
    // Beside the cross, never up in the phase labels' strip.
    draw->AddText(ImVec2(label_x, std::max(data_top, y - ImGui::GetFontSize() * 0.5f)), IM_COL32(210, 0, 0, 255), label);
  }
}

// What a rank sets the scale with (logic/memory_scale.h): its highest allocated; its highest reserved where the chart
// draws it (a run recorded from PyTorch or imported: measured, drawn as a line); its highest device use.
void add_to_scale(MemoryScaleInput& input, const RankTimeline& rank, bool reserved_drawn) {
  input.allocated = std::max(input.allocated, rank.peak.allocated);
  if (reserved_drawn) input.reserved = std::max(input.reserved, rank.peak.reserved);
  for (const auto& d : rank.device_memory) input.device_use = std::max(input.device_use, d.used);
}

// The caching allocator's reserved bytes of a recorded run, as a thin line over the stack (its own label, as the
// device use has): the chart's scale counts it, so what fills the room above the stack is on screen. Drawn where it
// ever exceeds allocated (a CPU recording's reserved is its allocated, or nothing).
template <typename YOf>
void draw_reserved(const RankTimeline& rank, const std::vector<std::pair<float, Bytes>>& columns, float column_width,
                   YOf y_of) {
  if (columns.empty() || rank.peak.reserved <= rank.peak.allocated) return;
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const ImU32 colour = IM_COL32(110, 110, 110, 230);  // a neutral grey: no category's or timeline colour
  for (std::size_t i = 0; i < columns.size(); ++i) {
    const auto& [x, reserved] = columns[i];
    draw->AddLine(ImVec2(x, y_of(reserved)), ImVec2(x + column_width, y_of(reserved)), colour, 1.0f);
    if (i + 1 < columns.size() && columns[i + 1].second != reserved)
      draw->AddLine(ImVec2(x + column_width, y_of(reserved)), ImVec2(x + column_width, y_of(columns[i + 1].second)), colour, 1.0f);
  }
  Bytes highest = 0;
  float at = columns.front().first;
  for (const auto& [x, reserved] : columns)
    if (reserved > highest) highest = reserved, at = x;
  const float right = columns.back().first + column_width;  // never cut at the chart's right edge
  const float label_x = std::max(columns.front().first, std::min(at + 4, right - ImGui::CalcTextSize("reserved").x - 4));
  draw->AddText(ImVec2(label_x, y_of(highest) - ImGui::GetTextLineHeight()), colour, "reserved");
}

}  // namespace

void MemoryPanel::draw(const PanelFrame& frame) {
  one_scale = options_.one_memory_scale;
  highlight = frame.selection;
  hidden_ = frame.hidden;
  read_with_compare(frame.store, frame.compared, [&](const TraceData& data, const TraceData* other) {
    draw_charts(data, frame.groups, frame.view, frame.playback, other);
  });
}

// The focused band's largest height over the visible time range of the focused rank's chart (every chart when no
// rank is focused); 0 without a focused category.
Bytes MemoryPanel::focused_band(const TraceData& data, const std::vector<RankGroup>& groups, const TimeView& view) const {
  if (!highlight.category || !one_scale) return 0;
  constexpr std::size_t kMaxSamples = 1'000'000;  // a lesson's runs are small; a huge trace keeps the plain scale
  Bytes band = 0;
  for (const RankGroup& group : groups) {
    if (highlight.rank >= 0 && std::find(group.ranks.begin(), group.ranks.end(), highlight.rank) == group.ranks.end()) continue;
    const RankTimeline* rank = data.rank(group.ranks.front());
    if (!rank) continue;
    const std::size_t first = rank->memory.first_after(0, rank->memory.size(), view.t0());
    const std::size_t last = rank->memory.first_after(first, rank->memory.size(), view.t1());
    if (last - first > kMaxSamples) return 0;
    for (std::size_t i = first == 0 ? 0 : first - 1; i < last; ++i)
      band = std::max(band, rank->memory[i].by_category[*highlight.category]);
  }
  return band;
}

void MemoryPanel::draw_charts(const TraceData& data, const std::vector<RankGroup>& groups, TimeView& view,
                              Playback& playback, const TraceData* compare) {
  if (data.ranks.empty()) {
    ImGui::TextDisabled("No memory events yet.");
    return;
  }
  Bytes capacity = 0;
  for (const auto& d : data.header.devices) capacity = std::max(capacity, d.capacity);
  MemoryScaleInput input;
  input.capacity = capacity;
  input.to_capacity = options_.memory_scale_to_capacity;
  for (const auto& r : data.ranks) add_to_scale(input, r, recorded_from_pytorch(data.header.source));
  if (compare)  // one scale for both runs, so their heights compare
    for (const auto& r : compare->ranks) add_to_scale(input, r, recorded_from_pytorch(compare->header.source));
  // One scale for every chart so devices compare at a glance; the capacity line shows when usage nears it, and is
  // named in the header when it lies far above. A step's focused band gets the room instead: the scale stops just
  // above the band's top, so bands above it run off the chart (said in the header) and the band is as tall as the
  // stack under it allows.
  const MemoryScale fitted = memory_scale(input);
  Bytes scale = fitted.top;
  // A step's focused band is stacked first, on the axis, and gets the room: the scale is twice its largest height in
  // view, so it fills half of each chart, what is stacked on it shows above and the rest runs off the top.
  // (Not while comparing: the other run's outline is the point then, and must stay on the chart.)
  const Bytes band = compare ? 0 : focused_band(data, groups, view);
  const bool focus_scaled = band > 0 && band * 2 < scale;
  if (focus_scaled) scale = band * 2;
  ImGui::PushTextWrapPos(0.0f);  // a projector's font scale wraps the line rather than cutting it at the edge
  std::string scale_text = one_scale ? redact(hidden_, "scale " + format_bytes(scale)) : "each device to its own peak";
  if (focus_scaled) scale_text += ", set by the " + std::string(category_label(*highlight.category)) + " band (stacked first)";
  if (one_scale && !focus_scaled)
    if (const std::string above = above_scale_note(input, fitted); !above.empty()) scale_text += "; " + above;
  ImGui::TextDisabled("Memory by category · %s · %s", drawable_label(data.header.accounting_rules).c_str(), scale_text.c_str());
  // Before anyone reads the two runs' bars: what the compared run is, and what it changes.
  if (compare) {
    const std::string differences = describe_differences(data.header, compare->header);
    ImGui::TextDisabled("outline: b's total, aligned by %s%s%s", options_.align == Align::Time ? "time" : "phase",
                        differences.empty() ? "" : "; b ", differences.c_str());
  }
  ImGui::PopTextWrapPos();
  // Every chart on screen at once (a projector shows 4 and 8 ranks at font scale 2 without scrolling): the room is
  // shared out, down to a line and a half a chart; only past that do the charts scroll.
  const std::size_t charts = std::min(groups.size(), kMaxCharts) + (groups.size() > kMaxCharts ? 1 : 0);
  const float spacing = ImGui::GetStyle().ItemSpacing.y;
  const float chart_height = std::max(ImGui::GetTextLineHeight() * 1.5f,
                                      ImGui::GetContentRegionAvail().y / static_cast<float>(std::max<std::size_t>(charts, 1)) - spacing);
  ImGui::BeginChild("charts", ImVec2(0, 0), false, ImGuiWindowFlags_AlwaysVerticalScrollbar);
  if (groups.size() > kMaxCharts) draw_aggregate(data, capacity, scale, view, playback, chart_height);
  // Each device to its own peak (View menu): the same rule over the group's rank and its compared twin, worked out
  // only then.
  const auto own_scale = [&](int rank) {
    MemoryScaleInput own;
    own.capacity = capacity;
    own.to_capacity = options_.memory_scale_to_capacity;
    add_to_scale(own, data.ranks[static_cast<std::size_t>(rank)], recorded_from_pytorch(data.header.source));
    if (const RankTimeline* other = compare ? compare->rank(rank) : nullptr)
      add_to_scale(own, *other, recorded_from_pytorch(compare->header.source));
    return memory_scale(own).top;
  };
  for (const auto& group : groups)
    if (static_cast<std::size_t>(group.ranks[0]) < data.ranks.size())
      draw_chart(data, group, capacity, one_scale ? scale : own_scale(group.ranks[0]), view, playback, chart_height,
                 compare);
  ImGui::EndChild();
}

void MemoryPanel::draw_aggregate(const TraceData& data, Bytes capacity, Bytes scale, TimeView& view, Playback& playback,
                                 float height) {
  const ImVec2 corner = ImGui::GetCursorScreenPos();
  const float margin = time_axis_margin();
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const float line = ImGui::GetTextLineHeight();
  draw->AddText(corner, IM_COL32(20, 20, 20, 255), ("all " + std::to_string(data.ranks.size()) + " ranks").c_str());
  draw->AddText(ImVec2(corner.x, corner.y + line), IM_COL32(90, 90, 90, 255), "least – most");
  ImGui::SetCursorScreenPos(ImVec2(corner.x + margin, corner.y));
  const ImVec2 p0 = ImGui::GetCursorScreenPos();
  const float width = std::max(50.0f, ImGui::GetContentRegionAvail().x);
  ImGui::InvisibleButton("aggregate", ImVec2(width, height));
  handle_time_input(view, playback, p0.x, width);
  constexpr float kColumn = 2.0f;
  const int columns = static_cast<int>(width / kColumn);
  Envelope& e = envelope_;
  if (e.generation != data.event_count || e.t0 != view.t0() || e.t1 != view.t1() || e.columns != columns) {
    e = {data.event_count, view.t0(), view.t1(), columns, std::vector<Bytes>(static_cast<std::size_t>(columns)),
         std::vector<Bytes>(static_cast<std::size_t>(columns))};
    for (int c = 0; c < columns; ++c) {
      const TimeNs t = view.t_of(p0.x + static_cast<float>(c + 1) * kColumn, p0.x, width);
      Bytes low = std::numeric_limits<Bytes>::max(), high = 0;
      for (const auto& rank : data.ranks) {
        const Bytes b = rank.memory_at(t).allocated;
        low = std::min(low, b);
        high = std::max(high, b);
      }
      e.low[static_cast<std::size_t>(c)] = low;
      e.high[static_cast<std::size_t>(c)] = high;
    }
  }
  const float bottom = p0.y + height;
  auto y_of = [&](Bytes b) { return bottom - static_cast<float>(static_cast<double>(b) / static_cast<double>(scale)) * height; };
  draw->AddRectFilled(p0, ImVec2(p0.x + width, bottom), IM_COL32(255, 255, 255, 255));
  for (int c = 0; c < columns; ++c) {
    const float x = p0.x + static_cast<float>(c) * kColumn;
    draw->AddRectFilled(ImVec2(x, y_of(e.low[static_cast<std::size_t>(c)])), ImVec2(x + kColumn, bottom), IM_COL32(120, 120, 120, 255));
    draw->AddRectFilled(ImVec2(x, y_of(e.high[static_cast<std::size_t>(c)])), ImVec2(x + kColumn, y_of(e.low[static_cast<std::size_t>(c)])),
                        IM_COL32(190, 190, 190, 255));
  }
  if (capacity > 0 && capacity <= scale)
    draw->AddLine(ImVec2(p0.x, y_of(capacity)), ImVec2(p0.x + width, y_of(capacity)), IM_COL32(200, 0, 0, 255), 2.0f);
  const float playhead = static_cast<float>(view.x_of(playback.now_ns(), p0.x, width));
  draw->AddLine(ImVec2(playhead, p0.y), ImVec2(playhead, bottom), IM_COL32(20, 20, 20, 255), 2.0f);
  draw->AddRect(p0, ImVec2(p0.x + width, bottom), to_imgui_color(kChartBorderRgb));
  if (ImGui::IsItemHovered()) {
    const int c = std::clamp(static_cast<int>((ImGui::GetIO().MousePos.x - p0.x) / kColumn), 0, columns - 1);
    ImGui::SetTooltip("all ranks: least %s, most %s allocated", format_bytes(e.low[static_cast<std::size_t>(c)]).c_str(),
                      format_bytes(e.high[static_cast<std::size_t>(c)]).c_str());
  }
}

namespace {

// The last cudaMemGetInfo sample at or before t (GPU runs), or null.
const TraceDeviceMemorySample* device_use_at(const RankTimeline& rank, TimeNs t) {
  const TraceDeviceMemorySample* found = nullptr;
  for (const auto& d : rank.device_memory) {
    if (d.t_ns > t) break;
    found = &d;
  }
  return found;
}

// GPU runs: the device's measured use (cudaMemGetInfo at each phase) as a dark step line above the allocator's
// stack; the gap between them is what the CUDA context, cuBLAS and NCCL hold outside the allocator.
template <typename YOf>
void draw_device_use(const RankTimeline& rank, const TimeView& view, float x0, float width, Bytes scale, YOf y_of) {
  if (rank.device_memory.empty()) return;
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const ImU32 colour = IM_COL32(60, 60, 60, 230);
  for (std::size_t i = 0; i < rank.device_memory.size(); ++i) {
    const auto& d = rank.device_memory[i];
    const float from = static_cast<float>(view.x_of(d.t_ns, x0, width));
    const float to = i + 1 < rank.device_memory.size()
                         ? static_cast<float>(view.x_of(rank.device_memory[i + 1].t_ns, x0, width))
                         : x0 + width;
    draw->AddLine(ImVec2(from, y_of(d.used)), ImVec2(to, y_of(d.used)), colour, 1.5f);
    if (i + 1 < rank.device_memory.size())
      draw->AddLine(ImVec2(to, y_of(d.used)), ImVec2(to, y_of(rank.device_memory[i + 1].used)), colour, 1.5f);
  }
  if (rank.device_memory.back().used > scale) return;  // above the chart: the header names it
  const float y = y_of(rank.device_memory.back().used);
  draw->AddText(ImVec2(x0 + 4, y - ImGui::GetTextLineHeight()), colour, "device use (cudaMemGetInfo)");
}

}  // namespace

void MemoryPanel::draw_chart(const TraceData& data, const RankGroup& group, Bytes capacity, Bytes scale, TimeView& view,
                             Playback& playback, float height, const TraceData* compare) {
  const RankTimeline& rank = data.ranks[static_cast<std::size_t>(group.ranks[0])];
  const ImVec2 corner = ImGui::GetCursorScreenPos();
  const float margin = time_axis_margin();
  const std::optional<TimeNs> stopped = run_stopped_at(data);
  const TraceMemoryPeak peak = peak_before_stop(rank, stopped, capacity);  // nothing after an out of memory happened
  const bool oom = (capacity > 0 && peak.allocated > capacity) || first_out_of_memory(data, rank.rank);
  ImDrawList* draw = ImGui::GetWindowDrawList();
  // The margin: which ranks, their peak, whether they ran out of memory, and the axis' 0 — as many as the chart's
  // height holds, in that order, so a short chart never prints one over another.
  const float line = ImGui::GetTextLineHeight();
  const int margin_lines = static_cast<int>(height / line);
  draw->AddText(corner, IM_COL32(20, 20, 20, 255), group.label.c_str());
  if (margin_lines >= 2)
    draw->AddText(ImVec2(corner.x, corner.y + line), oom ? IM_COL32(210, 0, 0, 255) : IM_COL32(90, 90, 90, 255),
                  redact(hidden_, "peak " + format_bytes(peak.allocated)).c_str());
  if (oom && margin_lines >= 3) draw->AddText(ImVec2(corner.x, corner.y + 2 * line), IM_COL32(210, 0, 0, 255), "OUT OF MEMORY");
  if (margin_lines >= (oom ? 4 : 3)) draw->AddText(ImVec2(corner.x, corner.y + height - line), IM_COL32(130, 130, 130, 255), "0");
  ImGui::SetCursorScreenPos(ImVec2(corner.x + margin, corner.y));
  const ImVec2 p0 = ImGui::GetCursorScreenPos();
  const float width = std::max(50.0f, ImGui::GetContentRegionAvail().x);
  ImGui::InvisibleButton(group.label.c_str(), ImVec2(width, height));
  handle_time_input(view, playback, p0.x, width);
  const float bottom = p0.y + height;
  draw->AddRectFilled(p0, ImVec2(p0.x + width, bottom), IM_COL32(255, 255, 255, 255));
  draw->PushClipRect(p0, ImVec2(p0.x + width, bottom), true);
  // The phase labels have a strip of their own above the data (two rows where the chart is tall, one where it is
  // short, none on a sliver), so no label is ever drawn over the memory it names.
  const int strip_rows = height >= 7 * line ? 2 : height >= 4 * line ? 1 : 0;
  const float data_top = p0.y + static_cast<float>(strip_rows) * line;
  const float data_height = bottom - data_top;
  if (strip_rows > 0) draw->AddLine(ImVec2(p0.x, data_top), ImVec2(p0.x + width, data_top), to_imgui_color(kGridLineRgb));
  auto y_of = [&](Bytes b) { return bottom - static_cast<float>(static_cast<double>(b) / static_cast<double>(scale)) * data_height; };
  // Grid lines at binary steps behind the stack; their labels go over it at the right edge (below).
  const std::vector<Bytes> ticks = binary_ticks(scale);
  for (const Bytes tick : ticks) draw->AddLine(ImVec2(p0.x, y_of(tick)), ImVec2(p0.x + width, y_of(tick)), to_imgui_color(kGridLineRgb));
  const float span_from = highlight.has_span() ? static_cast<float>(view.x_of(highlight.from, p0.x, width)) : 0;
  const float span_to = highlight.has_span() ? static_cast<float>(view.x_of(highlight.to, p0.x, width)) : 0;
  // Without a focused band the span's shade goes behind the data; with one it goes in after the hatching, above the
  // stack only (the hatching would otherwise stripe it like a band).
  if (highlight.has_span() && !highlight.category)
    draw->AddRectFilled(ImVec2(span_from, p0.y), ImVec2(span_to, bottom), to_imgui_color(kHighlightSpanRgb));

  // The stacking order: the focused band first (on the axis, where its height reads at a glance), then the rest.
  std::vector<Category> stacking(std::begin(kStackingOrder), std::end(kStackingOrder));
  if (highlight.category)
    std::stable_partition(stacking.begin(), stacking.end(), [&](Category c) { return c == *highlight.category; });
  constexpr float kColumn = 2.0f;  // pixels per column
  std::vector<std::pair<ImVec2, ImVec2>> focused;  // the highlighted band's rectangles, drawn again over the hatching
  std::vector<std::pair<float, float>> stack_tops;   // each column's x and the top of its stack
  std::vector<std::pair<float, Bytes>> reserved_columns;  // a recorded run's: each column's x and its reserved
  const bool reserved_drawn = recorded_from_pytorch(data.header.source);
  // A column holds the samples after the previous column's end time up to its own.
  std::size_t from = samples_up_to(rank.memory, 0, view.t_of(p0.x - kColumn, p0.x, width));
  for (float x = p0.x; x < p0.x + width; x += kColumn) {
    const TimeNs t = view.t_of(x + kColumn, p0.x, width);
    const std::size_t to = samples_up_to(rank.memory, from, t);
    const TraceMemorySample s = column_sample(rank, from, to, t);
    from = to;
    Bytes below = 0;
    for (Category c : stacking) {
      if (s.by_category[c] <= 0) continue;
      const ImVec2 top_left(x, y_of(below + s.by_category[c])), bottom_right(x + kColumn, y_of(below));
      draw->AddRectFilled(top_left, bottom_right, to_imgui_color(category_rgb(c)));
      if (highlight.category && *highlight.category == c) focused.push_back({top_left, bottom_right});
      below += s.by_category[c];
    }
    stack_tops.emplace_back(x, y_of(below));
    if (reserved_drawn) reserved_columns.emplace_back(x, s.reserved);
  }
  // The lesson talks about one band: the others are hatched with white, not faded, so each keeps its own hue (a
  // faded vermillion reads as pink, a faded blue as the light blue of communication buffers), and the band talked
  // about is drawn again whole on top.
  if (highlight.category) {
    const float spacing = 6.0f;
    for (float x = p0.x - height; x < p0.x + width; x += spacing)
      draw->AddLine(ImVec2(x, bottom), ImVec2(x + height, p0.y), IM_COL32(255, 255, 255, 255), 2.0f);
    for (const auto& [top_left, bottom_right] : focused)
      draw->AddRectFilled(top_left, bottom_right, to_imgui_color(category_rgb(*highlight.category)));
    if (highlight.has_span())
      for (const auto& [x, top] : stack_tops)
        if (x + kColumn > span_from && x < span_to)
          draw->AddRectFilled(ImVec2(std::max(x, span_from), data_top), ImVec2(std::min(x + kColumn, span_to), top),
                              to_imgui_color(kHighlightSpanRgb));
  }
  if (highlight.has_span())
    for (const float x : {span_from, span_to})
      draw->AddLine(ImVec2(x, p0.y), ImVec2(x, bottom), to_imgui_color(kHighlightSpanEdgeRgb), 2.0f);
  // Labels no closer than 1.6 lines: on a short chart only every k-th tick is labelled.
  const float tick_pixels = ticks.empty() ? 1 : y_of(0) - y_of(ticks.front());
  const std::size_t label_every = static_cast<std::size_t>(std::ceil(ImGui::GetFontSize() * 1.6f / std::max(1.0f, tick_pixels)));
  for (std::size_t i = 0; i < ticks.size(); ++i) {
    const Bytes tick = ticks[i];
    const float y = y_of(tick);
    if ((i + 1) % label_every != 0) continue;
    if (capacity > 0 && std::abs(y - y_of(capacity)) < ImGui::GetFontSize()) continue;  // the capacity has its label
    const std::string label = tick_label(tick);
    const ImVec2 size = ImGui::CalcTextSize(label.c_str());
    const ImVec2 at(p0.x + width - size.x - 4, y - size.y);
    // The capacity's label hangs below its line at the same right edge: a tick a line or two under it would overprint.
    if (capacity > 0 && capacity <= scale) {
      const float capacity_label_top = y_of(capacity) + 1;
      if (at.y < capacity_label_top + size.y && y > capacity_label_top) continue;
    }
    if (at.y < data_top) continue;  // above the data: the phase labels' strip
    draw->AddRectFilled(ImVec2(at.x - 2, at.y), ImVec2(at.x + size.x + 2, y), IM_COL32(255, 255, 255, 190));
    draw->AddLine(ImVec2(at.x - 2, y), ImVec2(p0.x + width, y), IM_COL32(120, 120, 120, 255));
    draw->AddText(at, IM_COL32(90, 90, 90, 255), label.c_str());
  }
  // Phase labels fill the strip's rows left to right, the full name where it has room, else the short one, else none:
  // a marker whose name finds no room keeps its line (hovering names it). A step's end (after_step) is drawn as a step
  // boundary: darker and thicker.
  std::vector<float> row_free_x(static_cast<std::size_t>(strip_rows), -1e9f);
  for (const auto& phase : rank.phases) {
    if (phase.t_ns < view.t0() || phase.t_ns > view.t1()) continue;
    const float x = static_cast<float>(view.x_of(phase.t_ns, p0.x, width));
    const bool step_end = phase.name == "after_step";
    draw->AddLine(ImVec2(x, p0.y), ImVec2(x, bottom), step_end ? IM_COL32(40, 40, 40, 220) : IM_COL32(90, 90, 90, 140),
                  step_end ? 2.0f : 1.0f);
    for (const std::string& label : {phase_display_name(phase.name), phase_short_name(phase.name)}) {
      const float label_width = ImGui::CalcTextSize(label.c_str()).x;
      if (x + 2 + label_width > p0.x + width) continue;  // would run past the chart's edge
      const auto row = std::find_if(row_free_x.begin(), row_free_x.end(), [&](float free) { return x >= free; });
      if (row == row_free_x.end()) continue;
      draw->AddText(ImVec2(x + 2, p0.y + static_cast<float>(row - row_free_x.begin()) * line), IM_COL32(70, 70, 70, 255), label.c_str());
      *row = x + 6 + label_width;
      break;
    }
  }
  if (const RankTimeline* other = compare ? compare->rank(rank.rank) : nullptr)
    draw_compare_outline(draw, rank, *other, run_stopped_at(*compare), options_.align, view, p0.x, width, data_top, y_of);
  if (capacity > 0 && capacity <= scale) {
    const float y = y_of(capacity);
    draw->AddLine(ImVec2(p0.x, y), ImVec2(p0.x + width, y), IM_COL32(200, 0, 0, 255), 2.0f);
    draw->AddText(ImVec2(p0.x + width - ImGui::CalcTextSize("capacity").x - 4, y + 1), IM_COL32(200, 0, 0, 255), "capacity");
  }
  draw_reserved(rank, reserved_columns, kColumn, y_of);
  draw_device_use(rank, view, p0.x, width, scale, y_of);
  // Out of memory: the run ends at the first failed allocation of any rank (PyTorch raises, the other workers are
  // stopped), so nothing after it is drawn; a red line where this rank's own allocation failed.
  if (const auto stop = draw_run_stop(draw, data, rank.rank, stopped, view, p0.x, width, p0.y, bottom)) {
    const char* label = stop->own ? "OUT OF MEMORY here: the run stops" : "run stopped (another rank ran out of memory)";
    const float label_width = ImGui::CalcTextSize(label).x;
    const float label_x = stop->x + 4 + label_width <= p0.x + width ? stop->x + 4 : std::max(p0.x, stop->x - 4 - label_width);  // never cut
    draw->AddText(ImVec2(label_x, bottom - ImGui::GetFontSize() * 1.2f),
                  stop->own ? IM_COL32(210, 0, 0, 255) : IM_COL32(70, 70, 70, 255), label);
  }
  const float playhead = static_cast<float>(view.x_of(playback.now_ns(), p0.x, width));
  draw->AddLine(ImVec2(playhead, p0.y), ImVec2(playhead, bottom), IM_COL32(20, 20, 20, 255), 2.0f);
  draw->PopClipRect();
  draw->AddRect(p0, ImVec2(p0.x + width, bottom), to_imgui_color(kChartBorderRgb));
  if (std::find(group.ranks.begin(), group.ranks.end(), highlight.rank) != group.ranks.end())
    draw->AddRect(ImVec2(p0.x - 3, p0.y - 3), ImVec2(p0.x + width + 3, bottom + 3), to_imgui_color(kHighlightFrameRgb), 0, 0, 4.0f);

  if (ImGui::IsItemHovered()) {
    TimeNs t = view.t_of(ImGui::GetIO().MousePos.x, p0.x, width);
    if (stopped) t = std::min(t, *stopped);  // nothing happened after
    const TraceMemorySample s = rank.memory_at(t);
    ImGui::BeginTooltip();
    ImGui::Text("%s at %s", group.label.c_str(), format_duration(t).c_str());
    ImGui::Text("allocated %s · reserved %s", format_bytes(s.allocated).c_str(), format_bytes(s.reserved).c_str());
    if (const TraceDeviceMemorySample* d = device_use_at(rank, t))
      ImGui::Text("device use %s of %s · outside the allocator (context, cuBLAS, NCCL) %s", format_bytes(d->used).c_str(),
                  format_bytes(d->total).c_str(),
                  format_bytes(d->used > d->allocator_reserved ? d->used - d->allocator_reserved : 0).c_str());
    for (auto it = std::rbegin(kStackingOrder); it != std::rend(kStackingOrder); ++it) {  // top of the stack first
      const Category c = *it;
      if (s.by_category[c] == 0) continue;
      ImGui::ColorButton("##c", ImGui::ColorConvertU32ToFloat4(to_imgui_color(category_rgb(c))), ImGuiColorEditFlags_NoTooltip,
                         ImVec2(ImGui::GetFontSize(), ImGui::GetFontSize()));
      ImGui::SameLine();
      ImGui::Text("%s  %s", std::string(category_label(c)).c_str(), format_bytes(s.by_category[c]).c_str());
    }
    const auto live = live_tensors_at(data, rank.rank, t, 5);
    if (!live.empty()) {
      ImGui::Separator();
      ImGui::TextDisabled("largest tensors held");
      for (const LiveTensorAt& tensor : live)
        ImGui::Text("%s  %s  (%s)", drawable_label(tensor.name).c_str(), format_bytes(tensor.bytes).c_str(),
                    std::string(category_label(tensor.category)).c_str());
    }
    ImGui::EndTooltip();
  }
}

}  // namespace shardscope::gui
