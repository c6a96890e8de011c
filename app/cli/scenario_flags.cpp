// Scenario flags: one CLI11 option per field of the table, and their application over a scenario.
#include "cli/scenario_flags.h"

#include <charconv>
#include <cmath>
#include <cstdlib>

#include "core/untrusted_text.h"
#include "scenario/scenario_fields.h"

namespace shardscope::cli {

namespace {

// "--batch: Samples per rank ... (default 20; DataLoader(batch_size=))".
std::string help_of(const ScenarioField& field) {
  std::string help(field.help);
  if (field.kind == FieldKind::Choice) {
    std::string names;
    for (const auto& name : field.choices()) names += (names.empty() ? "" : " | ") + name;
    help += ": " + names;
  } else if (field.kind == FieldKind::Text && field.choices && field.key != "model.spec") {
    std::string names;
    for (const auto& name : field.choices()) names += (names.empty() ? "" : ", ") + name;
    help += ": " + names;
  }
  const std::string fallback = field.may_be_unset() ? std::string(field.unset_means) : field_value_text(default_value(field));
  if (!fallback.empty()) help += " (default: " + fallback + ")";
  if (field.kind == FieldKind::Integer || field.kind == FieldKind::Number) {
    std::string rule = field_range_rule(field);  // "must be between 1 and 65536" -> "between 1 and 65536"
    if (rule.rfind("must be ", 0) == 0) rule = rule.substr(8);
    help += "; " + rule;
  }
  if (!field.framework.empty()) help += " [" + std::string(field.framework) + "]";
  return help;
}

FieldValue flag_value(const ScenarioField& field, const std::string& text) {
  const std::string flag(field.flag);
  if (field.kind == FieldKind::Integer) {
    std::int64_t value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error == std::errc::result_out_of_range && end == text.data() + text.size())  // digits beyond 64 bits
      throw ScenarioError(flag, field_range_violation(field, text[0] == '-' ? -1e300 : 1e300) + " (got " + printable(text, 40) + ")");
    if (error != std::errc() || end != text.data() + text.size())
      throw ScenarioError(flag, "must be an integer (got '" + printable(text, 40) + "')");
    return value;  // set_field and the range check judge it
  }
  if (field.kind == FieldKind::Number) {
    // One syntax for every number (flags, like INT flags and JSON): decimal, optional fraction and exponent. from_chars
    // with chars_format::general takes no hex ("0x10"), no leading '+' or space; "inf" and "nan", which it takes,
    // set_field refuses as not finite (the table's rule, one message for flags and files), and a value beyond a
    // double ("1e400") is refused here.
    double value = 0;
    const char* first = text.data();
    const char* last = text.data() + text.size();
    const auto [end, error] = std::from_chars(first, last, value, std::chars_format::general);
    if (text.empty() || end != last)
      throw ScenarioError(flag, "must be a number such as 12, 0.5 or 1e-3 (got '" + printable(text, 40) + "')");
    if (error == std::errc::result_out_of_range) {
      // strtod tells the two sides apart (HUGE_VAL for too large, 0 or a subnormal for too small).
      if (std::fabs(std::strtod(text.c_str(), nullptr)) < 1)
        throw ScenarioError(flag, "is too small to mean anything (got '" + printable(text, 40) +
                                      "'; numbers must be 0 or at least 2.2e-308 in size)");
      throw ScenarioError(flag, "must be a finite number (got '" + printable(text, 40) + "', beyond a double's range)");
    }
    return value;  // set_field and the range check judge it
  }
  return text;
}

}  // namespace

void ScenarioFlags::add_to(CLI::App& command) {
  command.add_option("scenario", scenario_file_, "Scenario JSON file (default: the built-in DDP scenario)");
  const auto fields = scenario_fields();
  texts_.assign(fields.size(), std::nullopt);
  switches_.assign(fields.size(), nullptr);
  switch_values_.assign(fields.size(), false);
  for (std::size_t i = 0; i < fields.size(); ++i) {
    const ScenarioField& field = fields[i];
    if (field.flag.empty()) continue;
    if (field.kind == FieldKind::Flag) {
      std::string names(field.flag);
      if (!field.negative_flag.empty()) names += ",!" + std::string(field.negative_flag);
      switches_[i] = command.add_flag(names, switch_values_[i], help_of(field));
    } else {
      const char* type = field.kind == FieldKind::Integer  ? "INT"
                         : field.kind == FieldKind::Number ? "NUMBER"
                                                           : "NAME";
      command.add_option(std::string(field.flag), texts_[i], help_of(field))->type_name(field.key == "model.spec" ? "SPEC" : type);
    }
  }
}

Scenario ScenarioFlags::build() const {
  const Scenario base = scenario_file_.empty() ? builtin_default_scenario() : load_scenario_file(scenario_file_);
  Scenario s = apply_to(base);
  if (scenario_to_json(s) != scenario_to_json(base)) {  // the flags changed it: the file's name and text no longer fit
    s.name = describe_scenario(s);
    s.description.clear();
  }
  return s;
}

Scenario ScenarioFlags::apply_to(Scenario s) const {
  const auto fields = scenario_fields();
  for (std::size_t i = 0; i < fields.size() && i < texts_.size(); ++i) {
    const ScenarioField& field = fields[i];
    try {
      if (switches_[i] && switches_[i]->count() > 0) set_field(s, field, switch_values_[i], field.flag);
      if (texts_[i]) set_field(s, field, flag_value(field, *texts_[i]), field.flag);
    } catch (const ScenarioError& error) {
      // Name the scenario file's key too, so the user can fix a file as well as a command line.
      const std::string problem = std::string(error.what()).substr(error.field().size() + 2);
      throw ScenarioError(error.field(), problem + " (" + std::string(field.key) + " in a scenario file)");
    }
  }
  return s;
}

}  // namespace shardscope::cli
