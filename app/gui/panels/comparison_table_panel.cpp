// Per rank, each run's peak and its breakdown by category at that peak, and the difference (this run − the other),
// while a second run is compared (File → Compare with, --compare).
#include <imgui.h>

#include <algorithm>
#include <memory>
#include <string>

#include "gui/logic/palette.h"
#include "gui/logic/run_alignment.h"
#include "gui/panels/panel.h"
#include "gui/panels/window_facts.h"

namespace shardscope::gui {

namespace {

class ComparisonTablePanel final : public Panel {
 public:
  explicit ComparisonTablePanel(const WindowFacts& facts) : facts_(facts) {}

  void draw(const PanelFrame& frame) override {
    if (facts_.compare_name.empty()) return;
    if (!ImGui::CollapsingHeader(("Compared with " + facts_.compare_name).c_str(), ImGuiTreeNodeFlags_DefaultOpen)) return;
    ImGui::TextDisabled("a = this run (stacked), b = %s (outline)", facts_.compare_name.c_str());
    read_with_compare(frame.store, frame.compared, [&](const TraceData& first, const TraceData* second) {
      for (const RankComparison& row : compare_ranks(first, *second)) {
        if (row.rank >= 8) {
          ImGui::TextDisabled("… %zu ranks in all (shardscope-cli compare lists every one)",
                              std::max(first.ranks.size(), second->ranks.size()));
          break;
        }
        draw_rank(row);
      }
    });
  }

 private:
  static void draw_rank(const RankComparison& row) {
    ImGui::Text("rank %d%s", row.rank, !row.first ? " — only in b" : !row.second ? " — only in a" : "");
    if (!ImGui::BeginTable(("cmp" + std::to_string(row.rank)).c_str(), 4,
                           ImGuiTableFlags_SizingStretchProp | ImGuiTableFlags_BordersInnerH))
      return;
    for (const char* header : {"", "a", "b", "a − b"}) ImGui::TableSetupColumn(header);
    ImGui::TableHeadersRow();
    auto cell = [](const std::string& text) {
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(text.c_str());
    };
    auto bytes = [](const TraceMemoryPeak* p, Bytes b) { return p ? format_bytes(b) : std::string("—"); };
    auto line = [&](const std::string& label, Bytes a, Bytes b) {
      ImGui::TableNextRow();
      cell(label);
      cell(bytes(row.first, a));
      cell(bytes(row.second, b));
      cell(row.first && row.second ? (a == b ? "0" : (a > b ? "+" : "−") + format_bytes(a > b ? a - b : b - a)) : "—");
    };
    for (Category c : kStackingOrder) {
      const Bytes a = row.first ? row.first->by_category[c] : 0, b = row.second ? row.second->by_category[c] : 0;
      if (a != 0 || b != 0) line(std::string(category_label(c)), a, b);
    }
    line("peak", row.first ? row.first->allocated : 0, row.second ? row.second->allocated : 0);
    ImGui::EndTable();
  }

  const WindowFacts& facts_;
};

}  // namespace

std::unique_ptr<Panel> make_comparison_table_panel(PanelContext& context) {
  return std::make_unique<ComparisonTablePanel>(context.facts);
}

}  // namespace shardscope::gui
