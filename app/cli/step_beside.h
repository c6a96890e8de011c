// run --simulate-beside: the same scenario simulated (with its device profile, if it names one) and held against
// the executed run step for step, per kind of time (run/step_timing.h: GEMM, elementwise, optimizer, exposed
// communication, idle) with the error of each, so "where does the time go" is measured, not asserted.
#pragma once
#include <iosfwd>
#include <string>
#include <vector>

#include "run/simulation_result.h"
#include "run/step_timing.h"
#include "scenario/scenario.h"

namespace shardscope::cli {

struct StepBeside {
  StepTiming executed;   // the executed run's median step (median_step)
  StepTiming simulated;  // the simulation's last step, by the same rules
  CostSource cost;       // how the simulation timed its ops
  // The fastest and slowest of the executed steps the median is taken over: how far this machine moves the same
  // step by itself, which a simulated-against-executed error within it cannot be told from.
  TimeNs fastest_ns = 0, slowest_ns = 0;
};

// Simulates `scenario` and pairs its last step with the executed median step. `executed` holds every executed
// step (step_timings); throws std::invalid_argument when it is empty.
StepBeside simulate_beside(const Scenario& scenario, const std::vector<StepTiming>& executed);

// (simulated − executed) / executed; none where the executed figure is 0.
std::optional<double> relative_error(TimeNs simulated, TimeNs executed);

void print_step_times(const std::vector<StepTiming>& steps, std::ostream& out);
void print_step_beside(const StepBeside& beside, std::ostream& out);

}  // namespace shardscope::cli
