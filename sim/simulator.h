// The simulator: times a lowered plan under the scenario's cost model and reports it as trace events, like an
// executed run would, plus step-level figures (simulation_result.h).
// Usage:
//   ResolvedScenario scenario = resolve_scenario(settings);
//   Plan plan = lower_plan(scenario);
//   VectorTraceSink sink;
//   SimulationResult result = simulate(scenario, plan, sink);   // result.step_time_ns, sink.events()
// Events: per compute / collective / send / recv op an OpBegin and an OpEnd (a collective's begin is its last
// member's arrival, so waiting shows as a gap on the stream); per alloc / free op one Alloc / Free event with the
// accounted bytes and the allocated / reserved totals after it (the scenario's accounting mode); per phase op a
// Phase event; then RunEnd (text "ok", or the reason the run stopped, after an Error event). Events come in
// time order; at equal times by rank, then op index, begin before end: the same plan gives the same events.
// Single-threaded; calls sink.begin() once, emit() per event, sink.end() once.
#pragma once
#include <memory>

#include "sim/sim_layer.h"
#include "plan/plan.h"
#include "run/simulation_result.h"
#include "scenario/scenario.h"
#include "trace/events/trace_sink.h"

namespace shardscope {

struct SimulationOptions {
  bool memory_events = true;        // Alloc / Free events with accounted bytes (needs the accounting series)
  bool plan_in_header = true;       // the TraceHeader holds a copy of the plan (readers resolve op indices by it)
};

// Throws std::invalid_argument for a plan that refers to groups or ops that do not exist. A plan whose ops can
// never all run (an unmatched collective, a cycle) is simulated as far as it goes and reported in result.error.
SimulationResult simulate(const ResolvedScenario& scenario, const Plan& plan, TraceSink& sink,
                          const SimulationOptions& options = {});

// As above, but with options.plan_in_header the header shares `plan` instead of holding a deep copy of it (a copy of
// a 1,024-rank plan costs about as much as lowering it). The plan must not change while any sink holds the header.
SimulationResult simulate(const ResolvedScenario& scenario, std::shared_ptr<const Plan> plan, TraceSink& sink,
                          const SimulationOptions& options = {});

}  // namespace shardscope
