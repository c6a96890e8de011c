// The strategies command's reports over the strategy registry and the field table.
#include "cli/strategies_command.h"

#include <ostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "scenario/scenario_fields.h"
#include "strategy/registry.h"

namespace shardscope::cli {

void print_strategies_text(std::ostream& out) {
  for (const StrategyInfo& info : strategies()) {
    out << fmt::format("{:<12} {}\n", info.name, info.description);
    out << fmt::format("{:<12} models {} · batch {}\n", "", info.counterpart, batch_unit(info.layout));
    std::string options;
    for (const auto key : info.options)
      options += (options.empty() ? "" : ", ") + std::string(find_scenario_field(key)->flag);
    if (!options.empty()) out << fmt::format("{:<12} options {}\n", "", options);
  }
  out << "(shardscope-cli memory --help says what each option does)\n";
}

std::string strategies_json() {
  nlohmann::json rows = nlohmann::json::array();
  for (const StrategyInfo& info : strategies()) {
    nlohmann::json options = nlohmann::json::array();
    for (const auto key : info.options) options.push_back(key);
    rows.push_back({{"name", info.name},
                    {"description", info.description},
                    {"counterpart", info.counterpart},
                    {"batch", batch_unit(info.layout)},
                    {"options", options}});
  }
  return rows.dump(2);
}

}  // namespace shardscope::cli
