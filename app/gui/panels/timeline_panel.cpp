// Timeline lanes drawn with ImDrawList; rows clipped with ImGuiListClipper.
#include "gui/panels/timeline_panel.h"
#include "gui/logic/drawable_text.h"

#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "gui/logic/caption.h"
#include "gui/logic/palette.h"
#include "gui/logic/run_alignment.h"
#include "gui/widgets/time_input.h"

namespace shardscope::gui {

namespace {

constexpr float kMinMessageWidth = 4.0f;  // pixels

struct LaneGeometry {
  float x0, width, y0, height;
};

const Op* op_of(const TraceData& data, int rank, OpIndex op) {
  if (!data.header.plan || op < 0) return nullptr;
  const auto& programs = data.header.plan->programs;
  if (rank < 0 || static_cast<std::size_t>(rank) >= programs.size()) return nullptr;
  const auto& ops = programs[static_cast<std::size_t>(rank)].ops;
  return static_cast<std::size_t>(op) < ops.size() ? &ops[static_cast<std::size_t>(op)] : nullptr;
}

std::string op_bytes_text(const Op& op) {
  if (op.kind == OpKind::Collective || op.kind == OpKind::Send || op.kind == OpKind::Recv) return format_bytes(op.payload);
  return op.bytes_accessed > 0 ? format_bytes(op.bytes_accessed) + " moved" : "";
}

// A span's colour: its op's kind, or what a plan-less trace's text names (span_kind.h); "other" when neither says.
std::uint32_t span_rgb(const TraceData& data, int rank, OpIndex op) {
  const std::optional<SpanKind> kind = data.span_kind(rank, op);
  return timeline_rgb(kind ? timeline_kind(*kind) : TimelineKind::Other);
}

// Where a span sits on a lane, or not visible: a barrier moves nothing, and an op that took no time (a wait marker:
// "wait for device 0's thread") has nothing to show; neither becomes a grey mark. Pipeline messages stay visible
// (and coloured) however short: a send or receive is never a hairline.
struct SpanPlace {
  bool visible = false;
  const Op* op = nullptr;
  float xa = 0, xb = 0;
};

SpanPlace place_span(const TraceData& data, int rank, const TraceSpan& span, const LaneGeometry& g, const TimeView& view) {
  SpanPlace place;
  place.op = op_of(data, rank, span.op);
  const std::optional<SpanKind> kind = data.span_kind(rank, span.op);
  if (kind && kind->kind == OpKind::Collective && kind->collective == CollectiveKind::Barrier) return place;
  if (!span.open() && span.end_ns == span.begin_ns) return place;
  place.xa = static_cast<float>(view.x_of(span.begin_ns, g.x0, g.width));
  place.xb = static_cast<float>(view.x_of(span.open() ? view.t1() : span.end_ns, g.x0, g.width));
  const bool message = kind && (kind->kind == OpKind::Send || kind->kind == OpKind::Recv);
  if (message && place.xb - place.xa < kMinMessageWidth) place.xb = place.xa + kMinMessageWidth;
  place.visible = true;
  return place;
}

bool message_begins_within(const StreamSpans& spans, TimeNs from, TimeNs to) {
  const auto it = std::lower_bound(spans.message_begins.begin(), spans.message_begins.end(), from);
  return it != spans.message_begins.end() && *it <= to;
}

// After the sub-pixel span `i` (at x = xa): the spans after it that begin and end in the same pixel column only widen
// the grey mark up to their ends, so they need not be visited one by one. Returns the index to go on from (the last
// span beginning in the column, or the first message among them: messages are drawn each), or i + 1 when there is
// nothing to jump over; `mark_end` becomes the furthest end jumped over.
std::size_t skip_within_column(const TraceData& data, int rank, const StreamSpans& spans, std::size_t i, std::size_t last, float xa,
                               const LaneGeometry& g, const TimeView& view, float& mark_end) {
  const TimeNs column_end = view.t_of(std::floor(xa) + 1.0, g.x0, g.width);
  const auto begins_before = [](const TraceSpan& s, TimeNs t) { return s.begin_ns < t; };
  // The column's end lies a few hundred spans on at most: a galloping search reads near i, not across the stream.
  std::size_t below = i + 1, above = i + 2;
  while (above < last && spans.spans[above - 1].begin_ns < column_end) {
    below = above;
    above = std::min(last, i + 1 + 2 * (above - i));
  }
  above = std::min(above, last);
  auto next = static_cast<std::size_t>(
      std::lower_bound(spans.spans.begin() + static_cast<std::ptrdiff_t>(below), spans.spans.begin() + static_cast<std::ptrdiff_t>(above),
                       column_end, begins_before) -
      spans.spans.begin());
  if (next < i + 3) return i + 1;  // at most one span after i begins in the column
  std::size_t resume = next - 1;    // the last one beginning in the column: it may reach past it
  const auto message = std::lower_bound(spans.message_begins.begin(), spans.message_begins.end(), spans.spans[i + 1].begin_ns);
  if (message != spans.message_begins.end() && *message < column_end)
    resume = static_cast<std::size_t>(std::lower_bound(spans.spans.begin() + static_cast<std::ptrdiff_t>(i) + 1,
                                                       spans.spans.begin() + static_cast<std::ptrdiff_t>(resume), *message,
                                                       begins_before) -
                                      spans.spans.begin());
  if (resume < i + 2 || spans.reach[resume - 1] >= column_end) return i + 1;  // nothing to skip, or one reaches out
  // The mark ends where the last visible span jumped over ends (a barrier or a wait marker after it leaves none).
  constexpr std::size_t kMostInvisible = 64;
  for (std::size_t j = resume - 1; j > i && j + kMostInvisible >= resume; --j)
    if (const SpanPlace place = place_span(data, rank, spans.spans[j], g, view); place.visible) {
      mark_end = std::max(mark_end, place.xb);
      return resume;
    }
  mark_end = std::max(mark_end, static_cast<float>(view.x_of(spans.reach[resume - 1], g.x0, g.width)));
  return resume;
}

// The span the mouse is over: the last visible one in begin order whose box (at least a pixel wide) holds mouse_x,
// as drawing them all in order would leave on top; O(log n) plus the spans within a pixel or so of the mouse.
const TraceSpan* span_under_mouse(const TraceData& data, int rank, const StreamSpans& spans, std::size_t first, std::size_t last,
                                  const LaneGeometry& g, const TimeView& view, float mouse_x) {
  const TimeNs t_mouse = view.t_of(mouse_x + 1.0, g.x0, g.width);  // a pixel further: rounding never hides one
  // Only a message is widened past one pixel: the search may stop a pixel left of the mouse unless one is near.
  const float widest = message_begins_within(spans, view.t_of(mouse_x - kMinMessageWidth - 1.0, g.x0, g.width), t_mouse)
                           ? kMinMessageWidth
                           : 1.0f;
  std::size_t j = static_cast<std::size_t>(
      std::upper_bound(spans.spans.begin() + static_cast<std::ptrdiff_t>(first), spans.spans.begin() + static_cast<std::ptrdiff_t>(last),
                       t_mouse, [](TimeNs t, const TraceSpan& s) { return t < s.begin_ns; }) -
      spans.spans.begin());
  while (j > first) {
    --j;
    const TraceSpan& span = spans.spans[j];
    const float xa = static_cast<float>(view.x_of(span.begin_ns, g.x0, g.width));
    const TimeNs reach = spans.reach[j] == kSpanOpen ? view.t1() : spans.reach[j];
    // Every earlier span begins by xa and ends by `reach`: none can hold the mouse.
    if (std::max(static_cast<float>(view.x_of(reach, g.x0, g.width)), xa + widest) < mouse_x) break;
    if (span.end_ns < view.t0()) continue;
    const SpanPlace place = place_span(data, rank, span, g, view);
    if (place.visible && mouse_x >= place.xa && mouse_x <= std::max(place.xb, place.xa + 1)) return &span;
  }
  return nullptr;
}

// One lane's spans; those under a pixel fold into grey marks. Work grows with the lane's pixels, not its spans:
// within one pixel column only the first and last span are visited (skip_within_column).
void draw_lane(ImDrawList* draw, const TraceData& data, int rank, const StreamSpans& spans, const LaneGeometry& g,
               const TimeView& view, const TraceSpan** hovered) {
  const float y1 = g.y0 + g.height - 1;
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  const bool mouse_in_lane = mouse.y >= g.y0 && mouse.y < y1 && mouse.x >= g.x0 && mouse.x < g.x0 + g.width;
  float merged_a = -1, merged_b = -1;
  int merged_count = 0;
  auto flush = [&] {
    if (merged_count == 0) return;
    draw->AddRectFilled(ImVec2(merged_a, g.y0 + 1), ImVec2(std::max(merged_b, merged_a + 1), y1), to_imgui_color(kFoldedOpsRgb));
    merged_count = 0;
  };
  const auto [first, last] = spans.overlapping(view.t0(), view.t1());
  if (mouse_in_lane)
    if (const TraceSpan* span = span_under_mouse(data, rank, spans, first, last, g, view, mouse.x)) *hovered = span;
  for (std::size_t i = first; i < last;) {
    const TraceSpan& span = spans.spans[i];
    const SpanPlace place = span.end_ns >= view.t0() ? place_span(data, rank, span, g, view) : SpanPlace{};
    if (!place.visible) {
      ++i;
      continue;
    }
    const float xa = place.xa, xb = place.xb;
    if (xb - xa < 1.0f) {  // fold sub-pixel ops into one grey mark
      if (merged_count > 0 && xa > merged_b + 1.0f) flush();
      if (merged_count == 0) merged_a = xa;
      merged_b = xb;
      ++merged_count;
      i = skip_within_column(data, rank, spans, i, last, xa, g, view, merged_b);
      continue;
    }
    flush();
    const Op* op = place.op;
    const std::uint32_t rgb = span_rgb(data, rank, span.op);
    const ImU32 colour = to_imgui_color(rgb);
    // A one-pixel gap between neighbours, so back-to-back ops of one colour stay countable.
    draw->AddRectFilled(ImVec2(xa, g.y0 + 1), ImVec2(xb - (xb - xa > 3.0f ? 1.0f : 0.0f), y1), colour);
    const std::string_view text = op ? std::string_view{} : data.op_text(rank, span.op);  // a plan-less trace's span name
    // A thin lane keeps only colours.
    if ((op || !text.empty()) && xb - xa > ImGui::GetFontSize() * 2 && g.height >= ImGui::GetFontSize()) {
      const ImVec4 clip(std::max(xa, g.x0) + 2, g.y0, std::min(xb, g.x0 + g.width) - 2, y1);
      const std::string label = op ? timeline_box_label(*op) : std::string(text);
      draw->AddText(nullptr, 0, ImVec2(clip.x, g.y0 + (g.height - ImGui::GetFontSize()) / 2),
                    needs_light_text(rgb) ? IM_COL32(255, 255, 255, 255) : IM_COL32(20, 20, 20, 255), label.c_str(), nullptr, 0,
                    &clip);
    }
    ++i;
  }
  flush();
}

// Idle compute (waiting, pipeline bubbles) shows as hatching: ops drawn on top cover it where the device works.
void draw_idle_hatch(ImDrawList* draw, float x0, float y0, float width, float height) {
  const float step = height * 0.6f;
  for (float x = x0 - height; x < x0 + width; x += step)
    draw->AddLine(ImVec2(x, y0 + height), ImVec2(x + height, y0), to_imgui_color(kIdleHatchRgb));
}

// Where a rank's communication lane sits on screen this frame (rows outside the clipper's range are absent).
struct CommLane {
  int rank;
  float y_mid;
};

// A line from each send's end to the end of the receive that matches it (same channel and sequence, same step),
// between rows on screen; at most a few hundred a frame, dense pipelines fold into the boxes anyway.
void draw_message_flows(ImDrawList* draw, const TraceData& data, const std::vector<CommLane>& lanes, const TimeView& view,
                        float x0, float width) {
  constexpr int kMaxLines = 400;
  int drawn = 0;
  auto lane_of = [&](int rank) -> const CommLane* {
    for (const auto& lane : lanes)
      if (lane.rank == rank) return &lane;
    return nullptr;
  };
  // Visits only the messages (StreamSpans::message_begins) of the spans overlapping [t0, t1], in begin order.
  auto for_each_message = [&](const StreamSpans& spans, TimeNs t0, TimeNs t1, auto&& fn) {
    const auto [first, last] = spans.overlapping(t0, t1);
    if (first >= last) return;
    auto it = std::lower_bound(spans.message_begins.begin(), spans.message_begins.end(), spans.spans[first].begin_ns);
    for (std::size_t i = first; i < last && it != spans.message_begins.end(); ++it) {
      i = static_cast<std::size_t>(std::lower_bound(spans.spans.begin() + static_cast<std::ptrdiff_t>(i),
                                                    spans.spans.begin() + static_cast<std::ptrdiff_t>(last), *it,
                                                    [](const TraceSpan& s, TimeNs t) { return s.begin_ns < t; }) -
                                   spans.spans.begin());
      for (std::size_t j = i; j < last && spans.spans[j].begin_ns == *it; ++j)
        if (spans.spans[j].end_ns >= t0 && fn(spans.spans[j])) return;
      while (std::next(it) != spans.message_begins.end() && *std::next(it) == *it) ++it;  // those spans are done
    }
  };
  for (const CommLane& from : lanes) {
    const RankTimeline* sender = data.rank(from.rank);
    if (!sender) continue;
    for_each_message(sender->stream(Stream::Communication), view.t0(), view.t1(), [&](const TraceSpan& send_span) {
      if (drawn >= kMaxLines) return true;
      const Op* send = op_of(data, from.rank, send_span.op);
      if (!send || send->kind != OpKind::Send || send_span.open()) return false;
      const CommLane* to = lane_of(send->peer);
      const RankTimeline* receiver = data.rank(send->peer);
      if (!to || !receiver) return false;
      for_each_message(receiver->stream(Stream::Communication), send_span.begin_ns, view.t1(), [&](const TraceSpan& recv_span) {
        const Op* recv = op_of(data, send->peer, recv_span.op);
        if (!recv || recv->kind != OpKind::Recv || recv->peer != from.rank || recv->sequence != send->sequence ||
            recv_span.step != send_span.step || recv_span.open())
          return false;
        if (to->y_mid == from.y_mid) return true;  // both ends in one row (identical ranks drawn once)
        const float xa = static_cast<float>(view.x_of(send_span.end_ns, x0, width));
        const float xb = static_cast<float>(view.x_of(recv_span.end_ns, x0, width));
        draw->AddLine(ImVec2(xa, from.y_mid), ImVec2(xb, to->y_mid), to_imgui_color(timeline_rgb(TimelineKind::SendRecv), 200), 1.5f);
        ++drawn;
        return true;  // a send has one receive
      });
      return false;
    });
  }
}

void span_tooltip(const TraceData& data, int rank, const TraceSpan& span) {
  const Op* op = op_of(data, rank, span.op);
  ImGui::BeginTooltip();
  const std::string name = drawable_text(op ? op->label.str() : std::string(data.op_text(rank, span.op)));
  ImGui::Text("rank %d · %s", rank, name.empty() ? "op" : name.c_str());
  if (op) {
    std::string kind = op->kind == OpKind::Compute ? compute_kind_name(op->compute_kind)
                       : op->kind == OpKind::Collective ? collective_kind_name(op->collective_kind)
                                                        : op_kind_name(op->kind);
    ImGui::Text("%s · step %d%s%s", kind.c_str(), span.step, op->layer >= 0 ? (" · layer " + std::to_string(op->layer)).c_str() : "",
                op->micro_batch >= 0 ? (" · micro-batch " + std::to_string(op->micro_batch)).c_str() : "");
    if (const std::string bytes = op_bytes_text(*op); !bytes.empty()) ImGui::Text("%s", bytes.c_str());
  } else if (const std::optional<SpanKind> kind = data.span_kind(rank, span.op)) {
    ImGui::Text("%s · step %d", timeline_label(timeline_kind(*kind)), span.step);  // what the span's text names
  }
  ImGui::Text("start %s · %s", format_duration(span.begin_ns).c_str(),
              span.open() ? "running" : ("duration " + format_duration(span.end_ns - span.begin_ns)).c_str());
  ImGui::EndTooltip();
}

// The compared run's compute ops on one lane, each box at its phase-aligned place (PhaseAlignment), coloured by kind;
// boxes under a pixel fold into the previous one.
// One stream of the compared run in a lane of its own, its times mapped onto this run's clock (by phase or as they
// are): compute and communication both, so "the price is time" shows where the other run communicates.
void draw_compared_stream(ImDrawList* draw, const TraceData& other_data, const RankTimeline& rank, const RankTimeline& other,
                          Stream stream, Align align, const LaneGeometry& g, const TimeView& view) {
  const PhaseAlignment alignment(rank.phases, other.phases, align);
  // A compared run that ran out of memory did nothing after: its lanes end there, with the same red line as its outline.
  const std::optional<TimeNs> stopped = run_stopped_at(other_data);
  if (stopped) {
    const float x = static_cast<float>(view.x_of(alignment.first_time_of(*stopped), g.x0, g.width));
    if (x >= g.x0 && x <= g.x0 + g.width) draw->AddLine(ImVec2(x, g.y0), ImVec2(x, g.y0 + g.height), IM_COL32(210, 0, 0, 255), 2.0f);
  }
  float last_x = -1e9f;
  for (const TraceSpan& span : other.stream(stream).spans) {
    if (span.open() || (stopped && span.begin_ns >= *stopped)) continue;
    const float xa = static_cast<float>(view.x_of(alignment.first_time_of(span.begin_ns), g.x0, g.width));
    const float xb = static_cast<float>(view.x_of(alignment.first_time_of(span.end_ns), g.x0, g.width));
    if (xb < g.x0 || xa > g.x0 + g.width || xb <= last_x) continue;
    const float left = std::max(xa, last_x), right = std::max(xb, left + 1.0f);
    draw->AddRectFilled(ImVec2(left, g.y0 + 1), ImVec2(right, g.y0 + g.height - 1), to_imgui_color(span_rgb(other_data, other.rank, span.op)));
    last_x = right;
  }
}

}  // namespace

void TimelinePanel::draw(const PanelFrame& frame) {
  highlight = frame.selection;
  read_with_compare(frame.store, frame.compared, [&](const TraceData& data, const TraceData* other) {
    draw_rows(data, frame.groups, frame.view, frame.playback, other);
  });
}

void TimelinePanel::draw_rows(const TraceData& data, const std::vector<RankGroup>& groups, TimeView& view,
                              Playback& playback, const TraceData* compare) {
  if (data.ranks.empty()) {
    ImGui::TextDisabled("No ops yet.");
    return;
  }
  const float label_width = time_axis_margin();
  draw_time_ruler(view, ImGui::GetCursorScreenPos().x + label_width,
                  std::max(50.0f, ImGui::GetContentRegionAvail().x - label_width - ImGui::GetStyle().ScrollbarSize));
  ImGui::BeginChild("lanes", ImVec2(0, 0), false, ImGuiWindowFlags_AlwaysVerticalScrollbar);
  // Rows must be the same height for the clipper: a copy lane for every rank if any rank uses one.
  const bool any_copy = std::any_of(data.ranks.begin(), data.ranks.end(),
                                    [](const RankTimeline& r) { return !r.stream(Stream::Copy).spans.empty(); });
  const int stream_lanes = any_copy ? 3 : 2;
  const int lanes = stream_lanes + (compare ? 2 : 0);  // the compared run's compute and communication lanes last
  // Every row on screen at once where it can be (a projector cannot scroll): lanes shrink to share the room, down to
  // a height where a row still holds its label; below a text line they keep only their colours.
  const float line = ImGui::GetTextLineHeight();
  // A row is its lanes, then the item spacing, half a spacing's dummy and the spacing again (below).
  const float rows = static_cast<float>(std::max<std::size_t>(groups.size(), 1));
  const float row_room = ImGui::GetContentRegionAvail().y / rows - ImGui::GetStyle().ItemSpacing.y * 2.5f;
  const float lane_height = std::floor(std::clamp(row_room / static_cast<float>(lanes), line / static_cast<float>(lanes) + 1.0f,
                                                  ImGui::GetFontSize() * 1.35f));
  const std::optional<TimeNs> stopped = run_stopped_at(data);
  std::vector<CommLane> comm_lanes;
  float lanes_x0 = 0, lanes_width = 0;
  ImGuiListClipper clipper;
  clipper.Begin(static_cast<int>(groups.size()));
  while (clipper.Step()) {
    for (int g = clipper.DisplayStart; g < clipper.DisplayEnd; ++g) {
      const RankGroup& group = groups[static_cast<std::size_t>(g)];
      const int r = group.ranks.front();
      if (static_cast<std::size_t>(r) >= data.ranks.size()) continue;
      const RankTimeline& rank = data.ranks[static_cast<std::size_t>(r)];
      const ImVec2 p0 = ImGui::GetCursorScreenPos();
      const float width = std::max(50.0f, ImGui::GetContentRegionAvail().x - label_width);
      ImDrawList* draw = ImGui::GetWindowDrawList();
      draw->AddText(p0, IM_COL32(30, 30, 30, 255), group.label.c_str());
      ImGui::SetCursorScreenPos(ImVec2(p0.x + label_width, p0.y));
      ImGui::InvisibleButton(("row" + std::to_string(r)).c_str(), ImVec2(width, lane_height * static_cast<float>(lanes)));
      handle_time_input(view, playback, p0.x + label_width, width);
      const float x0 = p0.x + label_width;
      for (int member : group.ranks) comm_lanes.push_back({member, p0.y + lane_height * 1.5f});
      lanes_x0 = x0;
      lanes_width = width;
      draw->PushClipRect(ImVec2(x0, p0.y), ImVec2(x0 + width, p0.y + lane_height * static_cast<float>(lanes)), true);
      const TraceSpan* hovered = nullptr;
      if (const RankTimeline* other = compare ? compare->rank(r) : nullptr)
        for (const Stream stream : {Stream::Compute, Stream::Communication}) {
          const float y0 = p0.y + lane_height * static_cast<float>(stream_lanes + (stream == Stream::Compute ? 0 : 1));
          draw->AddRectFilled(ImVec2(x0, y0), ImVec2(x0 + width, y0 + lane_height - 1), to_imgui_color(kLaneBackgroundRgb));
          draw_compared_stream(draw, *compare, rank, *other, stream, options_.align, {x0, width, y0, lane_height}, view);
        }
      for (int lane = 0; lane < stream_lanes; ++lane) {
        const Stream stream = static_cast<Stream>(lane);
        const float y0 = p0.y + lane_height * static_cast<float>(lane);
        draw->AddRectFilled(ImVec2(x0, y0), ImVec2(x0 + width, y0 + lane_height - 1), to_imgui_color(kLaneBackgroundRgb));
        // The span's shade goes under the idle hatching, so the bubbles a pipeline step points at stay hatched.
        if (highlight.has_span()) {
          const float from = static_cast<float>(view.x_of(highlight.from, x0, width)), to = static_cast<float>(view.x_of(highlight.to, x0, width));
          draw->AddRectFilled(ImVec2(from, y0), ImVec2(to, y0 + lane_height - 1), to_imgui_color(kHighlightSpanRgb));
          for (const float x : {from, to}) draw->AddLine(ImVec2(x, y0), ImVec2(x, y0 + lane_height - 1), to_imgui_color(kHighlightSpanEdgeRgb), 2.0f);
        }
        if (stream == Stream::Compute) draw_idle_hatch(draw, x0, y0, width, lane_height - 1);
        const TraceSpan* lane_hover = nullptr;
        draw_lane(draw, data, r, rank.stream(stream), {x0, width, y0, lane_height}, view, &lane_hover);
        if (lane_hover) hovered = lane_hover;
      }
      // Step boundaries (the rank's after_step markers) across its lanes, as in the memory charts.
      for (const auto& phase : rank.phases)
        if (phase.name == "after_step" && phase.t_ns >= view.t0() && phase.t_ns <= view.t1()) {
          const float x = static_cast<float>(view.x_of(phase.t_ns, x0, width));
          draw->AddLine(ImVec2(x, p0.y), ImVec2(x, p0.y + lane_height * static_cast<float>(lanes)), IM_COL32(40, 40, 40, 220), 2.0f);
        }
      // The run ends at the first out of memory: what the plan would have done next is covered.
      draw_run_stop(draw, data, r, stopped, view, x0, width, p0.y, p0.y + lane_height * static_cast<float>(lanes));
      const float playhead = static_cast<float>(view.x_of(playback.now_ns(), x0, width));
      draw->AddLine(ImVec2(playhead, p0.y), ImVec2(playhead, p0.y + lane_height * static_cast<float>(lanes)), IM_COL32(20, 20, 20, 255), 2.0f);
      draw->PopClipRect();
      if (std::find(group.ranks.begin(), group.ranks.end(), highlight.rank) != group.ranks.end())
        draw->AddRect(ImVec2(x0 - 3, p0.y - 2), ImVec2(x0 + width + 3, p0.y + lane_height * static_cast<float>(lanes) + 2),
                      to_imgui_color(kHighlightFrameRgb), 0, 0, 4.0f);
      // Each lane's name under the row's label, where a lane holds a line of text.
      for (int lane = 1; lane < lanes && lane_height >= line; ++lane)
        draw->AddText(ImVec2(p0.x + ImGui::GetFontSize() * 0.5f, p0.y + lane_height * static_cast<float>(lane)),
                      IM_COL32(110, 110, 110, 255),
                      lane == stream_lanes ? "b: compute" : lane == stream_lanes + 1 ? "b: comm" : lane == 1 ? "comm" : "copy");
      if (hovered && ImGui::IsItemHovered()) span_tooltip(data, r, *hovered);
      ImGui::Dummy(ImVec2(0, ImGui::GetStyle().ItemSpacing.y * 0.5f));
    }
  }
  if (!comm_lanes.empty()) {
    ImDrawList* draw = ImGui::GetWindowDrawList();
    draw->PushClipRect(ImVec2(lanes_x0, ImGui::GetWindowPos().y), ImVec2(lanes_x0 + lanes_width, ImGui::GetWindowPos().y + ImGui::GetWindowHeight()), true);
    draw_message_flows(draw, data, comm_lanes, view, lanes_x0, lanes_width);
    draw->PopClipRect();
  }
  ImGui::EndChild();
}

}  // namespace shardscope::gui
