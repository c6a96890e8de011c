// simulate_beside and the text of step times and the simulated-beside-executed table.
#include "cli/step_beside.h"

#include <algorithm>
#include <ostream>
#include <stdexcept>

#include <fmt/format.h>

#include "pipeline/run_pipeline.h"

namespace shardscope::cli {

StepBeside simulate_beside(const Scenario& scenario, const std::vector<StepTiming>& executed) {
  if (executed.empty()) throw std::invalid_argument("--simulate-beside: the run timed no step");
  OpIntervalSink intervals;
  const pipeline::SimulatedRun simulated = pipeline::simulate_scenario(scenario, intervals);
  const std::vector<StepTiming> steps = step_timings(simulated.plan, intervals.intervals());
  if (steps.empty()) throw std::invalid_argument("--simulate-beside: the simulation has no training step");
  StepBeside beside{median_step(executed), steps.back(), simulated.result.cost_source};
  const auto by_time = [](const StepTiming* a, const StepTiming* b) { return a->step_ns < b->step_ns; };
  const std::vector<const StepTiming*> steady = steady_steps(executed);  // the steps the median is taken over
  const auto [fastest, slowest] = std::minmax_element(steady.begin(), steady.end(), by_time);
  beside.fastest_ns = (*fastest)->step_ns;
  beside.slowest_ns = (*slowest)->step_ns;
  return beside;
}

std::optional<double> relative_error(TimeNs simulated, TimeNs executed) {
  if (executed <= 0) return std::nullopt;
  return (static_cast<double>(simulated) - static_cast<double>(executed)) / static_cast<double>(executed);
}

void print_step_times(const std::vector<StepTiming>& steps, std::ostream& out) {
  if (steps.empty()) return;
  out << "Step times (batch loading left out, shown apart):";
  for (const StepTiming& s : steps)
    out << fmt::format("  {}: {} (+{} load)", s.step, format_duration(s.step_ns), format_duration(s.load_batch_ns));
  const StepTiming& median = median_step(steps);
  out << fmt::format("\nMedian step: {} (step {}{})\n", format_duration(median.step_ns), median.step,
                     steps.size() > 1 ? ", of steps 2 and later" : "");
}

void print_step_beside(const StepBeside& b, std::ostream& out) {
  out << fmt::format("Simulated beside executed (simulated step {} from {}; executed median step {}):\n", b.simulated.step,
                     b.cost.profile.empty() ? std::string("the roofline constants") : "device profile " + b.cost.profile,
                     b.executed.step);
  if (!b.cost.profile.empty() && b.cost.roofline_ops > 0)
    out << fmt::format("  ({} of {} compute ops had no curve in the profile and were timed by the roofline, e.g. '{}')\n",
                       b.cost.roofline_ops, b.cost.roofline_ops + b.cost.profiled_ops, b.cost.roofline_examples.front());
  out << fmt::format("  {:<14} {:>12} {:>12} {:>9}\n", "kind", "simulated", "executed", "error");
  const auto row = [&](const std::string& name, TimeNs sim, TimeNs exec) {
    const auto error = relative_error(sim, exec);
    out << fmt::format("  {:<14} {:>12} {:>12} {:>9}\n", name, format_duration(sim), format_duration(exec),
                       error ? fmt::format("{:+.1f} %", *error * 100) : std::string("-"));
  };
  for (int k = 0; k < kTimeKindCount; ++k)
    row(time_kind_name(static_cast<TimeKind>(k)), b.simulated.by_kind[static_cast<std::size_t>(k)],
        b.executed.by_kind[static_cast<std::size_t>(k)]);
  row("step", b.simulated.step_ns, b.executed.step_ns);
  const auto from_median = [&](TimeNs t) { return relative_error(t, b.executed.step_ns).value_or(0) * 100; };
  if (b.slowest_ns > b.fastest_ns)
    out << fmt::format("  The executed steps ran {} to {} ({:+.1f} to {:+.1f} % of the median): an error inside that "
                       "range cannot be told from this machine's own variation.\n",
                       format_duration(b.fastest_ns), format_duration(b.slowest_ns), from_median(b.fastest_ns),
                       from_median(b.slowest_ns));
}

}  // namespace shardscope::cli
