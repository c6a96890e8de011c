// simulate(): cost model, graph, accounting, event loop, figures, and the run-wide trace events.
#include "sim/simulator.h"

#include <memory>

#include "memory/accounting.h"
#include "sim/cost_model.h"
#include "sim/event_loop.h"
#include "sim/sim_metrics.h"

namespace shardscope {

namespace {

TraceHeader make_header(const ResolvedScenario& scenario, const Plan& plan, const SimulationOptions& options) {
  TraceHeader header;
  header.tool_version = "ShardScope 0.1.0";
  header.source = "simulator";
  header.scenario_json = scenario_to_json(scenario.settings);
  header.accounting_rules = accounting_rules_label(scenario.settings.accounting.mode);
  if (options.plan_in_header) header.plan = std::make_shared<const Plan>(plan);
  for (const auto& program : plan.programs)
    header.devices.push_back({program.rank, scenario.device.name, scenario.device.capacity, -1});
  return header;
}

// Names the first op (lowest rank, then index) that never began, and what it was waiting for.
std::string describe_stuck(const Plan& plan, const SimGraph& graph, const OpTimes& times) {
  for (std::size_t id = 0; id < graph.op_count(); ++id) {
    if (times.begin_ns[id] >= 0) continue;
    const int rank = graph.rank_of[id];
    const OpIndex index = static_cast<OpIndex>(id) - graph.rank_offset[static_cast<std::size_t>(rank)];
    const Op& op = graph.op(plan, static_cast<GlobalOp>(id));
    const bool arrived = times.arrival_ns[id] >= 0;
    return "rank " + std::to_string(rank) + " op " + std::to_string(index) + " ('" + op.label + "') never started: " +
           (arrived ? "its peers never arrived (unmatched collective or message)" : "it waits on ops that never end (a cycle or a stuck peer)");
  }
  return "";
}

}  // namespace

SimulationResult simulate(const ResolvedScenario& scenario, const Plan& plan, TraceSink& sink, const SimulationOptions& options) {
  const CostModel costs = CostModel::from_scenario(scenario);
  const SimGraph graph = build_sim_graph(plan, costs);
  const MemoryReport memory = account_memory(plan, scenario.settings.accounting.mode, scenario.device.capacity, options.memory_events);

  sink.begin(make_header(scenario, plan, options));
  EventEmitter emitter(plan, options.memory_events ? &memory : nullptr, sink);
  const OpTimes times = run_event_loop(plan, graph, emitter);
  emitter.flush();

  SimulationResult result = measure_simulation(plan, graph, times, memory);
  if (times.ended != graph.op_count()) {
    result.error = describe_stuck(plan, graph, times);
    TraceEvent error;
    error.kind = TraceEventKind::Error;
    error.rank = -1;
    error.t_ns = result.run_time_ns;
    error.text = result.error;
    emitter.emit_now(error);
  }
  TraceEvent run_end;
  run_end.kind = TraceEventKind::RunEnd;
  run_end.rank = -1;
  run_end.t_ns = result.run_time_ns;
  run_end.text = result.error.empty() ? "ok" : result.error;
  emitter.emit_now(run_end);
  sink.end();
  result.event_count = emitter.emitted();
  return result;
}

}  // namespace shardscope
