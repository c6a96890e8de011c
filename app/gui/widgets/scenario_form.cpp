// The scenario form: the built-in / file picker, then one widget per field of the field table, by section.
#include "gui/widgets/scenario_form.h"
#include "gui/logic/drawable_text.h"

#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <filesystem>

#include "gui/logic/classroom_scenario.h"
#include "scenario/scenario_fields.h"
#include "strategy/registry.h"

namespace shardscope::gui {

ScenarioForm::ScenarioForm(std::string scenarios_dir) : scenarios_dir_(std::move(scenarios_dir)) {
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(scenarios_dir_, error))
    if (entry.path().extension() == ".json") builtin_files_.push_back(entry.path().filename().string());
  std::sort(builtin_files_.begin(), builtin_files_.end());
}

std::string ScenarioForm::open_file(const std::string& path, Scenario& scenario) {
  try {
    scenario = load_scenario_file(path);
    load_error_.clear();
  } catch (const ScenarioError& error) {
    load_error_ = error.what();  // the scenario on screen stays as it was
  }
  return load_error_;
}

bool ScenarioForm::draw_builtin_picker(Scenario& scenario) {
  bool changed = false;
  if (ImGui::BeginCombo("Scenario", scenario.name.c_str())) {
    if (ImGui::Selectable(("built-in: " + classroom_scenario().name).c_str())) {
      scenario = classroom_scenario();
      changed = true;
    }
    for (const auto& file : builtin_files_)
      if (ImGui::Selectable(file.c_str())) changed |= open_file(scenarios_dir_ + "/" + file, scenario).empty();
    ImGui::EndCombo();
  }
  ImGui::InputTextWithHint("##open", "path/to/scenario.json", &open_path_);
  ImGui::SameLine();
  if (ImGui::Button("Open") && !open_path_.empty()) changed |= open_file(open_path_, scenario).empty();
  if (!load_error_.empty()) ImGui::TextColored(ImVec4(0.8f, 0.1f, 0.1f, 1), "%s", load_error_.c_str());
  return changed;
}

namespace {

const char* section_title(std::string_view section) {
  if (section == "model") return "Model";
  if (section == "training") return "Training";
  if (section == "cluster") return "Cluster";
  if (section == "strategy") return "Strategy";
  if (section == "accounting") return "Memory accounting";
  if (section == "simulation") return "Simulation (cost model)";
  return "Other";
}

// A strategy option is shown only under a strategy that uses it (strategy/registry.h); other fields always.
bool shown(const ScenarioField& field, const Scenario& scenario) {
  if (field.section() != "strategy" || field.key == "strategy.name") return true;
  return strategy_accepts(scenario.strategy.kind, field.key);
}

// After the strategy changed: options the new strategy does not use go back to their defaults, so that a value
// the form no longer shows cannot make the scenario invalid.
void drop_unused_options(Scenario& scenario) {
  for (const auto& field : scenario_fields())
    if (field.section() == "strategy" && field.key != "strategy.name" && !strategy_accepts(scenario.strategy.kind, field.key))
      field.put(scenario, default_value(field));
}

// What the chosen strategy is and what it models, under its combo, for a student choosing between them.
void describe_strategy(StrategyKind kind) {
  const StrategyInfo& info = strategy_info(kind);
  ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
  ImGui::TextWrapped("%s (%s)", std::string(info.description).c_str(), std::string(info.counterpart).c_str());
  ImGui::PopStyleColor();
}

}  // namespace

bool ScenarioForm::draw(Scenario& scenario) {
  const bool picked = draw_picker(scenario);
  const bool edited = draw_fields(scenario);
  return picked || edited;
}

bool ScenarioForm::draw_picker(Scenario& scenario) {
  const bool picked = draw_builtin_picker(scenario);
  if (!scenario.description.empty()) {  // what the scenario is for, before its settings
    ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(0.15f, 0.15f, 0.15f, 1));
    ImGui::TextWrapped("%s", drawable_text(scenario.description).c_str());  // a scenario file's text
    ImGui::PopStyleColor();
  }
  return picked;
}

bool ScenarioForm::draw_fields(Scenario& scenario) {
  bool changed = false;
  // Labels get up to 9 em but never more than 45 % of the column, so value boxes stay usable at projector font scales.
  ImGui::PushItemWidth(-std::min(ImGui::GetFontSize() * 9, ImGui::GetContentRegionAvail().x * 0.45f));
  const StrategyKind strategy_before = scenario.strategy.kind;
  for (const auto section : scenario_sections()) {
    const ImGuiTreeNodeFlags open = section == "simulation" ? 0 : ImGuiTreeNodeFlags_DefaultOpen;
    if (!ImGui::CollapsingHeader(section_title(section), open)) continue;
    for (const auto& field : scenario_fields())
      if (field.section() == section && shown(field, scenario)) {
        changed |= fields_.draw(field, scenario);
        if (field.key == "strategy.name") describe_strategy(scenario.strategy.kind);
      }
  }
  if (scenario.strategy.kind != strategy_before) drop_unused_options(scenario);
  if (!fields_.error().empty()) ImGui::TextColored(ImVec4(0.8f, 0.1f, 0.1f, 1), "%s", fields_.error().c_str());
  ImGui::PopItemWidth();
  if (changed) {  // an edited scenario is no longer the named and described one
    scenario.name = describe_scenario(scenario);
    scenario.description.clear();
  }
  return changed;
}

}  // namespace shardscope::gui
