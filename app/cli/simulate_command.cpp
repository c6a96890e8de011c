// The simulate command's pipeline: resolve, lower, validate, simulate.
#include "cli/simulate_command.h"

#include <fmt/format.h>


#include "sim/simulator.h"
#include "strategy/lower.h"

namespace shardscope::cli {

SimulateRun run_simulate(const Scenario& scenario, TraceSink& sink) {
  SimulateRun run{resolve_scenario(scenario), {}, {}};
  run.plan = lower_validated_plan(run.scenario);
  run.result = simulate(run.scenario, run.plan, sink);
  return run;
}

std::string format_time_ns(TimeNs ns) {
  const double value = static_cast<double>(ns);
  if (ns < 0) return "-" + format_time_ns(-ns);
  if (ns < 1000) return fmt::format("{} ns", ns);
  if (ns < 1000000) return fmt::format("{:.1f} µs", value / 1e3);
  if (ns < 1000000000) return fmt::format("{:.3f} ms", value / 1e6);
  return fmt::format("{:.3f} s", value / 1e9);
}

}  // namespace shardscope::cli
