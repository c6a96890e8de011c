// shardscope-cli: command-line front end. Subcommands: memory (more come with later issues).
// Usage:
//   shardscope-cli memory                                # the built-in scenario: 2 × H100, DDP, 20 × Linear(2000), Adam
//   shardscope-cli memory assets/scenarios/dp.json --batch 32 --json
// Exit codes: 0 ok, 2 bad arguments or scenario, 3 internal error.
#include <iostream>

#include <CLI/CLI.hpp>

#include "cli/memory_command.h"
#include "cli/scenario_flags.h"

int main(int argc, char** argv) {
  using namespace shardscope;
  CLI::App app{"ShardScope: where GPU memory and time go in DP, DDP, ZeRO and pipeline training"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "shardscope-cli 0.1.0");

  cli::ScenarioFlags flags;
  bool json = false;
  auto* memory = app.add_subcommand("memory", "Per-rank memory after each phase, peaks by category");
  flags.add_to(*memory);
  memory->add_flag("--json", json, "Print JSON instead of text");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  }

  try {
    if (memory->parsed()) {
      const auto run = cli::run_memory(flags.build());
      if (json) {
        std::cout << cli::memory_json(run) << "\n";
      } else {
        cli::print_memory_text(run, std::cout);
      }
    }
  } catch (const ScenarioError& error) {
    std::cerr << "error: " << error.what() << "\n";
    return 2;
  } catch (const std::exception& error) {
    std::cerr << "error: " << error.what() << "\n";
    return 3;
  }
  return 0;
}
