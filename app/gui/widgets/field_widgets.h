// One ImGui widget per scenario field, chosen by the field's kind (scenario/scenario_fields.h): integers, numbers,
// flags, choices and text, with "default" handling for fields that may be unset and the field's help, framework
// name and default as a tooltip. GUI thread only.
#pragma once
#include <map>
#include <string>
#include <string_view>

#include "scenario/scenario_fields.h"

namespace shardscope::gui {

class FieldWidgets {
 public:
  // Draws `field` of `scenario`; returns true when the user changed it. A value the field refuses is not applied
  // and its message is kept in error().
  bool draw(const ScenarioField& field, Scenario& scenario);
  const std::string& error() const { return error_; }

 private:
  bool draw_value(const ScenarioField& field, FieldValue& value);
  bool draw_text(const ScenarioField& field, FieldValue& value);

  // Text being typed into a field, applied on Enter so that each keystroke does not re-run the scenario; reset when
  // the scenario's value changes under it (a file opened).
  struct TextEdit {
    std::string typed;
    std::string shown;  // the scenario's value when typing began
  };
  std::map<std::string_view, TextEdit> text_edits_;
  std::string error_;
};

}  // namespace shardscope::gui
