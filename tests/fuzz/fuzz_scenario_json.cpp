// libFuzzer target: scenario file text through parse_scenario_json (the scenario reader the CLI, the window and
// lessons use), then written back (scenario_to_json) and named (describe_scenario). A bad file must give
// ScenarioError; nothing else may escape, crash or trip ASan / UBSan. Seeds: assets/scenarios, tests/cli/*.json.
#include <cstddef>
#include <cstdint>
#include <string>

#include "scenario/scenario.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace shardscope;
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const Scenario scenario = parse_scenario_json(text, "fuzz.json");
    (void)scenario_to_json(scenario);
    (void)describe_scenario(scenario);
  } catch (const ScenarioError&) {
  }
  return 0;
}
