// Presenter mode's all-reduce step: the CPU ring's buffers at the step's ring step (ring_view.h), once the lesson's
// demo has run.
#include <imgui.h>

#include <memory>

#include "gui/presenter/presenter_layout.h"
#include "gui/presenter/ring_view.h"

namespace shardscope::gui {

namespace {

class RingDemoPanel final : public Panel {
 public:
  explicit RingDemoPanel(const LessonDeck& deck) : deck_(deck) {}

  void draw(const PanelFrame& frame) override {
    const lessons::LessonStep& step = *deck_.step();
    const lessons::ScenarioFacts* facts = deck_.evaluated() ? deck_.evaluated()->facts(step.scenario) : nullptr;
    if (facts && facts->demo) draw_ring_demo(*facts->demo, step.ring_step, frame.size.y);
    else ImGui::TextDisabled(deck_.evaluated() ? "the all-reduce demo could not run" : "running the all-reduce on the CPU ring…");
  }

 private:
  const LessonDeck& deck_;
};

}  // namespace

std::unique_ptr<Panel> make_ring_demo_panel(PresenterContext& context) { return std::make_unique<RingDemoPanel>(context.deck); }

}  // namespace shardscope::gui
