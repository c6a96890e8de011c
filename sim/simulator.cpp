// simulate(): cost model, graph, accounting, event loop, figures, and the run-wide trace events.
#include "sim/simulator.h"

#include <utility>

#include "memory/accounting.h"
#include "sim/cost_model.h"
#include "sim/event_loop.h"
#include "sim/sim_metrics.h"
#include "trace/events/run_events.h"

namespace shardscope {

namespace {

// `shared_plan`: what the header points at; null: the header holds no plan.
TraceHeader make_header(const ResolvedScenario& scenario, const Plan& plan, std::shared_ptr<const Plan> shared_plan) {
  std::vector<TraceDevice> devices;
  devices.reserve(plan.programs.size());
  for (const auto& program : plan.programs)
    devices.push_back({program.rank, scenario.device.name, scenario.device.capacity, -1});
  TraceHeader header = make_run_header(scenario, plan, "simulator", accounting_rules_label(scenario.settings.accounting.mode),
                                       /*plan_in_header=*/false, std::move(devices));
  header.plan = std::move(shared_plan);
  return header;
}

// Names the first op (lowest rank, then index) that never began, and what it was waiting for.
std::string describe_stuck(const Plan& plan, const SimGraph& graph, const OpTimes& times) {
  for (std::size_t id = 0; id < graph.op_count(); ++id) {
    if (times.begin_ns(graph, id) >= 0) continue;
    const int rank = graph.rank_of(static_cast<GlobalOp>(id));
    const OpIndex index = static_cast<OpIndex>(id) - graph.rank_offset[static_cast<std::size_t>(rank)];
    const Op& op = graph.op(plan, static_cast<GlobalOp>(id));
    const bool arrived = times.arrival_ns[id] >= 0;
    return "rank " + std::to_string(rank) + " op " + std::to_string(index) + " ('" + op.label + "') never started: " +
           (arrived ? "its peers never arrived (unmatched collective or message)" : "it waits on ops that never end (a cycle or a stuck peer)");
  }
  return "";
}

// The simulation proper; `header_plan` is what the trace header holds (null: no plan).
SimulationResult simulate_plan(const ResolvedScenario& scenario, const Plan& plan, std::shared_ptr<const Plan> header_plan,
                               TraceSink& sink, const SimulationOptions& options) {
  const CostModel costs = CostModel::from_scenario(scenario);
  SimGraph graph = build_sim_graph(plan, costs);
  // The series only gives Alloc / Free events their bytes: a sink that drops events needs none.
  const bool memory_events = options.memory_events && sink.keeps_events();
  const MemoryReport memory = account_memory(plan, scenario.settings.accounting.mode, scenario.device.capacity, memory_events);

  sink.begin(make_header(scenario, plan, std::move(header_plan)));
  EventEmitter emitter(plan, graph, memory_events ? &memory : nullptr, sink);
  const OpTimes times = run_event_loop(plan, graph, emitter);
  emitter.flush();

  SimulationResult result = measure_simulation(plan, graph, times, memory);
  result.cost_source = costs.stats();
  if (times.ended != graph.op_count()) {
    result.error = describe_stuck(plan, graph, times);
    emitter.emit_now(make_error_event(-1, result.run_time_ns, result.error));
  }
  // Where each rank would have stopped, as an executed run records it: the window marks it and the device card says so.
  for (const RankTiming& rank : result.ranks)
    if (rank.oom)
      emitter.emit_now(make_error_event(rank.rank, rank.oom->time_ns,
                                        "out of memory at \"" + rank.oom->op + "\": " + format_bytes(rank.oom->requested_bytes) +
                                            " requested, " + format_bytes(rank.oom->allocated_bytes) + " allocated, " +
                                            format_bytes(rank.oom->capacity_bytes - rank.oom->allocated_bytes) + " free of " +
                                            format_bytes(rank.oom->capacity_bytes)));
  emitter.emit_now(make_run_end_event(result.run_time_ns, result.error));
  sink.end();
  result.event_count = emitter.emitted();
  return result;
}

}  // namespace

SimulationResult simulate(const ResolvedScenario& scenario, const Plan& plan, TraceSink& sink, const SimulationOptions& options) {
  return simulate_plan(scenario, plan, options.plan_in_header ? std::make_shared<const Plan>(plan) : nullptr, sink, options);
}

SimulationResult simulate(const ResolvedScenario& scenario, std::shared_ptr<const Plan> plan, TraceSink& sink,
                          const SimulationOptions& options) {
  const Plan& plan_ref = *plan;
  return simulate_plan(scenario, plan_ref, options.plan_in_header ? std::move(plan) : nullptr, sink, options);
}

}  // namespace shardscope
