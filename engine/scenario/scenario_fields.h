// The scenario's fields, each declared once (key, type, default, range, help, framework name): the JSON
// reader and writer, the CLI flags and the GUI form are all made from this table, so a field added here appears in
// all of them. Which strategies use a strategy option is the strategy rules' to say (scenario/strategy_rules.h).
// Depends on scenario.h only; no JSON or GUI library.
// Usage:
//   for (const ScenarioField& field : scenario_fields()) { FieldValue v = field.get(s); ... }
//   set_field(s, *find_scenario_field("training.batch"), std::int64_t{32}, "--batch");  // throws ScenarioError
//   check_field_ranges(s);  // what resolve_scenario does first
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "scenario/scenario.h"

namespace shardscope {

// A field's value: unset (std::monostate: an optional setting left to its default, or a count left to be
// derived), an integer, a number, a flag, or text (enum choices are their names).
using FieldValue = std::variant<std::monostate, std::int64_t, double, bool, std::string>;

enum class FieldKind {
  Integer,  // JSON integer, InputInt
  Number,   // JSON number, InputDouble
  Flag,     // JSON true / false, a checkbox, a CLI flag without value
  Text,     // free text (suggestions, if any, are offered but not enforced here: resolve_scenario checks them)
  Choice,   // one of choices(); anything else is an error where it is set
};

struct ScenarioField {
  std::string_view key;    // JSON path: "training.batch" (section.key), or "name" at the top
  std::string_view flag;   // CLI flag: "--batch"
  std::string_view label;  // GUI label: "Batch"
  FieldKind kind = FieldKind::Text;
  std::string_view help;       // one line for --help and the GUI tooltip
  std::string_view framework;  // what PyTorch / DeepSpeed / Megatron call it, "" when nothing does
  // What an unset value means ("the model's default"); non-empty exactly for fields that may be unset.
  std::string_view unset_means;
  // Range of Integer / Number values, checked by check_field_ranges (resolve_scenario), named by key. Every Number
  // field has both bounds (a test holds the table to it) and must be finite: set_field refuses inf and NaN wherever
  // a value comes from (flags, files, the form), so no cost formula ever sees one. Integers are bounded by their
  // max, and by ±2^31 − 1 where a row has none.
  std::optional<double> min, max;
  bool min_exclusive = false;
  // The writer writes the field even at its default (the fields every scenario file shows).
  bool always_written = false;
  // Flag: the CLI spelling that turns it off ("--no-inplace-relu"), "" for none.
  std::string_view negative_flag;
  // Choice: the allowed names; Text: suggestions (device presets, link presets), may be null.
  std::vector<std::string> (*choices)() = nullptr;
  FieldValue (*get)(const Scenario&) = nullptr;
  void (*put)(Scenario&, const FieldValue&) = nullptr;  // the value has the field's type (set_field checks)
  // A count stored as 0 when unset (cluster.world): an explicit 0 below `min` is refused where it is set.
  bool zero_means_unset = false;
  // A strategy option's value that means no more than its default to a strategy that does not use it (stages 1,
  // dp 1: the layout every other strategy resolves to), so a resolved scenario still reads back.
  std::optional<std::int64_t> inert_value;

  std::string_view section() const;  // "training"; "" for a top-level key
  std::string_view name() const;     // "batch"
  bool may_be_unset() const { return !unset_means.empty(); }
};

// Every field, in the order of the scenario file (name, model, training, cluster, strategy, accounting, simulation).
std::span<const ScenarioField> scenario_fields();
const ScenarioField* find_scenario_field(std::string_view key);
// The JSON sections, in file order ("model", "training", ...).
std::vector<std::string_view> scenario_sections();

// Sets `field` of `scenario` to `value`, converting an integer to a number where the field is a number. Throws
// ScenarioError(where, ...) for a value of the wrong type, a choice that is not one of the field's choices, and an
// unset value for a field that cannot be unset; `where` names the field as the user spelled it (a JSON key or a
// flag). Ranges are not checked here: check_field_ranges does, once the whole scenario is known.
void set_field(Scenario& scenario, const ScenarioField& field, FieldValue value, std::string_view where);

// Throws ScenarioError(key, "must be at least 1 (got 0)") for the first field outside its range.
void check_field_ranges(const Scenario& scenario);

// The field's range as a rule: "must be at least 1", "must be between 1 and 65536", "must be in (0, 1e+06]",
// "must be at most 2147483647" (an Integer without a max: what an int holds). Bounds print short: "1e+06", never
// a 309-digit number.
std::string field_range_rule(const ScenarioField& field);
// The rule `value` breaks, the side it is on: "must be at most 1e+06" for 1e300, "must be at least 1" for 0; the
// whole rule for inf and NaN. What every range message says before "(got ...)".
std::string field_range_violation(const ScenarioField& field, double value);

// The field's value in the built-in defaults (Scenario{}).
FieldValue default_value(const ScenarioField& field);
// Whether the field differs from its default: a set option, a changed count.
bool field_is_set(const Scenario& scenario, const ScenarioField& field);
// "25", "1e-05", "true", "ddp", "" for unset: how help texts and reports show a value.
std::string field_value_text(const FieldValue& value);

}  // namespace shardscope
