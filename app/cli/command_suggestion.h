// "Did you mean": the closest command name to a mistyped one (Damerau–Levenshtein distance: an insertion,
// deletion, substitution or swap of neighbours costs 1), and the CLI's exit codes, written once for --help.
// Usage:
//   cli::closest_name("simulte", {"memory", "simulate", "run"})   // "simulate"
//   cli::unknown_command_message(app, argv)                        // "unknown command 'simulte'; did you mean ..."
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace CLI {
class App;
}

namespace shardscope::cli {

// The exit codes, one line each, for --help's footer and the README.
extern const char* const kExitCodesHelp;

// The optimal string alignment distance between a and b (ASCII case-insensitive).
std::size_t edit_distance(std::string_view a, std::string_view b);

// The name nearest `given`, if it is close enough to be a typo (distance ≤ 2, and less than half of the longer
// word), else "". Ties go to the earlier name.
std::string closest_name(std::string_view given, const std::vector<std::string>& names);

// For a command line CLI11 refused: when a word where a command is expected is none of them (following the
// commands already named, "lessons chek"), "unknown command 'chek'; did you mean 'check'? (commands: ...)".
// "" when the command line's problem is something else.
std::string unknown_command_message(const CLI::App& app, const std::vector<std::string>& args);

}  // namespace shardscope::cli
