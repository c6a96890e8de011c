// The scenario's fields by section (the form's lower half), under the run's figures and the device cards, so that at
// 1600 x 900 what a run shows stays above the fold; an edit asks the window to run the scenario again.
#include <memory>

#include "gui/panels/panel.h"
#include "gui/panels/window_facts.h"
#include "gui/widgets/scenario_form.h"

namespace shardscope::gui {

namespace {

class ScenarioFieldsPanel final : public Panel {
 public:
  explicit ScenarioFieldsPanel(PanelContext& context) : context_(context) {}

  void draw(const PanelFrame&) override {
    if (context_.facts.source != WindowFacts::Source::Scenario) return;
    if (context_.form.draw_fields(context_.edited)) {
      context_.requests.clear_startup_error = true;
      context_.requests.rerun = true;
    }
  }

 private:
  PanelContext& context_;
};

}  // namespace

std::unique_ptr<Panel> make_scenario_fields_panel(PanelContext& context) { return std::make_unique<ScenarioFieldsPanel>(context); }

}  // namespace shardscope::gui
