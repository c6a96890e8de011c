// Draws the ring demo (ring_view.h): a row of boxes per rank, one per element, grouped into the ring's chunks.
#include "gui/presenter/ring_view.h"

#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>

#include "gui/logic/palette.h"

namespace shardscope::gui {

namespace {

// Lavender: no memory category or op kind has it, so a chunk that just moved is not read as "activations" (yellow).
constexpr std::uint32_t kReceivedRgb = 0xC9B8E8;  // what moved in this step
constexpr std::uint32_t kFinishedRgb = 0xB9E4D4;  // pale bluish green: the element holds the full sum

std::string number_text(float v) {
  char text[32];
  std::snprintf(text, sizeof text, std::fabs(v - std::round(v)) < 1e-4f ? "%.0f" : "%.2f", static_cast<double>(v));
  return text;
}

std::string step_title(const lessons::RingDemo& demo, int step) {
  const int n = demo.ranks;
  if (step == 0) return "Start: each rank holds its own buffer, split into " + std::to_string(n) + " chunks";
  if (step <= n - 1)
    return "Reduce-scatter, step " + std::to_string(step) + " of " + std::to_string(n - 1) +
           ": each rank adds the chunk its left neighbour sends";
  return "All-gather, step " + std::to_string(step - (n - 1)) + " of " + std::to_string(n - 1) +
         ": each rank copies a finished chunk from its left neighbour";
}

}  // namespace

void draw_ring_demo(const lessons::RingDemo& demo, int step, float height) {
  step = std::clamp(step, 0, static_cast<int>(demo.steps.size()) - 1);
  const lessons::RingDemoStep& now = demo.steps[static_cast<std::size_t>(step)];
  const auto& result = demo.result();
  ImGui::TextWrapped("%s", step_title(demo, step).c_str());
  ImGui::Spacing();
  const float font = ImGui::GetFontSize();
  const std::size_t elements = now.buffers.front().size();
  const float label_width = ImGui::CalcTextSize("rank 00").x + font;
  const float gap = font * 0.6f;  // between chunks
  const float available = ImGui::GetContentRegionAvail().x - label_width - font * 8;
  const float cell = std::min(font * 5, (available - gap * static_cast<float>(demo.ranks)) / static_cast<float>(elements));
  const float row = std::min(font * 3.2f, (height - font * 8) / static_cast<float>(demo.ranks + 1));
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  auto cell_x = [&](std::size_t i) {
    int chunk = 0;
    while (chunk + 1 < demo.ranks && i >= demo.chunks[static_cast<std::size_t>(chunk)].second) ++chunk;
    return origin.x + label_width + static_cast<float>(i) * cell + static_cast<float>(chunk) * gap;
  };
  for (int c = 0; c < demo.ranks; ++c) {  // chunk headings
    const auto [begin, end] = demo.chunks[static_cast<std::size_t>(c)];
    if (begin == end) continue;
    draw->AddText(ImVec2(cell_x(begin), origin.y), IM_COL32(70, 70, 70, 255), ("chunk " + std::to_string(c)).c_str());
  }
  for (int r = 0; r < demo.ranks; ++r) {
    const float y = origin.y + font * 1.4f + static_cast<float>(r) * row;
    draw->AddText(ImVec2(origin.x, y + (row - font) * 0.4f), IM_COL32(20, 20, 20, 255), ("rank " + std::to_string(r)).c_str());
    const int received = now.chunk_received[static_cast<std::size_t>(r)];
    for (std::size_t i = 0; i < elements; ++i) {
      const float x = cell_x(i);
      const float v = now.buffers[static_cast<std::size_t>(r)][i];
      const bool in_received = received >= 0 && i >= demo.chunks[static_cast<std::size_t>(received)].first &&
                               i < demo.chunks[static_cast<std::size_t>(received)].second;
      const bool finished = step > 0 && v == result[static_cast<std::size_t>(r)][i];
      const std::uint32_t fill = in_received ? kReceivedRgb : finished ? kFinishedRgb : 0xFFFFFF;
      draw->AddRectFilled(ImVec2(x, y), ImVec2(x + cell - 4, y + row - 6), to_imgui_color(fill));
      draw->AddRect(ImVec2(x, y), ImVec2(x + cell - 4, y + row - 6), to_imgui_color(kChartBorderRgb), 0, 0, 2.0f);
      const std::string text = number_text(v);
      const ImVec2 size = ImGui::CalcTextSize(text.c_str());
      draw->AddText(ImVec2(x + (cell - 4 - size.x) / 2, y + (row - 6 - size.y) / 2), IM_COL32(10, 10, 10, 255), text.c_str());
    }
    if (received >= 0) {
      const int left = (r + demo.ranks - 1) % demo.ranks;
      const std::string from = "← chunk " + std::to_string(received) + " from rank " + std::to_string(left);
      draw->AddText(ImVec2(cell_x(elements - 1) + cell + font * 0.5f, y + (row - font) * 0.4f), IM_COL32(20, 20, 20, 255), from.c_str());
    }
  }
  const float legend_y = origin.y + font * 1.6f + static_cast<float>(demo.ranks) * row;
  ImGui::SetCursorScreenPos(ImVec2(origin.x, legend_y));
  for (const auto& [rgb, label] : {std::pair{kReceivedRgb, "received in this step"}, std::pair{kFinishedRgb, "holds the full sum"}}) {
    ImGui::ColorButton(label, ImGui::ColorConvertU32ToFloat4(to_imgui_color(rgb)), ImGuiColorEditFlags_NoTooltip, ImVec2(font, font));
    ImGui::SameLine();
    ImGui::TextUnformatted(label);
    ImGui::SameLine(0, font * 2);
  }
  ImGui::NewLine();
  ImGui::TextWrapped("Run for real by the CPU backend's ring (2(n−1) = %d steps). Each rank sends and receives 2(n−1) chunks of S/n "
                     "bytes, so an all-reduce of S bytes costs 2(n−1)/n · S/B on links of bandwidth B.",
                     2 * (demo.ranks - 1));
}

}  // namespace shardscope::gui
