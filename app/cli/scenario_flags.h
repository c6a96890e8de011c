// Scenario settings as command-line flags, one per row of the field table (scenario/scenario_fields.h), shared
// by every CLI subcommand that takes a scenario. Flags override the scenario file; unset flags leave it alone.
#pragma once
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "scenario/scenario.h"

namespace shardscope::cli {

class ScenarioFlags {
 public:
  void add_to(CLI::App& command);
  // The built-in scenario or the file, with flags applied. Throws ScenarioError naming the flag or the field.
  Scenario build() const;

 private:
  Scenario apply_to(Scenario s) const;  // the given flags over s

  std::string scenario_file_;
  // Per row of the field table: the text given (value flags) or the flag option (on / off flags).
  std::vector<std::optional<std::string>> texts_;
  std::vector<CLI::Option*> switches_;
  std::deque<bool> switch_values_;  // CLI11 writes through a bool& (vector<bool> has none); never resized after add_to
};

}  // namespace shardscope::cli
