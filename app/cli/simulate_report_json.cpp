// JSON form of the simulation summary. Keys named in the issue are the public interface: step_time_ns,
// total_comm_ns, exposed_comm_ns, bubble_fraction, ranks[i].{rank, peak_bytes}; the rest is documented here and
// defined in engine/run/simulation_result.h.
#include <nlohmann/json.hpp>

#include "cli/simulate_command.h"

namespace shardscope::cli {

namespace {
nlohmann::json link_json(const LinkPreset& link) {
  return {{"name", link.name}, {"gbps", link.gbps}, {"latency_us", link.latency_us}};
}
}  // namespace

std::string simulate_json(const SimulateRun& run) {
  using nlohmann::json;
  const SimulationResult& r = run.result;
  const CostModel costs = CostModel::from_scenario(run.scenario);
  json root;
  root["scenario"] = json::parse(scenario_to_json(run.scenario.settings));
  root["cost_model"] = {{"peak_tflops", costs.rates().peak_tflops},
                        {"compute_efficiency", costs.rates().compute_efficiency},
                        {"hbm_gbps", costs.rates().hbm_gbps},
                        {"memory_efficiency", costs.rates().memory_efficiency},
                        {"kernel_overhead_ns", costs.rates().kernel_overhead_ns},
                        {"gpus_per_node", costs.links().gpus_per_node},
                        {"intra_node_link", link_json(costs.links().intra_node)},
                        {"inter_node_link", link_json(costs.links().inter_node)}};
  const CostSource& source = r.cost_source;
  root["device_profile"] = source.profile.empty()
                               ? json(nullptr)
                               : json{{"path", source.profile},
                                      {"source", run.scenario.profile ? run.scenario.profile->source : ""},
                                      {"machine", run.scenario.profile ? run.scenario.profile->machine_name : ""},
                                      {"profiled_ops", source.profiled_ops},
                                      {"roofline_ops", source.roofline_ops},
                                      {"roofline_examples", source.roofline_examples},
                                      {"collectives_from_profile", source.collectives_from_profile}};
  root["accounting"] = accounting_name(run.scenario.settings.accounting.mode);
  root["step"] = r.step;
  root["step_begin_ns"] = r.step_begin_ns;
  root["step_end_ns"] = r.step_end_ns;
  root["step_time_ns"] = r.step_time_ns;
  root["run_time_ns"] = r.run_time_ns;
  root["time_saturated"] = r.run_time_ns >= kMaxTimeNs;  // times clamped at kMaxTimeNs (core/units.h)
  root["critical_rank"] = r.critical_rank;
  root["total_comm_ns"] = r.total_comm_ns;
  root["exposed_comm_ns"] = r.exposed_comm_ns;
  root["bubble_fraction"] = r.bubble_fraction;
  root["schedule_bubble_fraction"] = r.schedule_bubble_fraction;
  root["events"] = r.event_count;
  root["error"] = r.error.empty() ? json(nullptr) : json(r.error);
  root["collectives"] = json::array();
  for (const auto& c : r.collectives)
    root["collectives"].push_back(
        {{"kind", c.kind}, {"count", c.count}, {"size_bytes", c.size_bytes}, {"time_ns", c.time_ns}, {"busbw_gbps", c.busbw_gbps}});
  root["ranks"] = json::array();
  for (const auto& rank : r.ranks)
    root["ranks"].push_back({{"rank", rank.rank},
                             {"peak_bytes", rank.peak_bytes},
                             {"peak_reserved_bytes", rank.peak_reserved_bytes},
                             {"compute_busy_ns", rank.compute_busy_ns},
                             {"utilisation", rank.utilisation},
                             {"begin_ns", rank.begin_ns},
                             {"comm_ns", rank.comm_ns},
                             {"exposed_comm_ns", rank.exposed_comm_ns},
                             {"wait_ns", rank.wait_ns},
                             {"end_ns", rank.end_ns},
                             {"out_of_memory", rank.out_of_memory.empty() ? json(nullptr) : json(rank.out_of_memory)},
                             {"oom", rank.oom ? json{{"rank", rank.rank},
                                                     {"op", rank.oom->op},
                                                     {"tensor", rank.oom->tensor},
                                                     {"requested_bytes", rank.oom->requested_bytes},
                                                     {"allocated_bytes", rank.oom->allocated_bytes},
                                                     {"capacity_bytes", rank.oom->capacity_bytes},
                                                     {"time_ns", rank.oom->time_ns}}
                                              : json(nullptr)}});
  return root.dump(2);
}

}  // namespace shardscope::cli
