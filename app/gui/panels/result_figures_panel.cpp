// The run's figures under the form: the step time, the communication left exposed, how long compute sat idle, and
// for pipelines the schedule's own bubble (what GPipe's (p-1)/(m+p-1) describes).
#include <imgui.h>

#include <memory>
#include <optional>

#include "gui/logic/caption.h"
#include "gui/panels/panel.h"
#include "gui/panels/window_facts.h"
#include "scenario/parallel_layout.h"

namespace shardscope::gui {

namespace {

class ResultFiguresPanel final : public Panel {
 public:
  explicit ResultFiguresPanel(const WindowFacts& facts) : facts_(facts) {}

  void draw(const PanelFrame& frame) override {
    if (!facts_.result || !*facts_.result) return;
    const SimulationResult& result = **facts_.result;
    ImGui::Separator();
    ImGui::Text("step %s", format_duration(result.step_time_ns).c_str());
    ImGui::Text("exposed comm %s of %s", format_duration(result.exposed_comm_ns).c_str(), format_duration(result.total_comm_ns).c_str());
    // "Bubble" is the pipeline word; elsewhere the compute stream simply waits (for communication, for device 0).
    const auto header = frame.store.header();
    const std::optional<StrategyKind> strategy = parse_strategy(header.plan ? header.plan->strategy : "");
    const bool pipeline = strategy && is_pipeline(*strategy);
    ImGui::Text("compute idle %.1f %%%s", result.bubble_fraction * 100, pipeline ? " (bubble)" : "");
    if (pipeline) {
      ImGui::Text("schedule bubble %.1f %%", result.schedule_bubble_fraction * 100);
      if (ImGui::IsItemHovered())
        ImGui::SetTooltip("Idle compute between the step's first forward and its last backward, the region GPipe's\n"
                          "(p-1)/(m+p-1) describes; compute idle above also counts the loss and optimizer step");
    }
  }

 private:
  const WindowFacts& facts_;
};

}  // namespace

std::unique_ptr<Panel> make_result_figures_panel(PanelContext& context) {
  return std::make_unique<ResultFiguresPanel>(context.facts);
}

}  // namespace shardscope::gui
