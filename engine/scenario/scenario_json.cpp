// Scenario <-> JSON, made from the field table (scenario_fields.h). Every field is optional (defaults are the
// built-in scenario); unknown keys and wrong types are errors that name the field, so a typo never silently
// falls back to a default.
#include <limits>
#include <set>

#include <nlohmann/json.hpp>

#include "core/json_input.h"
#include "scenario/scenario_fields.h"

namespace shardscope {

using nlohmann::json;

namespace {

// The JSON value as the field's type; a value of another JSON type is an error naming the field.
FieldValue json_value(const json& value, const ScenarioField& field, const std::string& path) {
  switch (field.kind) {
    case FieldKind::Integer:
      if (!value.is_number_integer()) throw ScenarioError(path, "must be an integer (got " + describe_json_value(value) + ")");
      // 2^64 − 1 is an unsigned JSON integer: read as int64 it would be −1. Out of every field's range instead.
      if (value.is_number_unsigned() && value.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        throw ScenarioError(path, field_range_violation(field, value.get<double>()) + " (got " + describe_json_value(value) + ")");
      return value.get<std::int64_t>();
    case FieldKind::Number:
      if (!value.is_number()) throw ScenarioError(path, "must be a number (got " + describe_json_value(value) + ")");
      return value.get<double>();
    case FieldKind::Flag:
      if (!value.is_boolean()) throw ScenarioError(path, "must be true or false (got " + describe_json_value(value) + ")");
      return value.get<bool>();
    case FieldKind::Text:
    case FieldKind::Choice:
      break;
  }
  if (!value.is_string()) throw ScenarioError(path, "must be a string (got " + describe_json_value(value) + ")");
  return value.get<std::string>();
}

std::string known_keys(const std::set<std::string>& keys) {
  std::string text;
  for (const auto& k : keys) text += (text.empty() ? "" : ", ") + k;
  return text;
}

void read_section(const json& node, std::string_view section, Scenario& s) {
  std::set<std::string> known;
  for (const auto& field : scenario_fields())
    if (field.section() == section) known.emplace(field.name());
  for (const auto& [key, value] : node.items()) {
    const std::string path = std::string(section) + "." + key;
    const ScenarioField* field = find_scenario_field(path);
    if (!field) throw ScenarioError(path, "unknown key; expected one of: " + known_keys(known));
    set_field(s, *field, json_value(value, *field, path), path);
  }
}

void read_root(const json& root, Scenario& s) {
  std::set<std::string> top_keys;
  for (const auto& field : scenario_fields())
    top_keys.emplace(field.section().empty() ? field.key : field.section());
  for (const auto section : scenario_sections()) {
    const auto at = root.find(std::string(section));
    if (at == root.end()) continue;
    if (!at->is_object()) throw ScenarioError(std::string(section), "must be an object (got " + describe_json_value(*at) + ")");
    read_section(*at, section, s);
  }
  for (const auto& [key, value] : root.items()) {
    if (!top_keys.count(key)) throw ScenarioError(key, "unknown key; expected one of: " + known_keys(top_keys));
    const ScenarioField* field = find_scenario_field(key);
    if (!field) continue;  // a section, read above
    set_field(s, *field, json_value(value, *field, key), key);
  }
}

}  // namespace

Scenario parse_scenario_json(const std::string& text, const std::string& source_name) {
  json root;
  try {
    // Nesting bounded, duplicate keys refused (nlohmann would keep the last copy silently).
    root = parse_json_input(text, source_name, {.reject_duplicate_keys = true});
  } catch (const JsonInputError& error) {
    // The message names the source already; ScenarioError's field is the source.
    const std::string message = error.what();
    const std::string prefix = source_name + ": ";
    throw ScenarioError(source_name, message.rfind(prefix, 0) == 0 ? message.substr(prefix.size()) : message);
  }
  if (!root.is_object()) throw ScenarioError(source_name, "must hold a JSON object (got " + describe_json_value(root) + ")");

  Scenario s;
  try {
    read_root(root, s);
    // The file's own values against each field's range here, so that the message names the file (resolve_scenario
    // checks again once flags have been applied over them).
    check_field_ranges(s);
  } catch (const ScenarioError& error) {
    // The field as the file spells it, and the file: "training.batch: must be an integer (got "8") (in ddp.json)".
    // what() ends at a NUL a key may hold ("a\u0000b"): then it is shorter than the field it starts with.
    const std::string what = error.what();
    const std::size_t skip = error.field().size() + 2;
    const std::string problem = what.size() >= skip ? what.substr(skip) : what;
    throw ScenarioError(error.field(), problem + " (in " + source_name + ")");
  }
  return s;
}

Scenario load_scenario_file(const std::string& path) {
  std::string text;
  try {
    text = read_input_file(path);  // regular files only, at most kMaxInputFileBytes
  } catch (const JsonInputError& error) {
    const std::string message = error.what();
    throw ScenarioError(path, message.substr(std::min(message.size(), path.size() + 2)));
  }
  return parse_scenario_json(text, path);
}

std::string scenario_to_json(const Scenario& s) {
  json root = json::object();
  for (const auto& field : scenario_fields()) {
    const FieldValue value = field.get(s);
    if (std::holds_alternative<std::monostate>(value)) continue;
    if (!field.always_written && value == default_value(field)) continue;
    json& slot = field.section().empty() ? root[std::string(field.key)]
                                         : root[std::string(field.section())][std::string(field.name())];
    std::visit([&](const auto& v) {
      if constexpr (!std::is_same_v<std::decay_t<decltype(v)>, std::monostate>) slot = v;
    }, value);
  }
  return root.dump(2);
}

}  // namespace shardscope
