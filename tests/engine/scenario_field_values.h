// For tests of the field table and of what is made from it: a value of a field other than its default.
#pragma once
#include "scenario/scenario_fields.h"

namespace shardscope::testing {

// A value of the field that differs from its default and lies in its range, built from the field's kind.
inline FieldValue other_value(const ScenarioField& field) {
  const FieldValue fallback = default_value(field);
  switch (field.kind) {
    case FieldKind::Integer: {
      const auto base = std::get_if<std::int64_t>(&fallback) ? std::get<std::int64_t>(fallback)
                                                               : static_cast<std::int64_t>(field.min.value_or(0));
      const auto candidate = base + 1;
      return field.max && candidate > *field.max ? base - 1 : candidate;
    }
    case FieldKind::Number: {
      const double base = std::get_if<double>(&fallback) ? std::get<double>(fallback) : 2.5;
      return field.max ? *field.max / 2 : base + 0.5;
    }
    case FieldKind::Flag:
      return !(std::get_if<bool>(&fallback) && std::get<bool>(fallback));
    case FieldKind::Text:
    case FieldKind::Choice:
      break;
  }
  if (field.choices)
    for (const auto& name : field.choices())
      if (FieldValue{name} != fallback) return name;
  return std::string("something else");
}

}  // namespace shardscope::testing
