// "Did you mean": a mistyped command is named with the nearest real one (cli/command_suggestion.h).
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>

#include "cli/command_suggestion.h"

namespace shardscope::cli {
namespace {

const std::vector<std::string> kCommands = {"memory", "simulate", "run", "compare", "gpus", "strategies", "lessons"};

TEST(CommandSuggestion, EditDistanceCountsOneEditEach) {
  EXPECT_EQ(edit_distance("simulate", "simulate"), 0u);
  EXPECT_EQ(edit_distance("simulte", "simulate"), 1u);   // a deletion
  EXPECT_EQ(edit_distance("simluate", "simulate"), 1u);  // neighbours swapped
  EXPECT_EQ(edit_distance("MEMORY", "memory"), 0u);      // case does not count
  EXPECT_EQ(edit_distance("", "run"), 3u);
}

TEST(CommandSuggestion, TyposFindTheirCommandAndNothingElseDoes) {
  EXPECT_EQ(closest_name("simulte", kCommands), "simulate");
  EXPECT_EQ(closest_name("memroy", kCommands), "memory");
  EXPECT_EQ(closest_name("stratgies", kCommands), "strategies");
  EXPECT_EQ(closest_name("rn", kCommands), "run");
  EXPECT_EQ(closest_name("xyz", kCommands), "");  // nothing close: no guess
  EXPECT_EQ(closest_name(std::string(10000, 'a'), kCommands), "");
}

TEST(CommandSuggestion, UnknownCommandMessageFollowsTheCommandsNamed) {
  CLI::App app;
  for (const auto& name : kCommands) app.add_subcommand(name, "");
  app.get_subcommand("lessons")->add_subcommand("check", "");
  app.get_subcommand("memory")->add_option("scenario");
  EXPECT_EQ(unknown_command_message(app, {"simulte"}),
            "unknown command 'simulte'; did you mean 'simulate'? (commands: memory, simulate, run, compare, gpus, strategies, lessons)");
  EXPECT_EQ(unknown_command_message(app, {"lessons", "chek"}),
            "unknown command 'lessons chek'; did you mean 'lessons check'? (lessons commands: check)");
  EXPECT_EQ(unknown_command_message(app, {"frobnicate"}).rfind("unknown command 'frobnicate' (commands: ", 0), 0u);
  EXPECT_EQ(unknown_command_message(app, {"memory", "file.json"}), "");  // a scenario file, not a command
  EXPECT_EQ(unknown_command_message(app, {"--bogus"}), "");                // an option: CLI11's own message
}

TEST(CommandSuggestion, ExitCodesAreListed) {
  const std::string text = kExitCodesHelp;
  for (const char* code : {"  0  ", "  1  ", "  2  ", "  3  ", "  4  "}) EXPECT_NE(text.find(code), std::string::npos) << code;
}

}  // namespace
}  // namespace shardscope::cli
