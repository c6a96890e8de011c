// Which settings two runs differ in, from their trace headers' scenarios: what a comparison must say before anyone
// reads its bars ("b: gradient_as_bucket_view true (a: false), world 4 (a: 2)"). Pure logic over the field table.
#pragma once
#include <string>
#include <vector>

#include "trace/events/trace_event.h"

namespace shardscope::gui {

struct SettingDifference {
  std::string key;       // the field's JSON key: "strategy.gradient_as_bucket_view"
  std::string first;     // its value in the first run ("" when unset)
  std::string second;    // and in the second
};

// Every field of the scenario that differs, in the field table's order; the scenario's name is left out. Empty when a
// header has no scenario (a recorded PyTorch run) or cannot be read.
std::vector<SettingDifference> setting_differences(const TraceHeader& first, const TraceHeader& second);
// One line: "differs in gradient_as_bucket_view true (a: false), world 4 (a: 2)", or "the same
// settings" when none differ, or "" when they cannot be told.
std::string describe_differences(const TraceHeader& first, const TraceHeader& second);

}  // namespace shardscope::gui
