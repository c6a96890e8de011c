// Setting differences between two runs, field by field (scenario/scenario_fields.h).
#include "gui/logic/setting_differences.h"

#include "scenario/scenario.h"
#include "scenario/scenario_fields.h"

namespace shardscope::gui {

std::vector<SettingDifference> setting_differences(const TraceHeader& first, const TraceHeader& second) {
  std::vector<SettingDifference> out;
  if (first.scenario_json.empty() || second.scenario_json.empty()) return out;
  Scenario a, b;
  try {
    a = parse_scenario_json(first.scenario_json, "trace header");
    b = parse_scenario_json(second.scenario_json, "trace header");
  } catch (const ScenarioError&) {
    return out;
  }
  for (const ScenarioField& field : scenario_fields()) {
    if (field.key == "name" || field.key == "description") continue;
    const std::string va = field_value_text(field.get(a)), vb = field_value_text(field.get(b));
    if (va != vb) out.push_back({std::string(field.key), va, vb});
  }
  return out;
}

std::string describe_differences(const TraceHeader& first, const TraceHeader& second) {
  if (first.scenario_json.empty() || second.scenario_json.empty()) return "";
  const std::vector<SettingDifference> differences = setting_differences(first, second);
  if (differences.empty()) return "the same settings";
  // Each field by the last part of its key ("prefetch", "gradient_as_bucket_view"): short enough for one line.
  std::string text = "differs in ";
  for (std::size_t i = 0; i < differences.size(); ++i) {
    const SettingDifference& d = differences[i];
    const std::string name = d.key.substr(d.key.rfind('.') + 1);
    text += (i == 0 ? "" : ", ") + (name == "name" ? d.key.substr(0, d.key.find('.')) : name) + " " +
            (d.second.empty() ? "unset" : d.second) + " (a: " + (d.first.empty() ? "unset" : d.first) + ")";
  }
  return text;
}

}  // namespace shardscope::gui
