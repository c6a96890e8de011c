// Field widgets: the value widget by kind, the default / set toggle of optional fields, tooltips.
#include "gui/widgets/field_widgets.h"

#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>

namespace shardscope::gui {

namespace {

void tooltip(const ScenarioField& field) {
  if (!ImGui::IsItemHovered()) return;
  ImGui::BeginTooltip();
  ImGui::PushTextWrapPos(ImGui::GetFontSize() * 28);
  ImGui::TextUnformatted(std::string(field.help).c_str());
  if (!field.framework.empty()) ImGui::TextDisabled("%s", std::string(field.framework).c_str());
  if (field.may_be_unset()) ImGui::TextDisabled("default: %s", std::string(field.unset_means).c_str());
  ImGui::TextDisabled("%s  ·  %s", std::string(field.key).c_str(), std::string(field.flag).c_str());
  ImGui::PopTextWrapPos();
  ImGui::EndTooltip();
}

// The value a field starts from when the user turns its default off: the lowest sensible value, or the first
// suggestion; the user edits it from there.
FieldValue start_value(const ScenarioField& field) {
  const double least = field.min ? std::max(*field.min, 1.0) : 1.0;
  switch (field.kind) {
    case FieldKind::Integer: return static_cast<std::int64_t>(least);
    case FieldKind::Number: return least;
    case FieldKind::Flag: return true;
    case FieldKind::Text:
    case FieldKind::Choice: break;
  }
  const auto names = field.choices ? field.choices() : std::vector<std::string>{};
  return names.empty() ? std::string() : names.front();
}

bool combo(const char* label, std::string& value, const std::vector<std::string>& names) {
  bool changed = false;
  if (ImGui::BeginCombo(label, value.c_str())) {
    for (const auto& name : names)
      if (ImGui::Selectable(name.c_str(), name == value) && name != value) {
        value = name;
        changed = true;
      }
    ImGui::EndCombo();
  }
  return changed;
}

}  // namespace

bool FieldWidgets::draw(const ScenarioField& field, Scenario& scenario) {
  FieldValue value = field.get(scenario);
  const std::string label(field.label);
  ImGui::PushID(field.key.data(), field.key.data() + field.key.size());
  bool changed = false;
  if (field.may_be_unset() && std::holds_alternative<std::monostate>(value)) {
    if (ImGui::SmallButton("set")) {
      value = start_value(field);
      changed = true;
    }
    tooltip(field);
    ImGui::SameLine();
    ImGui::PushTextWrapPos(0.0f);  // wrap at the column's edge rather than cut the hint mid-word
    ImGui::TextDisabled("%s: %s", label.c_str(), std::string(field.unset_means).c_str());
    ImGui::PopTextWrapPos();
    tooltip(field);
  } else {
    changed = draw_value(field, value);
    tooltip(field);
    if (field.may_be_unset()) {
      ImGui::SameLine();
      // At projector scales the button goes under the field rather than past the column's edge.
      if (ImGui::GetContentRegionAvail().x < ImGui::CalcTextSize("default").x + ImGui::GetStyle().FramePadding.x * 2)
        ImGui::NewLine();
      if (ImGui::SmallButton("default")) {
        value = FieldValue{};
        changed = true;
      }
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("back to the default: %s", std::string(field.unset_means).c_str());
    }
  }
  ImGui::PopID();
  if (!changed) return false;
  try {
    set_field(scenario, field, std::move(value), field.key);
    error_.clear();
  } catch (const ScenarioError& e) {
    error_ = e.what();
    return false;
  }
  return true;
}

bool FieldWidgets::draw_value(const ScenarioField& field, FieldValue& value) {
  const std::string label(field.label);
  switch (field.kind) {
    case FieldKind::Integer: {
      int v = static_cast<int>(std::get_if<std::int64_t>(&value) ? std::get<std::int64_t>(value) : 0);
      if (!ImGui::InputInt(label.c_str(), &v, 1, 8, ImGuiInputTextFlags_EnterReturnsTrue)) return false;
      if (field.min) v = std::max(v, static_cast<int>(*field.min));
      value = std::int64_t{v};
      return true;
    }
    case FieldKind::Number: {
      double v = std::get_if<double>(&value) ? std::get<double>(value) : 0;
      if (!ImGui::InputDouble(label.c_str(), &v, 0, 0, "%g", ImGuiInputTextFlags_EnterReturnsTrue)) return false;
      value = v;
      return true;
    }
    case FieldKind::Flag: {
      bool v = std::get_if<bool>(&value) && std::get<bool>(value);
      if (!ImGui::Checkbox(label.c_str(), &v)) return false;
      value = v;
      return true;
    }
    case FieldKind::Choice: {
      std::string v = std::get_if<std::string>(&value) ? std::get<std::string>(value) : "";
      if (!combo(label.c_str(), v, field.choices())) return false;
      value = v;
      return true;
    }
    case FieldKind::Text:
      return draw_text(field, value);
  }
  return false;
}

// Free text (the model spec, a device profile) is typed and applied on Enter, with the suggestions one click away; text with a
// closed set of suggestions (devices, links, architectures) is a combo.
bool FieldWidgets::draw_text(const ScenarioField& field, FieldValue& value) {
  const std::string label(field.label);
  const std::string current = std::get_if<std::string>(&value) ? std::get<std::string>(value) : "";
  // A device profile is a shipped name or the path of one the user calibrated: typed, with the shipped ones offered.
  const bool free_text = field.key == "model.spec" || field.key == "name" || field.key == "cluster.device_profile" || !field.choices;
  if (!free_text) {
    std::string v = current;
    if (!combo(label.c_str(), v, field.choices())) return false;
    value = v;
    return true;
  }
  TextEdit& edit = text_edits_[field.key];
  if (edit.shown != current) edit.typed = edit.shown = current;
  bool changed = false;
  const float width = ImGui::CalcItemWidth();
  if (field.choices) {
    if (ImGui::BeginCombo("##suggestions", "", ImGuiComboFlags_NoPreview)) {
      for (const auto& name : field.choices())
        if (ImGui::Selectable(name.c_str(), name == current) && name != current) {
          edit.typed = name;
          changed = true;
        }
      ImGui::EndCombo();
    }
    ImGui::SameLine(0, ImGui::GetStyle().ItemInnerSpacing.x);
    ImGui::SetNextItemWidth(width - ImGui::GetFrameHeight() - ImGui::GetStyle().ItemInnerSpacing.x);
  }
  changed |= ImGui::InputText(label.c_str(), &edit.typed, ImGuiInputTextFlags_EnterReturnsTrue) && edit.typed != current;
  if (!changed) return false;
  value = edit.typed;
  return true;
}

}  // namespace shardscope::gui
