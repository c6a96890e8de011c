// The scenario form (a widget of the run source panel): pick a built-in scenario or open a file, then every field of the scenario (the field table,
// scenario/scenario_fields.h) by section, a strategy's options only under the strategies that use them. Reports
// when the scenario changed so it is re-run.
#pragma once
#include <string>
#include <vector>

#include "gui/widgets/field_widgets.h"
#include "scenario/scenario.h"

namespace shardscope::gui {

class ScenarioForm {
 public:
  explicit ScenarioForm(std::string scenarios_dir);
  // Draws the form into the current window. Returns true when `scenario` was changed by the user.
  bool draw(Scenario& scenario);
  // Its two halves, for a layout that puts the run's figures between them: the picker (built-in scenarios, a file to
  // open) with the scenario's description, and the fields by section.
  bool draw_picker(Scenario& scenario);
  bool draw_fields(Scenario& scenario);
  // Loads a scenario file into `scenario`; returns an error message or "".
  std::string open_file(const std::string& path, Scenario& scenario);
  const std::string& load_error() const { return load_error_; }

 private:
  bool draw_builtin_picker(Scenario& scenario);

  std::string scenarios_dir_;
  std::vector<std::string> builtin_files_;  // file names under scenarios_dir_
  std::string open_path_;
  std::string load_error_;
  FieldWidgets fields_;
};

}  // namespace shardscope::gui
