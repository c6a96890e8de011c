// Typo suggestions for command names, and the exit codes' text.
#include "cli/command_suggestion.h"

#include <algorithm>
#include <cctype>

#include <CLI/CLI.hpp>

namespace shardscope::cli {

const char* const kExitCodesHelp =
    "Exit codes:\n"
    "  0  success\n"
    "  1  lessons check: a lesson's claim does not hold; trace check: the trace is damaged or cut short\n"
    "  2  bad input: an unknown command or flag, a value out of range, a scenario file, model config or trace that\n"
    "     cannot be read, a plan too large, or a plan the chosen backend cannot run\n"
    "  3  a failed run (out of memory, a kernel's check) or an internal error\n"
    "  4  the backend cannot run on this machine (cuda: not built, or no usable GPU)";

std::size_t edit_distance(std::string_view a, std::string_view b) {
  const auto lower = [](char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); };
  const std::size_t n = a.size(), m = b.size();
  std::vector<std::vector<std::size_t>> d(n + 1, std::vector<std::size_t>(m + 1, 0));
  for (std::size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= n; ++i) {
    for (std::size_t j = 1; j <= m; ++j) {
      const std::size_t cost = lower(a[i - 1]) == lower(b[j - 1]) ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && lower(a[i - 1]) == lower(b[j - 2]) && lower(a[i - 2]) == lower(b[j - 1]))
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);  // two neighbours swapped
    }
  }
  return d[n][m];
}

std::string closest_name(std::string_view given, const std::vector<std::string>& names) {
  if (given.size() > 64) return "";  // not a typo of a command name; and the table stays small
  std::string best;
  std::size_t best_distance = 3;
  for (const auto& name : names) {
    const std::size_t distance = edit_distance(given, name);
    if (distance < best_distance && 2 * distance < std::max(given.size(), name.size())) {
      best = name;
      best_distance = distance;
    }
  }
  return best;
}

std::string unknown_command_message(const CLI::App& app, const std::vector<std::string>& args) {
  const CLI::App* current = &app;
  std::string path = "";
  for (const auto& arg : args) {
    if (arg.empty() || arg[0] == '-') return "";  // options: their values cannot be told from commands here
    const auto subcommands = current->get_subcommands([](const CLI::App*) { return true; });
    if (subcommands.empty()) return "";
    const auto named = std::find_if(subcommands.begin(), subcommands.end(),
                                    [&](const CLI::App* sub) { return sub->get_name() == arg; });
    if (named != subcommands.end()) {
      current = *named;
      path += arg + " ";
      continue;
    }
    // A command that takes a positional argument (a scenario file) may be given one here: not a typo.
    const auto positionals = current->get_options([](const CLI::Option* option) { return option->get_positional(); });
    if (!positionals.empty()) return "";
    std::vector<std::string> names;
    for (const CLI::App* sub : subcommands) names.push_back(sub->get_name());
    std::string list;
    for (const auto& name : names) list += (list.empty() ? "" : ", ") + name;
    const std::string guess = closest_name(arg, names);
    const std::string shown = arg.size() > 64 ? arg.substr(0, 64) + "…" : arg;
    return "unknown command '" + path + shown + "'" + (guess.empty() ? "" : "; did you mean '" + path + guess + "'?") +
           " (" + (path.empty() ? "commands" : path + "commands") + ": " + list + ")";
  }
  return "";
}

}  // namespace shardscope::cli
