// Device cards drawn with ImDrawList.
#include "gui/panels/devices_panel.h"
#include "gui/logic/drawable_text.h"

#include <imgui.h>

#include <algorithm>

#include "gui/logic/caption.h"
#include "gui/logic/palette.h"

namespace shardscope::gui {

namespace {

// "at the peak: DDP bucket 0 306 MiB · cuBLAS workspace 32 MiB · fc0.weight 16 MiB", all ten on hover.
void draw_peak_tensors(const std::vector<LiveTensor>& tensors) {
  std::string line = "at the peak:";
  for (std::size_t i = 0; i < std::min<std::size_t>(3, tensors.size()); ++i)
    line += (i == 0 ? " " : " · ") + drawable_label(tensors[i].name) + " " + format_bytes(tensors[i].bytes);
  ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(0.3f, 0.3f, 0.3f, 1));
  ImGui::TextWrapped("%s", line.c_str());
  ImGui::PopStyleColor();
  if (!ImGui::IsItemHovered()) return;
  ImGui::BeginTooltip();
  ImGui::TextUnformatted("Largest tensors live at the peak");
  for (const LiveTensor& t : tensors) {
    ImGui::ColorButton("##c", ImGui::ColorConvertU32ToFloat4(to_imgui_color(category_rgb(t.category))), ImGuiColorEditFlags_NoTooltip,
                       ImVec2(ImGui::GetFontSize(), ImGui::GetFontSize()));
    ImGui::SameLine();
    ImGui::Text("%s  %s  (%s)", drawable_label(t.name).c_str(), format_bytes(t.bytes).c_str(), std::string(category_label(t.category)).c_str());
  }
  ImGui::EndTooltip();
}

}  // namespace

const std::vector<LiveTensor>& DevicesPanel::replayed_peak_tensors(const TraceData& data, const RankTimeline& rank, TimeNs t_ns) {
  const std::size_t before = rank.memory.samples_through(t_ns);  // allocations at or before t_ns
  for (const PeakTensors& cached : peak_tensors_)
    if (cached.trace == &rank.memory && cached.rank == rank.rank && cached.t_ns == t_ns && cached.allocations_before == before)
      return cached.tensors;
  if (peak_tensors_.size() >= 64) peak_tensors_.clear();  // one entry per rank drawn: only a new trace gets here
  PeakTensors& entry = peak_tensors_.emplace_back(PeakTensors{&rank.memory, rank.rank, t_ns, before, {}});
  for (LiveTensorAt& t : live_tensors_at(data, rank.rank, t_ns, kPeakTensors))
    entry.tensors.push_back({.name = std::move(t.name), .category = t.category, .bytes = t.bytes});
  return entry.tensors;
}

void DevicesPanel::draw(const PanelFrame& frame) {
  static const std::vector<Bytes> no_peaks;
  static const std::vector<std::vector<LiveTensor>> no_tensors;
  draw_cards(frame.store, frame.groups, frame.playback, facts_.predicted_peaks ? *facts_.predicted_peaks : no_peaks,
             facts_.peak_tensors ? *facts_.peak_tensors : no_tensors);
}

void DevicesPanel::draw_cards(const TraceStore& store, const std::vector<RankGroup>& groups, const Playback& playback,
                              const std::vector<Bytes>& predicted_peaks,
                              const std::vector<std::vector<LiveTensor>>& peak_tensors) {
  store.read([&](const TraceData& data) {
    if (data.ranks.empty()) return;
    const std::optional<TimeNs> stopped = run_stopped_at(data);
    for (const auto& group : groups) {
      if (static_cast<std::size_t>(group.ranks[0]) >= data.ranks.size()) continue;
      const RankTimeline& rank = data.ranks[static_cast<std::size_t>(group.ranks[0])];
      const TraceDevice* device = nullptr;
      for (const auto& d : data.header.devices)
        if (d.rank == rank.rank) device = &d;
      const Bytes capacity = device ? device->capacity : 0;
      const TraceMemoryPeak rank_peak = peak_before_stop(rank, stopped, capacity);
      TraceMemorySample now = rank.memory_at(playback.now_ns());
      if (stopped && playback.now_ns() >= *stopped) {  // the last allocation that happened
        const std::size_t n = samples_before_stop(rank, stopped, capacity);
        now = n > 0 ? rank.memory[n - 1] : TraceMemorySample{};
      }
      // Simulated: the plan went over the capacity. Executed: the run stopped on this rank's failed allocation.
      const bool oom = (capacity > 0 && rank_peak.allocated > capacity) || first_out_of_memory(data, rank.rank);

      ImGui::Text("%s%s%s", group.label.c_str(), device ? " · " : "", device ? drawable_label(device->name).c_str() : "");
      const ImVec2 p0 = ImGui::GetCursorScreenPos();
      const float width = std::max(40.0f, ImGui::GetContentRegionAvail().x);
      const float height = ImGui::GetFontSize() * 1.3f;
      ImGui::Dummy(ImVec2(width, height));
      ImDrawList* draw = ImGui::GetWindowDrawList();
      // The bar spans the run's peak, so a run using 2 % of an 80 GB card still shows its categories; the capacity
      // is on it (a red line) when the peak comes within half of it.
      const Bytes peak = std::max<Bytes>(rank_peak.allocated, 1);
      const bool capacity_on_bar = capacity > 0 && peak * 2 >= capacity;
      const Bytes full = capacity_on_bar ? std::max(capacity, peak) * 21 / 20 : peak * 11 / 10;
      auto x_of = [&](Bytes b) { return p0.x + static_cast<float>(static_cast<double>(b) / static_cast<double>(full)) * width; };
      draw->AddRectFilled(p0, ImVec2(p0.x + width, p0.y + height), IM_COL32(250, 250, 250, 255));
      Bytes below = 0;
      for (Category c : kStackingOrder) {
        if (now.by_category[c] <= 0) continue;
        draw->AddRectFilled(ImVec2(x_of(below), p0.y), ImVec2(x_of(below + now.by_category[c]), p0.y + height), to_imgui_color(category_rgb(c)));
        below += now.by_category[c];
      }
      const float peak_x = x_of(rank_peak.allocated);
      draw->AddLine(ImVec2(peak_x, p0.y - 2), ImVec2(peak_x, p0.y + height + 2), IM_COL32(30, 30, 30, 255), 2.0f);
      if (capacity_on_bar) {
        const float cap_x = x_of(capacity);
        draw->AddLine(ImVec2(cap_x, p0.y - 2), ImVec2(cap_x, p0.y + height + 2), IM_COL32(220, 0, 0, 255), oom ? 3.0f : 2.0f);
      }
      draw->AddRect(p0, ImVec2(p0.x + width, p0.y + height), oom ? IM_COL32(220, 0, 0, 255) : IM_COL32(150, 150, 150, 255), 0, 0, oom ? 2.0f : 1.0f);
      const auto r = static_cast<std::size_t>(rank.rank);
      const bool has_prediction = r < predicted_peaks.size();
      if (has_prediction) {  // a dashed-looking blue tick: where the plan said the peak would be
        const float x = x_of(predicted_peaks[r]);
        for (float y = p0.y - 3; y < p0.y + height + 3; y += 4) draw->AddLine(ImVec2(x, y), ImVec2(x, y + 2), IM_COL32(0, 90, 200, 255), 2.0f);
      }
      ImGui::Text("now %s · peak %s", format_bytes(now.allocated).c_str(), format_bytes(rank_peak.allocated).c_str());
      if (has_prediction) {
        const bool equal = predicted_peaks[r] == rank_peak.allocated;
        ImGui::TextColored(equal ? ImVec4(0.1f, 0.45f, 0.1f, 1) : ImVec4(0.75f, 0.35f, 0.0f, 1), "predicted %s (exact)%s",
                           format_bytes(predicted_peaks[r]).c_str(), equal ? " — equal" : "");
      }
      if (capacity > 0) {  // on a line of its own: it is long, and a projector's font is large
        if (oom) ImGui::TextColored(ImVec4(0.85f, 0.1f, 0.1f, 1), "> %s: OUT OF MEMORY", format_bytes(capacity).c_str());
        else
          ImGui::TextDisabled("of %s (%.0f %%)%s", format_bytes(capacity).c_str(),
                              100.0 * static_cast<double>(rank_peak.allocated) / static_cast<double>(capacity),
                              capacity_on_bar ? "" : "; bar = peak");
      }
      if (r < peak_tensors.size() && !peak_tensors[r].empty()) {
        draw_peak_tensors(peak_tensors[r]);
      } else if (const auto& replayed = replayed_peak_tensors(data, rank, rank_peak.t_ns); !replayed.empty()) {
        draw_peak_tensors(replayed);  // an opened trace file has no accounting: its allocations replayed up to the peak
      }
      ImGui::Spacing();
    }
  });
}

}  // namespace shardscope::gui
