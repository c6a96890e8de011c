// What every front end does with a field of the table: set it with its checks, check its range, compare it to
// its default, show its value. The rows themselves are in scenario_fields.cpp.
#include <algorithm>
#include <cmath>
#include <sstream>

#include "scenario/scenario_fields.h"

namespace shardscope {

namespace {

// Six significant digits: "25", "0.001", "1e+06", "inf"; never the 309 digits std::to_string gives 1e308.
std::string number_text(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

// What an Integer field holds at most when its row gives no max (the members are int).
constexpr std::int64_t kIntegerLimit = 2147483647;

// A bound as the field's kind spells it: integers whole (16777216, where six significant digits would print
// "1.67772e+07"), numbers short ("1e+06").
std::string bound_text(const ScenarioField& field, double bound) {
  if (field.kind == FieldKind::Integer) return std::to_string(static_cast<std::int64_t>(bound));
  return number_text(bound);
}

std::string joined(const std::vector<std::string>& names) {
  std::string text;
  for (const auto& name : names) text += (text.empty() ? "" : ", ") + name;
  return text;
}

const char* kind_expectation(FieldKind kind) {
  switch (kind) {
    case FieldKind::Integer: return "must be an integer";
    case FieldKind::Number: return "must be a number";
    case FieldKind::Flag: return "must be true or false";
    case FieldKind::Text:
    case FieldKind::Choice: return "must be a string";
  }
  return "has the wrong type";
}

bool has_kind(const FieldValue& value, FieldKind kind) {
  switch (kind) {
    case FieldKind::Integer: return std::holds_alternative<std::int64_t>(value);
    case FieldKind::Number: return std::holds_alternative<double>(value);
    case FieldKind::Flag: return std::holds_alternative<bool>(value);
    case FieldKind::Text:
    case FieldKind::Choice: return std::holds_alternative<std::string>(value);
  }
  return false;
}

std::optional<double> numeric(const FieldValue& value) {
  if (const auto* i = std::get_if<std::int64_t>(&value)) return static_cast<double>(*i);
  if (const auto* d = std::get_if<double>(&value)) return *d;
  return std::nullopt;
}

std::optional<double> upper_bound(const ScenarioField& field) {
  if (field.max) return field.max;
  if (field.kind == FieldKind::Integer) return static_cast<double>(kIntegerLimit);
  return std::nullopt;
}

bool in_range(const ScenarioField& field, double v) {
  if (!std::isfinite(v)) return false;
  if (field.min && (field.min_exclusive ? !(v > *field.min) : !(v >= *field.min))) return false;
  const auto max = upper_bound(field);
  return !max || v <= *max;
}

// "must be at least 1", "must be positive", "must not be negative"; "" without a min.
std::string lower_rule(const ScenarioField& field) {
  if (!field.min) return "";
  const std::string lo = bound_text(field, *field.min);
  if (field.min_exclusive) return *field.min == 0 ? "must be positive" : "must be greater than " + lo;
  return *field.min == 0 ? "must not be negative" : "must be at least " + lo;
}

}  // namespace

std::string field_range_violation(const ScenarioField& field, double v) {
  const auto max = upper_bound(field);
  if (std::isfinite(v) && max && v > *max) return "must be at most " + bound_text(field, *max);
  if (std::isfinite(v) && field.min && !in_range(field, v)) return lower_rule(field);
  return field_range_rule(field);
}

// "must be at least 1", "must be between 1 and 1000", "must be positive", "must be in (0, 1]".
std::string field_range_rule(const ScenarioField& field) {
  const auto max = upper_bound(field);
  if (!field.min && !max) return "must be a finite number";
  if (!max) return lower_rule(field);
  const std::string hi = bound_text(field, *max);
  if (!field.min) return "must be at most " + hi;
  const std::string lo = bound_text(field, *field.min);
  return field.min_exclusive ? "must be in (" + lo + ", " + hi + "]" : "must be between " + lo + " and " + hi;
}

std::string_view ScenarioField::section() const {
  const auto dot = key.find('.');
  return dot == std::string_view::npos ? std::string_view() : key.substr(0, dot);
}

std::string_view ScenarioField::name() const {
  const auto dot = key.find('.');
  return dot == std::string_view::npos ? key : key.substr(dot + 1);
}

const ScenarioField* find_scenario_field(std::string_view key) {
  for (const auto& field : scenario_fields())
    if (field.key == key) return &field;
  return nullptr;
}

std::vector<std::string_view> scenario_sections() {
  std::vector<std::string_view> sections;
  for (const auto& field : scenario_fields())
    if (!field.section().empty() && std::find(sections.begin(), sections.end(), field.section()) == sections.end())
      sections.push_back(field.section());
  return sections;
}

void set_field(Scenario& scenario, const ScenarioField& field, FieldValue value, std::string_view where) {
  const std::string name(where);
  if (std::holds_alternative<std::monostate>(value)) {
    if (!field.may_be_unset()) throw ScenarioError(name, "cannot be unset");
    field.put(scenario, value);
    return;
  }
  if (field.kind == FieldKind::Number)
    if (const auto* i = std::get_if<std::int64_t>(&value)) value = static_cast<double>(*i);
  if (!has_kind(value, field.kind)) throw ScenarioError(name, kind_expectation(field.kind));
  if (field.kind == FieldKind::Number) {
    // The one place every number passes: inf and NaN never reach a scenario (cost formulas, byte counts).
    const double v = std::get<double>(value);
    if (!std::isfinite(v)) throw ScenarioError(name, "must be a finite number (got " + number_text(v) + ")");
    // A subnormal (1e-320) passes every "(0, X]" rule yet turns a size into an endless plan or a division into inf:
    // no setting means anything that small, so it is refused by name wherever it comes from (flag, file, form).
    if (v != 0 && std::fpclassify(v) == FP_SUBNORMAL)
      throw ScenarioError(name, "is too small to mean anything (got " + number_text(v) +
                                    "; numbers must be 0 or at least 2.2e-308 in size)");
  }
  if (field.kind == FieldKind::Integer) {
    const auto v = std::get<std::int64_t>(value);
    // Beyond what the member (an int) holds: refused here, before it could wrap; the rule names the field's range.
    if (v < -kIntegerLimit || v > kIntegerLimit)
      throw ScenarioError(name, field_range_violation(field, static_cast<double>(v)) + " (got " + std::to_string(v) + ")");
    // 0 stores "unset" for these: an explicit 0 the range refuses must not silently mean the default.
    if (field.zero_means_unset && v <= 0 && !in_range(field, static_cast<double>(v)))
      throw ScenarioError(name, field_range_violation(field, static_cast<double>(v)) + " (got " + std::to_string(v) + ")");
  }
  if (field.kind == FieldKind::Choice) {
    const auto choices = field.choices();
    const auto& text = std::get<std::string>(value);
    if (std::find(choices.begin(), choices.end(), text) == choices.end())
      throw ScenarioError(name, "unknown value '" + text + "'; one of " + joined(choices));
  }
  field.put(scenario, value);
}

void check_field_ranges(const Scenario& scenario) {
  for (const auto& field : scenario_fields()) {
    if (field.kind != FieldKind::Integer && field.kind != FieldKind::Number) continue;
    const FieldValue value = field.get(scenario);
    const std::optional<double> v = numeric(value);
    if (!v || in_range(field, *v)) continue;
    throw ScenarioError(std::string(field.key), field_range_violation(field, *v) + " (got " + field_value_text(value) + ")");
  }
}

FieldValue default_value(const ScenarioField& field) { return field.get(Scenario{}); }

bool field_is_set(const Scenario& scenario, const ScenarioField& field) {
  return field.get(scenario) != default_value(field);
}

std::string field_value_text(const FieldValue& value) {
  if (const auto* i = std::get_if<std::int64_t>(&value)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&value)) return number_text(*d);
  if (const auto* b = std::get_if<bool>(&value)) return *b ? "true" : "false";
  if (const auto* s = std::get_if<std::string>(&value)) return *s;
  return "";
}

}  // namespace shardscope
