// The CLI flags made from the field table (app/cli/scenario_flags.h): each sets the field it names.
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>

#include "../engine/scenario_field_values.h"
#include "cli/scenario_flags.h"

namespace shardscope {
namespace {

using testing::other_value;

// The flags made from the table: every field's flag, given the same value as the JSON test, sets that field.
TEST(ScenarioFlags, EveryFlagSetsItsField) {
  for (const auto& field : scenario_fields()) {
    if (field.flag.empty()) continue;
    CLI::App app;
    cli::ScenarioFlags flags;
    flags.add_to(app);
    const FieldValue value = other_value(field);
    std::vector<std::string> args = {std::string(field.flag)};
    if (field.kind == FieldKind::Flag) {
      if (!std::get<bool>(value)) args[0] = std::string(field.negative_flag);
      if (args[0].empty()) continue;  // an off-only default with no off flag (none today)
    } else {
      args.push_back(field_value_text(value));
    }
    std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes them last-first
    app.parse(reversed);
    const Scenario s = flags.build();
    EXPECT_EQ(field.get(s), value) << field.flag;
  }
}

TEST(ScenarioFlags, ErrorsNameTheFlagAndTheFileKey) {
  CLI::App app;
  cli::ScenarioFlags flags;
  flags.add_to(app);
  std::vector<std::string> args = {"fp8", "--dtype"};
  app.parse(args);
  try {
    flags.build();
    FAIL() << "fp8 accepted";
  } catch (const ScenarioError& error) {
    EXPECT_EQ(std::string(error.what()), "--dtype: unknown value 'fp8'; one of fp32, fp16, bf16 (training.dtype in a scenario file)");
  }
}

}  // namespace
}  // namespace shardscope
